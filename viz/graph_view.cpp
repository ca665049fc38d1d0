#include "viz/graph_view.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/body.h"

namespace opscope::viz {

namespace {

constexpr double kMoveSeconds = 0.35;  // re-layout animation: old positions glide to new ones
constexpr float kMinZoom = 0.08f, kMaxZoom = 3.f;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

ImU32 with_alpha(ImU32 c, float a) {
  const auto alpha = static_cast<unsigned>(static_cast<float>((c >> IM_COL32_A_SHIFT) & 0xFF) * std::clamp(a, 0.f, 1.f));
  return (c & ~IM_COL32_A_MASK) | (alpha << IM_COL32_A_SHIFT);
}

ImVec2 bezier(const ImVec2& p0, const ImVec2& p1, const ImVec2& p2, const ImVec2& p3, float t) {
  const float u = 1 - t, a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;
  return ImVec2(a * p0.x + b * p1.x + c * p2.x + d * p3.x, a * p0.y + b * p1.y + c * p2.y + d * p3.y);
}

// [SECTION] transforms
struct View {
  ImVec2 origin;  // screen position of layout (0,0)
  float zoom;
  ImVec2 to_screen(Point p) const { return ImVec2(origin.x + p.x * zoom, origin.y + p.y * zoom); }
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

std::string saved_bytes_label(const Graph& g, const Node& n, bool* released) {
  int64_t bytes = 0;
  *released = n.saved_released;
  for (const auto& st : n.saved)
    if (st.tensor.defined()) bytes += st.tensor.nbytes();
  if (bytes == 0 && !n.saved.empty()) {
    *released = true;
    for (const auto& st : n.saved) {
      const auto& m = g.value(st.value_id).meta;
      bytes += shape_numel(m.shape) * static_cast<int64_t>(dtype_size(m.dtype));
    }
  }
  return bytes_str(bytes);
}

// [SECTION] drawing pieces
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

}  // namespace

int node_of_key(const std::string& key) {
  if (key.size() < 2 || key[0] != 'n') return -1;
  try {
    return std::stoi(key.substr(1));
  } catch (...) {
    return -1;
  }
}

std::vector<std::string> search_boxes(const GraphLayout& l, const std::string& query) {
  std::vector<std::string> hits;
  if (query.empty()) return hits;
  const std::string q = lower(query);
  for (const auto& b : l.boxes)
    if (lower(b.title).find(q) != std::string::npos || lower(b.subtitle).find(q) != std::string::npos ||
        lower(b.family) == q)
      hits.push_back(b.key);
  return hits;
}

void fit_view(GraphViewState& s, ImVec2 canvas) {
  if (!s.has_layout || s.layout.boxes.empty()) return;
  const float margin = 24.f, legend = 30.f;  // the legend row along the bottom
  const float zx = (canvas.x - 2 * margin) / std::max(1.f, s.layout.width);
  const float zy = (canvas.y - 2 * margin - legend) / std::max(1.f, s.layout.height);
  s.zoom = std::clamp(std::min(zx, zy), kMinZoom, 1.6f);
  s.pan = ImVec2((canvas.x - s.layout.width * s.zoom) * 0.5f, (canvas.y - legend - s.layout.height * s.zoom) * 0.5f);
}

void center_on(GraphViewState& s, const std::string& key, ImVec2 canvas, float min_zoom) {
  const int b = s.layout.find(key);
  if (b < 0) return;
  s.zoom = std::max(s.zoom, min_zoom);
  const Point c = s.layout.boxes[static_cast<size_t>(b)].center;
  s.pan = ImVec2(canvas.x * 0.5f - c.x * s.zoom, canvas.y * 0.45f - c.y * s.zoom);
}

bool update_layout(GraphViewState& s, const Graph& g, const Fonts* fonts, float font_scale, double time) {
  LayoutOptions o;
  o.filter = s.filter;
  o.left_to_right = s.left_to_right;
  o.folded = s.folded;
  o.expanded = s.expanded;
  o.only_nodes = s.only_nodes;
  LayoutKey key = layout_key(g, o);
  if (s.has_layout && key == s.key) return false;
  if (fonts && fonts->ui) {
    ImFont* font = fonts->ui;
    const float px = font->FontSize;
    o.text_width = [font, px, font_scale](const std::string& t) {
      return font->CalcTextSizeA(px, FLT_MAX, 0.f, t.c_str()).x / font_scale;
    };
    o.line_height = px / font_scale;
  }
  s.from_centers.clear();
  for (const auto& b : s.layout.boxes) s.from_centers[b.key] = b.center;
  const bool structure_only_grew = s.has_layout && key.filter == s.key.filter && key.folded == s.key.folded && key.expanded == s.key.expanded &&
                                   key.left_to_right == s.key.left_to_right;
  s.layout = layout_graph(g, o);
  s.relayout_time = s.has_layout ? time : -1;
  if (!structure_only_grew) s.fit_requested = true;  // a new view: show all of it
  s.key = std::move(key);
  s.has_layout = true;
  ++s.layouts_done;
  return true;
}

// [SECTION] the view
void draw_graph_view(GraphViewState& s, const GraphViewFrame& f, ImVec2 size) {
  const Graph& g = *f.graph;
  const Theme& th = *f.theme;
  ImFont* font = f.fonts && f.fonts->ui ? f.fonts->ui : ImGui::GetFont();
  const size_t boxes_before = s.layout.boxes.size();
  const bool relaid = update_layout(s, g, f.fonts, f.font_scale, f.time);

  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  size.x = std::max(size.x, 50.f);
  size.y = std::max(size.y, 50.f);
  const ImVec2 c0 = ImGui::GetCursorScreenPos(), c1(c0.x + size.x, c0.y + size.y);
  s.canvas_min = c0;
  s.canvas_max = c1;
  ImGui::InvisibleButton("graph_canvas", size,
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight | ImGuiButtonFlags_MouseButtonMiddle);
  const bool canvas_hovered = ImGui::IsItemHovered();
  const bool canvas_active = ImGui::IsItemActive();
  ImGuiIO& io = ImGui::GetIO();

  // A re-laid-out graph keeps its place on screen: an anchor box (the selection, else the
  // current step, else the first box) stays put, and the others glide to their new places.
  if (relaid && !s.fit_requested && !s.from_centers.empty()) {
    std::string anchor = s.selected;
    if (s.layout.find(anchor) < 0 || !s.from_centers.count(anchor)) {
      const int cb = s.layout.find_node(f.current_node);
      anchor = cb >= 0 ? s.layout.boxes[static_cast<size_t>(cb)].key : std::string();
    }
    if (anchor.empty() || !s.from_centers.count(anchor))
      for (const auto& b : s.layout.boxes)
        if (s.from_centers.count(b.key)) {
          anchor = b.key;
          break;
        }
    const int ab = s.layout.find(anchor);
    if (ab >= 0 && s.from_centers.count(anchor)) {
      const Point now = s.layout.boxes[static_cast<size_t>(ab)].center, before = s.from_centers[anchor];
      const Point d{now.x - before.x, now.y - before.y};
      s.pan.x -= d.x * s.zoom;
      s.pan.y -= d.y * s.zoom;
      for (auto& [key, c] : s.from_centers) c = Point{c.x + d.x, c.y + d.y};
    }
  }
  // A grown graph keeps its view; the next node to run is scrolled into view.
  if (relaid && s.layout.boxes.size() > boxes_before && !s.fit_requested && f.next_node >= 0) {
    int bi = s.layout.find_node(f.next_node);
    if (bi >= 0) {
      ImVec2 p(s.pan.x + s.layout.boxes[bi].center.x * s.zoom, s.pan.y + s.layout.boxes[bi].center.y * s.zoom);
      if (p.x < 0 || p.y < 0 || p.x > size.x || p.y > size.y) s.fit_requested = true;
    }
  }
  if (s.fit_requested || s.fit_all) {
    fit_view(s, size);
    // Too big to read when fitted: show the step being run, readable (Fit shows everything).
    constexpr float kReadable = 0.45f;
    const int focus = f.current_node >= 0 ? f.current_node : f.next_node;
    if (!s.fit_all && s.zoom < kReadable && focus >= 0) {
      const int b = s.layout.find_node(focus);
      if (b >= 0) center_on(s, s.layout.boxes[static_cast<size_t>(b)].key, size, 0.9f);
    }
    s.fit_requested = s.fit_all = false;
  }
  // Follow the steps: when the current node changes and sits near or past the edge, centre it.
  if (s.follow_current && f.current_node != s.followed_node) {
    s.followed_node = f.current_node;
    const int b = s.layout.find_node(f.current_node);
    if (b >= 0) {
      const LayoutBox& bx = s.layout.boxes[static_cast<size_t>(b)];
      const float x = s.pan.x + bx.center.x * s.zoom, y = s.pan.y + bx.center.y * s.zoom, m = 40.f;
      if (x < m || y < m || x > size.x - m || y > size.y - m - 30.f) center_on(s, bx.key, size, s.zoom);
    }
  }
  if (s.last_search != s.search) {  // a new search: show its first hit
    s.last_search = s.search;
    const auto hits = search_boxes(s.layout, s.search);
    if (!hits.empty()) center_on(s, hits.front(), size, 0.7f);
  }

  // [SECTION] input: pan with any drag on the background, zoom around the mouse
  if (canvas_active && (ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Right) ||
                        ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
    s.pan.x += io.MouseDelta.x;
    s.pan.y += io.MouseDelta.y;
  }
  if (canvas_hovered && io.MouseWheel != 0) {
    const float old = s.zoom;
    s.zoom = std::clamp(s.zoom * std::pow(1.15f, io.MouseWheel), kMinZoom, kMaxZoom);
    const ImVec2 m(io.MousePos.x - c0.x, io.MousePos.y - c0.y);
    s.pan.x = m.x - (m.x - s.pan.x) * (s.zoom / old);
    s.pan.y = m.y - (m.y - s.pan.y) * (s.zoom / old);
  }

  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(c0, c1, true);
  dl->AddRectFilled(c0, c1, th.canvas);
  // A light grid moving with the view, so panning is visible even on an empty graph.
  const float step = 32.f * s.zoom;
  if (step > 8.f) {
    for (float x = std::fmod(s.pan.x, step); x < size.x; x += step) dl->AddLine(ImVec2(c0.x + x, c0.y), ImVec2(c0.x + x, c1.y), th.grid);
    for (float y = std::fmod(s.pan.y, step); y < size.y; y += step) dl->AddLine(ImVec2(c0.x, c0.y + y), ImVec2(c1.x, c0.y + y), th.grid);
  }
  const View v{ImVec2(c0.x + s.pan.x, c0.y + s.pan.y), s.zoom};
  const float z = s.zoom;
  const float text_px = font->FontSize * z / f.font_scale;
  const bool show_text = text_px >= 6.f;
  const GraphLayout& L = s.layout;

  if (L.boxes.empty()) {
    draw_text_centered(dl, font, font->FontSize, ImVec2((c0.x + c1.x) * 0.5f, (c0.y + c1.y) * 0.5f), th.text_dim,
                       "The graph is empty: type  c = a + b  in the console", size.x);
    dl->PopClipRect();
    s.drawn.clear();
    return;
  }

  std::vector<ImVec2> centers(L.boxes.size());
  std::vector<float> alphas(L.boxes.size());
  for (size_t i = 0; i < L.boxes.size(); ++i) {
    Point p = animated_center(s, L.boxes[i], f.time, &alphas[i]);
    centers[i] = v.to_screen(p);
  }
  const bool settled = s.relayout_time < 0 || f.time - s.relayout_time >= kMoveSeconds;
  const float edge_alpha = settled ? 1.f : static_cast<float>(std::clamp((f.time - s.relayout_time) / kMoveSeconds, 0.0, 1.0));

  // [SECTION] clusters (unfolded composite functions); click the name to fold
  for (const auto& c : L.clusters) {
    ImVec2 a = v.to_screen(c.min), b = v.to_screen(c.max);
    dl->AddRect(a, b, with_alpha(th.cluster_border, edge_alpha), 8.f * z, 0, 1.5f);
    if (show_text) {
      std::string label = c.node >= 0 ? c.scope + "  [collapse]" : c.scope + "()  [fold]";
      dl->AddText(font, text_px, ImVec2(a.x + 6 * z, a.y + 3 * z), th.text_dim, label.c_str());
      ImVec2 ts = font->CalcTextSizeA(text_px, FLT_MAX, 0, label.c_str());
      if (canvas_hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Left) &&
          ImGui::IsMouseHoveringRect(ImVec2(a.x + 6 * z, a.y + 3 * z), ImVec2(a.x + 6 * z + ts.x, a.y + 3 * z + ts.y)))
      {
        if (c.node >= 0) s.expanded.erase(c.node);
        else s.folded.insert(c.scope);
      }
    }
  }

