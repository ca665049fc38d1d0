// [SECTION] index
//   groups       the backward boxes under each forward box, on a small grid (a staircase)
//   lanes        the backward lane placed under the forward lane, and its curves
//   one layout   every box in one dot layout (the backward pass alone)
//   normalise    the figure moved to (0, 0) and measured
#include "viz/layout_lanes.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "viz/edge_router.h"
#include "viz/scope_layout.h"

namespace opscope::viz {

namespace {

constexpr float kLaneGap = 64.f;  // between the forward and the backward lane
constexpr float kGroupGapX = 12.f;  // between boxes of one backward group
constexpr float kGroupGapY = 14.f;

// [SECTION] groups

// A staircase, so no curve has to pass through a box of the group: each box that receives a
// gradient from outside the group gets a row and a column of its own (left to right), what it
// passes the gradient to continues leftwards in its row, and the boxes that only read forward
// values (the transposes of a matmul's backward) sit above the box they feed, nearest the
// forward lane. A matmul: Bᵀ Aᵀ / dA · / · dB.
void arrange_group(const FigurePlan& p, Group& grp) {
  std::map<int, int> row, col;
  auto in_group = [&](int b) { return std::find(grp.boxes.begin(), grp.boxes.end(), b) != grp.boxes.end(); };
  std::vector<int> receivers;
  for (int b : grp.boxes)
    for (const auto& e : p.edges)
      if (e.to == b && e.kind == EdgeKind::gradient && !in_group(e.from)) {
        receivers.push_back(b);
        break;
      }
  if (receivers.empty()) receivers.push_back(grp.boxes.back());
  grp.sink = true;
  for (int b : grp.boxes)
    for (const auto& e : p.edges)
      if (e.from == b && e.kind == EdgeKind::gradient && !in_group(e.to)) grp.sink = false;
  for (size_t i = 0; i < receivers.size(); ++i) {
    row[receivers[i]] = static_cast<int>(i);
    col[receivers[i]] = static_cast<int>(i);
  }
  // What a receiver feeds continues leftwards in its row (boxes are in creation order).
  for (int b : grp.boxes)
    for (const auto& e : p.edges)
      if (e.to == b && e.kind != EdgeKind::link && !row.count(b) && row.count(e.from) && in_group(e.from)) {
        row[b] = row[e.from];
        col[b] = col[e.from] - 1;
      }
  // The rest feed a placed box: above it, one row further up per step away from it.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = grp.boxes.rbegin(); it != grp.boxes.rend(); ++it) {
      const int b = *it;
      if (row.count(b)) continue;
      for (const auto& e : p.edges)
        if (e.from == b && e.kind != EdgeKind::link && row.count(e.to) && in_group(e.to)) {
          row[b] = std::min(row[e.to], 0) - 1;
          col[b] = col[e.to];
          changed = true;
          break;
        }
    }
  }
  for (int b : grp.boxes)
    if (!row.count(b)) {
      row[b] = -1;
      col[b] = 0;
    }
  int r0 = 0, c0 = 0, r1 = 0, c1 = 0;
  for (int b : grp.boxes) {
    r0 = std::min(r0, row[b]);
    r1 = std::max(r1, row[b]);
    c0 = std::min(c0, col[b]);
    c1 = std::max(c1, col[b]);
  }
  const size_t rows = static_cast<size_t>(r1 - r0 + 1), cols = static_cast<size_t>(c1 - c0 + 1);
  std::vector<std::vector<std::vector<int>>> cell(rows, std::vector<std::vector<int>>(cols));
  for (int b : grp.boxes) cell[static_cast<size_t>(row[b] - r0)][static_cast<size_t>(col[b] - c0)].push_back(b);
  auto w = [&](int b) { return p.boxes[static_cast<size_t>(b)].width; };
  std::vector<float> col_w(cols, 0), row_h(rows, 0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      float cw = 0;
      for (int b : cell[r][c]) {
        cw += w(b) + (cw > 0 ? kGroupGapX : 0);
        row_h[r] = std::max(row_h[r], p.boxes[static_cast<size_t>(b)].height);
      }
      col_w[c] = std::max(col_w[c], cw);
    }
  for (size_t c = 0; c < cols; ++c) grp.width += col_w[c] + (c ? kGroupGapX : 0);
  for (size_t r = 0; r < rows; ++r) grp.height += row_h[r] + (r ? kGroupGapY : 0);
  grp.offset.assign(grp.boxes.size(), {});
  float y = 0;
  for (size_t r = 0; r < rows; ++r) {
    float x = -grp.width / 2;
    for (size_t c = 0; c < cols; ++c) {
      float cw = 0;
      for (int b : cell[r][c]) cw += w(b) + (cw > 0 ? kGroupGapX : 0);
      float bx = x + (col_w[c] - cw) / 2;
      for (int b : cell[r][c]) {
        const size_t k = static_cast<size_t>(std::find(grp.boxes.begin(), grp.boxes.end(), b) - grp.boxes.begin());
        grp.offset[k] = {bx + w(b) / 2, y + row_h[r] / 2};
        if (b == receivers.front()) grp.main_y = y + row_h[r] / 2;
        bx += w(b) + kGroupGapX;
      }
      x += col_w[c] + kGroupGapX;
    }
    y += row_h[r] + kGroupGapY;
  }
}

