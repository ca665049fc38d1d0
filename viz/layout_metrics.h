// How readable a laid-out graph is, in numbers: edge crossings and total edge length of the
// edges the view draws (the layout bench prints them; a teacher's figure wants few crossings).
#pragma once
#include <vector>

#include "viz/graph_layout.h"

namespace opscope::viz {

struct LayoutMetrics {
  int boxes = 0;
  int edges = 0;  // edges counted (see measure_layout)
  int crossings = 0;  // points where two drawn edges cross
  double edge_length = 0;  // sum of the edges' curve lengths, pixels at zoom 1
  int through_boxes = 0;  // (edge, box) pairs where an edge runs across a box it does not connect
  float width = 0, height = 0;
};

// A cubic Bezier spline (p0, c1, c2, p1, c1, c2, p2, ...) as a polyline, `per_segment` pieces each.
std::vector<Point> flatten_spline(const std::vector<Point>& spline, int per_segment = 16);

// Crossings between two polylines: proper intersections of their pieces. Intersections inside
// `skip` boxes (the box two edges share, where they meet by design) are not counted.
int count_crossings(const std::vector<Point>& a, const std::vector<Point>& b,
                    const std::vector<const LayoutBox*>& skip);

// The edges the view draws at rest: forward and gradient edges. Links (a backward node to its
// forward node) and the edges of saved tensors into the backward lane are drawn only for the
// selected, hovered or current box; `with_saved` counts the saved ones too.
LayoutMetrics measure_layout(const GraphLayout& l, bool with_saved = false);

}  // namespace opscope::viz
