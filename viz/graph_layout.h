// The graph's picture as geometry: which boxes to draw (op nodes, leaf values, calls of user
// functions folded into one box), where, and the edges' curves. With both phases shown the
// forward pass runs left to right in its lane (Graphviz `dot`, computed in memory, one small
// scope at a time: scope_tree.h) and the backward pass runs right to left in a mirrored lane
// below it, each backward node under the forward node it differentiates. No ImGui here, so
// layout is testable without a display; layout_queue.h makes the same layout off the frame.
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
const char* box_kind_name(BoxKind k);

struct Point {
  float x = 0, y = 0;
};

enum class Lane : uint8_t { forward, backward };

struct LayoutBox {
  std::string
      key;  // "n3" (node 3), "v5" (leaf value 5), "s:dense@2" / "b:dense@2" (a folded call, forward / backward),
  // "n3.1" (op 1 of node 3's body), "n3.v2" (a constant of node 3's body)
  BoxKind kind = BoxKind::op;
  int node = -1;  // op boxes: the graph node (for a box of a body: the node it is inside)
  int body_node = -1;  // a box of an expanded node's body: the body's node it shows
  int value = -1;  // leaf boxes: the graph value
  Phase phase = Phase::forward;
  Lane lane = Lane::forward;
  std::string title;  // "#3 matmul"
  std::string
      full_title;  // a compact figure's box: its title with the attributes ("#9 layer_norm(normalized_shape=[16])")
  std::string subtitle;  // the variable name, the shape of a leaf, or what a folded call takes
  std::vector<std::string> details;  // folded calls: further lines (outputs, size, parameters)
  std::string family;  // op family (colours)
  std::string scope_key;  // folded boxes: the call's key ("dense@2"), for unfolding
  std::vector<int> nodes;  // folded boxes: the graph nodes inside
  std::string anchor;  // backward lane: the forward box it is drawn under ("" if none)
  Point center;  // y grows downwards, units are pixels at zoom 1
  float width = 0, height = 0;
  float badge_width =
      0;  // its nodes keep tensors for backward: the room of its badge over its top-right corner, pixels at zoom 1
  bool gone = false;  // its node or value left the graph since the layout was made (forget_missing)
};

enum class EdgeKind : uint8_t {
  forward,  // a forward value between forward boxes
  gradient,  // a gradient passed back between backward boxes (runs right to left)
  saved,  // a forward value a backward node reads (what the forward pass saved for it)
  link,  // a backward node -> the forward node it differentiates (dashed, no data)
};
const char* edge_kind_name(EdgeKind k);

struct LayoutEdge {
  int from = -1, to = -1;  // indices into boxes
  int value = -1;  // the value flowing, -1 for a link
  EdgeKind kind = EdgeKind::forward;
  bool link = false;  // kind == link
  std::string label;  // "[4, 16] f32"
  std::vector<Point> spline;  // cubic Bezier control points: p0, (c1, c2, p)...
  Point label_pos;
  bool has_label_pos = false;
  float label_width = 0;  // the label's width at the text size, pixels at zoom 1
  bool label_dropped = false;  // no free place for it: the tooltip of its boxes shows it (layout_wrap.h)
  Point arrow_tip;  // the head points here, along the curve's last tangent
  bool has_arrow = false;
};

// An unfolded call of a user function, or the last iteration of a loop, drawn as a frame.
struct LayoutCluster {  // an unfolded call, a loop's shown iteration, or an expanded node's body
  std::string scope;  // calls: the scope path ("dense"); loops: ""; a body: the node's title ("#3 swish")
  int node = -1;  // an expanded node's id (its body is drawn inside the frame)
  std::string key;  // "dense@2", "loop@7"
  bool loop = false;
  int iterations = 0;  // loops: how many ran (the frame shows the last)
  std::string label;  // "dense()", "loop: last of 150 iterations"
  Point min, max;
  float title_width = 0;  // its title as the view draws it (at its top-left, with "[fold]"), pixels at zoom 1
};

struct LayoutOptions {
  PhaseFilter filter = PhaseFilter::both;
  // Calls drawn as one box: a scope path ("dense", "attention/heads") folds every call of it, a
  // call key ("dense@2") one call. `unfolded` wins over `folded` for the same call.
  std::set<std::string> folded, unfolded;
  std::set<int> expanded;  // nodes drawn as the ops of their body (an @op, a fused node)
  // Width of a text in pixels at zoom 1; the GUI measures with its font, tests estimate.
  std::function<float(const std::string&)> text_width;
  float line_height = 16.f;
  bool edge_labels = true;  // room for shape labels on forward edges (dot places them)
  // A figure that does not read at Fit: ops titled without their attributes and no room made for
  // shape labels (both shown on hover and in the inspector), before any call folds.
  bool compact = false;
  std::vector<int> only_nodes;  // empty: every node; a compiled program: its schedule
  // Both phases in mirrored lanes (the default); false: one dot layout of everything, the
  // gradient edges reversed (how the figure was laid out before the lanes; the bench compares).
  bool lanes = true;
  // A figure of at most this many forward boxes is laid out in one dot run, its unfolded calls as
  // dot's frames; a bigger one call by call, each call laid out on its own and placed in its
  // parent as one box (dot's time grows much faster than its graph: bench_layout), so that
  // unfolding a call lays out only it and the frames around it.
  int flat_limit = 60;
};