  // Culling: skip what is off screen (300-node graphs stay fast when zoomed in).
  auto on_screen = [&](ImVec2 a, ImVec2 b) { return b.x >= c0.x && a.x <= c1.x && b.y >= c0.y && a.y <= c1.y; };

  // [SECTION] edges: forward grey, backward pink, links from a backward node to its forward node dashed
  const int cur_box = L.find_node(f.current_node);
  const double flow_phase = std::fmod(f.time * 0.8, 1.0);
  // Links from a backward node to the forward node it differentiates are drawn only for the
  // selected, hovered or current node: drawn for all they cross the whole picture.
  const int sel_box = L.find(s.selected), hov_box = L.find(s.hovered);
  for (const auto& e : L.edges) {
    if (e.spline.size() < 4) continue;
    if (e.link && e.from != sel_box && e.to != sel_box && e.from != hov_box && e.to != hov_box && e.from != cur_box) continue;
    const LayoutBox& to = L.boxes[static_cast<size_t>(e.to)];
    const bool bwd = to.phase == Phase::backward;
    ImU32 col = e.link ? th.link : bwd ? th.edge_backward : th.edge;
    col = with_alpha(col, edge_alpha);
    // During the move animation splines are drawn offset with their end boxes' motion.
    ImVec2 shift_from(centers[e.from].x - v.to_screen(L.boxes[e.from].center).x, centers[e.from].y - v.to_screen(L.boxes[e.from].center).y);
    std::vector<ImVec2> pts;
    pts.reserve(e.spline.size());
    for (const auto& p : e.spline) {
      ImVec2 q = v.to_screen(p);
      pts.push_back(ImVec2(q.x + shift_from.x, q.y + shift_from.y));
    }
    ImVec2 lo = pts[0], hi = pts[0];
    for (auto& p : pts) {
      lo = ImVec2(std::min(lo.x, p.x), std::min(lo.y, p.y));
      hi = ImVec2(std::max(hi.x, p.x), std::max(hi.y, p.y));
    }
    if (!on_screen(lo, hi)) continue;
    const bool flowing = cur_box >= 0 && (e.to == cur_box || e.from == cur_box) && !e.link;
    const float thick = (flowing ? 2.6f : 1.4f) * std::max(0.6f, std::min(z, 1.5f));
    for (size_t k = 0; k + 3 < pts.size(); k += 3) {
      if (e.link) draw_dashed_bezier(dl, &pts[k], col, thick);
      else dl->AddBezierCubic(pts[k], pts[k + 1], pts[k + 2], pts[k + 3], col, thick);
    }
    if (e.has_arrow) {  // the head at the curve's end, along its last tangent
      const ImVec2 tip = pts.back();
      ImVec2 from = pts[pts.size() - 2];
      if (std::fabs(from.x - tip.x) + std::fabs(from.y - tip.y) < 1.f) from = pts[pts.size() - 4];
      draw_arrow_head(dl, from, tip, col, 9.f * std::max(0.6f, std::min(z, 1.5f)));
    }
    // The current step's data moving along its edges: dots travelling towards the arrow.
    if (flowing) {
      const size_t segs = (pts.size() - 1) / 3;
      for (int d = 0; d < 3; ++d) {
        double t = std::fmod(flow_phase + d / 3.0, 1.0) * static_cast<double>(segs);
        size_t seg = std::min(segs - 1, static_cast<size_t>(t));
        ImVec2 p = bezier(pts[seg * 3], pts[seg * 3 + 1], pts[seg * 3 + 2], pts[seg * 3 + 3], static_cast<float>(t - seg));
        dl->AddCircleFilled(p, 3.5f * std::max(0.7f, z), th.highlight);
      }
    }
    if (!e.link && e.has_label_pos && show_text && z >= 0.45f) {
      ImVec2 p = v.to_screen(e.label_pos);
      p = ImVec2(p.x + shift_from.x, p.y + shift_from.y);
      const float lp = text_px * 0.85f;
      ImVec2 ts = font->CalcTextSizeA(lp, FLT_MAX, 0, e.label.c_str());
      ImVec2 a(p.x - ts.x * 0.5f - 2, p.y - ts.y * 0.5f), b(p.x + ts.x * 0.5f + 2, p.y + ts.y * 0.5f);
      dl->AddRectFilled(a, b, with_alpha(th.edge_label_bg, edge_alpha), 3.f);
      dl->AddText(font, lp, ImVec2(a.x + 2, a.y), with_alpha(bwd ? th.edge_backward : th.text_dim, edge_alpha), e.label.c_str());
    }
  }

