// A node's body: the ops a node runs inside it, as a small graph of its own. A user `@op`'s
// body (the ops of its forward or backward, traced once per input shapes) is its kernel; a
// fused node's body is the chain it replaced. The figure, DOT and `:graph N` draw a node's
// body when the node is expanded; `run_body` executes one as a kernel.
#pragma once
#include <memory>
#include <vector>

#include "core/graph.h"

namespace opscope {

struct KernelCtx;

struct NodeBody {
  Graph graph;  // the body's nodes (in execution order) and values
  std::vector<int> inputs;  // inputs[i]: the body value bound to the node's input i (a placeholder leaf)
  std::vector<int> outputs;  // outputs[i]: the body value that becomes the node's output i
  // Index of the node input / output bound to body value v, or -1.
  int input_index(int v) const;
  int output_index(int v) const;
};

// The body the figure expands for node `n` of `g`: an @op's traced body, or a fused node's
// chain as a graph of its own (values copied from `g`). Null for a node without one.
std::shared_ptr<const NodeBody> node_body(const Graph& g, const Node& n);

// The sum of the costs of a body's nodes (an @op's cost model).
Cost body_cost(const NodeBody& body);

// Runs `body` as the kernel of the node `k` belongs to: its inputs are k.inputs, its outputs
// are written into k.outputs (straight into the buffer where a body node produces one, else
// copied). Intermediate values are scratch memory (category workspace) freed after their last
// use; nothing is recorded in any graph and no step is emitted.
void run_body(const NodeBody& body, KernelCtx& k);

}  // namespace opscope
