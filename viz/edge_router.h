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

// The same a few edges at a time (a layout step stays short: each edge weighs its 16 curves
// against every box and every curve drawn before it). `boxes` and `edges` outlive it.
class EdgeRouter {
 public:
  EdgeRouter(const std::vector<LayoutBox>& boxes, std::vector<LayoutEdge>& edges, std::vector<size_t> order);
  ~EdgeRouter();
  // Routes the next `count` edges of the order; false once all are routed.
  bool route(size_t count);

 private:
  struct Drawn;
  void route_one(size_t i);
  const std::vector<LayoutBox>& boxes_;
  std::vector<LayoutEdge>& edges_;
  std::vector<size_t> order_;
  size_t next_ = 0;
  std::vector<Drawn> drawn_;
};

}  // namespace opscope::viz
