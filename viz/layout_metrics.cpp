#include "viz/layout_metrics.h"

#include <cmath>

namespace opscope::viz {

namespace {

Point bezier_at(const Point* p, float t) {
  const float u = 1 - t, a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;
  return {a * p[0].x + b * p[1].x + c * p[2].x + d * p[3].x, a * p[0].y + b * p[1].y + c * p[2].y + d * p[3].y};
}

float cross(Point o, Point a, Point b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

// The intersection of pieces p1-p2 and q1-q2 when they cross properly (not merely touch).
bool intersect(Point p1, Point p2, Point q1, Point q2, Point* at) {
  const float d1 = cross(q1, q2, p1), d2 = cross(q1, q2, p2), d3 = cross(p1, p2, q1), d4 = cross(p1, p2, q2);
  if (!(((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)))) return false;
  const float t = d1 / (d1 - d2);
  *at = {p1.x + (p2.x - p1.x) * t, p1.y + (p2.y - p1.y) * t};
  return true;
}

bool inside(const LayoutBox& b, Point p, float margin) {
  return std::abs(p.x - b.center.x) <= b.width * 0.5f + margin &&
         std::abs(p.y - b.center.y) <= b.height * 0.5f + margin;
}

}  // namespace

std::vector<Point> flatten_spline(const std::vector<Point>& spline, int per_segment) {
  std::vector<Point> out;
  if (spline.size() < 4) return out;
  out.push_back(spline[0]);
  for (size_t k = 0; k + 3 < spline.size(); k += 3)
    for (int i = 1; i <= per_segment; ++i)
      out.push_back(bezier_at(&spline[k], static_cast<float>(i) / static_cast<float>(per_segment)));
  return out;
}

int count_crossings(const std::vector<Point>& a, const std::vector<Point>& b,
                    const std::vector<const LayoutBox*>& skip) {
  int n = 0;
  for (size_t i = 0; i + 1 < a.size(); ++i)
    for (size_t j = 0; j + 1 < b.size(); ++j) {
      Point at;
      if (!intersect(a[i], a[i + 1], b[j], b[j + 1], &at)) continue;
      bool skipped = false;
      for (const LayoutBox* s : skip) skipped = skipped || inside(*s, at, 6.f);
      n += !skipped;
    }
  return n;
}

LayoutMetrics measure_layout(const GraphLayout& l, bool with_saved) {
  LayoutMetrics m;
  m.boxes = static_cast<int>(l.boxes.size());
  m.width = l.width;
  m.height = l.height;
  std::vector<const LayoutEdge*> drawn;
  std::vector<std::vector<Point>> lines;
  for (const auto& e : l.edges) {
    if (e.link || e.spline.size() < 4 || (e.kind == EdgeKind::saved && !with_saved)) continue;
    drawn.push_back(&e);
    lines.push_back(flatten_spline(e.spline));
    for (size_t i = 1; i < lines.back().size(); ++i)
      m.edge_length += std::hypot(lines.back()[i].x - lines.back()[i - 1].x, lines.back()[i].y - lines.back()[i - 1].y);
  }
  m.edges = static_cast<int>(drawn.size());
  for (size_t i = 0; i < drawn.size(); ++i)
    for (size_t b = 0; b < l.boxes.size(); ++b) {
      if (static_cast<int>(b) == drawn[i]->from || static_cast<int>(b) == drawn[i]->to) continue;
      bool through = false;
      for (const Point& p : lines[i]) through = through || inside(l.boxes[b], p, -2.f);
      m.through_boxes += through;
    }
  for (size_t i = 0; i < drawn.size(); ++i)
    for (size_t j = i + 1; j < drawn.size(); ++j) {
      std::vector<const LayoutBox*> shared;
      for (int x : {drawn[i]->from, drawn[i]->to})
        if (x == drawn[j]->from || x == drawn[j]->to) shared.push_back(&l.boxes[static_cast<size_t>(x)]);
      m.crossings += count_crossings(lines[i], lines[j], shared);
    }
  return m;
}

}  // namespace opscope::viz
