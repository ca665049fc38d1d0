// The course's knowledge map (lesson 10): its concepts, what each builds on and the lesson
// section that teaches it, in English and Chinese, read from a small file a teacher can edit
// (assets/knowledge_map.txt; the format is at its top). No GUI code: the GUI draws it
// (viz/concept_map.h), coloured by the progress computed here.
#pragma once
#include <string>
#include <vector>

#include "app/lesson/progress.h"

namespace opscope::lesson {

struct MapConcept {
  std::string id;
  std::vector<std::string> en, zh;  // label lines
  int lesson = 0;
  std::string section;  // an English heading of the lesson; "" = the lesson's start
  std::vector<std::string> after;
  std::string group;
  int line = 0;  // in the file, for messages
};

struct MapGroup {
  std::string id, en, zh;
  std::vector<std::string> after;  // concepts the whole group builds on
  int line = 0;
};

struct KnowledgeMap {
  std::string path;
  std::vector<MapGroup> groups;
  std::vector<MapConcept> concepts;
  int find(const std::string& id) const;  // concept index or -1
};

// Parses the map; a malformed line is an opscope::Error naming `path:line` and what to write.
KnowledgeMap parse_knowledge_map(const std::string& text, const std::string& path);
KnowledgeMap load_knowledge_map(const std::string& path);
// $OPSCOPE_ASSETS/knowledge_map.txt, else the source tree's assets/, else assets/ next to the
// executable's parent. Throws with a hint when none exists.
std::string knowledge_map_path();

// Where a concept is taught: its lesson's file and the blocks its section spans, with the
// section's heading in each language.
struct MapSection {
  std::string slug;  // "06-convolution"
  std::string progress_key;  // "06": the progress file's key for the lesson
  size_t first_block = 0, end_block = 0;  // [first, end) in the lesson's blocks
  std::string heading_en, heading_zh;
};
// Throws opscope::Error naming the map's line when the lesson or section does not exist in
// both languages.
MapSection find_section(const MapConcept& c, const KnowledgeMap& map, const std::string& lessons_dir);
// Every problem of the map: a lesson or section that does not exist, an unknown concept after
// `after:` or group after `group:`. Empty when the map is sound.
std::vector<std::string> check_knowledge_map(const KnowledgeMap& map, const std::string& lessons_dir);

enum class ConceptStatus { not_yet, in_progress, learned };
// From the progress file: learned once the student is past the section (or finished the
// lesson), in progress while inside it.
ConceptStatus concept_status(const MapSection& s, const Progress& p);

}  // namespace opscope::lesson
