// [SECTION] index
//   cuts      where the figure may be cut into rows
//   rows      the slices stacked as rows, the edges between rows routed around them
//   labels    edge labels kept clear of boxes and of each other
//   fitting   the row width that shows a figure largest
#include "viz/layout_wrap.h"

#include <algorithm>
#include <cmath>

namespace opscope::viz {

namespace {

constexpr float kRowGap = 56.f;  // between rows: room for the edges running between them
constexpr float kTrack = 7.f;  // between edges running side by side around the rows
constexpr float kLabelScale = 0.85f;  // the view draws edge labels at 0.85 of the text size
constexpr float kLabelPad = 4.f;  // each side: the view's label background, at zooms down to 0.5
constexpr float kComfortableZoom = 1.15f;  // over the readable zoom: what a wrapped figure aims for
constexpr float kBadgeScale = 0.78f;  // the view draws saved-for-backward badges at 0.78 of the text size
constexpr float kLoopBadgeWidth = 60.f;  // a loop frame's badge ("×150") and its padding

struct Span {
  float l, r;
};

float left(const LayoutBox& b) { return b.center.x - b.width / 2; }
float right(const LayoutBox& b) { return b.center.x + b.width / 2; }
float top(const LayoutBox& b) { return b.center.y - b.height / 2; }
float bottom(const LayoutBox& b) { return b.center.y + b.height / 2; }

// [SECTION] cuts

// The x intervals a cut must not fall in: boxes (a backward box with the forward box it hangs
// under) and edge labels. A frame may be cut: each row draws its part of it (a model's encoder
// holds most of it).
std::vector<Span> uncuttable(const GraphLayout& l) {
  std::vector<Span> s;
  s.reserve(l.boxes.size() + l.clusters.size() + l.edges.size());
  for (const LayoutBox& b : l.boxes) {
    Span sp{left(b), right(b)};
    if (const int a = b.anchor.empty() ? -1 : l.find(b.anchor); a >= 0) {
      sp.l = std::min(sp.l, left(l.boxes[static_cast<size_t>(a)]));
      sp.r = std::max(sp.r, right(l.boxes[static_cast<size_t>(a)]));
    }
    s.push_back(sp);
  }
  for (const LayoutEdge& e : l.edges)
    if (e.has_label_pos && !e.label.empty()) {
      const LabelRect r = label_rect(l, e, e.label_pos);
      s.push_back({r.l, r.r});
    }
  return s;
}

// The x positions between the uncuttable intervals, left to right (the middle of each gap).
std::vector<float> cut_positions(const GraphLayout& l) {
  std::vector<Span> s = uncuttable(l);
  std::sort(s.begin(), s.end(), [](const Span& a, const Span& b) { return a.l < b.l; });
  std::vector<float> cuts;
  float reach = -1e30f;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && s[i].l > reach) cuts.push_back((reach + s[i].l) / 2);
    reach = std::max(reach, s[i].r);
  }
  return cuts;
}

// Where rows begin after the first: greedy, as a paragraph breaks its lines.
std::vector<float> row_breaks(const std::vector<float>& cuts, float width, float row_width) {
  std::vector<float> breaks;
  if (row_width <= 0) return breaks;
  float start = 0, prev = 0;
  auto consider = [&](float x) {
    if (x - start > row_width && prev > start) {
      breaks.push_back(prev);
      start = prev;
    }
    prev = x;
  };
  for (float c : cuts) consider(c);
  consider(width);
  return breaks;
}

size_t row_of(const std::vector<float>& breaks, float x) {
  return static_cast<size_t>(std::upper_bound(breaks.begin(), breaks.end(), x) - breaks.begin());
}

// [SECTION] rows

// A polyline as Bezier segments (straight lines: control points a third of the way).
std::vector<Point> straight_curve(const std::vector<Point>& pts) {
  std::vector<Point> out{pts.front()};
  for (size_t i = 1; i < pts.size(); ++i) {
    const Point a = pts[i - 1], b = pts[i];
    out.push_back({a.x + (b.x - a.x) / 3, a.y + (b.y - a.y) / 3});
    out.push_back({a.x + 2 * (b.x - a.x) / 3, a.y + 2 * (b.y - a.y) / 3});
    out.push_back(b);
  }
  return out;
}

