// Runs a compiled Program one step at a time through the workspace's Executor (the same one
// dynamic mode uses, so every step emits the same StepEvent). With a memory plan, the plan's
// buffers are allocated once when the run starts and each value is written into its buffer;
// without one, every value gets its own allocation that lives until the run ends.
#pragma once
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/program.h"

namespace opscope {

class Workspace;

class ProgramRun {
 public:
  // `feeds`: a tensor for every placeholder of the program (checked by the caller).
  // `stepping`: keep what :rewind needs (parameters as they were before an update step).
  // `side_effects` false: a measuring run (the GUI's recompute comparison) that neither updates
  // parameters nor fills .grad.
  ProgramRun(Workspace& ws, std::shared_ptr<const Program> program, std::unordered_map<int, Tensor> feeds,
             bool stepping = false, bool side_effects = true);
  ~ProgramRun();
  ProgramRun(const ProgramRun&) = delete;
  ProgramRun& operator=(const ProgramRun&) = delete;

  const Program& program() const { return *program_; }
  std::shared_ptr<const Program> program_ptr() const { return program_; }
  bool done() const { return pos_ >= program_->schedule.size(); }
  size_t position() const { return pos_; }
  size_t size() const { return program_->schedule.size(); }
  int next_node() const { return done() ? -1 : program_->schedule[pos_]; }
  void step();
  void run_all() {
    while (!done()) step();
  }
  // Back to the first step: values dropped, parameters changed by update steps restored.
  void rewind();
  // The fetched values (after the run is done).
  std::vector<Tensor> results() const;
  const std::unordered_map<int, Tensor>& feeds() const { return feeds_; }
  // A value computed by this run and still held (empty if not computed yet or already freed).
  Tensor value(int v) const {
    auto it = env_.find(v);
    return it == env_.end() ? Tensor() : it->second;
  }

 private:
  Tensor lookup(int value) const;
  Tensor buffer_view(int value) const;
  void deliver_gradients();

  Workspace& ws_;
  std::shared_ptr<const Program> program_;
  std::unordered_map<int, Tensor> feeds_;
  bool stepping_;
  bool side_effects_;
  size_t pos_ = 0;
  std::unordered_map<int, Tensor> env_;  // values computed so far
  std::vector<Tensor> arena_;  // the plan's buffers (one storage each)
  std::unordered_map<int, size_t> last_read_;  // value -> last position reading it (plan only)
  std::unordered_map<int, size_t> root_last_;  // buffer-owning value -> end of its interval
  std::unordered_map<int, bool> read_by_backward_;
  std::vector<std::pair<Tensor, Tensor>> undo_updates_;  // (tensor changed in place, its values before)
  std::set<int> outputs_;  // fetched values and gradients: kept to the end
};

}  // namespace opscope