struct GraphLayout {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutEdge> edges;
  std::vector<LayoutCluster> clusters;
  float width = 0, height = 0;
  float backward_lane_top = -1;  // where the backward lane begins (both phases in lanes), else -1
  std::vector<float> row_lane_tops;  // a figure wrapped into rows: where each further row's backward lane begins
  float line_height = 16.f;  // the text's line height, pixels at zoom 1 (edge labels' height)
  double layout_ms = 0;
  int find(const std::string& key) const;  // box index or -1
  int find_node(int node_id) const;  // the box showing node_id (also inside a folded box; an
      // expanded node: the box of its body's last op)
  std::vector<int> node_box;  // node id -> box index (-1: hidden)
};

// Moves every drawn position of `l` (boxes, frames, edges, their labels and arrows, the lanes'
// tops) by −origin: the point `origin` becomes (0, 0).
void move_origin(GraphLayout& l, Point origin);

// Unlinks from `l` what the graph no longer has (nodes and values taken away by a :reset, a
// failed statement's rollback, or tape dropped in a long loop): such a box keeps its place and
// text, marked `gone`, and refers to no node or value any more. A view keeps drawing its last
// layout while the next is made off the frame (a loop's last iteration, seen while it runs):
// after this it never reads, hovers into or inspects a node that is gone. Returns how many boxes
// it unlinked.
int forget_missing(GraphLayout& l, const Graph& g);

// What identifies a layout: re-layout only when this changes.
struct LayoutKey {
  const Graph* graph = nullptr;  // a compiled program's graph is another object than the workspace's
  std::vector<int> only_nodes;
  uint64_t graph_version = 0;
  size_t num_nodes = 0;
  PhaseFilter filter = PhaseFilter::both;
  std::set<std::string> folded, unfolded;
  std::set<int> expanded;
  bool lanes = true;
  bool compact = false;
  bool operator==(const LayoutKey&) const = default;
};
LayoutKey layout_key(const Graph& g, const LayoutOptions& o);

// Lays out `g`: the same graph and options give the same positions (a figure laid out call by
// call exactly; dot's own frames in a small one can move a few pixels from one run to the next,
// Graphviz 2.42's doing). Throws opscope::Error if Graphviz fails.
GraphLayout layout_graph(const Graph& g, const LayoutOptions& o);

// Box keys whose title or subtitle contains `query` (case-insensitive), in layout order; a
// folded box matches when one of the nodes inside it does.
std::vector<std::string> search_boxes(const GraphLayout& l, const Graph& g, const std::string& query);

// A rough text width (7 px per character) for layouts made without a font.
float estimate_text_width(const std::string& s);

// The calls that can fold, outermost first, with how many nodes each holds (the view folds
// the biggest ones when a graph does not fit at a readable size).
struct FoldableCall {
  std::string key;  // "attention@3"
  std::string name;  // "attention"
  std::string parent;  // the call it is made in ("" at top level)
  int depth = 0;  // 0: called at top level
  int nodes = 0;  // forward and backward nodes inside
  bool backward = false;  // some of them are backward nodes (folded: a box in each lane)
  std::vector<int> node_ids;
};
std::vector<FoldableCall> foldable_calls(const Graph& g, const std::vector<int>& only_nodes);
// Whether call `key` (named `name`) is folded under the options.
bool call_folded(const LayoutOptions& o, const std::string& key, const std::string& name);

// Semantic zoom, before any layout: a graph too big to lay out whole (a real model: hundreds of
// calls) opens folded at the deepest call depth whose boxes, estimated from the calls' sizes,
// fit `room` (the canvas in layout units at the readable zoom). Calls holding node `focus` stay
// open (their children fold instead), so the step being run is shown. Empty for a small graph.
// `shown_nodes`: shown_node_count.
std::set<std::string> initial_folds(const std::vector<FoldableCall>& calls, const LayoutOptions& o, int shown_nodes,
                                    Point room, int focus);
// The nodes the figure shows under o's filter and only_nodes (folded or not).
int shown_node_count(const Graph& g, const LayoutOptions& o);

// Semantic zoom, after a layout that does not fit: the calls to fold next (keys), outermost
// first, then (with a focus) the furthest from it, else the biggest; never one in o.unfolded,
// one holding `focus` unless `fold_focus`, or one holding nearly all `shown_nodes` (a model's
// one outer module: its children fold instead). `fitted_over_min`: the zoom that fits the layout
// over the readable zoom (< 1). Empty when nothing is left to fold.
std::set<std::string> more_folds(const std::vector<FoldableCall>& calls, const LayoutOptions& o, int shown_nodes,
                                 const GraphLayout& l, float fitted_over_min, int focus, bool fold_focus);

// Semantic zoom at once (export, tests): initial_folds, then more_folds after each layout until
// `zoom_to_fit(layout)` is at least `min_zoom` (the figure fits its canvas at a readable size) or
// nothing is left to fold (the call holding `focus` stays open unless `may_fold_focus`: then it
// folds last). `room`: see initial_folds.
struct FoldedToFit {
  std::set<std::string> folded;  // the calls it folded (keys), on top of o.folded
  GraphLayout layout;  // laid out with them folded
  bool fits = false;
};
FoldedToFit fold_to_fit(const Graph& g, const LayoutOptions& o, float min_zoom,
                        const std::function<float(const GraphLayout&)>& zoom_to_fit, int focus,
                        Point room = {1e9f, 1e9f}, bool may_fold_focus = false);

}  // namespace opscope::viz