  // [SECTION] boxes
  const std::vector<std::string> hits = search_boxes(L, s.search);
  std::string hovered;
  s.drawn.clear();
  s.drawn.reserve(L.boxes.size());
  for (size_t i = 0; i < L.boxes.size(); ++i) {
    const LayoutBox& b = L.boxes[i];
    const ImVec2 half(b.width * 0.5f * z, b.height * 0.5f * z);
    const ImVec2 a(centers[i].x - half.x, centers[i].y - half.y), c(centers[i].x + half.x, centers[i].y + half.y);
    DrawnBox d;
    d.key = b.key;
    d.node = b.node;
    d.title = b.title;
    d.subtitle = b.subtitle;
    d.min = a;
    d.max = c;
    // An expanded node's ops all run in its step; its body's constants are not steps.
    const bool step_box = b.node >= 0 && (b.kind == BoxKind::op || b.kind == BoxKind::folded_scope);
    d.current = step_box && b.node == f.current_node;
    d.next = step_box && b.node == f.next_node;
    d.selected = b.key == s.selected;
    d.matched = std::find(hits.begin(), hits.end(), b.key) != hits.end();
    if (!on_screen(a, c)) {
      s.drawn.push_back(std::move(d));
      continue;
    }
    const bool is_hovered = canvas_hovered && ImGui::IsMouseHoveringRect(a, c);
    if (is_hovered) hovered = b.key;
    const bool bwd = b.phase == Phase::backward;
    float alpha = alphas[i];
    if (!hits.empty() && !d.matched) alpha *= 0.35f;
    ImU32 fill;
    float rounding = 7.f * z;
    switch (b.kind) {
      case BoxKind::op: fill = family_color(th, b.family, bwd); break;
      case BoxKind::parameter: fill = th.param_fill; rounding = b.height * 0.5f * z; break;
      case BoxKind::input: fill = th.input_fill; rounding = 2.f * z; break;
      case BoxKind::constant: fill = th.constant_fill; rounding = 2.f * z; break;
      case BoxKind::grad_seed: fill = th.seed_fill; rounding = b.height * 0.5f * z; break;
      case BoxKind::folded_scope: fill = th.folded_fill; rounding = 10.f * z; break;
      default: fill = th.input_fill;
    }
    if (d.current) {  // a soft glow behind the current step
      for (int k = 3; k >= 1; --k) {
        const float gpx = 3.f * k * std::max(z, 0.5f);
        dl->AddRectFilled(ImVec2(a.x - gpx, a.y - gpx), ImVec2(c.x + gpx, c.y + gpx), with_alpha(th.highlight, 0.12f),
                          rounding + gpx);
      }
    }
    dl->AddRectFilled(a, c, with_alpha(fill, alpha), rounding);
    ImU32 border = bwd ? th.edge_backward : th.box_border;
    float border_px = (b.kind == BoxKind::parameter ? 2.f : 1.f) * std::max(0.7f, std::min(z, 1.5f));
    if (b.kind == BoxKind::op && bwd) {  // a stripe on the left marks a backward op
      dl->AddRectFilled(a, ImVec2(a.x + 4.f * z, c.y), with_alpha(th.edge_backward, alpha), rounding, ImDrawFlags_RoundCornersLeft);
    }
    dl->AddRect(a, c, with_alpha(border, alpha), rounding, 0, border_px);
    if (d.selected) dl->AddRect(ImVec2(a.x - 3, a.y - 3), ImVec2(c.x + 3, c.y + 3), th.selected, rounding + 3, 0, 2.5f);
    else if (is_hovered) dl->AddRect(ImVec2(a.x - 2, a.y - 2), ImVec2(c.x + 2, c.y + 2), th.hovered, rounding + 2, 0, 2.f);
    if (d.matched) dl->AddRect(ImVec2(a.x - 5, a.y - 5), ImVec2(c.x + 5, c.y + 5), th.selected, rounding + 5, 0, 1.5f);
    if (d.current) dl->AddRect(a, c, th.highlight, rounding, 0, 3.5f);
    if (d.next) {  // the next step: a dashed orange outline
      const float per = 8.f;
      for (float x = a.x; x < c.x; x += 2 * per) {
        dl->AddLine(ImVec2(x, a.y - 4), ImVec2(std::min(x + per, c.x), a.y - 4), th.highlight, 2.f);
        dl->AddLine(ImVec2(x, c.y + 4), ImVec2(std::min(x + per, c.x), c.y + 4), th.highlight, 2.f);
      }
    }
    if (show_text) {
      const ImU32 tc = with_alpha(th.text, alpha), td = with_alpha(th.text_dim, alpha);
      const float inner = b.width * z - 8.f * z;
      if (b.subtitle.empty()) {
        draw_text_centered(dl, font, text_px, centers[i], tc, b.title, inner);
      } else {
        const float dy = text_px * 0.55f;
        draw_text_centered(dl, font, text_px, ImVec2(centers[i].x, centers[i].y - dy), tc, b.title, inner);
        draw_text_centered(dl, font, text_px * 0.92f, ImVec2(centers[i].x, centers[i].y + dy), td, b.subtitle, inner);
      }
    }
    // Saved-for-backward tensors: a badge on the top-right corner with their bytes.
    // (one badge per node: an expanded node's is on the box of its body that makes its output)
    if (b.node >= 0 && !g.node(b.node).saved.empty() && show_text && L.find_node(b.node) == static_cast<int>(i)) {
      bool released = false;
      std::string label = "saved " + saved_bytes_label(g, g.node(b.node), &released);
      if (released) label = "freed";
      const float bp = text_px * 0.78f;
      ImVec2 ts = font->CalcTextSizeA(bp, FLT_MAX, 0, label.c_str());
      // Above the box's top-right corner, clear of its title.
      ImVec2 ba(c.x - ts.x - 10.f * z, a.y - ts.y - 3.f * z), bb(c.x, a.y - 1.f * z);
      if (released) {
        dl->AddRectFilled(ba, bb, with_alpha(th.canvas, alpha), ts.y);
        dl->AddRect(ba, bb, with_alpha(th.badge_fill, alpha * 0.7f), ts.y, 0, 1.f);
        dl->AddText(font, bp, ImVec2(ba.x + 5.f * z, ba.y + 1.f * z), with_alpha(th.text_dim, alpha), label.c_str());
      } else {
        dl->AddRectFilled(ba, bb, with_alpha(th.badge_fill, alpha), ts.y);
        dl->AddText(font, bp, ImVec2(ba.x + 5.f * z, ba.y + 1.f * z), with_alpha(th.badge_text, alpha), label.c_str());
      }
    }
    s.drawn.push_back(std::move(d));
  }
  s.hovered = hovered;