// Places a group at `top`, pushed down below each placed group it would overlap.
void place_group(std::vector<Group>& groups, size_t gi, float top, const std::vector<size_t>& placed) {
  Group& g = groups[gi];
  g.top = top;
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t pi : placed) {
      const Group& q = groups[pi];
      const bool x_overlap = std::abs(g.cx - q.cx) * 2 < g.width + q.width + 2 * kGroupGapX;
      const bool y_overlap = g.top < q.top + q.height + kGroupGapY && q.top < g.top + g.height + kGroupGapY;
      if (x_overlap && y_overlap) {
        g.top = q.top + q.height + kGroupGapY;
        moved = true;
      }
    }
  }
}

struct Rect {
  float l, t, r, b;
};
Rect rect_of(const LayoutBox& b) {
  return {b.center.x - b.width / 2, b.center.y - b.height / 2, b.center.x + b.width / 2, b.center.y + b.height / 2};
}

// Dot reserved `layout_w` for a box drawn narrower: its edges' ends move onto the drawn border.
void clip_to_box(std::vector<Point>& s, const LayoutBox& from, const LayoutBox& to) {
  if (s.size() < 4) return;
  auto clip = [](Point& end, Point& ctrl, const LayoutBox& b) {
    const float half = b.width / 2;
    const float dx = std::clamp(end.x, b.center.x - half, b.center.x + half) - end.x;
    end.x += dx;
    ctrl.x += dx;
  };
  clip(s.front(), s[1], from);
  clip(s.back(), s[s.size() - 2], to);
}

// [SECTION] normalise

// Above the forward lane, the band its title ("forward pass →") is drawn in at the figure's
// left edge: without it the title ran into the first input's box.
constexpr float kLaneTitleBand = 22.f;

// Moves the layout to start at (0, 0) and sets its size: boxes, frames, curves and edge labels
// (a label hanging past the leftmost box was cut at the figure's edge), and the lanes' title band.
void normalise(GraphLayout& out, const FigurePlan& plan) {
  float x0 = 1e30f, y0 = 1e30f, x1 = -1e30f, y1 = -1e30f;
  auto grow = [&](float x, float y) {
    x0 = std::min(x0, x);
    y0 = std::min(y0, y);
    x1 = std::max(x1, x);
    y1 = std::max(y1, y);
  };
  for (const auto& b : out.boxes) {
    grow(b.center.x - b.width / 2, b.center.y - b.height / 2);
    grow(b.center.x + b.width / 2, b.center.y + b.height / 2);
  }
  for (const auto& c : out.clusters) {
    grow(c.min.x, c.min.y);
    grow(c.max.x, c.max.y);
  }
  for (size_t i = 0; i < out.edges.size(); ++i) {
    const LayoutEdge& e = out.edges[i];
    if (e.link) continue;
    for (const auto& p : e.spline) grow(p.x, p.y);
    if (e.has_label_pos && !e.label.empty()) {
      const float half = plan.label_width[i] / 2;
      grow(e.label_pos.x - half, e.label_pos.y - plan.line_height / 2);
      grow(e.label_pos.x + half, e.label_pos.y + plan.line_height / 2);
    }
  }
  if (x0 > x1) return;
  if (out.backward_lane_top >= 0) y0 -= kLaneTitleBand;
  move_origin(out, {x0, y0});
  out.line_height = plan.line_height;
  out.width = x1 - x0;
  out.height = y1 - y0;
}

}  // namespace

