// Reverse-mode autodiff as graph building: appends the backward nodes of y to a graph, by
// calling each forward node's backward formula. Dynamic mode runs them at once; static
// mode's `autodiff` pass puts them in the compiled program.
#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/graph.h"

namespace opscope {

class Workspace;

struct BackwardNodes {
  std::unordered_map<int, int> grads;  // value -> the value holding dL/d(value)
  std::vector<int> no_backward_nodes;  // forward nodes whose formula added no node
};

// Appends to `g` the backward nodes of every node on a path from a gradient-requiring value to
// `y_value` that `include` accepts (values made by other nodes count as leaves). `seed_value`
// holds dL/dy.
BackwardNodes append_backward_nodes(Workspace& ws, Graph& g, int y_value, int seed_value,
                                    const std::function<bool(const Node&)>& include);

}  // namespace opscope