struct Rows {
  std::vector<float> breaks;
  std::vector<Point> shift;  // per row: how far its content moves
  std::vector<float> right, bottom;  // per row: its content's right end and bottom, after the move
};

// Whether a box of row `row` other than `self` lies on the horizontal line at y between x0 and x1.
bool blocked(const GraphLayout& l, const std::vector<size_t>& box_row, size_t row, int self, float y, float x0,
             float x1) {
  for (size_t i = 0; i < l.boxes.size(); ++i) {
    const LayoutBox& b = l.boxes[i];
    if (box_row[i] != row || static_cast<int>(i) == self) continue;
    if (top(b) - 2 < y && y < bottom(b) + 2 && right(b) > std::min(x0, x1) && left(b) < std::max(x0, x1)) return true;
  }
  return false;
}

// An edge between two rows, around them: out of its row past the end the flow leaves by, along
// the gap between the rows, in at the other row's other end. `track` keeps such edges apart.
std::vector<Point> around_rows(const GraphLayout& l, const Rows& rows, const std::vector<size_t>& box_row, int from,
                               int to, int track) {
  const LayoutBox& a = l.boxes[static_cast<size_t>(from)];
  const LayoutBox& b = l.boxes[static_cast<size_t>(to)];
  const size_t ra = box_row[static_cast<size_t>(from)], rb = box_row[static_cast<size_t>(to)];
  const float off = kTrack * static_cast<float>(track + 1);
  const float x_left = -off;
  std::vector<Point> p;
  if (ra < rb) {  // forwards: out at the right of row ra, in at the left of row rb
    const float x_right = rows.right[ra] + off,
                gap_y = rows.bottom[ra] + kRowGap / 2 - kRowGap / 4 + std::fmod(off, kRowGap / 2);
    if (!blocked(l, box_row, ra, from, a.center.y, right(a), x_right)) {
      p = {{right(a), a.center.y}, {x_right, a.center.y}};
    } else {
      const float band = top(a) - 8 - std::fmod(off, 12.f);
      p = {{a.center.x, top(a)}, {a.center.x, band}, {x_right, band}};
    }
    p.push_back({x_right, gap_y});
    p.push_back({x_left, gap_y});
    if (!blocked(l, box_row, rb, to, b.center.y, x_left, left(b))) {
      p.push_back({x_left, b.center.y});
      p.push_back({left(b), b.center.y});
    } else {
      const float band = top(b) - 8 - std::fmod(off, 12.f);
      p.push_back({x_left, band});
      p.push_back({b.center.x, band});
      p.push_back({b.center.x, top(b)});
    }
  } else {  // backwards (a gradient): out at the left of row ra, in at the right of row rb
    const float x_right = rows.right[rb] + off,
                gap_y = rows.bottom[rb] + kRowGap / 2 + std::fmod(off, kRowGap / 2) - kRowGap / 4;
    if (!blocked(l, box_row, ra, from, a.center.y, x_left, left(a))) {
      p = {{left(a), a.center.y}, {x_left, a.center.y}};
    } else {
      const float band = bottom(a) + 8 + std::fmod(off, 12.f);
      p = {{a.center.x, bottom(a)}, {a.center.x, band}, {x_left, band}};
    }
    p.push_back({x_left, gap_y});
    if (!blocked(l, box_row, rb, to, b.center.y, right(b), x_right)) {
      p.push_back({x_right, gap_y});
      p.push_back({x_right, b.center.y});
      p.push_back({right(b), b.center.y});
    } else {
      p.push_back({b.center.x, gap_y});
      p.push_back({b.center.x, bottom(b)});
    }
  }
  return straight_curve(p);
}