  // [SECTION] legend: one row along the bottom (fit_view keeps it clear of the graph)
  {
    const float lp = font->FontSize * 0.8f, h = lp * 1.2f, sw = lp * 1.5f;
    struct Item {
      ImU32 fill, border;
      const char* text;
      float rounding;
    };
    const Item items[] = {{th.param_fill, th.box_border, "parameter", h * 0.5f},
                          {th.input_fill, th.box_border, "input / constant", 2.f},
                          {family_color(th, "elementwise", false), th.box_border, "forward op", 4.f},
                          {family_color(th, "elementwise", true), th.edge_backward, "backward op", 4.f},
                          {th.canvas, th.highlight, "last step", 4.f},
                          {th.badge_fill, th.badge_fill, "saved for backward", h * 0.5f}};
    ImVec2 p(c0.x + 10, c1.y - h - 8);
    dl->AddRectFilled(ImVec2(c0.x, p.y - 5), c1, with_alpha(th.canvas, 0.92f));
    for (const auto& it : items) {
      dl->AddRectFilled(p, ImVec2(p.x + sw, p.y + h), it.fill, it.rounding);
      dl->AddRect(p, ImVec2(p.x + sw, p.y + h), it.border, it.rounding, 0, it.border == th.highlight ? 2.5f : 1.f);
      dl->AddText(font, lp, ImVec2(p.x + sw + 5, p.y + (h - lp) * 0.5f), th.text_dim, it.text);
      p.x += sw + 5 + font->CalcTextSizeA(lp, FLT_MAX, 0, it.text).x + 16;
    }
    const char* help = "drag: pan · wheel: zoom · F: fit · click: inspect";
    const float hw = font->CalcTextSizeA(lp, FLT_MAX, 0, help).x;
    if (p.x + hw + 10 < c1.x) dl->AddText(font, lp, ImVec2(c1.x - hw - 10, p.y + (h - lp) * 0.5f), th.text_dim, help);
  }

