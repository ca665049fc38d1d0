// The graph's picture as geometry: which boxes to draw (op nodes, leaf values, folded
// composite functions), where (Graphviz `dot`, computed in memory), and the edge splines.
// No ImGui here, so layout is testable without a display.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"

namespace opscope::viz {

// Which phases the view shows. `both` links each backward node to its forward node.
enum class PhaseFilter : uint8_t { forward_only, backward_only, both };
const char* phase_filter_name(PhaseFilter f);

enum class BoxKind : uint8_t { op, parameter, input, constant, grad_seed, folded_scope };

struct Point {
  float x = 0, y = 0;
};

struct LayoutBox {
  std::string key;     // "n3" (node 3), "v5" (leaf value 5), "s:name" (a folded function),
                       // "n3.1" (op 1 of node 3's body), "n3.v2" (a constant of node 3's body)
  BoxKind kind = BoxKind::op;
  int node = -1;       // op boxes: the graph node (for a box of a body: the node it is inside)
  int body_node = -1;  // a box of an expanded node's body: the body's node it shows
  int value = -1;      // leaf boxes: the graph value
  Phase phase = Phase::forward;
  std::string title;   // "#3 matmul"
  std::string subtitle;  // the variable name, the shape of a leaf, or "4 nodes"
  std::string family;  // op family (colours)
  Point center;        // y grows downwards, units are pixels at zoom 1
  float width = 0, height = 0;
};

struct LayoutEdge {
  int from = -1, to = -1;     // indices into boxes
  int value = -1;             // the value flowing, -1 for a forward/backward link
  bool link = false;          // backward node -> its forward node (dashed, no data)
  std::string label;          // "[4, 16] f32"
  std::vector<Point> spline;  // cubic Bezier control points: p0, (c1, c2, p)...
  Point label_pos;
  bool has_label_pos = false;
  Point arrow_tip;  // the spline ends short of the head; the head points here
  bool has_arrow = false;
};

struct LayoutCluster {  // an unfolded composite function, or an expanded node's body
  std::string scope;     // the function's scope, or the node's title ("#3 swish")
  int node = -1;         // an expanded node's id (its body is drawn inside the frame)
  Point min, max;
};

struct LayoutOptions {
  PhaseFilter filter = PhaseFilter::both;
  bool left_to_right = true;
  std::set<std::string> folded;  // composite functions drawn as one box
  std::set<int> expanded;        // nodes drawn as the ops of their body (an @op, a fused node)
  // Width of a text in pixels at zoom 1; the GUI measures with its font, tests estimate.
  std::function<float(const std::string&)> text_width;
  float line_height = 16.f;
  bool edge_labels = true;  // room for shape labels on edges (dot places them)
  std::vector<int> only_nodes;  // empty: every node; a compiled program: its schedule
};

struct GraphLayout {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutEdge> edges;
  std::vector<LayoutCluster> clusters;
  float width = 0, height = 0;
  double layout_ms = 0;
  int find(const std::string& key) const;  // box index or -1
  int find_node(int node_id) const;        // the box showing node_id (also inside a folded box; an
                                           // expanded node: the box of its body's last op)
  std::vector<int> node_box;               // node id -> box index (-1: hidden)
};

// What identifies a layout: re-layout only when this changes.
struct LayoutKey {
  const Graph* graph = nullptr;  // a compiled program's graph is another object than the workspace's
  std::vector<int> only_nodes;
  uint64_t graph_version = 0;
  size_t num_nodes = 0;
  PhaseFilter filter = PhaseFilter::both;
  bool left_to_right = true;
  std::set<std::string> folded;
  std::set<int> expanded;
  bool operator==(const LayoutKey&) const = default;
};
LayoutKey layout_key(const Graph& g, const LayoutOptions& o);

// Lays out `g` with Graphviz dot. Deterministic: the same graph and options give the same
// positions. Throws opscope::Error if Graphviz fails.
GraphLayout layout_graph(const Graph& g, const LayoutOptions& o);

// A rough text width (7 px per character) for layouts made without a font.
float estimate_text_width(const std::string& s);

}  // namespace opscope::viz