BackwardGroups group_backward_boxes(FigurePlan& plan) {
  BackwardGroups out;
  const size_t nb = plan.boxes.size();
  std::map<int, size_t> group_of_anchor;
  out.box_group.assign(nb, -1);
  for (size_t i = 0; i < nb; ++i) {
    if (plan.boxes[i].lane != Lane::backward) continue;
    const int a = plan.anchor[i];
    if (a < 0) {
      out.loose.push_back(static_cast<int>(i));
      continue;
    }
    auto [it, fresh] = group_of_anchor.emplace(a, out.groups.size());
    if (fresh) out.groups.push_back(Group{a, {}, {}, 0, 0, 0, 0});
    out.groups[it->second].boxes.push_back(static_cast<int>(i));
    out.box_group[i] = static_cast<int>(it->second);
    plan.boxes[i].anchor = plan.boxes[static_cast<size_t>(a)].key;
  }
  for (auto& grp : out.groups) arrange_group(plan, grp);
  return out;
}

std::vector<float> reserved_widths(const FigurePlan& plan, const BackwardGroups& groups) {
  std::vector<float> w(plan.boxes.size());
  for (size_t i = 0; i < plan.boxes.size(); ++i) w[i] = plan.boxes[i].width;
  // (A group may reach into the gap between columns: half of it.)
  for (const auto& grp : groups.groups) {
    float& a = w[static_cast<size_t>(grp.anchor)];
    a = std::max(a, grp.width - kRankSep / 2);
  }
  return w;
}

// [SECTION] lanes

LanesAssembly::LanesAssembly(FigurePlan p, BackwardGroups bg, const ForwardLane& d) : plan_(std::move(p)) {
  FigurePlan& plan = plan_;
  GraphLayout& out = out_;
  std::vector<Group>& groups = bg.groups;
  std::vector<int>& box_group = bg.box_group;
  const size_t nb = plan.boxes.size();
  const bool any_forward =
      std::any_of(plan.boxes.begin(), plan.boxes.end(), [](const LayoutBox& b) { return b.lane == Lane::forward; });
  for (size_t i = 0; i < nb; ++i)
    if (plan.boxes[i].lane == Lane::forward) plan.boxes[i].center = d.centers[i];

  // The backward lane: each group under its anchor, the boxes that pass the gradient on along
  // one line (as the forward pass runs along one), what only reads forward values above it, the
  // parameters' gradients below. Where groups would overlap, the one whose anchor is nearer the
  // forward lane's bottom keeps its place (a mirror image) and the other moves down.
  const float lane_top = any_forward ? d.height + kLaneGap : 0.f;
  float main_line = lane_top, row_half = 0;
  for (auto& grp : groups) {
    if (grp.sink) continue;
    main_line = std::max(main_line, lane_top + grp.main_y);
    for (int b : grp.boxes) row_half = std::max(row_half, plan.boxes[static_cast<size_t>(b)].height / 2);
  }
  std::vector<float> mirror(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const LayoutBox& a = plan.boxes[static_cast<size_t>(groups[gi].anchor)];
    groups[gi].cx = a.center.x;
    mirror[gi] = d.height - (a.center.y + a.height / 2) + (groups[gi].sink ? 1e6f : 0.f);
  }
  std::vector<size_t> order(groups.size()), placed;
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mirror[a] < mirror[b]; });
  for (size_t gi : order) {
    const Group& grp = groups[gi];
    const float top = grp.sink ? main_line + row_half + 2 * kGroupGapY : main_line - grp.main_y;
    place_group(groups, gi, std::max(lane_top, top), placed);
    placed.push_back(gi);
  }
  // Boxes without an anchor (the gradient seed) sit right of the group they feed.
  for (int b : bg.loose) {
    Group grp{-1, {b}, {}, 0, 0, 0, 0};
    arrange_group(plan, grp);
    int target = -1;
    for (const auto& e : plan.edges)
      if (e.from == b && e.kind != EdgeKind::link && box_group[static_cast<size_t>(e.to)] >= 0)
        target = box_group[static_cast<size_t>(e.to)];
    float top = main_line - grp.height / 2;
    if (target >= 0) {  // under the right end of the group it feeds, where backward starts
      const Group& t = groups[static_cast<size_t>(target)];
      grp.cx = t.cx + t.width / 2 - grp.width / 2;
      top = t.top + t.height + kGroupGapY;
    } else {
      grp.cx = (any_forward ? d.width : 0.f) + grp.width / 2 + kGroupGapX;
    }
    box_group[static_cast<size_t>(b)] = static_cast<int>(groups.size());
    groups.push_back(std::move(grp));
    place_group(groups, groups.size() - 1, top, placed);
    placed.push_back(groups.size() - 1);
  }
  for (auto& grp : groups)
    for (size_t k = 0; k < grp.boxes.size(); ++k)
      plan.boxes[static_cast<size_t>(grp.boxes[k])].center = {grp.cx + grp.offset[k].x, grp.top + grp.offset[k].y};
  if (!groups.empty()) out.backward_lane_top = lane_top;

  // Curves: dot's for the forward lane; the others routed between the placed boxes, the
  // short ones (within a group) first.
  std::vector<size_t> route;
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    LayoutEdge& e = plan.edges[i];
    const LayoutBox& from = plan.boxes[static_cast<size_t>(e.from)];
    const LayoutBox& to = plan.boxes[static_cast<size_t>(e.to)];
    if (e.kind == EdgeKind::link) {
      const Rect a = rect_of(from), b = rect_of(to);
      e.spline = {{from.center.x, a.t}, {from.center.x, a.t - 30}, {to.center.x, b.b + 30}, {to.center.x, b.b}};
    } else if (d.splines[i].size() >= 4) {  // the forward lane's, joined across frames
      e.spline = d.splines[i];
      clip_to_box(e.spline, from, to);
      e.label_pos = d.label_pos[i];
      e.has_label_pos = d.has_label[i];
      e.arrow_tip = e.spline.back();
      e.has_arrow = e.spline.size() >= 4;
    } else {
      route.push_back(i);
    }
  }
  auto span = [&](size_t i) {
    const LayoutEdge& e = plan.edges[i];
    const Point a = plan.boxes[static_cast<size_t>(e.from)].center, b = plan.boxes[static_cast<size_t>(e.to)].center;
    return std::abs(a.x - b.x) + std::abs(a.y - b.y) + (e.kind == EdgeKind::saved ? 1e5f : 0.f);
  };
  std::stable_sort(route.begin(), route.end(), [&](size_t a, size_t b) { return span(a) < span(b); });
  if (any_forward) out.clusters = d.clusters;
  router_ = std::make_unique<EdgeRouter>(plan.boxes, plan.edges, std::move(route));
}

