// The graph view: the layout of the workspace graph drawn with ImGui draw lists, with pan,
// zoom, fit, selection, hover tooltips, search, folding and the current step. Zoom is semantic:
// boxes never shrink below a readable label; a graph too big for that folds its calls (and
// unfolds them on click or when zoomed into).
#pragma once
#include <imgui.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"
#include "viz/graph_layout.h"
#include "viz/layout_queue.h"
#include "viz/theme.h"

namespace opscope::viz {

// One box as it was drawn in the last frame (for the headless state dump and tests).
struct DrawnBox {
  std::string key, title, subtitle;
  int node = -1;
  BoxKind kind = BoxKind::op;
  Lane lane = Lane::forward;
  Phase phase = Phase::forward;
  std::string anchor;  // backward lane: the forward box it is drawn under
  int folded_nodes = 0;  // folded calls: the nodes inside
  ImVec2 min, max;  // screen pixels
  float label_px = 0;  // the widest of its lines at the size drawn, in screen pixels
  ImVec2 badge_min, badge_max;  // its saved-for-backward badge on screen (none: both 0)
  bool current = false, next = false, selected = false, matched = false;
};

// One edge as it was drawn in the last frame: its boxes' keys and its curve on screen.
struct DrawnEdge {
  std::string from, to;
  EdgeKind kind = EdgeKind::forward;
  std::vector<ImVec2> points;  // the Bezier control points, screen pixels
  std::string label;  // its shape label as drawn ("" when none is drawn at this zoom)
  ImVec2 label_min, label_max;  // the label's box on screen (with its background)
};

// One frame (an unfolded call, a loop's iteration, a body) as drawn in the last frame, with its
// title: what an edge label must not cover.
struct DrawnCluster {
  std::string key, label;
  ImVec2 min, max;  // the frame, screen pixels
  ImVec2 title_min, title_max;  // its title, screen pixels (none drawn at this zoom: both 0)
  ImVec2 badge_min, badge_max;  // a loop's badge with its count (none: both 0)
};

// The smallest text the view draws, in screen pixels: below it boxes fold instead of shrinking.
constexpr float kReadableTextPx = 11.f;
// The same in Present mode (View ▸ Present): a projected figure is read from the back of a room.
constexpr float kPresentTextPx = 15.f;

struct GraphViewState {
  // --- what the user chose ---
  PhaseFilter filter = PhaseFilter::both;
  std::set<std::string> folded;  // folded by the user: scope names ("dense") or call keys ("dense@2")
  std::set<std::string> unfolded;  // unfolded by the user (wins over folded and over fitting)
  std::set<int> expanded;  // nodes drawn as the ops of their body (double-click a node that has one)
  std::string selected;  // box key ("n3", "v5", "s:dense@2"), "" = none
  char search[96] = "";
  float zoom = 1.f;
  ImVec2 pan{0, 0};  // screen offset of layout (0,0) from the canvas corner
  bool fit_requested = true;  // a new view: fit it, folding calls until it is readable
  bool fit_all = false;  // the Fit button (F): the same, on demand
  std::string last_search;  // a new search centres the view on its first hit
  bool follow_current = true;  // keep the current step in view
  std::vector<int> only_nodes;  // set by the shell: a compiled program shows its schedule only
  int followed_node = -1;  // the current node the view last followed
  // --- semantic zoom: calls the view folded itself so the graph fits at a readable size ---
  std::set<std::string> auto_folded;
  std::set<std::string> opened;  // calls just unfolded: a big one opens one level (its calls folded)
  std::string last_unfolded;  // the call the user opened last: a Fit that cannot show all keeps it in view
  bool scrolls = false;  // the last Fit could not show the figure whole at the readable zoom: it
      // is shown readable, in rows as wide as the canvas, scrolled
  // --- cache: the layout is recomputed only when its key changes ---
  GraphLayout layout;  // what is drawn: `unwrapped` wrapped into rows at row_width (layout_wrap.h)
  GraphLayout unwrapped;  // the layout as made, one row
  float row_width = 0;  // chosen for the canvas at each layout and fit; 0: one row
  Point wrap_room;  // the canvas's drawable part and the readable zoom the rows are chosen
  float wrap_zoom = 0;  // for (the last frame's; 0: none drawn yet, one row)
  bool compact = false;  // chosen by each fit: short titles, no shape labels (LayoutOptions::compact)
  LayoutKey key;
  bool has_layout = false;
  int layouts_done = 0;
  // --- layout off the frame: made by the queue the shell runs (none: a sync queue of its own) ---
  std::shared_ptr<LayoutQueue> queue;
  std::shared_ptr<LayoutTicket> pending;  // the layout being made, for pending_key
  LayoutKey pending_key;
  double layout_ms_total = 0;  // the work of every layout made for this view
  double plan_ms_max = 0;  // the longest planning of one (on the UI thread: it reads the Graph)
  std::string layout_error;  // the last layout failed: why
  // --- fitting: rounds of folding, each laid out before the next is chosen ---
  struct Fitting {
    bool active = false;
    int round = 0;
    int focus = -1;  // the node kept open (the current step), -1
    bool may_fold_focus = true;  // Fit shows everything: the call holding the focus folds last
    bool fold_focus = false;  // nothing else was left: the call holding it folds too
  } fitting;
  std::string followed_box;  // the current step's box the view last scrolled to
  std::string shown_selection;  // the selected box the view last scrolled to
  std::map<std::string, Point> from_centers;  // positions before the last re-layout (animation)
  std::map<std::string, Point> start_at;  // boxes a fold or unfold makes start here
  std::string anchor_hint;  // the box that keeps its place at the next re-layout
  double relayout_time = -1;
  double installed_time = -1;  // when the layout shown was installed (a loop installs one a frame)
  int flow_node = -1;  // the step whose data is shown flowing along its edges ...
  double flow_since = -1;  // ... since this time (a few seconds, then the view holds still)
  // --- what the last frame drew ---
  std::vector<DrawnBox> drawn;
  std::vector<DrawnEdge> drawn_edges;
  std::vector<DrawnCluster> drawn_clusters;
  std::string hovered;
  ImVec2 canvas_min, canvas_max;
  float text_px = 0;  // the boxes' text size on screen
  float min_text_px = kReadableTextPx;  // the readable minimum in force (GraphViewFrame::min_text_px)
};

// Whether the view still moves by itself at `time` (a layout being made, a fit, boxes gliding to
// new places, the current step's data flowing): the window draws frames only while it does, on
// input, or while a statement runs.
bool view_animating(const GraphViewState& s, double time);

struct GraphViewFrame {
  const Graph* graph = nullptr;
  const Theme* theme = nullptr;
  const Fonts* fonts = nullptr;
  int current_node = -1;  // the node the last step ran
  int next_node = -1;  // the node the next step runs (-1: none pending)
  double time = 0;  // seconds, drives the animations
  float font_scale = 1.f;  // HiDPI scale the fonts were loaded with
  float min_text_px = kReadableTextPx;  // Fit and the wheel never go below it (Present: kPresentTextPx)
};

// What the empty graph asks a student to type: a statement that runs as it is in a fresh
// workspace (a human-input test types it).
constexpr const char* kEmptyGraphStatement = "a = randn(3); b = randn(3); c = a + b";

// Draws the view into the current ImGui window, filling `size` (0: the remaining space). It asks
// the queue for a new layout when the graph or the folds changed and draws the last one (or a
// progress state) until it is made: a frame never waits for a layout.
void draw_graph_view(GraphViewState& s, const GraphViewFrame& f, ImVec2 size = ImVec2(0, 0));

// Re-lays out when the graph or the options changed, at once (waiting for the queue); returns
// true if a new layout was installed. (The view itself never waits: see draw_graph_view.)
bool update_layout(GraphViewState& s, const Graph& g, const Fonts* fonts, float font_scale, double time);
// The view shows the figure of the graph as it is now (no layout is being made for it).
bool layout_current(const GraphViewState& s);

// Fits the whole layout into a canvas of `canvas` pixels, no smaller than `min_zoom`.
void fit_view(GraphViewState& s, ImVec2 canvas, float min_zoom = 0.08f);
// Centres box `key` in the canvas at a zoom of at least `min_zoom`.
void center_on(GraphViewState& s, const std::string& key, ImVec2 canvas, float min_zoom);

// Folds and unfolds calls. `key` is a call key ("dense@2") or a scope name ("dense").
void fold_call(GraphViewState& s, const std::string& key);
void unfold_call(GraphViewState& s, const std::string& key);

// "n12" -> 12, anything else -> -1.
int node_of_key(const std::string& key);

}  // namespace opscope::viz
