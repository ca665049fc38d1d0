#include "viz/figure_export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "viz/graph_figure.h"
#include "viz/graphviz.h"
#include "viz/graphviz_context.h"
#include "viz/layout_wrap.h"
#include "viz/palette.h"

namespace opscope::viz {

namespace {

std::string html_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '&') r += "&amp;";
    else if (c == '<') r += "&lt;";
    else if (c == '>') r += "&gt;";
    else if (c == '"') r += "&quot;";
    else r += c;
  }
  return r;
}

std::string num(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(v));
  return buf;
}

// Graphviz's y axis points up; the layout's down.
struct Flip {
  float height;
  std::string pos(Point p) const { return num(p.x) + "," + num(height - p.y); }
};

std::string fill_of(const LayoutBox& b, const FigurePalette& p, bool dark) {
  switch (b.kind) {
    case BoxKind::op: return family_fill(b.family, dark, b.phase == Phase::backward).hex();
    case BoxKind::parameter: return p.param_fill.hex();
    case BoxKind::input: return p.input_fill.hex();
    case BoxKind::constant: return p.constant_fill.hex();
    case BoxKind::grad_seed: return p.seed_fill.hex();
    case BoxKind::folded_scope: return p.folded_fill.hex();
  }
  return p.input_fill.hex();
}

std::string box_label(const LayoutBox& b, const FigurePalette& p) {
  std::string l = "<" + html_escape(b.title);
  if (!b.subtitle.empty())
    l += "<BR/><FONT POINT-SIZE=\"10\" COLOR=\"" + p.text_dim.hex() + "\">" + html_escape(b.subtitle) + "</FONT>";
  for (const auto& d : b.details)
    l += "<BR/><FONT POINT-SIZE=\"9\" COLOR=\"" + p.text_dim.hex() + "\">" + html_escape(d) + "</FONT>";
  return l + ">";
}

// The curve's end moved back along its last tangent: Graphviz draws the arrow head from there
// to the box border (the `e,x,y` point).
std::string edge_pos(const LayoutEdge& e, const Flip& f) {
  std::vector<Point> s = e.spline;
  std::string head;
  if (e.has_arrow && s.size() >= 4) {
    const Point tip = s.back(), c = s[s.size() - 2];
    float dx = tip.x - c.x, dy = tip.y - c.y;
    const float len = std::sqrt(dx * dx + dy * dy);
    if (len > 1e-3f) {
      dx /= len;
      dy /= len;
      const float back = std::min(8.f, len);
      s.back() = {tip.x - dx * back, tip.y - dy * back};
      head = "e," + f.pos(tip) + " ";
    }
  }
  std::string pos = head;
  for (size_t i = 0; i < s.size(); ++i) pos += (i ? " " : "") + f.pos(s[i]);
  return pos;
}

}  // namespace

std::string figure_dot(const Graph& g, const GraphLayout& l, const FigureStyle& style) {
  const bool dark = style.dark;
  const FigurePalette& p = figure_palette(dark);
  const Flip f{l.height};
  std::string out = "digraph opscope {\n  graph [bb=\"0,0," + num(l.width) + "," + num(l.height) + "\", bgcolor=\"" +
                    p.canvas.hex() +
                    "\", pad=0.3, splines=true];\n  node [fontname=\"DejaVu Sans\", fontsize=11, fontcolor=\"" +
                    p.text.hex() + "\"];\n  edge [fontname=\"DejaVu Sans\", fontsize=9, arrowsize=0.6];\n";
  // Frames first, so they are drawn under the boxes: a dashed box with its title at the top.
  for (size_t i = 0; i < l.clusters.size(); ++i) {
    const LayoutCluster& c = l.clusters[i];
    const Point mid{(c.min.x + c.max.x) / 2, (c.min.y + c.max.y) / 2};
    out += "  frame" + std::to_string(i) + " [pos=\"" + f.pos(mid) +
           "\", shape=box, style=\"rounded,dashed\", color=\"" + p.cluster_border.hex() +
           "\", width=" + num((c.max.x - c.min.x) / 72) + ", height=" + num((c.max.y - c.min.y) / 72) +
           ", fixedsize=true, labelloc=t, fontsize=10, fontcolor=\"" + p.text_dim.hex() + "\", label=\"" +
           html_escape(c.label) + "\"];\n";
  }
  if (l.backward_lane_top >= 0) {
    out += "  lane_forward [pos=\"" + f.pos({60, 8}) + "\", shape=plaintext, fontsize=10, fontcolor=\"" +
           p.text_dim.hex() + "\", label=\"forward pass →\"];\n";
    out += "  lane_backward [pos=\"" + f.pos({60, l.backward_lane_top - 16}) +
           "\", shape=plaintext, fontsize=10, fontcolor=\"" + p.edge_backward.hex() +
           "\", label=\"← backward pass\"];\n";
  }
  for (const LayoutBox& b : l.boxes) {
    const bool round = b.kind == BoxKind::parameter || b.kind == BoxKind::grad_seed;
    const bool bwd = b.phase == Phase::backward && b.kind == BoxKind::op;
    out += "  \"" + b.key + "\" [pos=\"" + f.pos(b.center) + "\", width=" + num(b.width / 72) +
           ", height=" + num(b.height / 72) + ", fixedsize=true, shape=box, style=\"" +
           std::string(round ? "rounded,filled,bold" : "rounded,filled") + "\", fillcolor=\"" + fill_of(b, p, dark) +
           "\", color=\"" + (bwd ? p.edge_backward : p.box_border).hex() + "\", label=" + box_label(b, p) + "];\n";
    const std::string badge = b.node >= 0                       ? saved_badge(g, {b.node})
                              : b.kind == BoxKind::folded_scope ? saved_badge(g, b.nodes)
                                                                : "";
    if (!badge.empty()) {
      const float w = 7.f * static_cast<float>(badge.size()) * 0.8f + 10.f;
      const Point at{b.center.x + b.width / 2 - w / 2, b.center.y - b.height / 2 - 8};
      const bool freed = badge == "freed";
      out += "  \"badge_" + b.key + "\" [pos=\"" + f.pos(at) + "\", width=" + num(w / 72) +
             ", height=" + num(14.f / 72) +
             ", fixedsize=true, shape=box, style=\"rounded,filled\", fontsize=8, fillcolor=\"" +
             (freed ? p.canvas : p.badge_fill).hex() + "\", color=\"" + p.badge_fill.hex() + "\", fontcolor=\"" +
             (freed ? p.text_dim : p.badge_text).hex() + "\", label=\"" + badge + "\"];\n";
    }
  }
  auto emphasised = [&](int box) {
    return std::find(style.emphasised.begin(), style.emphasised.end(), l.boxes[static_cast<size_t>(box)].key) !=
           style.emphasised.end();
  };
  for (const LayoutEdge& e : l.edges) {
    if (e.link || e.spline.size() < 4) continue;
    if (e.kind == EdgeKind::saved && !emphasised(e.from) && !emphasised(e.to)) continue;  // as on screen
    const bool grad = e.kind == EdgeKind::gradient;
    const bool saved = e.kind == EdgeKind::saved;
    std::string attrs = "pos=\"" + edge_pos(e, f) + "\", color=\"" +
                        (grad    ? p.edge_backward
                         : saved ? mix(p.edge_backward, p.canvas, 0.55f)
                                 : p.edge)
                            .hex() +
                        "\"";
    if (saved) attrs += ", style=dashed";
    if (!e.has_arrow) attrs += ", dir=none";
    if (e.has_label_pos && !e.label.empty())
      attrs += ", label=\"" + html_escape(e.label) + "\", lp=\"" + f.pos(e.label_pos) + "\", fontcolor=\"" +
               p.text_dim.hex() + "\"";
    out += "  \"" + l.boxes[static_cast<size_t>(e.from)].key + "\" -> \"" + l.boxes[static_cast<size_t>(e.to)].key +
           "\" [" + attrs + "];\n";
  }
  return out + "}\n";
}

