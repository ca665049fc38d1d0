// viz-internal: the figure of a graph as plain data, before any geometry: its boxes (sized for
// their text), its edges, the frames of unfolded calls, which frame each forward box sits in and
// which forward box each backward box hangs under. Made from the Graph on the thread that owns
// it (planning is linear in the graph); everything after it (layout_job.h) reads only this, so
// it can run on another thread or in slices between frames.
#pragma once
#include <string>
#include <vector>

#include "core/graph.h"
#include "viz/graph_layout.h"

namespace opscope::viz {

// A frame drawn around forward boxes: an unfolded call, a loop's shown iteration, or an
// expanded node's body.
struct PlannedCluster {
  std::string key, scope, label;
  int parent = -1;
  int node = -1;  // an expanded node's body
  bool loop = false;
  int iterations = 0;
};

struct FigurePlan {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutEdge> edges;
  std::vector<int> node_box;
  std::vector<PlannedCluster> clusters;
  std::vector<int> box_cluster;  // the innermost frame of each forward-lane box, -1: none
  std::vector<int> anchor;  // backward boxes: the forward box drawn above them, -1: none
  // What the layout steps need of the options (the rest shaped the plan).
  bool one_dot = false;  // one dot layout of every box (the backward pass alone, lanes off)
  bool edge_labels = true;
  float line_height = 16.f;
  int flat_limit = 60;  // see LayoutOptions::flat_limit
  std::vector<float> label_width;  // per edge: its label's width (shape text), pixels at zoom 1
  std::vector<float> cluster_label_width;  // per cluster: its frame's title as the view draws it
};

FigurePlan plan_figure(const Graph& g, const LayoutOptions& o);

}  // namespace opscope::viz