  // [SECTION] selection and tooltips
  if (canvas_hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).x == 0 &&
      ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).y == 0) {
    s.selected = hovered;
  }
  if (canvas_hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left) && hovered.rfind("s:", 0) == 0)
    s.folded.erase(hovered.substr(2));
  // Double-clicking a node with a body (an @op, a fused node) shows the ops inside it.
  if (canvas_hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left))
    if (const int hb = L.find(hovered); hb >= 0 && L.boxes[static_cast<size_t>(hb)].body_node < 0) {
      const int node = L.boxes[static_cast<size_t>(hb)].node;
      if (node >= 0 && node_body(g, g.node(node))) s.expanded.insert(node);
    }
  if (!hovered.empty()) {
    const int bi = L.find(hovered);
    const LayoutBox& b = L.boxes[static_cast<size_t>(bi)];
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(b.title.c_str());
    if (!b.subtitle.empty()) ImGui::TextDisabled("%s", b.subtitle.c_str());
    if (b.node >= 0) {
      const Node& n = g.node(b.node);
      if (n.op) ImGui::TextWrapped("%s", n.op->doc.c_str());
      ImGui::Text("%s  ·  %s", phase_name(n.phase), n.op ? n.op->family.c_str() : "");
      for (int vid : n.outputs) {
        const ValueInfo& vi = g.value(vid);
        ImGui::Text("out %s %s %s", vi.name.empty() ? ("%" + std::to_string(vid)).c_str() : vi.name.c_str(),
                    shape_str(vi.meta.shape).c_str(), dtype_name(vi.meta.dtype));
      }
      if (n.stats.runs) ImGui::Text("last run %.1f µs", static_cast<double>(n.stats.last_time_ns) / 1e3);
      if (b.body_node >= 0) ImGui::TextDisabled("op %d of #%d's body; click [collapse] on the frame to fold it", b.body_node, b.node);
      else if (node_body(g, n)) ImGui::TextDisabled("double-click to show the ops inside it");
    } else if (b.kind == BoxKind::folded_scope) {
      ImGui::TextDisabled("double-click to unfold");
    }
    ImGui::EndTooltip();
  }
  dl->PopClipRect();
}

}  // namespace opscope::viz
