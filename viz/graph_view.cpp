// [SECTION] index
//   helpers            colours with alpha, Bezier points, dashed curves, arrow heads, text
//   layout cache       update_layout: a new layout only when the graph or the folds change
//   semantic zoom      the readable zoom; folding calls until the graph fits; fold and unfold
//   view transform     fit, centre, keep a box in place across a re-layout, follow the step
//   input              pan; the wheel zooms, folds below the readable zoom, unfolds when zoomed in
//   canvas             background grid, the lanes' titles
//   clusters           frames of unfolded calls (click the title to fold) and of loops (badge)
//   edges              forward and gradient curves; saved tensors and links on selection
//   boxes              fills, outlines, lines of text, saved-for-backward badges
//   legend             one row along the bottom
//   selection          clicks (select, unfold) and tooltips
//   draw_graph_view    the frame, piece by piece
#include "viz/graph_view.h"

#include "viz/layout_wrap.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "core/body.h"
#include "core/timing.h"
#include "viz/graph_figure.h"
#include "viz/layout_plan.h"
#include "viz/words.h"

namespace opscope::viz {

namespace {

constexpr double kMoveSeconds = 0.35;  // re-layout animation: old positions glide to new ones
constexpr double kFlowSeconds = 3.0;  // a step's data flows along its edges this long, then rests
constexpr float kMaxZoom = 3.f;
constexpr float kFitMargin = 24.f, kLegendHeight = 30.f;

// [SECTION] helpers

ImU32 with_alpha(ImU32 c, float a) {
  const auto alpha =
      static_cast<unsigned>(static_cast<float>((c >> IM_COL32_A_SHIFT) & 0xFF) * std::clamp(a, 0.f, 1.f));
  return (c & ~IM_COL32_A_MASK) | (alpha << IM_COL32_A_SHIFT);
}

ImVec2 bezier(const ImVec2& p0, const ImVec2& p1, const ImVec2& p2, const ImVec2& p3, float t) {
  const float u = 1 - t, a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;
  return ImVec2(a * p0.x + b * p1.x + c * p2.x + d * p3.x, a * p0.y + b * p1.y + c * p2.y + d * p3.y);
}

void draw_dashed_bezier(ImDrawList* dl, const ImVec2* p, ImU32 col, float thickness) {
  constexpr int kSegments = 24;
  ImVec2 prev = p[0];
  for (int i = 1; i <= kSegments; ++i) {
    ImVec2 q = bezier(p[0], p[1], p[2], p[3], static_cast<float>(i) / kSegments);
    if (i % 2) dl->AddLine(prev, q, col, thickness);
    prev = q;
  }
}

void draw_arrow_head(ImDrawList* dl, ImVec2 from, ImVec2 tip, ImU32 col, float size) {
  ImVec2 d(tip.x - from.x, tip.y - from.y);
  float len = std::sqrt(d.x * d.x + d.y * d.y);
  if (len < 1e-3f) return;
  d = ImVec2(d.x / len, d.y / len);
  ImVec2 n(-d.y, d.x);
  ImVec2 base(tip.x - d.x * size, tip.y - d.y * size);
  dl->AddTriangleFilled(tip, ImVec2(base.x + n.x * size * 0.45f, base.y + n.y * size * 0.45f),
                        ImVec2(base.x - n.x * size * 0.45f, base.y - n.y * size * 0.45f), col);
}

void draw_text_centered(ImDrawList* dl, ImFont* font, float size, ImVec2 center, ImU32 col, const std::string& text,
                        float max_width) {
  ImVec2 ts = font->CalcTextSizeA(size, FLT_MAX, 0.f, text.c_str());
  ImVec2 pos(center.x - std::min(ts.x, max_width) * 0.5f, center.y - ts.y * 0.5f);
  ImVec4 clip(pos.x - 1, pos.y - 1, pos.x + max_width + 1, pos.y + ts.y + 1);
  dl->AddText(font, size, pos, col, text.c_str(), nullptr, 0.f, &clip);
}

// A call key "attention/heads@15" names the call "attention/heads"; a name is its own key.
std::string call_name(const std::string& key) { return key.substr(0, key.rfind('@')); }

// The lines of a box, each with its size relative to the text size.
struct BoxLine {
  const std::string* text;
  float scale;
  bool dim;
};
std::vector<BoxLine> box_lines(const LayoutBox& b) {
  std::vector<BoxLine> lines{{&b.title, 1.f, false}};
  if (!b.subtitle.empty()) lines.push_back({&b.subtitle, 0.92f, true});
  for (const auto& d : b.details) lines.push_back({&d, 0.85f, true});
  return lines;
}

}  // namespace

int node_of_key(const std::string& key) {
  if (key.size() < 2 || key[0] != 'n') return -1;
  try {
    return std::stoi(key.substr(1));
  } catch (...) {
    return -1;
  }
}

// [SECTION] layout cache

namespace {

// The view's options: its folds (the user's and its own), and text measured with its font.
LayoutOptions view_options(const GraphViewState& s, const Fonts* fonts = nullptr, float font_scale = 1.f,
                           bool with_auto = true) {
  LayoutOptions o;
  o.filter = s.filter;
  o.folded = s.folded;
  if (with_auto) o.folded.insert(s.auto_folded.begin(), s.auto_folded.end());
  o.unfolded = s.unfolded;
  o.expanded = s.expanded;
  o.only_nodes = s.only_nodes;
  o.compact = s.compact;
  if (fonts && fonts->ui) {
    ImFont* font = fonts->ui;
    const float px = font->FontSize;
    o.text_width = [font, px, font_scale](const std::string& t) {
      return font->CalcTextSizeA(px, FLT_MAX, 0.f, t.c_str()).x / font_scale;
    };
    o.line_height = px / font_scale;
  }
  return o;
}

// Makes `layout` the view's, remembering where the boxes were for the glide.
void install_layout(GraphViewState& s, LayoutKey key, GraphLayout layout, double time) {
  s.from_centers.clear();
  for (const auto& b : s.layout.boxes) s.from_centers[b.key] = b.center;
  for (const auto& [k, p] : s.start_at) s.from_centers[k] = p;
  s.start_at.clear();
  // A new graph or another phase filter is a new view (fit it); the same graph grown or folded
  // differently keeps its place on screen.
  const bool same_view = s.has_layout && key.graph == s.key.graph && key.filter == s.key.filter;
  s.unwrapped = std::move(layout);
  // A graph grown or folded differently flows into rows again (a fit also for a new canvas).
  s.row_width = s.wrap_zoom > 0 ? row_width_to_fit(s.unwrapped, s.wrap_room, s.wrap_zoom, s.scrolls) : 0.f;
  s.layout = wrap_rows(s.unwrapped, s.row_width);
  // Layouts coming faster than boxes move (a running loop's, one a frame) are shown as they are:
  // each one's boxes fading in from nothing would leave the graph blank while the loop runs.
  const bool streaming = same_view && s.installed_time >= 0 && time - s.installed_time < kMoveSeconds;
  s.relayout_time = s.has_layout && !streaming ? time : -1;
  s.installed_time = time;
  if (!same_view && !s.fitting.active) s.fit_requested = true;
  s.key = std::move(key);
  s.has_layout = true;
  ++s.layouts_done;
}

LayoutQueue& queue_of(GraphViewState& s) {
  if (!s.queue) s.queue = std::make_shared<LayoutQueue>(LayoutMode::sync);
  return *s.queue;
}

// A big call just unfolded opens one level, as a model's modules open one by one: its own calls
// are folded by the view (a click on ViT's encoder() shows its layers() and ln(), not 600 ops).
constexpr int kOpenWholeNodes = 60;
void open_one_level(GraphViewState& s, const Graph& g) {
  if (s.opened.empty()) return;
  const std::vector<FoldableCall> calls = foldable_calls(g, s.only_nodes);
  std::set<std::string> big;
  for (const FoldableCall& c : calls)
    if (c.nodes > kOpenWholeNodes && (s.opened.count(c.key) || s.opened.count(c.name))) big.insert(c.key);
  const int focus = s.fitting.active ? s.fitting.focus : -1;  // (the step being revealed stays open)
  for (const FoldableCall& c : calls)
    if (big.count(c.parent) && !s.unfolded.count(c.key) && !s.unfolded.count(c.name) &&
        std::find(c.node_ids.begin(), c.node_ids.end(), focus) == c.node_ids.end())
      s.auto_folded.insert(c.key);
  s.opened.clear();
}

// Two layout keys of the same graph object and phase filter: what differs is its nodes or its
// folds (a loop's calls are new calls each iteration, so their folds change with the nodes).
bool same_view(const LayoutKey& a, const LayoutKey& b) {
  return a.graph == b.graph && a.filter == b.filter && a.lanes == b.lanes;
}

// Asks for the layout of the graph as it is now, unless it is shown or being made already.
// Planning reads the Graph, so it happens here, on the thread that owns the graph; the rest is
// the queue's.
void request_layout(GraphViewState& s, const Graph& g, const Fonts* fonts, float font_scale) {
  open_one_level(s, g);
  const LayoutOptions o = view_options(s, fonts, font_scale);
  LayoutKey key = layout_key(g, o);
  if (s.pending && key == s.pending_key) return;
  // A layout made is shown (poll_layout) before the next is asked for: dropped here, a graph that
  // changes every frame (a loop, where layouts run in slices between frames) never showed one.
  if (s.pending && s.pending->done) return;
  // The same view of a graph that changed again while its layout is being made (a loop adds and
  // drops nodes every step): that layout finishes and is shown first, then the next is asked for
  // (a fold clicked meanwhile waits for it too). Superseding it each time would show "laying out"
  // for as long as the loop runs.
  if (s.pending && !s.pending->done && same_view(key, s.pending_key)) return;
  if (s.pending) s.pending->cancelled = true;  // superseded (what it laid out stays in the cache)
  s.pending.reset();
  if (s.has_layout && key == s.key) return;
  s.pending_key = std::move(key);
  const auto t0 = std::chrono::steady_clock::now();
  FigurePlan plan = plan_figure(g, o);
  s.plan_ms_max =
      std::max(s.plan_ms_max, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  s.pending = queue_of(s).submit(std::move(plan));
}

// Installs the layout asked for once it is made; true if it did.
bool poll_layout(GraphViewState& s, double time) {
  if (!s.pending || !s.pending->done) return false;
  const std::shared_ptr<LayoutTicket> t = std::move(s.pending);
  s.layout_ms_total += t->layout.layout_ms;
  s.layout_error = t->error;  // (then the layout is empty: the canvas says why; asked for again when the graph changes)
  install_layout(s, std::move(s.pending_key), t->error.empty() ? std::move(t->layout) : GraphLayout{}, time);
  return true;
}

}  // namespace

bool update_layout(GraphViewState& s, const Graph& g, const Fonts* fonts, float font_scale, double time) {
  request_layout(s, g, fonts, font_scale);
  if (s.pending) queue_of(s).finish(s.pending);
  return poll_layout(s, time);
}

bool layout_current(const GraphViewState& s) { return s.has_layout && !s.pending && !s.fitting.active; }

bool view_animating(const GraphViewState& s, double time) {
  return s.pending || s.fitting.active || s.fit_requested || s.fit_all ||
         (s.relayout_time >= 0 && time - s.relayout_time < kMoveSeconds) ||
         (s.flow_node >= 0 && time - s.flow_since < kFlowSeconds);
}

// [SECTION] semantic zoom

namespace {

float readable_zoom(const ImFont* font, float font_scale, float min_text_px) {
  return min_text_px * font_scale / font->FontSize;
}

float fitted_zoom(const GraphLayout& l, ImVec2 canvas) {
  const float zx = (canvas.x - 2 * kFitMargin) / std::max(1.f, l.width);
  const float zy = (canvas.y - 2 * kFitMargin - kLegendHeight) / std::max(1.f, l.height);
  return std::min(zx, zy);
}

// The canvas's drawable part, pixels (fitted_zoom's).
Point drawable(ImVec2 canvas) { return {canvas.x - 2 * kFitMargin, canvas.y - 2 * kFitMargin - kLegendHeight}; }

// A figure too long to read in one row at the readable zoom wraps into rows (layout_wrap.h);
// `scroll`: one that does not read whole wraps at the canvas's width (GraphViewState::scrolls).
void rewrap_to_fit(GraphViewState& s, ImVec2 canvas, float zmin, bool scroll = false) {
  const float w = row_width_to_fit(s.unwrapped, drawable(canvas), zmin, scroll);
  if (w == s.row_width) return;
  s.row_width = w;
  s.layout = wrap_rows(s.unwrapped, w);
}

// The canvas in layout units at the readable zoom: the room a figure has to fit in.
Point room_of(ImVec2 canvas, float zmin) {
  return {(canvas.x - 2 * kFitMargin) / zmin, (canvas.y - 2 * kFitMargin - kLegendHeight) / zmin};
}

// Fitting (a new view, the Fit button, the step moving into a folded call): the view's own folds
// chosen again, a first guess from the calls' sizes for a big graph, then a round of more folds
// after each layout that does not fit at the readable zoom. Each round is a layout of its own,
// made off the frame like any other.
// `reveal`: the focus is the step being followed; it stays open even if the figure is then cut
// (else, as Fit, everything is shown: the call holding the focus folds when nothing else is left).
void start_fit(GraphViewState& s, const Graph& g, ImVec2 canvas, float zmin, int focus, bool reveal = false) {
  const LayoutOptions o = view_options(s, nullptr, 1.f, false);
  s.auto_folded =
      initial_folds(foldable_calls(g, s.only_nodes), o, shown_node_count(g, o), room_of(canvas, zmin), focus);
  s.fitting = {true, 0, focus, !reveal, false};
  s.compact = false;  // (full titles and shape labels again, if the figure reads with them)
  s.scrolls = false;
  s.fit_requested = s.fit_all = false;
}

// After the layout asked for is installed: done (true), or more folds asked for.
bool continue_fit(GraphViewState& s, const Graph& g, ImVec2 canvas, float zmin) {
  GraphViewState::Fitting& f = s.fitting;
  const float fitted = fitted_zoom(s.layout, canvas);
  if (fitted >= zmin || f.round >= 8) return true;
  if (!s.compact) {  // short titles and no shape labels before anything folds: every op stays in view
    s.compact = true;
    ++f.round;
    return false;
  }
  const LayoutOptions o = view_options(s);
  const std::vector<FoldableCall> calls = foldable_calls(g, s.only_nodes);
  const int shown = shown_node_count(g, o);
  std::set<std::string> more = more_folds(calls, o, shown, s.layout, fitted / zmin, f.focus, f.fold_focus);
  if (more.empty() && f.may_fold_focus && !f.fold_focus &&
      f.focus >= 0) {  // Fit shows everything: the step's call folds last
    f.fold_focus = true;
    more = more_folds(calls, o, shown, s.layout, fitted / zmin, f.focus, true);
  }
  if (more.empty()) return true;
  s.auto_folded.insert(more.begin(), more.end());
  ++f.round;
  return false;
}

// The biggest call that may fold now (the wheel zoomed out past the readable zoom), or "".
std::string next_fold(const GraphViewState& s, const Graph& g, int focus) {
  const LayoutOptions o = view_options(s);
  const FoldableCall* best = nullptr;
  for (const FoldableCall& c : foldable_calls(g, s.only_nodes)) {
    if (s.unfolded.count(c.key) || s.unfolded.count(c.name) || call_folded(o, c.key, c.name)) continue;
    if (std::find(c.node_ids.begin(), c.node_ids.end(), focus) != c.node_ids.end()) continue;
    if (!best || c.depth < best->depth || (c.depth == best->depth && c.nodes > best->nodes)) best = &c;
  }
  return best ? best->key : std::string();
}

}  // namespace

void fold_call(GraphViewState& s, const std::string& key) {
  s.fitting.active = false;  // what the user folds wins over a fit still being made
  s.unfolded.erase(key);
  s.folded.insert(key);
  if (s.last_unfolded == key || call_name(s.last_unfolded) == key) s.last_unfolded.clear();
  // The folded box appears where the call's frame was.
  for (const auto& c : s.layout.clusters)
    if (c.key == key || (c.scope == key && !c.loop)) {
      s.start_at["s:" + c.key] = {(c.min.x + c.max.x) / 2, (c.min.y + c.max.y) / 2};
      s.anchor_hint = "s:" + c.key;
    }
}

void unfold_call(GraphViewState& s, const std::string& key) {
  const std::string name = call_name(key);
  s.fitting.active = false;  // what the user opens wins over a fit still being made
  s.opened.insert(key);
  s.last_unfolded = key;
  s.folded.erase(key);
  s.auto_folded.erase(key);
  for (auto it = s.auto_folded.begin(); it != s.auto_folded.end();)
    it = call_name(*it) == key ? s.auto_folded.erase(it) : std::next(it);
  if (call_folded(view_options(s), key, name)) s.unfolded.insert(key);  // folded by its name
  if (key == name) s.unfolded.insert(name);
  // The boxes inside spread out from where the folded box was.
  for (const char* prefix : {"s:", "b:"}) {
    const int bi = s.layout.find(prefix + key);
    if (bi < 0) continue;
    const LayoutBox& b = s.layout.boxes[static_cast<size_t>(bi)];
    for (int id : b.nodes) s.start_at["n" + std::to_string(id)] = b.center;
    if (*prefix == 's' && !b.nodes.empty()) s.anchor_hint = "n" + std::to_string(b.nodes.front());
  }
}

// [SECTION] view transform

void fit_view(GraphViewState& s, ImVec2 canvas, float min_zoom) {
  if (!s.has_layout || s.layout.boxes.empty()) return;
  s.zoom = std::clamp(fitted_zoom(s.layout, canvas), min_zoom, 1.6f);
  s.pan =
      ImVec2((canvas.x - s.layout.width * s.zoom) * 0.5f, (canvas.y - kLegendHeight - s.layout.height * s.zoom) * 0.5f);
  if (s.pan.x < kFitMargin) s.pan.x = kFitMargin;  // wider than the canvas: its start in view
  if (s.pan.y < kFitMargin) s.pan.y = kFitMargin;
}

void center_on(GraphViewState& s, const std::string& key, ImVec2 canvas, float min_zoom) {
  const int b = s.layout.find(key);
  if (b < 0) return;
  s.zoom = std::max(s.zoom, min_zoom);
  const Point c = s.layout.boxes[static_cast<size_t>(b)].center;
  s.pan = ImVec2(canvas.x * 0.5f - c.x * s.zoom, canvas.y * 0.45f - c.y * s.zoom);
}

namespace {

// After a re-layout the anchor box (the hint, the selection, the current step, else the first
// box) stays where it was on screen, and the others glide to their new places.
void keep_anchor_in_place(GraphViewState& s, int current_node) {
  if (s.from_centers.empty()) return;
  std::string anchor = s.anchor_hint;
  s.anchor_hint.clear();
  auto usable = [&](const std::string& k) { return !k.empty() && s.layout.find(k) >= 0 && s.from_centers.count(k); };
  if (!usable(anchor)) anchor = s.selected;
  if (!usable(anchor)) {
    const int cb = s.layout.find_node(current_node);
    anchor = cb >= 0 ? s.layout.boxes[static_cast<size_t>(cb)].key : std::string();
  }
  if (!usable(anchor))
    for (const auto& b : s.layout.boxes)
      if (s.from_centers.count(b.key)) {
        anchor = b.key;
        break;
      }
  if (!usable(anchor)) return;
  const Point now = s.layout.boxes[static_cast<size_t>(s.layout.find(anchor))].center, before = s.from_centers[anchor];
  const Point d{now.x - before.x, now.y - before.y};
  s.pan.x -= d.x * s.zoom;
  s.pan.y -= d.y * s.zoom;
  for (auto& [key, c] : s.from_centers) c = Point{c.x + d.x, c.y + d.y};
}

bool box_on_screen(const GraphViewState& s, int bi, ImVec2 size, float margin) {
  if (bi < 0) return false;
  const LayoutBox& b = s.layout.boxes[static_cast<size_t>(bi)];
  const float x = s.pan.x + b.center.x * s.zoom, y = s.pan.y + b.center.y * s.zoom;
  return x >= margin && y >= margin && x <= size.x - margin && y <= size.y - margin - kLegendHeight;
}

// What a Fit that cannot show the whole figure keeps in view (layout units): the frame of the call
// the user opened last (each row's part of it), else the box of `focus`. False: neither is drawn.
bool focus_region(const GraphViewState& s, int focus, Point* lo, Point* hi) {
  *lo = {1e30f, 1e30f};
  *hi = {-1e30f, -1e30f};
  auto grow = [&](Point a, Point b) {
    *lo = {std::min(lo->x, a.x), std::min(lo->y, a.y)};
    *hi = {std::max(hi->x, b.x), std::max(hi->y, b.y)};
  };
  if (!s.last_unfolded.empty())
    for (const LayoutCluster& c : s.layout.clusters)
      if (!c.loop && (c.key == s.last_unfolded || c.scope == s.last_unfolded)) grow(c.min, c.max);
  if (lo->x > hi->x)
    if (const int b = s.layout.find_node(focus); b >= 0) {
      const LayoutBox& box = s.layout.boxes[static_cast<size_t>(b)];
      grow({box.center.x - box.width / 2, box.center.y - box.height / 2},
           {box.center.x + box.width / 2, box.center.y + box.height / 2});
    }
  return lo->x <= hi->x;
}

// Pans so that [lo, hi] (layout units) is on screen: centred down the canvas when it fits, else its
// top at the top; never past the figure's top (no empty band above it).
void show_region(GraphViewState& s, ImVec2 size, Point lo, Point hi) {
  const float z = s.zoom, view_h = size.y - kLegendHeight - 2 * kFitMargin, view_w = size.x - 2 * kFitMargin;
  const float h = (hi.y - lo.y) * z;
  s.pan.y = h <= view_h ? kFitMargin + (view_h - h) / 2 - lo.y * z : kFitMargin - lo.y * z;
  s.pan.y = std::max(s.pan.y, size.y - kLegendHeight - kFitMargin - s.layout.height * z);  // (nor below its end)
  s.pan.y = std::min(s.pan.y, kFitMargin);
  if (lo.x * z + s.pan.x < kFitMargin) s.pan.x = kFitMargin - lo.x * z;
  else if ((hi.x - lo.x) * z <= view_w && hi.x * z + s.pan.x > size.x - kFitMargin)
    s.pan.x = size.x - kFitMargin - hi.x * z;
}

// The fitting is done: the whole figure in view at the readable zoom or closer. When it does not
// fit so and nothing is left to fold (a call the user opened stays open; a model's top level may be
// a long chain of ops), the text stays readable and the figure scrolls, as Netron and Model
// Explorer keep their text full size: in rows as wide as the canvas, so that it scrolls down only,
// as a page does, with what the student is looking at in view (the call they opened last, else the
// step), else its start. (Shrinking it below the readable size, as Fit once did, showed ViT-B/16
// with one layer open at 6.6 px: all of it, none of it legible.)
void finish_fit(GraphViewState& s, ImVec2 size, float zmin) {
  s.fitting.active = false;
  s.scrolls = fitted_zoom(s.layout, size) < zmin;
  if (s.scrolls) rewrap_to_fit(s, size, zmin, true);
  fit_view(s, size, zmin);
  Point lo, hi;
  if (s.scrolls && focus_region(s, s.fitting.focus, &lo, &hi)) show_region(s, size, lo, hi);
}

// The step moved into a call the view folded itself: unfold it, and fit again around the step
// (the calls it is inside stay open, others fold). True if it did.
bool follow_into_folds(GraphViewState& s, const Graph& g, const GraphViewFrame& f, ImVec2 size, float zmin) {
  const int b = s.layout.find_node(f.current_node);
  if (b < 0 || s.layout.boxes[static_cast<size_t>(b)].kind != BoxKind::folded_scope) return false;
  const std::string key = s.layout.boxes[static_cast<size_t>(b)].scope_key;
  if (!s.auto_folded.count(key)) return false;  // the user folded it: it stays folded
  s.anchor_hint = s.layout.boxes[static_cast<size_t>(b)].key;
  const std::string users_last = s.last_unfolded;
  unfold_call(s, key);
  s.unfolded.erase(key);  // unfolded for now, not by the user
  s.last_unfolded = users_last;
  start_fit(s, g, size, zmin, f.current_node, true);
  return true;
}

// Scrolls to what the user must see when it appears in the layout: the current step's box (it
// changed, or came out of a fold) and a newly selected box.
void scroll_to_news(GraphViewState& s, const GraphViewFrame& f, ImVec2 size) {
  if (s.follow_current && f.current_node >= 0) {
    const int b = s.layout.find_node(f.current_node);
    const std::string key = b >= 0 ? s.layout.boxes[static_cast<size_t>(b)].key : std::string();
    if (b >= 0 && (key != s.followed_box || f.current_node != s.followed_node) && !box_on_screen(s, b, size, 40.f))
      center_on(s, key, size, s.zoom);
    s.followed_box = key;
    s.followed_node = f.current_node;
  }
  if (s.selected != s.shown_selection) {
    const int b = s.layout.find(s.selected);
    if (b >= 0 && !box_on_screen(s, b, size, 40.f)) center_on(s, s.selected, size, s.zoom);
    s.shown_selection = s.selected;
  }
}

// The layout shown was made for an older version of this graph: what went since is not drawn.
void forget_gone_boxes(GraphViewState& s, const Graph& g) {
  if (s.has_layout && s.key.graph == &g && s.key.graph_version != g.version() && forget_missing(s.layout, g) > 0) {
    std::erase_if(s.expanded, [&g](int id) { return !g.has_node(id); });
    for (std::string* key : {&s.selected, &s.hovered})  // the inspector and the tooltip read the graph
      if (const int b = s.layout.find(*key); b >= 0 && s.layout.boxes[static_cast<size_t>(b)].gone) key->clear();
  }
}

// The layouts asked for and made: each made one installed; while fitting, each may ask for more
// folds (in sync mode every round is made here, in this frame). True if one was installed.
bool update_view_layout(GraphViewState& s, const Graph& g, const GraphViewFrame& f, ImVec2 size, float zmin) {
  bool relaid = false;
  for (int i = 0; i < 24; ++i) {
    request_layout(s, g, f.fonts, f.font_scale);
    if (s.pending) {
      if (!poll_layout(s, f.time)) break;
      forget_gone_boxes(s, g);  // (made while a loop went on: some of its nodes may be gone)
      relaid = true;
      continue;
    }
    if (!s.fitting.active) break;
    rewrap_to_fit(s, size, zmin);  // (each round's layout, or the one shown when its folds did not change)
    if (continue_fit(s, g, size, zmin)) {
      finish_fit(s, size, zmin);
      relaid = false;  // fitted: nothing to keep in place
      break;
    }
  }
  return relaid;
}

}  // namespace

// [SECTION] input / canvas / clusters / edges / boxes / legend / selection

namespace {

struct View {
  ImVec2 origin;  // screen position of layout (0,0)
  float zoom;
  ImVec2 to_screen(Point p) const { return ImVec2(origin.x + p.x * zoom, origin.y + p.y * zoom); }
};

// What the pieces of one frame share.
struct FrameCtx {
  GraphViewState& s;
  const GraphViewFrame& f;
  const Graph& g;
  const Theme& th;
  ImFont* font;
  ImDrawList* dl;
  ImVec2 c0, c1, size;
  View v;
  float z, text_px, zmin;
  bool show_text, canvas_hovered, canvas_active;
  std::vector<ImVec2> centers;
  std::vector<float> alphas;
  float edge_alpha = 1.f;
  int cur_box = -1, sel_box = -1, hov_box = -1;
  std::vector<std::string> hits;
  bool on_screen(ImVec2 a, ImVec2 b) const { return b.x >= c0.x && a.x <= c1.x && b.y >= c0.y && a.y <= c1.y; }
};

// The box centre this frame: gliding from its old position after a re-layout.
Point animated_center(const GraphViewState& s, const LayoutBox& b, double time, float* alpha) {
  *alpha = 1.f;
  if (s.relayout_time < 0) return b.center;
  const double t = std::clamp((time - s.relayout_time) / kMoveSeconds, 0.0, 1.0);
  const float e = static_cast<float>(1 - (1 - t) * (1 - t) * (1 - t));  // ease-out
  auto it = s.from_centers.find(b.key);
  if (it == s.from_centers.end()) {
    *alpha = e;  // a new box fades in where it lands
    return b.center;
  }
  return {it->second.x + (b.center.x - it->second.x) * e, it->second.y + (b.center.y - it->second.y) * e};
}

// Drag pans. The wheel zooms around the mouse, never below the readable zoom: there it folds
// the biggest call instead, and zooming into a folded box unfolds it.
void handle_input(GraphViewState& s, const GraphViewFrame& f, ImVec2 c0, float zmin) {
  ImGuiIO& io = ImGui::GetIO();
  if (ImGui::IsItemActive() &&
      (ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Right) ||
       ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
    s.pan.x += io.MouseDelta.x;
    s.pan.y += io.MouseDelta.y;
  }
  if (!ImGui::IsItemHovered() || io.MouseWheel == 0) return;
  const float old = s.zoom;
  float zoom = std::clamp(s.zoom * std::pow(1.15f, io.MouseWheel), std::min(zmin, s.zoom), kMaxZoom);
  const int hb = s.layout.find(s.hovered);
  if (io.MouseWheel < 0 && s.zoom * std::pow(1.15f, io.MouseWheel) < zmin) {
    const int focus = f.current_node >= 0 ? f.current_node : f.next_node;
    // (The new layout comes from the queue in a later frame; the hint keeps its place then.)
    const std::string key = next_fold(s, *f.graph, focus);
    if (!key.empty()) {
      fold_call(s, key);
      s.folded.erase(key);  // folded by the view, not by the user
      s.auto_folded.insert(key);
    }
  } else if (io.MouseWheel > 0 && hb >= 0 && s.layout.boxes[static_cast<size_t>(hb)].kind == BoxKind::folded_scope &&
             zoom >= zmin * 1.5f) {
    unfold_call(s, s.layout.boxes[static_cast<size_t>(hb)].scope_key);
  }
  s.zoom = zoom;
  s.fitting.active = s.fit_requested = false;  // the person's zoom wins over a fit still being made
  const ImVec2 m(io.MousePos.x - c0.x, io.MousePos.y - c0.y);
  s.pan.x = m.x - (m.x - s.pan.x) * (s.zoom / old);
  s.pan.y = m.y - (m.y - s.pan.y) * (s.zoom / old);
}

// A light grid moving with the view (panning shows even on an empty graph), and the lanes.
void draw_canvas(FrameCtx& c) {
  c.dl->AddRectFilled(c.c0, c.c1, c.th.canvas);
  const float step = 32.f * c.z;
  if (step > 8.f) {
    for (float x = std::fmod(c.s.pan.x, step); x < c.size.x; x += step)
      c.dl->AddLine(ImVec2(c.c0.x + x, c.c0.y), ImVec2(c.c0.x + x, c.c1.y), c.th.grid);
    for (float y = std::fmod(c.s.pan.y, step); y < c.size.y; y += step)
      c.dl->AddLine(ImVec2(c.c0.x, c.c0.y + y), ImVec2(c.c1.x, c.c0.y + y), c.th.grid);
  }
  const GraphLayout& L = c.s.layout;
  if (L.backward_lane_top < 0 || !c.show_text) return;
  // The lanes' titles stay at the canvas's left edge; a dashed line between the lanes.
  const float lp = c.text_px * 0.9f;
  const float fy = c.v.to_screen({0, 0}).y - lp * 0.2f, by = c.v.to_screen({0, L.backward_lane_top}).y - lp * 1.6f;
  const float sep = c.v.to_screen({0, L.backward_lane_top - 40.f}).y;
  for (float x = c.c0.x; x < c.c1.x; x += 14.f)
    c.dl->AddLine(ImVec2(x, sep), ImVec2(std::min(x + 7.f, c.c1.x), sep), c.th.grid, 1.5f);
  c.dl->AddText(c.font, lp, ImVec2(c.c0.x + 10, std::max(c.c0.y + 4, fy)), c.th.text_dim, tr("forward pass  →"));
  c.dl->AddText(c.font, lp, ImVec2(c.c0.x + 10, by), c.th.edge_backward, tr("←  backward pass"));
  for (float top : L.row_lane_tops) {  // a figure wrapped into rows: each row's lanes apart
    const float y = c.v.to_screen({0, top - 40.f}).y;
    if (y < c.c0.y || y > c.c1.y) continue;
    for (float x = c.c0.x; x < c.c1.x; x += 14.f)
      c.dl->AddLine(ImVec2(x, y), ImVec2(std::min(x + 7.f, c.c1.x), y), c.th.grid, 1.5f);
  }
}

// Frames of unfolded calls (click the title to fold) and of loops (a badge with the count).
void draw_clusters(FrameCtx& c) {
  c.s.drawn_clusters.clear();
  for (const auto& cl : c.s.layout.clusters) {
    const ImVec2 a = c.v.to_screen(cl.min), b = c.v.to_screen(cl.max);
    c.s.drawn_clusters.push_back({cl.key, cl.label, a, b, {}, {}, {}, {}});
    if (!c.on_screen(a, b)) continue;
    c.dl->AddRect(a, b, with_alpha(c.th.cluster_border, c.edge_alpha), 8.f * c.z, 0, cl.loop ? 1.f : 1.5f);
    if (!c.show_text) continue;
    const float lp = c.text_px * 0.85f;
    const std::string label = cl.loop ? cl.label : cl.label + (cl.node >= 0 ? "  [collapse]" : "  [fold]");
    const ImVec2 at(a.x + 6 * c.z, a.y + 3 * c.z);
    c.dl->AddText(c.font, lp, at, c.th.text_dim, label.c_str());
    const ImVec2 ts = c.font->CalcTextSizeA(lp, FLT_MAX, 0, label.c_str());
    DrawnCluster& drawn = c.s.drawn_clusters.back();
    drawn.title_min = at;
    drawn.title_max = ImVec2(at.x + ts.x, at.y + ts.y);
    if (cl.loop) {  // the badge: how many iterations ran
      const std::string badge = "×" + std::to_string(cl.iterations);
      const ImVec2 bs = c.font->CalcTextSizeA(lp, FLT_MAX, 0, badge.c_str());
      const ImVec2 ba(b.x - bs.x - 14 * c.z, a.y - bs.y * 0.6f), bb(b.x - 4 * c.z, a.y + bs.y * 0.6f);
      c.dl->AddRectFilled(ba, bb, c.th.badge_fill, bs.y);
      c.dl->AddText(c.font, lp, ImVec2(ba.x + 5 * c.z, ba.y + (bb.y - ba.y - bs.y) * 0.5f), c.th.badge_text,
                    badge.c_str());
      drawn.badge_min = ba;
      drawn.badge_max = bb;
      continue;
    }
    if (c.canvas_hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Left) &&
        ImGui::IsMouseHoveringRect(at, ImVec2(at.x + ts.x, at.y + ts.y))) {
      if (cl.node >= 0) c.s.expanded.erase(cl.node);
      else fold_call(c.s, cl.key);
    }
  }
}

// Links (a backward node to its forward node) and saved tensors read by the backward lane are
// drawn for the selected, hovered or current box only: drawn for all they cross the figure.
bool edge_shown(const FrameCtx& c, const LayoutEdge& e) {
  if (e.kind != EdgeKind::link && e.kind != EdgeKind::saved) return true;
  for (int b : {c.sel_box, c.hov_box, c.cur_box})
    if (b >= 0 && (e.from == b || e.to == b)) return true;
  return false;
}

void draw_edges(FrameCtx& c) {
  const GraphLayout& L = c.s.layout;
  const double flow_phase = std::fmod(c.f.time * 0.8, 1.0);
  if (c.f.current_node != c.s.flow_node) {
    c.s.flow_node = c.f.current_node;
    c.s.flow_since = c.f.time;
  }
  const bool flow_moves = c.f.time - c.s.flow_since < kFlowSeconds;
  c.s.drawn_edges.clear();
  for (const auto& e : L.edges) {
    if (e.spline.size() < 4 || !edge_shown(c, e)) continue;
    const bool grad = e.kind == EdgeKind::gradient;
    ImU32 col = e.kind == EdgeKind::link || e.kind == EdgeKind::saved ? c.th.link
                : grad                                                ? c.th.edge_backward
                                                                      : c.th.edge;
    col = with_alpha(col, c.edge_alpha);
    // During the move animation curves are drawn offset with their start box's motion.
    const ImVec2 now = c.v.to_screen(L.boxes[static_cast<size_t>(e.from)].center);
    const ImVec2 shift(c.centers[static_cast<size_t>(e.from)].x - now.x,
                       c.centers[static_cast<size_t>(e.from)].y - now.y);
    std::vector<ImVec2> pts;
    pts.reserve(e.spline.size());
    for (const auto& p : e.spline) {
      const ImVec2 q = c.v.to_screen(p);
      pts.push_back(ImVec2(q.x + shift.x, q.y + shift.y));
    }
    ImVec2 lo = pts[0], hi = pts[0];
    for (auto& p : pts) {
      lo = ImVec2(std::min(lo.x, p.x), std::min(lo.y, p.y));
      hi = ImVec2(std::max(hi.x, p.x), std::max(hi.y, p.y));
    }
    DrawnEdge drawn_edge;
    drawn_edge.from = L.boxes[static_cast<size_t>(e.from)].key;
    drawn_edge.to = L.boxes[static_cast<size_t>(e.to)].key;
    drawn_edge.kind = e.kind;
    drawn_edge.points = pts;
    c.s.drawn_edges.push_back(std::move(drawn_edge));
    if (!c.on_screen(lo, hi)) continue;
    const bool dashed = e.kind == EdgeKind::link || e.kind == EdgeKind::saved;
    const bool flowing = c.cur_box >= 0 && (e.to == c.cur_box || e.from == c.cur_box) && e.kind != EdgeKind::link;
    const float thick = (flowing ? 2.6f : 1.4f) * std::max(0.6f, std::min(c.z, 1.5f));
    for (size_t k = 0; k + 3 < pts.size(); k += 3) {
      if (dashed) draw_dashed_bezier(c.dl, &pts[k], col, thick);
      else c.dl->AddBezierCubic(pts[k], pts[k + 1], pts[k + 2], pts[k + 3], col, thick);
    }
    if (e.has_arrow) {  // the head at the curve's end, along its last tangent
      const ImVec2 tip = pts.back();
      ImVec2 from = pts[pts.size() - 2];
      if (std::fabs(from.x - tip.x) + std::fabs(from.y - tip.y) < 1.f) from = pts[pts.size() - 4];
      draw_arrow_head(c.dl, from, tip, col, 9.f * std::max(0.6f, std::min(c.z, 1.5f)));
    }
    if (flowing && flow_moves) {  // the current step's data moving along its edges, for a while
      const size_t segs = (pts.size() - 1) / 3;
      for (int d = 0; d < 3; ++d) {
        const double t = std::fmod(flow_phase + d / 3.0, 1.0) * static_cast<double>(segs);
        const size_t seg = std::min(segs - 1, static_cast<size_t>(t));
        const ImVec2 p =
            bezier(pts[seg * 3], pts[seg * 3 + 1], pts[seg * 3 + 2], pts[seg * 3 + 3], static_cast<float>(t - seg));
        c.dl->AddCircleFilled(p, 3.5f * std::max(0.7f, c.z), c.th.highlight);
      }
    }
    if (e.kind == EdgeKind::forward && e.has_label_pos && c.show_text && c.z >= 0.45f) {
      ImVec2 p = c.v.to_screen(e.label_pos);
      p = ImVec2(p.x + shift.x, p.y + shift.y);
      const float lp = c.text_px * 0.85f;
      const ImVec2 ts = c.font->CalcTextSizeA(lp, FLT_MAX, 0, e.label.c_str());
      const ImVec2 a(p.x - ts.x * 0.5f - 2, p.y - ts.y * 0.5f), b(p.x + ts.x * 0.5f + 2, p.y + ts.y * 0.5f);
      DrawnEdge& drawn = c.s.drawn_edges.back();
      drawn.label = e.label;
      drawn.label_min = a;
      drawn.label_max = b;
      c.dl->AddRectFilled(a, b, with_alpha(c.th.edge_label_bg, c.edge_alpha), 3.f);
      c.dl->AddText(c.font, lp, ImVec2(a.x + 2, a.y), with_alpha(c.th.text_dim, c.edge_alpha), e.label.c_str());
    }
  }
}

ImU32 box_fill(const Theme& th, const LayoutBox& b, float z, float* rounding) {
  *rounding = 7.f * z;
  switch (b.kind) {
    case BoxKind::op: return family_color(th, b.family, b.phase == Phase::backward);
    case BoxKind::parameter: *rounding = b.height * 0.5f * z; return th.param_fill;
    case BoxKind::input: *rounding = 2.f * z; return th.input_fill;
    case BoxKind::constant: *rounding = 2.f * z; return th.constant_fill;
    case BoxKind::grad_seed: *rounding = b.height * 0.5f * z; return th.seed_fill;
    case BoxKind::folded_scope: *rounding = 10.f * z; return th.folded_fill;
  }
  return th.input_fill;
}

void draw_outlines(FrameCtx& c, const LayoutBox& b, const DrawnBox& d, ImVec2 a, ImVec2 e, float rounding, float alpha,
                   bool hovered) {
  const bool bwd = b.phase == Phase::backward;
  const ImU32 border = bwd ? c.th.edge_backward : c.th.box_border;
  const float border_px = (b.kind == BoxKind::parameter ? 2.f : 1.f) * std::max(0.7f, std::min(c.z, 1.5f));
  if (b.kind == BoxKind::op && bwd)  // a stripe on the left marks a backward op
    c.dl->AddRectFilled(a, ImVec2(a.x + 4.f * c.z, e.y), with_alpha(c.th.edge_backward, alpha), rounding,
                        ImDrawFlags_RoundCornersLeft);
  c.dl->AddRect(a, e, with_alpha(border, alpha), rounding, 0, border_px);
  if (b.kind == BoxKind::folded_scope)  // a second outline: a stack of boxes, folded
    c.dl->AddRect(ImVec2(a.x + 3 * c.z, a.y + 3 * c.z), ImVec2(e.x + 3 * c.z, e.y + 3 * c.z),
                  with_alpha(border, alpha * 0.5f), rounding, 0, 1.f);
  if (d.selected)
    c.dl->AddRect(ImVec2(a.x - 3, a.y - 3), ImVec2(e.x + 3, e.y + 3), c.th.selected, rounding + 3, 0, 2.5f);
  else if (hovered)
    c.dl->AddRect(ImVec2(a.x - 2, a.y - 2), ImVec2(e.x + 2, e.y + 2), c.th.hovered, rounding + 2, 0, 2.f);
  if (d.matched)
    c.dl->AddRect(ImVec2(a.x - 5, a.y - 5), ImVec2(e.x + 5, e.y + 5), c.th.selected, rounding + 5, 0, 1.5f);
  if (d.current) c.dl->AddRect(a, e, c.th.highlight, rounding, 0, 3.5f);
  if (d.next) {  // the next step: a dashed orange outline
    const float per = 8.f;
    for (float x = a.x; x < e.x; x += 2 * per) {
      c.dl->AddLine(ImVec2(x, a.y - 4), ImVec2(std::min(x + per, e.x), a.y - 4), c.th.highlight, 2.f);
      c.dl->AddLine(ImVec2(x, e.y + 4), ImVec2(std::min(x + per, e.x), e.y + 4), c.th.highlight, 2.f);
    }
  }
}

// The title, subtitle and detail lines, centred; returns the widest line's width on screen.
float draw_box_text(FrameCtx& c, const LayoutBox& b, ImVec2 center, float alpha) {
  const std::vector<BoxLine> lines = box_lines(b);
  float total = 0, widest = 0;
  for (const auto& l : lines) {
    total += c.text_px * l.scale * 1.1f;
    widest = std::max(widest, c.font->CalcTextSizeA(c.text_px * l.scale, FLT_MAX, 0.f, l.text->c_str()).x);
  }
  if (!c.show_text) return widest;
  const float inner = b.width * c.z - 8.f * c.z;
  float y = center.y - total * 0.5f;
  for (const auto& l : lines) {
    const float h = c.text_px * l.scale * 1.1f;
    draw_text_centered(c.dl, c.font, c.text_px * l.scale, ImVec2(center.x, y + h * 0.5f),
                       with_alpha(l.dim ? c.th.text_dim : c.th.text, alpha), *l.text, inner);
    y += h;
  }
  return widest;
}

// Saved-for-backward tensors: a badge over the box's top-right corner with their bytes.
void draw_saved_badge(FrameCtx& c, const LayoutBox& b, DrawnBox& d, ImVec2 a, ImVec2 e, float alpha) {
  if (!c.show_text || (b.node < 0 && b.kind != BoxKind::folded_scope)) return;
  // One badge per node: an expanded node's is on the box of its body that makes its output.
  if (b.node >= 0 && c.s.layout.boxes[static_cast<size_t>(c.s.layout.find_node(b.node))].key != b.key) return;
  const std::string label = b.node >= 0 ? saved_badge(c.g, {b.node}) : saved_badge(c.g, b.nodes);
  if (label.empty()) return;
  const bool freed = label == "freed";
  const float bp = c.text_px * 0.78f;
  const ImVec2 ts = c.font->CalcTextSizeA(bp, FLT_MAX, 0, label.c_str());
  const ImVec2 ba(e.x - ts.x - 10.f * c.z, a.y - ts.y - 3.f * c.z), bb(e.x, a.y - 1.f * c.z);
  d.badge_min = ba;
  d.badge_max = bb;
  if (freed) {
    c.dl->AddRectFilled(ba, bb, with_alpha(c.th.canvas, alpha), ts.y);
    c.dl->AddRect(ba, bb, with_alpha(c.th.badge_fill, alpha * 0.7f), ts.y, 0, 1.f);
  } else {
    c.dl->AddRectFilled(ba, bb, with_alpha(c.th.badge_fill, alpha), ts.y);
  }
  c.dl->AddText(c.font, bp, ImVec2(ba.x + 5.f * c.z, ba.y + 1.f * c.z),
                with_alpha(freed ? c.th.text_dim : c.th.badge_text, alpha), label.c_str());
}

std::string draw_boxes(FrameCtx& c) {
  const GraphLayout& L = c.s.layout;
  std::string hovered;
  c.s.drawn.clear();
  c.s.drawn.reserve(L.boxes.size());
  for (size_t i = 0; i < L.boxes.size(); ++i) {
    const LayoutBox& b = L.boxes[i];
    const ImVec2 half(b.width * 0.5f * c.z, b.height * 0.5f * c.z);
    const ImVec2 a(c.centers[i].x - half.x, c.centers[i].y - half.y),
        e(c.centers[i].x + half.x, c.centers[i].y + half.y);
    DrawnBox d;
    d.key = b.key;
    d.node = b.node;
    d.kind = b.kind;
    d.lane = b.lane;
    d.phase = b.phase;
    d.anchor = b.anchor;
    d.folded_nodes = static_cast<int>(b.nodes.size());
    d.title = b.title;
    d.subtitle = b.subtitle;
    d.min = a;
    d.max = e;
    // (An expanded node's ops all run in its step; its body's constants are not steps.)
    const auto in_box = [&](int node) {
      return node >= 0 && (L.find_node(node) == static_cast<int>(i) || (b.body_node >= 0 && b.node == node));
    };
    d.current = in_box(c.f.current_node);
    d.next = in_box(c.f.next_node);
    d.selected = b.key == c.s.selected;
    d.matched = std::find(c.hits.begin(), c.hits.end(), b.key) != c.hits.end();
    if (!c.on_screen(a, e)) {
      d.label_px = draw_box_text(c, b, c.centers[i], 0.f);
      c.s.drawn.push_back(std::move(d));
      continue;
    }
    const bool is_hovered = c.canvas_hovered && ImGui::IsMouseHoveringRect(a, e);
    if (is_hovered) hovered = b.key;
    float alpha = c.alphas[i] * (b.gone ? 0.45f : 1.f);  // gone: a loop's earlier iteration, until the next layout
    if (!c.hits.empty() && !d.matched) alpha *= 0.35f;
    float rounding;
    const ImU32 fill = box_fill(c.th, b, c.z, &rounding);
    if (d.current)  // a soft glow behind the current step
      for (int k = 3; k >= 1; --k) {
        const float gpx = 3.f * static_cast<float>(k) * std::max(c.z, 0.5f);
        c.dl->AddRectFilled(ImVec2(a.x - gpx, a.y - gpx), ImVec2(e.x + gpx, e.y + gpx),
                            with_alpha(c.th.highlight, 0.12f), rounding + gpx);
      }
    c.dl->AddRectFilled(a, e, with_alpha(fill, alpha), rounding);
    draw_outlines(c, b, d, a, e, rounding, alpha, is_hovered);
    d.label_px = draw_box_text(c, b, c.centers[i], alpha);
    draw_saved_badge(c, b, d, a, e, alpha);
    c.s.drawn.push_back(std::move(d));
  }
  return hovered;
}

// One row along the bottom (fit_view keeps it clear of the graph).
void draw_legend(FrameCtx& c) {
  const Theme& th = c.th;
  const float lp = c.font->FontSize * 0.8f, h = lp * 1.2f, sw = lp * 1.5f;
  struct Item {
    ImU32 fill, border;
    const char* text;
    float rounding;
  };
  const Item items[] = {{th.param_fill, th.box_border, tr("parameter"), h * 0.5f},
                        {th.input_fill, th.box_border, tr("input / constant"), 2.f},
                        {family_color(th, "elementwise", false), th.box_border, tr("forward op"), 4.f},
                        {family_color(th, "elementwise", true), th.edge_backward, tr("backward op"), 4.f},
                        {th.folded_fill, th.box_border, tr("folded call"), 6.f},
                        {th.canvas, th.highlight, tr("last step"), 4.f},
                        {th.badge_fill, th.badge_fill, tr("saved for backward"), h * 0.5f}};
  ImVec2 p(c.c0.x + 10, c.c1.y - h - 8);
  c.dl->AddRectFilled(ImVec2(c.c0.x, p.y - 5), c.c1, with_alpha(th.canvas, 0.92f));
  for (const auto& it : items) {
    c.dl->AddRectFilled(p, ImVec2(p.x + sw, p.y + h), it.fill, it.rounding);
    c.dl->AddRect(p, ImVec2(p.x + sw, p.y + h), it.border, it.rounding, 0, it.border == th.highlight ? 2.5f : 1.f);
    c.dl->AddText(c.font, lp, ImVec2(p.x + sw + 5, p.y + (h - lp) * 0.5f), th.text_dim, it.text);
    p.x += sw + 5 + c.font->CalcTextSizeA(lp, FLT_MAX, 0, it.text).x + 16;
  }
  const char* help = tr("drag: pan · wheel: zoom (folds, unfolds) · F: fit · click: inspect, unfold");
  const float hw = c.font->CalcTextSizeA(lp, FLT_MAX, 0, help).x;
  if (p.x + hw + 10 < c.c1.x)
    c.dl->AddText(c.font, lp, ImVec2(c.c1.x - hw - 10, p.y + (h - lp) * 0.5f), th.text_dim, help);
}

// "laying out the graph: 3 of 14 steps", while a layout is being made.
// What an empty graph says: the statement to type (the same in every language).
std::string empty_graph_text() {
  char text[200];
  std::snprintf(text, sizeof text, tr("The graph is empty: type  %s  in the console"), kEmptyGraphStatement);
  return text;
}

std::string progress_text(const GraphViewState& s) {
  if (!s.pending) return tr("laying out the graph ...");
  char text[160];
  std::snprintf(text, sizeof text, tr("laying out the graph: %d of %d steps"), s.pending->steps_done.load(),
                s.pending->steps_total.load());
  return text;
}

void draw_progress_bar(FrameCtx& c, const GraphViewState& s) {
  const float done = s.pending ? static_cast<float>(s.pending->steps_done.load()) /
                                     static_cast<float>(std::max(1, s.pending->steps_total.load()))
                               : 0.f;
  const ImVec2 mid((c.c0.x + c.c1.x) * 0.5f, (c.c0.y + c.c1.y) * 0.5f + c.font->FontSize * 1.5f);
  const ImVec2 a(mid.x - 120, mid.y), b(mid.x + 120, mid.y + 6);
  c.dl->AddRectFilled(a, b, c.th.grid, 3.f);
  c.dl->AddRectFilled(a, ImVec2(a.x + (b.x - a.x) * std::clamp(done, 0.f, 1.f), b.y), c.th.highlight, 3.f);
}

void draw_tooltip(const FrameCtx& c, const LayoutBox& b) {
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(b.full_title.empty() ? b.title.c_str() : b.full_title.c_str());
  if (!b.subtitle.empty()) ImGui::TextDisabled("%s", b.subtitle.c_str());
  if (b.node >= 0) {
    const Node& n = c.g.node(b.node);
    if (n.op) ImGui::TextWrapped("%s", n.op->doc.c_str());
    ImGui::Text("%s  ·  %s", phase_name(n.phase), n.op ? n.op->family.c_str() : "");
    for (int vid : n.outputs) {
      const ValueInfo& vi = c.g.value(vid);
      ImGui::Text("out %s %s %s", vi.name.empty() ? ("%" + std::to_string(vid)).c_str() : vi.name.c_str(),
                  shape_str(vi.meta.shape).c_str(), dtype_name(vi.meta.dtype));
    }
    if (n.stats.runs) ImGui::Text(tr("last run %s"), duration_text(static_cast<double>(n.stats.last_time_ns)).c_str());
    if (b.body_node >= 0)
      ImGui::TextDisabled("op %d of #%d's body; click [collapse] on the frame to fold it", b.body_node, b.node);
    else if (node_body(c.g, n)) ImGui::TextDisabled("%s", tr("double-click to show the ops inside it"));
  } else if (b.kind == BoxKind::folded_scope) {
    for (const auto& d : b.details) ImGui::TextDisabled("%s", d.c_str());
    ImGui::TextDisabled("%s", tr("click (or zoom in) to unfold"));
  } else if (b.value >= 0 && !c.g.value(b.value).origin.empty()) {
    const ValueInfo& vi = c.g.value(b.value);
    ImGui::TextDisabled(tr("made by %s (line %d)"), vi.origin.c_str(), vi.origin_line);
  }
  // The shapes of its edges whose labels had no room at this size (layout_wrap.h).
  const int bi = c.s.layout.find(b.key);
  for (const LayoutEdge& e : c.s.layout.edges)
    if (e.label_dropped && (e.to == bi || e.from == bi))
      ImGui::TextDisabled("%s %s  %s", e.to == bi ? "in " : "out", e.label.c_str(),
                          c.s.layout.boxes[static_cast<size_t>(e.to == bi ? e.from : e.to)].title.c_str());
  ImGui::EndTooltip();
}

// A click (no drag) selects a box, or unfolds a folded one; hovering shows a tooltip.
void handle_selection(FrameCtx& c, const std::string& hovered) {
  GraphViewState& s = c.s;
  if (c.canvas_hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
      ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).x == 0 &&
      ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).y == 0) {
    const int hb = s.layout.find(hovered);
    if (hb >= 0 && s.layout.boxes[static_cast<size_t>(hb)].kind == BoxKind::folded_scope)
      unfold_call(s, s.layout.boxes[static_cast<size_t>(hb)].scope_key);
    else s.selected = hovered;
  }
  // Double-clicking a node with a body (an @op, a fused node) shows the ops inside it.
  if (c.canvas_hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left))
    if (const int hb = s.layout.find(hovered); hb >= 0 && s.layout.boxes[static_cast<size_t>(hb)].body_node < 0) {
      const int node = s.layout.boxes[static_cast<size_t>(hb)].node;
      if (node >= 0 && node_body(c.g, c.g.node(node))) s.expanded.insert(node);
    }
  if (!hovered.empty()) draw_tooltip(c, s.layout.boxes[static_cast<size_t>(s.layout.find(hovered))]);
}

}  // namespace

