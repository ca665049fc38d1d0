// The graph view: the Graphviz layout of the workspace graph drawn with ImGui draw lists,
// with pan, zoom, fit, selection, hover tooltips, search, folding and the current step.
#pragma once
#include <imgui.h>

#include <map>
#include <string>
#include <vector>

#include "core/graph.h"
#include "viz/graph_layout.h"
#include "viz/theme.h"

namespace opscope::viz {

// One box as it was drawn in the last frame (for the headless state dump and tests).
struct DrawnBox {
  std::string key, title, subtitle;
  int node = -1;
  ImVec2 min, max;  // screen pixels
  bool current = false, next = false, selected = false, matched = false;
};

struct GraphViewState {
  // --- what the user chose ---
  PhaseFilter filter = PhaseFilter::both;
  bool left_to_right = true;
  std::set<std::string> folded;
  std::set<int> expanded;  // nodes drawn as the ops of their body (double-click a node that has one)
  std::string selected;  // box key ("n3", "v5", "s:name"), "" = none
  char search[96] = "";
  float zoom = 1.f;
  ImVec2 pan{0, 0};          // screen offset of layout (0,0) from the canvas corner
  bool fit_requested = true;  // fit, or when the graph is too big to read, zoom to the current step
  bool fit_all = false;       // the Fit button: the whole graph, however small
  std::string last_search;    // a new search centres the view on its first hit
  bool follow_current = true;  // keep the current step in view
  std::vector<int> only_nodes;  // set by the shell: a compiled program shows its schedule only
  int followed_node = -1;      // the current node the view last followed
  // --- cache: the layout is recomputed only when its key changes ---
  GraphLayout layout;
  LayoutKey key;
  bool has_layout = false;
  int layouts_done = 0;
  std::map<std::string, Point> from_centers;  // positions before the last re-layout (animation)
  double relayout_time = -1;
  // --- what the last frame drew ---
  std::vector<DrawnBox> drawn;
  std::string hovered;
  ImVec2 canvas_min, canvas_max;
};

struct GraphViewFrame {
  const Graph* graph = nullptr;
  const Theme* theme = nullptr;
  const Fonts* fonts = nullptr;
  int current_node = -1;  // the node the last step ran
  int next_node = -1;     // the node the next step runs (-1: none pending)
  double time = 0;        // seconds, drives the animations
  float font_scale = 1.f; // HiDPI scale the fonts were loaded with
};

// Draws the view into the current ImGui window, filling `size` (0: the remaining space).
void draw_graph_view(GraphViewState& s, const GraphViewFrame& f, ImVec2 size = ImVec2(0, 0));

// Re-lays out when the graph or the options changed; returns true if it did.
bool update_layout(GraphViewState& s, const Graph& g, const Fonts* fonts, float font_scale, double time);

// Fits the whole layout into a canvas of `canvas` pixels.
void fit_view(GraphViewState& s, ImVec2 canvas);
// Centres box `key` in the canvas at a zoom of at least `min_zoom`.
void center_on(GraphViewState& s, const std::string& key, ImVec2 canvas, float min_zoom);

// Box keys whose title or subtitle contains `query` (case-insensitive), in layout order.
std::vector<std::string> search_boxes(const GraphLayout& l, const std::string& query);

// "n12" -> 12, anything else -> -1.
int node_of_key(const std::string& key);

}  // namespace opscope::viz
