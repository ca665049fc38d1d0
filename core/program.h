// Static mode's compiled program: the graph the passes rewrote, the schedule to run, the
// memory plan, and what each pass changed. `compile_program` turns the symbolic nodes a
// script built into one; `ProgramRun` (core/program_run.h) executes it step by step.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph.h"

namespace opscope {

class Workspace;

// What one pass did, and the program's size after it (the `:compile` table).
struct PassReport {
  std::string pass;
  bool enabled = true;
  std::vector<std::string> changes;  // one line each: what was removed, merged, fused, planned
  size_t nodes = 0;  // scheduled nodes after the pass
  double flops = 0;  // FLOPs of one run after the pass
  double bytes_moved = 0;  // bytes read + written by the kernels
  int64_t peak_bytes = 0;  // memory of one run after the pass (see Program::peak_bytes)
  double ms = 0;  // time the pass took
};

// Recomputation (checkpointing): which forward values are kept for backward; the others are
// dropped after forward and recomputed from the nearest kept one when backward needs them.
struct RecomputePolicy {
  enum Kind { none, every_k, marks, within_budget } kind = none;
  int k = 2;  // every_k: keep every k-th recomputable activation
  int64_t budget = 0;  // within_budget: keep activations while their bytes fit
  std::string describe() const;
};

// One parameter's update in a training step: `op`(param, gradient, state...) writes the
// parameter and its state in place (the language's optimizers give one per parameter).
struct ParamUpdate {
  std::string op;
  AttrMap attrs;
  std::vector<Tensor> state;  // inputs after the gradient: momentum buffer; Adam's m, v, step
};
// The update of a parameter, or nullopt to leave its gradient in .grad.
using UpdateFn = std::function<std::optional<ParamUpdate>(const Tensor& param)>;

struct CompileOptions {
  std::vector<int> fetch;  // workspace values run() returns; fetch[0] is the loss
  std::vector<int> wrt;  // gradients for these leaves (empty: every parameter)
  bool gradients = true;  // append the backward graph (needs a scalar fetch[0])
  std::optional<double> sgd_lr;  // a training step: w ← w − lr·dw in place after each dw
  UpdateFn update;  // a training step with an optimizer's updates (instead of sgd_lr)
  std::string update_name;  // the optimizer, for the report: "Adam(lr=0.001)"
  std::set<std::string> disabled;  // pass names switched off
  RecomputePolicy recompute;
};

// Buffer assignment: every value a node writes (except outputs the caller keeps, views and
// in-place updates) lives in one of `buffer_bytes.size()` buffers, reused once a value dies.
struct MemoryPlan {
  bool enabled = false;
  std::vector<int64_t> buffer_bytes;
  std::unordered_map<int, int> buffer_of;  // value -> buffer
  std::set<int> in_place;  // values written over their input's buffer
  int64_t naive_bytes = 0;  // one buffer per value, nothing reused
  int64_t liveness_bytes = 0;  // the most bytes alive at once (a lower bound without in-place)
  int64_t planned_bytes = 0;  // sum of buffer_bytes
};

// Liveness of the values a schedule writes: [def, last use] in schedule positions. Views
// extend the life of the value they look at.
struct LiveInterval {
  int value;
  size_t def, last;
  int64_t bytes;
};

struct Program {
  Graph graph;  // a copy of the workspace graph; passes append to it
  std::vector<int> schedule;  // node ids, in execution order
  std::vector<int> fetch;  // values run() returns
  std::vector<std::pair<int, int>> grads;  // (leaf value, value of its gradient)
  std::vector<int> placeholders;  // values fed by run(x=...)
  MemoryPlan plan;
  RecomputePolicy recompute;
  std::vector<PassReport> reports;

  // Values the caller gets at the end (fetches and gradients): never reused within the run.
  std::set<int> outputs() const;
  // The schedule's liveness intervals (values written by scheduled nodes).
  std::vector<LiveInterval> liveness() const;
  // The values a value is a view of, transitively (the buffer that holds its data).
  int alias_root(int value) const;
  // Bytes of forward values still alive when backward starts: the cached activations that
  // training holds and inference does not (what recomputation reduces).
  int64_t held_activation_bytes() const;
  // Cost of one run.
  double flops() const;
  double bytes_moved() const;
  // Bytes one run allocates: the plan's buffers when planned, else one buffer per value.
  int64_t peak_bytes() const;
};

// The passes in the order they run; `:passes` lists them.
struct PassInfo {
  const char* name;
  const char* doc;
};
const std::vector<PassInfo>& all_passes();

// Builds a program from the symbolic nodes (made in static mode) that `opt.fetch` depends
// on, then runs the passes not switched off.
std::shared_ptr<Program> compile_program(Workspace& ws, const CompileOptions& opt);

// Dynamic mode's forward tape as a program, to replay it step by step from its recorded
// inputs (the leaves must still be alive).
std::shared_ptr<Program> replay_program(const Graph& tape);

// The individual passes (exposed for tests). Each returns what it changed.
std::vector<std::string> pass_autodiff(Workspace& ws, Program& p, const CompileOptions& opt);
std::vector<std::string> pass_dce(Program& p);
std::vector<std::string> pass_cse(Program& p);
std::vector<std::string> pass_constant_folding(Workspace& ws, Program& p);
std::vector<std::string> pass_fuse_elementwise(Program& p);
std::vector<std::string> pass_recompute(Program& p, const RecomputePolicy& policy);
std::vector<std::string> pass_plan_memory(Program& p);

// Nodes whose run changes something besides their outputs (SGD updates, batch_norm's running
// statistics): never merged, folded or recomputed.
bool has_side_effects(const Node& n);

// Moves each update node (sgd_update) to the earliest legal place: after its gradient is made
// and after the last node reading the parameter it overwrites.
void place_updates(Program& p);

// An independent check of a memory plan: no two values alive at the same time share a buffer
// (except a value written in place over its dead input). Returns the violations found.
std::vector<std::string> check_memory_plan(const Program& p);

}  // namespace opscope
