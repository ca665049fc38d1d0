#include "app/lesson/knowledge_map.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/lesson/lesson.h"
#include "app/lesson/markdown_doc.h"
#include "app/shipped_dir.h"
#include "core/error.h"

namespace opscope::lesson {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> out;
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

// The headings of a lesson's prose blocks: (block index, heading text).
std::vector<std::pair<size_t, std::string>> headings(const Lesson& l) {
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = 0; i < l.blocks.size(); ++i) {
    if (l.blocks[i].kind != Block::Kind::prose) continue;
    for (const MdBlock& b : parse_markdown(l.blocks[i].text))
      if (b.kind == MdBlock::Kind::heading) out.emplace_back(i, plain_text(b.spans));
  }
  return out;
}

}  // namespace

int KnowledgeMap::find(const std::string& id) const {
  for (size_t i = 0; i < concepts.size(); ++i)
    if (concepts[i].id == id) return static_cast<int>(i);
  return -1;
}

KnowledgeMap parse_knowledge_map(const std::string& text, const std::string& path) {
  KnowledgeMap m;
  m.path = path;
  std::istringstream in(text);
  int n = 0;
  MapConcept* current = nullptr;
  MapGroup* group = nullptr;
  auto fail = [&](const std::string& what, const std::string& hint) -> void {
    throw Error(path + ":" + std::to_string(n) + ": " + what, hint);
  };
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    const bool indented = raw[0] == ' ' || raw[0] == '\t';
    if (!indented) {
      const auto w = words(line);
      if (w.size() != 2 || (w[0] != "concept" && w[0] != "group"))
        fail("expected `concept ID` or `group ID`, got '" + line + "'",
             "a new concept starts with `concept ID` at the start of a line");
      for (const auto& c : m.concepts)
        if (c.id == w[1]) fail("concept '" + w[1] + "' is defined twice", "give each concept its own ID");
      if (w[0] == "concept") {
        m.concepts.push_back({w[1], {}, {}, 0, "", {}, "", n});
        current = &m.concepts.back();
        group = nullptr;
      } else {
        m.groups.push_back({w[1], "", "", {}, n});
        group = &m.groups.back();
        current = nullptr;
      }
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos)
      fail("expected `key: value`, got '" + line + "'", "the keys are en, zh, lesson, section, after, group");
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (group) {
      if (key == "en") group->en = value;
      else if (key == "zh") group->zh = value;
      else if (key == "after") group->after = words(value);
      else fail("a group has en:, zh: and after: lines, not '" + key + ":'", "");
      continue;
    }
    if (!current) fail("'" + key + ":' before any `concept ID`", "start with `concept ID`");
    if (key == "en") current->en.push_back(value);
    else if (key == "zh") current->zh.push_back(value);
    else if (key == "section") current->section = value;
    else if (key == "group") current->group = value;
    else if (key == "after") current->after = words(value);
    else if (key == "lesson") {
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 1 || v > 99)
        fail("lesson: takes a lesson number, got '" + value + "'", "e.g. lesson: 6");
      current->lesson = static_cast<int>(v);
    } else {
      fail("unknown key '" + key + ":'", "the keys are en, zh, lesson, section, after, group");
    }
  }
  for (const auto& c : m.concepts) {
    n = c.line;
    if (c.en.empty() || c.zh.empty()) fail("concept '" + c.id + "' needs an en: and a zh: label", "");
    if (c.lesson == 0) fail("concept '" + c.id + "' needs `lesson: N`", "");
  }
  return m;
}

KnowledgeMap load_knowledge_map(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error("cannot open the knowledge map '" + path + "'",
                "it lives in assets/knowledge_map.txt; set OPSCOPE_ASSETS to the assets folder");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_knowledge_map(ss.str(), path);
}

