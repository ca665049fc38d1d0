// One piece of a figure's layout on plain data: a small graph of items (boxes, the frames of
// calls laid out before it, the ports where edges cross its own frame) laid out left to right by
// Graphviz dot. A figure is laid out scope by scope (layout_job.h) so that no single dot run is
// big: dot's time grows much faster than the graph (bench_layout measures it). No Graph, ImGui or
// Graphviz type here: the same job runs on a worker thread, in slices between frames, or at once.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "viz/graph_layout.h"

namespace opscope::viz {

struct ScopeItem {
  enum Kind : uint8_t { box, frame, port_in, port_out };
  std::string key;  // unique within the scope (dot's node name)
  Kind kind = box;
  float width = 0, height = 0;  // pixels at zoom 1; ports are points
  int cluster = -1;  // a frame drawn by dot around it (ScopeGraph::clusters), -1: none
};

struct ScopeEdge {
  int from = -1, to = -1;  // items
  std::string label;  // a shape label dot places ("" none)
  bool reversed = false;  // given to dot head to tail (a gradient, when both phases share one layout)
};

// A frame dot draws itself (a call laid out inside its parent's job: small subtrees stay one run).
struct ScopeCluster {
  std::string label;
  int parent = -1;
};

struct ScopeGraph {
  std::string scope;  // what it lays out: "" the whole lane, else a call's key
  std::vector<ScopeItem> items;
  std::vector<ScopeEdge> edges;
  std::vector<ScopeCluster> clusters;
  std::vector<std::pair<int, int>> same_column;  // (leaf, its one reader): the leaf right above it
  // Graph attributes for dot beyond opscope's own (bench_layout tries nslimit, mclimit, ...).
  std::vector<std::pair<std::string, std::string>> dot_attributes;
  // The text that identifies this input: equal texts give equal layouts (the cache's key).
  std::string signature() const;
};

struct ScopeLayout {
  std::vector<Point> centers;  // per item, from the scope's top left corner
  std::vector<std::vector<Point>> splines;  // per edge: cubic Bezier control points, tail to head
  std::vector<Point> label_pos;  // per edge
  std::vector<char> has_label;
  std::vector<std::pair<Point, Point>> cluster_box;  // per cluster: min, max
  float width = 0, height = 0;
  double ms = 0;  // how long dot took
};

// Lays out `g` with Graphviz dot (holding the Graphviz lock while it runs). A scope of one item
// and no edges is placed without dot. Throws opscope::Error if Graphviz fails.
ScopeLayout lay_out_scope(const ScopeGraph& g);

constexpr float kRankSep = 54.f;  // between dot's columns, pixels: room for the shape labels

}  // namespace opscope::viz