// Moves the layout to start at (0, 0) and measures it.
void normalise(GraphLayout& out) {
  float x0 = 1e30f, y0 = 1e30f, x1 = -1e30f, y1 = -1e30f;
  auto grow = [&](float x, float y) {
    x0 = std::min(x0, x);
    y0 = std::min(y0, y);
    x1 = std::max(x1, x);
    y1 = std::max(y1, y);
  };
  for (const auto& b : out.boxes) {
    grow(left(b), top(b));
    grow(right(b), bottom(b));
  }
  for (const auto& c : out.clusters) {
    grow(c.min.x, c.min.y);
    grow(c.max.x, c.max.y);
  }
  for (const auto& e : out.edges) {
    if (e.link) continue;
    for (const auto& p : e.spline) grow(p.x, p.y);
    if (e.has_label_pos && !e.label.empty()) {
      const LabelRect r = label_rect(out, e, e.label_pos);
      grow(r.l, r.t);
      grow(r.r, r.b);
    }
  }
  if (x0 > x1) return;
  y0 = std::min(y0, 0.f);  // (the lanes' title band above the first row stays)
  move_origin(out, {x0, y0});
  out.width = x1 - x0;
  out.height = y1 - y0;
}

// The rows' geometry for `breaks`: each row's content moved to start at x 0, below the last.
Rows measure_rows(const GraphLayout& l, std::vector<float> breaks) {
  Rows r;
  const size_t n = breaks.size() + 1;
  r.breaks = std::move(breaks);
  std::vector<float> x_end(n, 0), y_end(n, 0);
  auto grow = [&](size_t row, float x, float y) {
    x_end[row] = std::max(x_end[row], x);
    y_end[row] = std::max(y_end[row], y);
  };
  for (const LayoutBox& b : l.boxes) grow(row_of(r.breaks, b.center.x), right(b), bottom(b));
  for (const LayoutCluster& c : l.clusters)
    for (size_t row = row_of(r.breaks, c.min.x); row <= row_of(r.breaks, c.max.x); ++row)
      grow(row, row < r.breaks.size() ? std::min(c.max.x, r.breaks[row]) : c.max.x, c.max.y);
  r.shift.resize(n);
  r.right.resize(n);
  r.bottom.resize(n);
  float y = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x0 = i == 0 ? 0.f : r.breaks[i - 1];
    r.shift[i] = {-x0, y};
    r.right[i] = x_end[i] - x0;
    r.bottom[i] = y + y_end[i];
    y = r.bottom[i] + kRowGap;
  }
  return r;
}

bool intersects(const LabelRect& a, const LabelRect& b) { return a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b; }

Point bezier_at(const std::vector<Point>& s, size_t seg, float t) {
  const Point& p0 = s[seg * 3];
  const Point& p1 = s[seg * 3 + 1];
  const Point& p2 = s[seg * 3 + 2];
  const Point& p3 = s[seg * 3 + 3];
  const float u = 1 - t;
  return {u * u * u * p0.x + 3 * u * u * t * p1.x + 3 * u * t * t * p2.x + t * t * t * p3.x,
          u * u * u * p0.y + 3 * u * u * t * p1.y + 3 * u * t * t * p2.y + t * t * t * p3.y};
}

}  // namespace

LabelRect label_rect(const GraphLayout& l, const LayoutEdge& e, Point at) {
  const float hw = kLabelScale * e.label_width / 2 + kLabelPad, hh = kLabelScale * l.line_height / 2 + 1;
  return {at.x - hw, at.y - hh, at.x + hw, at.y + hh};
}

// [SECTION] rows