LanesAssembly::~LanesAssembly() = default;

bool LanesAssembly::route(size_t edges) { return router_->route(edges); }

GraphLayout LanesAssembly::finish() {
  router_.reset();
  out_.node_box = std::move(plan_.node_box);
  out_.boxes = std::move(plan_.boxes);
  out_.edges = std::move(plan_.edges);
  normalise(out_, plan_);
  return std::move(out_);
}

// [SECTION] one layout

GraphLayout assemble_one_layout(FigurePlan plan, const ForwardLane& d) {
  GraphLayout out;
  for (size_t i = 0; i < plan.boxes.size(); ++i) plan.boxes[i].center = d.centers[i];
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    LayoutEdge& e = plan.edges[i];
    if (e.kind == EdgeKind::link) {  // one curve bowing away from the flow, from centre to centre
      const Point a = plan.boxes[static_cast<size_t>(e.from)].center, b = plan.boxes[static_cast<size_t>(e.to)].center;
      const float bow = 0.25f * (std::abs(b.x - a.x) + std::abs(b.y - a.y)) + 20.f;
      e.spline = {a, {a.x, a.y + bow}, {b.x, b.y + bow}, b};
      continue;
    }
    e.spline = d.splines[i];
    if (e.spline.size() >= 4) {
      e.arrow_tip = e.spline.back();
      e.has_arrow = true;
    }
    e.label_pos = d.label_pos[i];
    e.has_label_pos = d.has_label[i];
  }
  out.clusters = d.clusters;
  out.node_box = std::move(plan.node_box);
  out.boxes = std::move(plan.boxes);
  out.edges = std::move(plan.edges);
  normalise(out, plan);
  return out;
}

}  // namespace opscope::viz
