// Curves for edges between boxes already placed (the backward lane and the edges into it):
// each edge tries the sides of its two boxes and keeps the curve that runs across the fewest
// boxes, then crosses the fewest curves already drawn, then is the shortest.
#pragma once
#include <vector>

#include "viz/graph_layout.h"

namespace opscope::viz {

// Routes `edges[i]` for each i in `order` (in that order); edges with a spline and not listed
// are obstacles to cross as little as possible.
void route_edges(const std::vector<LayoutBox>& boxes, std::vector<LayoutEdge>& edges, const std::vector<size_t>& order);

}  // namespace opscope::viz