GraphLayout wrap_rows(const GraphLayout& l, float row_width) {
  GraphLayout out = l;
  out.row_lane_tops.clear();
  const std::vector<float> breaks = row_breaks(cut_positions(l), l.width, row_width);
  if (!breaks.empty()) {
    const Rows rows = measure_rows(l, breaks);
    std::vector<size_t> box_row(l.boxes.size());
    for (size_t i = 0; i < l.boxes.size(); ++i) {
      box_row[i] = row_of(breaks, l.boxes[i].center.x);
      const Point d = rows.shift[box_row[i]];
      out.boxes[i].center = {l.boxes[i].center.x + d.x, l.boxes[i].center.y + d.y};
    }
    out.clusters.clear();  // each row draws its part of a frame the rows cut
    for (const LayoutCluster& c : l.clusters)
      for (size_t row = row_of(breaks, c.min.x); row <= row_of(breaks, c.max.x); ++row) {
        LayoutCluster part = c;
        if (row > 0) part.min.x = std::max(c.min.x, breaks[row - 1]);
        if (row < breaks.size()) part.max.x = std::min(c.max.x, breaks[row]);
        const Point d = rows.shift[row];
        part.min = {part.min.x + d.x, part.min.y + d.y};
        part.max = {part.max.x + d.x, part.max.y + d.y};
        out.clusters.push_back(std::move(part));
      }
    int track = 0;
    for (LayoutEdge& e : out.edges) {
      if (e.from < 0 || e.to < 0) continue;
      const size_t ra = box_row[static_cast<size_t>(e.from)], rb = box_row[static_cast<size_t>(e.to)];
      if (ra == rb) {
        const Point d = rows.shift[ra];
        for (Point& p : e.spline) p = {p.x + d.x, p.y + d.y};
        e.label_pos = {e.label_pos.x + d.x, e.label_pos.y + d.y};
        e.arrow_tip = {e.arrow_tip.x + d.x, e.arrow_tip.y + d.y};
        continue;
      }
      if (e.kind == EdgeKind::link) {  // (drawn for the selected box only: a straight line is enough)
        const LayoutBox& a = out.boxes[static_cast<size_t>(e.from)];
        const LayoutBox& b = out.boxes[static_cast<size_t>(e.to)];
        e.spline = straight_curve({a.center, b.center});
        continue;
      }
      e.spline = around_rows(out, rows, box_row, e.from, e.to, track++);
      e.arrow_tip = e.spline.back();
      e.has_label_pos = false;  // (its tooltip shows it: along the rows it would be far from both boxes)
      e.label_dropped = !e.label.empty() && e.kind == EdgeKind::forward;
    }
    if (l.backward_lane_top >= 0) {
      out.backward_lane_top = l.backward_lane_top;
      for (size_t i = 1; i < rows.shift.size(); ++i) out.row_lane_tops.push_back(l.backward_lane_top + rows.shift[i].y);
    }
    normalise(out);
  }
  place_edge_labels(out);
  return out;
}

// [SECTION] labels

namespace {

// What an edge label must not cover besides other labels: the boxes, the saved-for-backward
// badges over their top-right corners, and the frames' titles at their top-left corners (each as
// the view draws it: graph_view.cpp).
std::vector<LabelRect> label_obstacles(const GraphLayout& l) {
  std::vector<LabelRect> out;
  out.reserve(l.boxes.size() + l.clusters.size());
  for (const LayoutBox& b : l.boxes) {
    out.push_back({left(b) - 1, top(b) - 1, right(b) + 1, bottom(b) + 1});
    if (b.badge_width > 0)
      out.push_back({right(b) - b.badge_width, top(b) - kBadgeScale * l.line_height - 4, right(b) + 1, top(b)});
  }
  for (const LayoutCluster& c : l.clusters) {
    const float x = c.min.x + 6, y = c.min.y + 3;
    out.push_back({x - 1, y - 1, x + c.title_width + 1, y + kLabelScale * l.line_height + 1});
    if (c.loop) {  // its badge with the count, over the frame's top edge at the right
      const float h = 0.6f * kLabelScale * l.line_height + 1;
      out.push_back({c.max.x - kLoopBadgeWidth, c.min.y - h, c.max.x, c.min.y + h});
    }
  }
  return out;
}

}  // namespace

