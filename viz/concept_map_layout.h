// A map of concepts (the course's knowledge map) as geometry: boxes laid out by Graphviz dot,
// like the graph, in frames for their groups, with arrows from what a concept builds on.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "viz/graph_layout.h"

namespace opscope::viz {

enum class ConceptStatus : uint8_t { not_yet, in_progress, learned };

struct ConceptNode {
  std::string id;
  std::vector<std::string> lines;  // the label: a title line, then smaller lines
  ConceptStatus status = ConceptStatus::not_yet;
  int group = -1;  // index into ConceptFigure::groups
  std::string badge;  // drawn on the corner: the lesson's number
  std::string tooltip;  // "Lesson 6 · Different cost: click to open it"
};

struct ConceptFigure {
  std::vector<ConceptNode> nodes;
  std::vector<std::pair<int, int>> edges;  // (from, to): `to` builds on `from`
  std::vector<std::pair<int, int>> group_edges;  // (concept, group): the whole group builds on it
  std::vector<std::string> groups;  // frame titles
  std::string legend[3];  // "not yet", "in progress", "learned" in the map's language
  std::string title;
};

struct ConceptLayout {
  std::vector<Point> centers;
  std::vector<float> widths, heights;
  std::vector<std::vector<Point>> splines;  // per edge, then per group edge: Bezier control points
  std::vector<std::pair<Point, Point>> group_boxes;
  float width = 0, height = 0;
};

// Deterministic; `text_width` measures a line at the title size (smaller lines at 0.85 of it).
ConceptLayout layout_concepts(const ConceptFigure& f, const std::function<float(const std::string&)>& text_width,
                              float line_height);

}  // namespace opscope::viz