std::string knowledge_map_path() {
#ifdef OPSCOPE_ASSETS_DIR
  const char* built_in = OPSCOPE_ASSETS_DIR;
#else
  const char* built_in = nullptr;
#endif
  const std::string dir = app::find_shipped_dir("OPSCOPE_ASSETS", built_in, "assets", "assets", [](const fs::path& d) {
    return fs::is_regular_file(d / "knowledge_map.txt");
  });
  if (dir.empty())
    throw Error("cannot find the knowledge map (assets/knowledge_map.txt)",
                "set OPSCOPE_ASSETS to the repository's assets/ folder");
  return (fs::path(dir) / "knowledge_map.txt").string();
}

MapSection find_section(const MapConcept& c, const KnowledgeMap& map, const std::string& lessons_dir) {
  const std::string where = map.path + ":" + std::to_string(c.line) + ": concept '" + c.id + "': ";
  std::string en_file, zh_file;
  try {
    en_file = find_lesson_file(lessons_dir, "en", std::to_string(c.lesson));
    zh_file = find_lesson_file(lessons_dir, "zh", std::to_string(c.lesson));
  } catch (const Error& e) {
    throw Error(where + "lesson " + std::to_string(c.lesson) + " does not exist in both languages", e.what());
  }
  const Lesson en = load_lesson(en_file), zh = load_lesson(zh_file);
  const auto he = headings(en), hz = headings(zh);
  MapSection s;
  s.slug = en.slug;
  s.progress_key = en.slug.substr(0, en.slug.find('-'));
  s.end_block = en.blocks.size();
  size_t k = 0;  // the section's heading among the lesson's headings (the first is the title)
  if (!c.section.empty()) {
    while (k < he.size() && he[k].second != c.section) ++k;
    if (k == he.size()) {
      std::string all;
      for (const auto& h : he) all += (all.empty() ? "" : "; ") + h.second;
      throw Error(where + "lesson " + std::to_string(c.lesson) + " has no section '" + c.section + "'",
                  "its headings: " + all);
    }
    s.first_block = he[k].first;
  }
  // A section runs to the next heading of the same lesson; the lesson's start, to its end.
  if (!c.section.empty())
    for (size_t j = k + 1; j < he.size(); ++j)
      if (he[j].first > s.first_block) {
        s.end_block = he[j].first;
        break;
      }
  s.heading_en = he.empty() ? en.title : he[k].second;
  if (hz.size() != he.size() || (!hz.empty() && hz[k].first != he[k].first))
    throw Error(where + "the Chinese lesson's headings are not where the English ones are", zh_file);
  s.heading_zh = hz.empty() ? zh.title : hz[k].second;
  return s;
}

std::vector<std::string> check_knowledge_map(const KnowledgeMap& map, const std::string& lessons_dir) {
  std::vector<std::string> problems;
  for (const auto& c : map.concepts) {
    const std::string where = map.path + ":" + std::to_string(c.line) + ": concept '" + c.id + "': ";
    try {
      find_section(c, map, lessons_dir);
    } catch (const Error& e) {
      problems.push_back(std::string(e.what()) + (e.hint().empty() ? "" : " (" + e.hint() + ")"));
    }
    for (const auto& a : c.after)
      if (map.find(a) < 0) problems.push_back(where + "`after: " + a + "` is not a concept");
    bool group_ok = c.group.empty();
    for (const auto& g : map.groups) group_ok = group_ok || g.id == c.group;
    if (!group_ok) problems.push_back(where + "`group: " + c.group + "` is not a group");
  }
  for (const auto& g : map.groups)
    for (const auto& a : g.after)
      if (map.find(a) < 0)
        problems.push_back(map.path + ":" + std::to_string(g.line) + ": group '" + g.id + "': `after: " + a +
                           "` is not a concept");
  return problems;
}

ConceptStatus concept_status(const MapSection& s, const Progress& p) {
  auto it = p.lessons.find(s.progress_key);
  if (it == p.lessons.end()) return ConceptStatus::not_yet;
  const LessonProgress& lp = it->second;
  const size_t at = static_cast<size_t>(std::max(0, lp.block));
  if (lp.finished || at >= s.end_block) return ConceptStatus::learned;
  return at > s.first_block ? ConceptStatus::in_progress : ConceptStatus::not_yet;
}

}  // namespace opscope::lesson