void place_edge_labels(GraphLayout& l) {
  std::vector<LabelRect> placed;
  const std::vector<LabelRect> boxes = label_obstacles(l);
  auto free_at = [&](const LabelRect& r) {
    for (const LabelRect& b : boxes)
      if (intersects(r, b)) return false;
    for (const LabelRect& p : placed)
      if (intersects(r, p)) return false;
    return true;
  };
  for (LayoutEdge& e : l.edges) {
    if (e.label.empty() || e.kind != EdgeKind::forward) continue;
    if (!e.has_label_pos) {  // (a compact figure makes no room for them)
      e.label_dropped = true;
      continue;
    }
    std::vector<Point> tries{e.label_pos};
    const float h = kLabelScale * l.line_height / 2 + 3;
    for (size_t seg = 0; seg + 3 < e.spline.size(); seg += 3)
      for (float t : {0.5f, 0.3f, 0.7f, 0.15f, 0.85f}) {
        const Point p = bezier_at(e.spline, seg / 3, t);
        tries.push_back({p.x, p.y - h});
        tries.push_back({p.x, p.y + h});
        tries.push_back(p);
      }
    bool ok = false;
    for (const Point& p : tries) {
      const LabelRect r = label_rect(l, e, p);
      if (!free_at(r)) continue;
      e.label_pos = p;
      placed.push_back(r);
      ok = true;
      break;
    }
    e.has_label_pos = ok;
    e.label_dropped = !ok;
  }
}

// [SECTION] fitting

namespace {

// The figure's size wrapped at `row_width` (0: one row), with the tracks of the edges that run
// around the rows.
Point wrapped_size(const GraphLayout& l, float row_width) {
  if (row_width <= 0) return {l.width, l.height};
  const std::vector<float> breaks = row_breaks(cut_positions(l), l.width, row_width);
  if (breaks.empty()) return {l.width, l.height};
  const Rows rows = measure_rows(l, breaks);
  float w = 0;
  for (float r : rows.right) w = std::max(w, r);
  // (The edges between rows run around them: a track each, left and right.)
  w += kTrack * static_cast<float>(2 * breaks.size() + 2);
  return {w, rows.bottom.back()};
}

// The widest rows no wider than the canvas at `zoom`: the figure then scrolls one way only, down,
// as a page does. 0 when one row is no wider than that.
float row_width_to_scroll(const GraphLayout& l, Point room, float zoom) {
  const float across = room.x / zoom;
  if (l.width <= across) return 0;
  for (int rows = 2; rows <= 256; ++rows) {
    const float w = l.width / static_cast<float>(rows) * 1.02f;
    if (wrapped_size(l, w).x <= across) return w;
  }
  return across;  // (slices wider than the canvas stay rows of their own)
}

}  // namespace

float wrapped_zoom(const GraphLayout& l, float row_width, Point room) {
  const Point size = wrapped_size(l, row_width);
  return std::min(room.x / std::max(1.f, size.x), room.y / std::max(1.f, size.y));
}

float row_width_to_fit(const GraphLayout& l, Point room, float readable_zoom, bool scroll) {
  if (l.boxes.empty() || room.x <= 0 || room.y <= 0) return 0;
  float best = 0, best_zoom = wrapped_zoom(l, 0, room);
  if (best_zoom >= readable_zoom) return 0;
  const float enough_zoom = readable_zoom * kComfortableZoom;
  for (int rows = 2; rows <= 8; ++rows) {
    const float w = l.width / static_cast<float>(rows) * 1.02f;
    const float z = wrapped_zoom(l, w, room);
    if (z >= enough_zoom) return w;
    if (z >= readable_zoom && best_zoom < readable_zoom) {  // the fewest rows that read
      best = w;
      best_zoom = z;
    }
  }
  if (best_zoom >= readable_zoom) return best;
  // No rows read whole: one row, as laid out (the view folds, or shows the step readable and
  // scrolls; rows too small to read would only move the figure about), or, to scroll, rows as
  // wide as the canvas at the readable zoom.
  return scroll ? row_width_to_scroll(l, room, readable_zoom) : 0.f;
}

}  // namespace opscope::viz
