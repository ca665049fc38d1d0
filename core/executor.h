// The one executor of both modes: runs a node's kernel, accounts its memory and cost, and
// emits a StepEvent that every front end reads. A ScheduleRun runs a list of nodes one step
// at a time, freeing each value after its last use.
#pragma once
#include <chrono>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "core/memory.h"

namespace opscope {

class Workspace;

struct StepEvent {
  int64_t step = 0;
  const Graph* graph = nullptr;  // the graph `node` belongs to: the workspace's, or a compiled program's
  int node = -1;
  Phase phase = Phase::forward;
  const OpDef* op = nullptr;
  std::string algo;
  std::vector<Shape> input_shapes, output_shapes;
  CategoryBytes mem_before{}, mem_after{};
  int64_t time_ns = 0;
  Cost cost;
  std::vector<int> saved_released_of;  // forward nodes whose saved tensors were freed by this step
};
using StepListener = std::function<void(const StepEvent&)>;

// Runs node `n`'s kernel on `inputs` with no event and no step: inputs are moved to the node's
// device and made contiguous where its op needs that (counted as temporary); undefined
// `outputs` are allocated under `category`. Constant folding and the ops of an @op's body.
void run_kernel(Workspace& ws, const Node& n, const std::vector<TensorMeta>& out_meta,
                const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, MemCategory category);

class Executor {
 public:
  explicit Executor(Workspace& ws) : ws_(ws) {}
  // Runs node `node_id` on `inputs` and returns its outputs. Emits one event. `finish` runs
  // after the kernel and before the step is recorded (it may clear `inputs`). `graph` is the
  // workspace's unless given (a compiled program's); `outputs_into` gives the output buffers
  // (a memory plan's) instead of fresh allocations.
  using FinishFn = std::function<void(std::vector<Tensor>& outputs)>;
  std::vector<Tensor> run_node(int node_id, const std::vector<Tensor>& inputs,
                               const std::vector<int>& released_saved_of = {}, const FinishFn* finish = nullptr,
                               Graph* graph = nullptr, const std::vector<Tensor>* outputs_into = nullptr);
  // Runs a node's kernel with no event and no step (constant folding at compile time).
  std::vector<Tensor> evaluate(Graph& g, int node_id, const std::vector<Tensor>& inputs);
  int64_t step_count() const { return steps_; }
  int add_listener(StepListener fn);
  void remove_listener(int id);
  bool has_listeners() const { return !listeners_.empty(); }

 private:
  Workspace& ws_;
  int64_t steps_ = 0;
  int next_listener_ = 0;
  std::vector<std::pair<int, StepListener>> listeners_;
};

// dst += src, in place (same shape; dst contiguous, src contiguous of dst's dtype).
void accumulate_into(Tensor& dst, const Tensor& src);
// A leaf's .grad after a gradient `g` arrives: `g` itself (cast) when the leaf had none; when it
// had one, what to add into it in place (`in_place`), or a new sum when the workspace's journal
// keeps the old .grad to put back. Allocates everything before anything changes.
Tensor accumulated_grad(Workspace& ws, const std::shared_ptr<TensorImpl>& leaf, const Tensor& g, bool& in_place);

// A list of nodes to run in order, with an environment of values (id -> tensor).
class ScheduleRun {
 public:
  struct Sink {  // a value whose tensor accumulates into a leaf's .grad
    int value_id;
    std::weak_ptr<TensorImpl> leaf;
  };
  ScheduleRun(Workspace& ws, std::vector<int> nodes, std::unordered_map<int, Tensor> env, std::vector<Sink> sinks,
              bool retain_saved);
  bool done() const { return pos_ >= nodes_.size(); }
  size_t position() const { return pos_; }
  size_t size() const { return nodes_.size(); }
  const std::vector<int>& nodes() const { return nodes_; }
  void step();
  void run_all() {
    while (!done()) step();
  }

 private:
  Tensor lookup(int value_id, const Node& consumer);
  // Gradients reach leaves in two phases, so an allocation failure leaves every .grad as it was.
  struct Delivery {
    std::shared_ptr<TensorImpl> leaf;
    Tensor grad;
    bool accumulate;
  };
  std::vector<Delivery> prepare(int value_id, const Tensor& t) const;
  static void commit(std::vector<Delivery>& ds);
  Workspace& ws_;
  std::vector<int> nodes_;
  std::unordered_map<int, Tensor> env_;
  std::unordered_map<int, size_t> last_use_;  // value -> last schedule position reading it
  std::unordered_map<int, size_t> last_backward_;  // forward node -> last position of its backward
  std::unordered_map<int, std::vector<std::weak_ptr<TensorImpl>>> sinks_;  // one value may feed several leaves
  bool retain_saved_;
  size_t pos_ = 0;
};

}  // namespace opscope