// [SECTION] draw_graph_view

void draw_graph_view(GraphViewState& s, const GraphViewFrame& f, ImVec2 size) {
  const Graph& g = *f.graph;
  forget_gone_boxes(s, g);
  ImFont* font = f.fonts && f.fonts->ui ? f.fonts->ui : ImGui::GetFont();
  const float zmin = readable_zoom(font, f.font_scale, f.min_text_px);
  s.min_text_px = f.min_text_px;
  const size_t boxes_before = s.layout.boxes.size();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  size = ImVec2(std::max(size.x > 0 ? size.x : avail.x, 50.f), std::max(size.y > 0 ? size.y : avail.y, 50.f));
  s.wrap_room = drawable(size);
  s.wrap_zoom = zmin;
  const ImVec2 c0 = ImGui::GetCursorScreenPos(), c1(c0.x + size.x, c0.y + size.y);
  s.canvas_min = c0;
  s.canvas_max = c1;
  ImGui::InvisibleButton("graph_canvas", size,
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight |
                             ImGuiButtonFlags_MouseButtonMiddle);

  // Another graph or phase filter is a new view: fitted, and its folds chosen before it is laid
  // out (a big model is never laid out whole).
  if (s.has_layout && (s.key.graph != &g || s.key.filter != s.filter) && !s.fitting.active) s.fit_requested = true;
  const int focus = f.current_node >= 0 ? f.current_node : f.next_node;
  if (s.fit_requested || s.fit_all) start_fit(s, g, size, zmin, focus);
  // (The step's box is looked up in the layout shown: only once that is this graph's, laid out.)
  else if (s.follow_current && f.current_node != s.followed_node && !s.fitting.active && !s.pending &&
           s.key.graph == &g)
    follow_into_folds(s, g, f, size, zmin);
  bool relaid = update_view_layout(s, g, f, size, zmin);
  // A grown graph keeps its view; the next node to run is scrolled into view.
  if (relaid && !s.fitting.active && s.layout.boxes.size() > boxes_before && f.next_node >= 0 &&
      !box_on_screen(s, s.layout.find_node(f.next_node), size, 0))
    s.fit_requested = true;
  if (relaid) keep_anchor_in_place(s, f.current_node);
  if (!s.fitting.active && !s.pending) scroll_to_news(s, f, size);
  if (s.last_search != s.search) {  // a new search: show its first hit
    s.last_search = s.search;
    const auto hits = search_boxes(s.layout, g, s.search);
    if (!hits.empty()) center_on(s, hits.front(), size, std::max(zmin, 0.7f));
  }
  handle_input(s, f, c0, zmin);

  FrameCtx c{s,
             f,
             g,
             *f.theme,
             font,
             ImGui::GetWindowDrawList(),
             c0,
             c1,
             size,
             View{ImVec2(c0.x + s.pan.x, c0.y + s.pan.y), s.zoom},
             s.zoom,
             0,
             zmin,
             false,
             ImGui::IsItemHovered(),
             ImGui::IsItemActive(),
             {},
             {},
             1.f,
             -1,
             -1,
             -1,
             {}};
  c.text_px = font->FontSize * c.z / f.font_scale;
  c.show_text = c.text_px >= 6.f;
  s.text_px = c.text_px;
  c.dl->PushClipRect(c0, c1, true);
  draw_canvas(c);
  const GraphLayout& L = s.layout;
  // Until the first layout of this graph is made: how far it got (another graph's figure, or
  // none, is not shown meanwhile).
  const bool making = s.pending || s.fitting.active;
  if (L.boxes.empty() || (making && s.key.graph != &g)) {
    draw_text_centered(c.dl, font, font->FontSize, ImVec2((c0.x + c1.x) * 0.5f, (c0.y + c1.y) * 0.5f), c.th.text_dim,
                       making                    ? progress_text(s)
                       : !s.layout_error.empty() ? tr("The graph could not be laid out: ") + s.layout_error
                                                 : empty_graph_text(),
                       size.x);
    if (making) draw_progress_bar(c, s);
    c.dl->PopClipRect();
    s.drawn.clear();
    s.drawn_edges.clear();
    return;
  }
  c.centers.resize(L.boxes.size());
  c.alphas.resize(L.boxes.size());
  for (size_t i = 0; i < L.boxes.size(); ++i)
    c.centers[i] = c.v.to_screen(animated_center(s, L.boxes[i], f.time, &c.alphas[i]));
  const bool settled = s.relayout_time < 0 || f.time - s.relayout_time >= kMoveSeconds;
  c.edge_alpha = settled ? 1.f : static_cast<float>(std::clamp((f.time - s.relayout_time) / kMoveSeconds, 0.0, 1.0));
  c.cur_box = L.find_node(f.current_node);
  c.sel_box = L.find(s.selected);
  c.hov_box = L.find(s.hovered);
  c.hits = search_boxes(L, g, s.search);

  draw_clusters(c);
  draw_edges(c);
  const std::string hovered = draw_boxes(c);
  s.hovered = hovered;
  draw_legend(c);
  if (making)
    draw_text_centered(c.dl, font, font->FontSize * 0.85f, ImVec2(c1.x - 160, c0.y + 14), c.th.text_dim,
                       progress_text(s), 300);
  handle_selection(c, hovered);
  c.dl->PopClipRect();
}

}  // namespace opscope::viz
