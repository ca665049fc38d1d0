#include "viz/edge_router.h"

#include <algorithm>
#include <cmath>

#include "viz/layout_metrics.h"

namespace opscope::viz {

namespace {

enum Side { left, right, top, bottom };

struct Port {
  Point at, normal;
};

Port port(const LayoutBox& b, Side s) {
  const float hw = b.width / 2, hh = b.height / 2;
  switch (s) {
    case left: return {{b.center.x - hw, b.center.y}, {-1, 0}};
    case right: return {{b.center.x + hw, b.center.y}, {1, 0}};
    case top: return {{b.center.x, b.center.y - hh}, {0, -1}};
    case bottom: return {{b.center.x, b.center.y + hh}, {0, 1}};
  }
  return {b.center, {0, 0}};
}

std::vector<Point> curve(const Port& a, const Port& b) {
  const float dist = std::hypot(b.at.x - a.at.x, b.at.y - a.at.y);
  const float k = std::max(18.f, 0.42f * dist);
  return {a.at,
          {a.at.x + a.normal.x * k, a.at.y + a.normal.y * k},
          {b.at.x + b.normal.x * k, b.at.y + b.normal.y * k},
          b.at};
}

struct Bounds {
  float x0 = 1e30f, y0 = 1e30f, x1 = -1e30f, y1 = -1e30f;
  explicit Bounds(const std::vector<Point>& pts) {
    for (const Point& p : pts) {
      x0 = std::min(x0, p.x);
      y0 = std::min(y0, p.y);
      x1 = std::max(x1, p.x);
      y1 = std::max(y1, p.y);
    }
  }
  bool overlaps(const Bounds& o) const { return x0 <= o.x1 && o.x0 <= x1 && y0 <= o.y1 && o.y0 <= y1; }
};

bool inside(const LayoutBox& b, Point p) {
  return std::abs(p.x - b.center.x) < b.width / 2 - 2 && std::abs(p.y - b.center.y) < b.height / 2 - 2;
}

}  // namespace

struct EdgeRouter::Drawn {
  std::vector<Point> line;
  Bounds bounds;
  int from, to;
};

EdgeRouter::EdgeRouter(const std::vector<LayoutBox>& boxes, std::vector<LayoutEdge>& edges, std::vector<size_t> order)
    : boxes_(boxes), edges_(edges), order_(std::move(order)) {
  std::vector<char> pending(edges.size(), 0);
  for (size_t i : order_) pending[i] = 1;
  for (size_t i = 0; i < edges.size(); ++i)
    if (!pending[i] && !edges[i].link && edges[i].spline.size() >= 4) {
      auto line = flatten_spline(edges[i].spline, 8);
      Bounds b(line);
      drawn_.push_back({std::move(line), b, edges[i].from, edges[i].to});
    }
}

EdgeRouter::~EdgeRouter() = default;

bool EdgeRouter::route(size_t count) {
  for (size_t n = 0; n < count && next_ < order_.size(); ++n) route_one(order_[next_++]);
  return next_ < order_.size();
}

void EdgeRouter::route_one(size_t i) {
  const Side all[] = {left, right, top, bottom};
  LayoutEdge& e = edges_[i];
  const LayoutBox& a = boxes_[static_cast<size_t>(e.from)];
  const LayoutBox& b = boxes_[static_cast<size_t>(e.to)];
  double best = 1e300;
  std::vector<Point> best_curve;
  for (Side sa : all)
    for (Side sb : all) {
      // A forward value read by the backward lane leaves its box downwards or sideways.
      if (e.kind == EdgeKind::saved && sa == top) continue;
      const Port pa = port(a, sa), pb = port(b, sb);
      std::vector<Point> c = curve(pa, pb);
      const std::vector<Point> line = flatten_spline(c, 8);
      const Bounds bounds(line);
      int through = 0;
      for (size_t k = 0; k < boxes_.size(); ++k) {
        if (static_cast<int>(k) == e.from || static_cast<int>(k) == e.to) continue;
        for (const Point& p : line)
          if (inside(boxes_[k], p)) {
            ++through;
            break;
          }
      }
      int crossings = 0;
      for (const Drawn& d : drawn_) {
        if (!bounds.overlaps(d.bounds)) continue;
        std::vector<const LayoutBox*> shared;
        for (int x : {e.from, e.to})
          if (x == d.from || x == d.to) shared.push_back(&boxes_[static_cast<size_t>(x)]);
        crossings += count_crossings(line, d.line, shared);
      }
      // Leaving a box away from where the curve goes makes a loop: allowed only to avoid worse.
      const Point d{pb.at.x - pa.at.x, pb.at.y - pa.at.y};
      const bool backtracks = pa.normal.x * d.x + pa.normal.y * d.y < 0 || pb.normal.x * -d.x + pb.normal.y * -d.y < 0;
      double length = 0;
      for (size_t k = 1; k < line.size(); ++k)
        length += std::hypot(line[k].x - line[k - 1].x, line[k].y - line[k - 1].y);
      const double cost = 1000.0 * through + 60.0 * crossings + 150.0 * backtracks + 0.05 * length;
      if (cost < best) {
        best = cost;
        best_curve = std::move(c);
      }
    }
  e.spline = best_curve;
  e.arrow_tip = e.spline.back();
  e.has_arrow = true;
  auto line = flatten_spline(e.spline, 8);
  Bounds bb(line);
  drawn_.push_back({std::move(line), bb, e.from, e.to});
}

void route_edges(const std::vector<LayoutBox>& boxes, std::vector<LayoutEdge>& edges,
                 const std::vector<size_t>& order) {
  EdgeRouter router(boxes, edges, order);
  while (router.route(order.size())) {}
}

}  // namespace opscope::viz
