// viz-internal: the backward lane under the forward lane. Before the forward lane is laid out,
// the backward boxes are grouped under the forward box they differentiate (each forward box is
// then given its group's width); after it, the groups are placed as a mirror image of the forward
// lane and their edges routed. Plain data in and out (no Graph, no Graphviz).
#pragma once
#include <memory>
#include <vector>

#include "viz/edge_router.h"
#include "viz/layout_plan.h"
#include "viz/scope_tree.h"

namespace opscope::viz {

// The backward boxes drawn under one forward box (its anchor), on a small grid (a staircase, so
// no curve has to pass through a box of the group).
struct Group {
  int anchor = -1;  // forward box, -1: placed beside the group it feeds
  std::vector<int> boxes;
  std::vector<Point> offset;  // per box: its centre from the group's top middle
  float width = 0, height = 0;
  float main_y = 0;  // the first receiving box's centre, from the group's top
  bool sink = false;  // passes no gradient on (a parameter's gradient: db, dW)
  float cx = 0, top = 0;  // placement
};

struct BackwardGroups {
  std::vector<Group> groups;
  std::vector<int> loose;  // backward boxes without a forward box (the seed, ...)
  std::vector<int> box_group;  // per box: its group, -1
};

// Groups the backward boxes by anchor (and names each box's anchor in LayoutBox::anchor).
BackwardGroups group_backward_boxes(FigurePlan& plan);
// Per box: the width the forward lane reserves for it (at least its group's).
std::vector<float> reserved_widths(const FigurePlan& plan, const BackwardGroups& groups);

// The figure from the placed forward lane: the backward lane under it (both phases in lanes).
// Its curves are routed a few at a time (route), so that no layout step is long.
class LanesAssembly {
 public:
  LanesAssembly(FigurePlan plan, BackwardGroups groups, const ForwardLane& forward);
  ~LanesAssembly();
  LanesAssembly(const LanesAssembly&) = delete;
  LanesAssembly& operator=(const LanesAssembly&) = delete;
  bool route(size_t edges);  // routes the next `edges` curves; false once all are
  GraphLayout finish();  // once routed: the figure, moved to (0, 0) and measured

 private:
  FigurePlan plan_;
  GraphLayout out_;
  std::unique_ptr<EdgeRouter> router_;
};
// The figure from one dot layout of every box (the backward pass alone, or lanes off).
GraphLayout assemble_one_layout(FigurePlan plan, const ForwardLane& all);

}  // namespace opscope::viz
