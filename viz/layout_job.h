// A figure's layout as a sequence of small steps on plain data (a FigurePlan in, a GraphLayout
// out): first the backward groups and the split of the forward lane into scopes (scope_tree.h),
// then one step per scope, children before their parents (each one dot run of a small graph, or
// a scope layout found in the cache), then the assembly (the scopes placed in their frames, the
// backward lane under them) and its curves, a few per step. No step touches the Graph, ImGui or another step's thread: a job
// runs on a worker thread, in slices between frames, or all at once, with the same result.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "viz/layout_lanes.h"
#include "viz/layout_plan.h"
#include "viz/scope_layout.h"
#include "viz/scope_tree.h"

namespace opscope::viz {

// Scope layouts kept for reuse, keyed by scope (a call's key, "" for the whole lane) and the
// signature of what was laid out: unfolding one call lays out that call and the frames around
// it again, never its siblings. Thread-safe; keeps the last few layouts of each scope.
class ScopeCache {
 public:
  std::shared_ptr<const ScopeLayout> find(const std::string& scope, const std::string& signature);
  void store(const std::string& scope, const std::string& signature, std::shared_ptr<const ScopeLayout> layout);
  int runs(const std::string& scope) const;  // dot runs for this scope so far
  int total_runs() const;
  int hits() const;

 private:
  struct Entry {
    std::string signature;
    std::shared_ptr<const ScopeLayout> layout;
  };
  static constexpr size_t kPerScope = 4;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<Entry>> entries_;  // most recently used last
  std::map<std::string, int> runs_;
  int total_runs_ = 0, hits_ = 0;
};

class FigureJob {
 public:
  FigureJob(FigurePlan plan, std::shared_ptr<ScopeCache> cache);
  bool done() const { return stage_ == Stage::finished; }
  // Runs the next step (throws opscope::Error if Graphviz fails).
  void step();
  void run_all() {
    while (!done()) step();
  }
  int steps_total() const;
  int steps_done() const { return steps_done_; }
  // Once done: the layout (layout_ms: the time the steps took).
  GraphLayout take() { return std::move(result_); }
  double work_ms() const { return work_ms_; }

 private:
  enum class Stage { prepare, scopes, assemble, route, finished };
  void prepare();
  void lay_out_next_scope();
  void assemble();
  void route();
  static constexpr size_t kEdgesPerStep = 24;  // curves of the backward lane routed in one step

  FigurePlan plan_;
  std::shared_ptr<ScopeCache> cache_;
  Stage stage_ = Stage::prepare;
  BackwardGroups groups_;
  ScopeTree tree_;
  std::vector<ScopeLayout> done_;  // per tree job
  std::unique_ptr<LanesAssembly> lanes_;
  size_t next_ = 0;
  int route_steps_ = 0;
  int steps_done_ = 0;
  double work_ms_ = 0;
  GraphLayout result_;
};

}  // namespace opscope::viz
