// The Workspace: one student's session of the engine. It owns the graph, the allocators and
// their MemoryTracker, the executor, and the dynamic-mode dispatch and autograd.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/executor.h"
#include "core/graph.h"
#include "core/journal.h"
#include "core/memory.h"
#include "core/op.h"
#include "core/tensor.h"

namespace opscope {

class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  std::shared_ptr<Allocator> allocator(Device d);
  // Devices register their allocator here (the CUDA backend does when built).
  void set_allocator(Device d, std::shared_ptr<Allocator> a);
  MemoryTracker& tracker() { return *tracker_; }
  // Where the script language makes new tensors (:device cuda|cpu).
  Device default_device() const { return default_device_; }
  void set_default_device(Device d);  // throws "no CUDA device found (CUDA built: ...)" if missing
  Graph& graph() { return graph_; }
  Executor& executor() { return executor_; }

  // --- dynamic-mode dispatch: runs at once and appends a node ---
  Tensor call(std::string_view op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {},
              std::string_view algo = {});
  std::vector<Tensor> call_multi(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                 std::string_view algo = {});
  // Shape inference alone (no kernel): used by static mode and for checks.
  std::vector<TensorMeta> infer(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) const;

  // --- autograd ---
  // Appends the backward nodes of y's graph and runs them. y must be a scalar unless `grad`
  // (dL/dy) is given. Saved tensors are released as their backward runs unless retain_graph.
  void backward(const Tensor& y, const Tensor& grad = {}, bool retain_graph = false);
  // Builds the backward nodes without running them; run the returned schedule step by step.
  std::unique_ptr<ScheduleRun> build_backward(const Tensor& y, const Tensor& grad = {}, bool retain_graph = false);
  void zero_grad(const std::vector<Tensor>& tensors);

  bool grad_enabled() const { return grad_enabled_; }
  void set_grad_enabled(bool on) { grad_enabled_ = on; }
  // Anomaly mode: the first node whose output holds NaN or Inf raises an error.
  bool anomaly() const { return anomaly_; }
  void set_anomaly(bool on) { anomaly_ = on; }
  // Static mode: calls build symbolic nodes (shape inference only, no kernel) until a compiled
  // program runs them.
  bool static_mode() const { return static_mode_; }
  void set_static_mode(bool on) { static_mode_ = on; }
  Phase phase() const { return phase_; }
  void set_phase(Phase p) { phase_ = p; }
  // Who is told before a change a rollback must undo (the language's running statement); none
  // outside statements.
  ChangeJournal* journal() const { return journal_; }
  void set_journal(ChangeJournal* j) { journal_ = j; }

  // Scope of the composite function being run ("" at top level), pushed by the language.
  // Each push is a new call frame of the nodes recorded until its pop; `call_frame` false: a
  // name only (an imported model's name prefix, pushed per node: its nodes share the scope,
  // so they are one call of it in the figure, not one call each).
  void push_scope(const std::string& name, bool call_frame = true);
  void pop_scope();
  const std::string& scope() const { return scope_; }
  // Loops of the language: a run of a loop statement is a frame; its nodes carry the iteration.
  void push_loop();
  void set_loop_iteration(int i);
  void pop_loop();
  const NodeFrames& frames() const { return frames_; }

  // Static mode's placeholder: a named symbolic input, fed when the program runs.
  Tensor placeholder(const std::string& name, const Shape& shape, DType dtype);

  // The graph value for a tensor, registering it as a leaf the first time it is used.
  int value_of(const Tensor& t);

  // Clears the graph, saved tensors and timeline (tensors the user holds stay valid).
  void reset_graph();
  // Exchanges the workspace's graph with `g` (see RecordInto).
  void swap_graph(Graph& g) { std::swap(graph_, g); }

 private:
  friend class ScheduleRun;
  std::vector<Tensor> symbolic_outputs(int node_id, bool requires_grad);
  std::shared_ptr<MemoryTracker> tracker_;
  std::vector<std::shared_ptr<Allocator>> allocators_;
  Graph graph_;
  Executor executor_;
  Device default_device_ = Device::cpu;
  bool grad_enabled_ = true, anomaly_ = false, static_mode_ = false;
  ChangeJournal* journal_ = nullptr;
  Phase phase_ = Phase::forward;
  std::string scope_;
  std::vector<std::pair<std::string, bool>> scope_stack_;  // the scope before each push; whether it pushed a frame
  NodeFrames frames_;
  int next_frame_id_ = 0;
};

// A loop's frame for the guard's lifetime (exceptions included): for ...: in the language.
class LoopFrameGuard {
 public:
  explicit LoopFrameGuard(Workspace& ws) : ws_(ws) { ws.push_loop(); }
  ~LoopFrameGuard() { ws_.pop_loop(); }
  LoopFrameGuard(const LoopFrameGuard&) = delete;
  LoopFrameGuard& operator=(const LoopFrameGuard&) = delete;
  void iteration(int i) { ws_.set_loop_iteration(i); }

 private:
  Workspace& ws_;
};

// The device an op runs on: that of its first input with at least one dimension (0-d inputs,
// such as the constant 2 in x * 2, follow the data and are copied there), else of input 0.
Device op_device(const std::vector<TensorMeta>& inputs);
// The algorithm a call without algo= uses on `d`: the op's default when it has a kernel there,
// else the first algorithm that does (matmul's default "eigen" is a CPU library).
const std::string& default_algorithm_on(const OpDef& op, Device d);

// The workspace that factories and op calls use on this thread.
Workspace& current_workspace();
// Makes `ws` current for the guard's lifetime.
class WorkspaceScope {
 public:
  explicit WorkspaceScope(Workspace& ws);
  ~WorkspaceScope();

 private:
  Workspace* prev_;
};

// Static (or dynamic) mode for the guard's lifetime: a static: block, a @static function.
class StaticModeGuard {
 public:
  StaticModeGuard(Workspace& ws, bool on) : ws_(ws), prev_(ws.static_mode()) { ws.set_static_mode(on); }
  ~StaticModeGuard() { ws_.set_static_mode(prev_); }

 private:
  Workspace& ws_;
  bool prev_;
};

// Calls record their nodes into `g` instead of the workspace's graph for the guard's lifetime:
// an @op's body is traced into a graph of its own, not into the user's.
class RecordInto {
 public:
  RecordInto(Workspace& ws, Graph& g) : ws_(ws), g_(g) { ws_.swap_graph(g_); }
  ~RecordInto() { ws_.swap_graph(g_); }
  RecordInto(const RecordInto&) = delete;
  RecordInto& operator=(const RecordInto&) = delete;

 private:
  Workspace& ws_;
  Graph& g_;
};

// No-grad scope: calls inside record no saved tensors and produce no gradients.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(current_workspace().grad_enabled()) { current_workspace().set_grad_enabled(false); }
  ~NoGradGuard() { current_workspace().set_grad_enabled(prev_); }

 private:
  bool prev_;
};

// Checks an op's output for NaN/Inf; throws naming the op, input shapes and variable names.
void check_anomaly(Workspace& ws, const Graph& g, int node_id, const std::vector<Tensor>& outputs);

}  // namespace opscope