GraphLayout window_figure(const Graph& g, const std::vector<int>& only_nodes, const std::set<int>& expanded) {
  // The window's graph canvas at 1600 x 1000, and the zoom at which its 15 px font is readable.
  constexpr float kCanvasW = 1030, kCanvasH = 560, kMargin = 24, kLegend = 30, kReadableZoom = 11.f / 15.f;
  LayoutOptions o;
  o.only_nodes = only_nodes;
  o.expanded = expanded;
  // The rows the window would wrap the figure into (its Fit: graph_view.cpp's rewrap_to_fit).
  const Point canvas{kCanvasW - 2 * kMargin, kCanvasH - 2 * kMargin - kLegend};
  auto row_width = [&](const GraphLayout& l) { return row_width_to_fit(l, canvas, kReadableZoom); };
  auto zoom_to_fit = [&](const GraphLayout& l) { return wrapped_zoom(l, row_width(l), canvas); };
  // (A big model opens folded: the room is what initial_folds sizes its first guess by.)
  const Point room{canvas.x / kReadableZoom, canvas.y / kReadableZoom};
  FoldedToFit f = fold_to_fit(g, o, kReadableZoom, zoom_to_fit, -1, room);
  if (!f.fits || !f.folded.empty()) {  // as the window's Fit: short titles, no shape labels before folding
    o.compact = true;
    FoldedToFit compact = fold_to_fit(g, o, kReadableZoom, zoom_to_fit, -1, room);
    if (compact.fits || !f.fits) f = std::move(compact);
  }
  return wrap_rows(f.layout, row_width(f.layout));
}

void render_figure(const Graph& g, const GraphLayout& l, const std::string& format, const std::string& path,
                   const FigureStyle& style) {
  if (format != "svg" && format != "png") throw Error("cannot render the graph as '" + format + "'", "use svg or png");
  if (l.boxes.empty()) throw Error("the graph is empty: nothing to draw", "run some statements first, e.g. c = a + b");
  if (format == "png" && !can_render_png())
    throw Error("this build renders figures as SVG only", "export an .svg file, or use the desktop app for PNG");
  const std::string dot = figure_dot(g, l, style);
  std::lock_guard<std::mutex> graphviz(detail::graphviz_lock());
  GVC_t* gvc = detail::render_context();
  Agraph_t* gv = agmemread(dot.c_str());
  if (!gv) throw Error("Graphviz could not read the figure", "this is a bug in opscope's figure export");
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> graph(gv, agclose);
  // nop2: every node and edge keeps the position given.
  if (gvLayout(gvc, gv, "nop2") != 0) throw Error("Graphviz could not place the figure");
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), std::fclose);
  const int rc = file ? gvRender(gvc, gv, format.c_str(), file.get()) : -1;
  gvFreeLayout(gvc, gv);
  if (!file) throw Error("cannot write '" + path + "'", "check that the folder exists and is writable");
  if (rc != 0) throw Error("Graphviz could not render " + format, "is the Graphviz cairo plugin installed?");
  if (std::fflush(file.get()) != 0) throw Error("cannot write '" + path + "'");
}

}  // namespace opscope::viz
