// [SECTION] index
//   options and keys     phase filter names, text widths, layout keys, which calls fold
//   fit                  folding calls until the figure fits its canvas
//   layout_graph         plan, scopes and lanes at once (layout_job.h runs them in steps)
#include "viz/graph_layout.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "core/error.h"
#include "viz/graph_figure.h"
#include "viz/layout_job.h"
#include "viz/layout_plan.h"

namespace opscope::viz {

// [SECTION] options and keys

const char* phase_filter_name(PhaseFilter f) {
  switch (f) {
    case PhaseFilter::forward_only: return "forward";
    case PhaseFilter::backward_only: return "backward";
    case PhaseFilter::both: return "both";
  }
  return "?";
}

const char* box_kind_name(BoxKind k) {
  switch (k) {
    case BoxKind::op: return "op";
    case BoxKind::parameter: return "parameter";
    case BoxKind::input: return "input";
    case BoxKind::constant: return "constant";
    case BoxKind::grad_seed: return "grad_seed";
    case BoxKind::folded_scope: return "folded";
  }
  return "?";
}

const char* edge_kind_name(EdgeKind k) {
  switch (k) {
    case EdgeKind::forward: return "forward";
    case EdgeKind::gradient: return "gradient";
    case EdgeKind::saved: return "saved";
    case EdgeKind::link: return "link";
  }
  return "?";
}

float estimate_text_width(const std::string& s) {
  // UTF-8 continuation bytes do not start a glyph.
  int glyphs = 0;
  for (unsigned char c : s) glyphs += (c & 0xC0) != 0x80;
  return 7.f * static_cast<float>(glyphs);
}

int GraphLayout::find(const std::string& key) const {
  for (size_t i = 0; i < boxes.size(); ++i)
    if (boxes[i].key == key) return static_cast<int>(i);
  return -1;
}

int GraphLayout::find_node(int node_id) const {
  if (node_id < 0 || node_id >= static_cast<int>(node_box.size())) return -1;
  return node_box[static_cast<size_t>(node_id)];
}

void move_origin(GraphLayout& l, Point origin) {
  auto move = [&](Point& p) { p = {p.x - origin.x, p.y - origin.y}; };
  for (auto& b : l.boxes) move(b.center);
  for (auto& c : l.clusters) {
    move(c.min);
    move(c.max);
  }
  for (auto& e : l.edges) {
    for (auto& p : e.spline) move(p);
    move(e.label_pos);
    move(e.arrow_tip);
  }
  if (l.backward_lane_top >= 0) l.backward_lane_top -= origin.y;
  for (float& t : l.row_lane_tops) t -= origin.y;
}

int forget_missing(GraphLayout& l, const Graph& g) {
  int forgotten = 0;
  for (LayoutBox& b : l.boxes) {
    const bool gone = (b.node >= 0 && !g.has_node(b.node)) || (b.value >= 0 && !g.has_value(b.value)) ||
                      std::any_of(b.nodes.begin(), b.nodes.end(), [&g](int id) { return !g.has_node(id); });
    if (!gone) continue;
    b.node = b.value = b.body_node = -1;
    b.nodes.clear();
    b.gone = true;
    ++forgotten;
  }
  if (forgotten == 0) return 0;  // (the usual case: the graph only grew)
  for (LayoutEdge& e : l.edges)
    if (e.value >= 0 && !g.has_value(e.value)) e.value = -1;
  for (LayoutCluster& c : l.clusters)
    if (c.node >= 0 && !g.has_node(c.node)) c.node = -1;
  for (size_t id = 0; id < l.node_box.size(); ++id)
    if (!g.has_node(static_cast<int>(id))) l.node_box[id] = -1;
  return forgotten;
}

LayoutKey layout_key(const Graph& g, const LayoutOptions& o) {
  return {&g, o.only_nodes, g.version(), g.num_nodes(), o.filter, o.folded, o.unfolded, o.expanded, o.lanes, o.compact};
}

std::vector<std::string> search_boxes(const GraphLayout& l, const Graph& g, const std::string& query) {
  std::vector<std::string> hits;
  if (query.empty()) return hits;
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string q = lower(query);
  auto has = [&](const std::string& text) { return lower(text).find(q) != std::string::npos; };
  for (const auto& b : l.boxes) {
    // (A compact figure's titles and subtitles are short: the attributes and the whole name count.)
    bool hit = has(b.title) || has(b.full_title) || has(b.subtitle) || lower(b.family) == q ||
               (b.node >= 0 && g.has_node(b.node) && has(g.node_var_name(b.node)));
    for (int id : b.nodes) {  // what a folded call holds is still found
      if (hit || id >= static_cast<int>(g.num_nodes())) break;
      const Node& n = g.node(id);
      hit = has("#" + std::to_string(id) + " " + node_title(g, n)) || has(g.node_var_name(id)) ||
            (n.op && lower(n.op->family) == q);
    }
    if (hit) hits.push_back(b.key);
  }
  return hits;
}

bool call_folded(const LayoutOptions& o, const std::string& key, const std::string& name) {
  const size_t slash = name.rfind('/');
  const std::string last = slash == std::string::npos ? name : name.substr(slash + 1);
  if (o.unfolded.count(key)) return false;
  if (o.folded.count(key)) return true;
  if (o.unfolded.count(name)) return false;
  return o.folded.count(name) > 0 || o.folded.count(last) > 0;
}

std::vector<FoldableCall> foldable_calls(const Graph& g, const std::vector<int>& only_nodes) {
  const FigureContent fc = figure_content(g, only_nodes);
  std::vector<FoldableCall> calls;
  std::map<std::string, size_t> index;
  for (const Node& n : g.nodes()) {
    if (fc.nodes[static_cast<size_t>(n.id)] != NodeShown::shown) continue;
    const Node& owner = n.phase == Phase::backward && n.forward_of >= 0 ? g.node(n.forward_of) : n;
    int depth = 0;
    std::string parent;
    for (const FigureFrame& f : node_frames(g, owner)) {
      if (f.kind != FigureFrame::call) continue;
      auto [it, fresh] = index.emplace(f.key, calls.size());
      if (fresh) calls.push_back({f.key, f.name, parent, depth, 0, false, {}});
      FoldableCall& c = calls[it->second];
      c.nodes++;
      c.backward = c.backward || n.phase == Phase::backward;
      c.node_ids.push_back(n.id);
      parent = f.key;
      ++depth;
    }
  }
  std::stable_sort(calls.begin(), calls.end(),
                   [](const FoldableCall& a, const FoldableCall& b) { return a.depth < b.depth; });
  return calls;
}

// [SECTION] fit

namespace {

bool holds(const FoldableCall& c, int node) {
  return node >= 0 && std::find(c.node_ids.begin(), c.node_ids.end(), node) != c.node_ids.end();
}
bool user_unfolded(const LayoutOptions& o, const FoldableCall& c) {
  return o.unfolded.count(c.key) || o.unfolded.count(c.name);
}

// Graphs with fewer nodes shown are laid out whole first (a lesson's figure: a few dot runs).
constexpr int kWholeLayoutNodes = 200;

// A call holding (nearly) the whole figure, as a model's one outer module: folded, the figure
// would be one box. Its children fold instead.
bool whole_figure(const FoldableCall& c, int total) { return total - c.nodes < 4; }

}  // namespace

std::set<std::string> initial_folds(const std::vector<FoldableCall>& calls, const LayoutOptions& o, int shown_nodes,
                                    Point room, int focus) {
  if (shown_nodes < kWholeLayoutNodes) return {};
  // A box and the gap after it take about 260 x 110 px (a model's op titles are long; a frame's
  // margins and ports about one and a half boxes); a chain of ops with its weights above fills
  // one such row per pass shown (the backward lane doubles the height).
  const bool both = o.filter == PhaseFilter::both;
  const float rows = std::max(1.f, room.y / (both ? 300.f : 110.f));
  const float budget = std::max(6.f, room.x / 260.f * rows);
  constexpr float kFrameBoxes = 1.5f;
  std::map<std::string, int> inner;  // per call: the nodes inside its child calls
  int in_calls = 0;
  for (const FoldableCall& c : calls) {
    if (c.depth == 0) in_calls += c.nodes;
    else inner[c.parent] += c.nodes;
  }
  int max_depth = 0;
  for (const FoldableCall& c : calls) max_depth = std::max(max_depth, c.depth);
  std::set<std::string> folds;
  for (int d = max_depth; d >= 0; --d) {
    // Every call at depth d (inside an open one) folds; one holding the focus opens instead.
    folds.clear();
    std::set<std::string> closed;  // folded, or inside a folded call
    float boxes = static_cast<float>(shown_nodes - in_calls);
    for (const FoldableCall& c : calls) {
      if (!c.parent.empty() && closed.count(c.parent)) {
        closed.insert(c.key);
        continue;
      }
      if (c.depth < d || user_unfolded(o, c) || holds(c, focus) || whole_figure(c, shown_nodes)) {
        boxes += kFrameBoxes + static_cast<float>(c.nodes - inner[c.key]);
        continue;
      }
      folds.insert(c.key);
      closed.insert(c.key);
      boxes += c.backward && both ? 2.f : 1.f;
    }
    if (boxes <= budget) break;
  }
  for (auto it = folds.begin(); it != folds.end();)  // already folded by the user: not the view's
    it = o.folded.count(*it) ? folds.erase(it) : std::next(it);
  return folds;
}

int shown_node_count(const Graph& g, const LayoutOptions& o) {
  int n = 0;
  auto counts = [&](const Node& node) {
    return o.filter == PhaseFilter::both || (o.filter == PhaseFilter::backward_only) == (node.phase == Phase::backward);
  };
  if (o.only_nodes.empty()) {
    for (const Node& node : g.nodes()) n += counts(node);
  } else {
    for (int id : o.only_nodes) n += g.has_node(id) && counts(g.node(id));
  }
  return n;
}

std::set<std::string> more_folds(const std::vector<FoldableCall>& calls, const LayoutOptions& o, int shown_nodes,
                                 const GraphLayout& l, float fitted_over_min, int focus, bool fold_focus) {
  std::set<std::string> closed;
  std::vector<const FoldableCall*> cands;
  for (const FoldableCall& c : calls) {
    if ((!c.parent.empty() && closed.count(c.parent)) || call_folded(o, c.key, c.name)) {
      closed.insert(c.key);
      continue;
    }
    if (user_unfolded(o, c) || (holds(c, focus) && !fold_focus) || whole_figure(c, shown_nodes)) continue;
    cands.push_back(&c);
  }
  if (cands.empty()) return {};
  // Distance from the step being run: how many node ids lie between it and the call.
  auto distance = [focus](const FoldableCall* c) {
    int d = 1 << 30;
    for (int id : c->node_ids) d = std::min(d, std::abs(id - focus));
    return d;
  };
  std::stable_sort(cands.begin(), cands.end(), [&](const FoldableCall* a, const FoldableCall* b) {
    if (a->depth != b->depth) return a->depth < b->depth;
    if (focus >= 0 && distance(a) != distance(b)) return distance(a) > distance(b);
    return a->nodes > b->nodes;
  });
  // The figure's extent grows about linearly with its boxes: fold enough nodes at once.
  const float excess = 1.f - fitted_over_min;
  const int need = std::max(1, static_cast<int>(excess * static_cast<float>(l.boxes.size())));
  std::set<std::string> folds;
  int removed = 0;
  for (const FoldableCall* c : cands) {
    if (c->depth != cands.front()->depth || removed >= need) break;
    folds.insert(c->key);
    removed += c->nodes;
  }
  return folds;
}

FoldedToFit fold_to_fit(const Graph& g, const LayoutOptions& o, float min_zoom,
                        const std::function<float(const GraphLayout&)>& zoom_to_fit, int focus, Point room,
                        bool may_fold_focus) {
  FoldedToFit r;
  const std::vector<FoldableCall> calls = foldable_calls(g, o.only_nodes);
  const int shown = shown_node_count(g, o);
  LayoutOptions now = o;
  r.folded = initial_folds(calls, o, shown, room, focus);
  now.folded.insert(r.folded.begin(), r.folded.end());
  r.layout = layout_graph(g, now);
  bool fold_focus = false;
  for (int round = 0; round < 8 && zoom_to_fit(r.layout) < min_zoom; ++round) {
    std::set<std::string> more =
        more_folds(calls, now, shown, r.layout, zoom_to_fit(r.layout) / min_zoom, focus, fold_focus);
    if (more.empty() && may_fold_focus && !fold_focus && focus >= 0) {  // last: the call holding the step folds too
      fold_focus = true;
      more = more_folds(calls, now, shown, r.layout, zoom_to_fit(r.layout) / min_zoom, focus, fold_focus);
    }
    if (more.empty()) break;
    r.folded.insert(more.begin(), more.end());
    now.folded.insert(more.begin(), more.end());
    r.layout = layout_graph(g, now);
  }
  r.fits = zoom_to_fit(r.layout) >= min_zoom;
  return r;
}

// [SECTION] layout_graph

GraphLayout layout_graph(const Graph& g, const LayoutOptions& o) {
  FigureJob job(plan_figure(g, o), nullptr);
  job.run_all();
  return job.take();
}

}  // namespace opscope::viz
