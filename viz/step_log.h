// The steps the executor has run, as its StepEvents: the GUI's current step, its memory
// series and its "data flowing" animation all read this log (never the executor's internals).
#pragma once
#include <vector>

#include "core/executor.h"

namespace opscope::viz {

class StepLog {
 public:
  explicit StepLog(Executor& ex);
  ~StepLog();
  StepLog(const StepLog&) = delete;
  StepLog& operator=(const StepLog&) = delete;

  const std::vector<StepEvent>& events() const { return events_; }
  const StepEvent* last() const { return events_.empty() ? nullptr : &events_.back(); }
  // Forgets steps whose node no longer exists (a failed statement or :reset rolled the graph
  // back, or a loop's tape was dropped).
  void drop_nodes_from(const Graph* graph, int first_missing_node);
  void forget_missing_nodes(const Graph* graph);
  // The log keeps the last kMaxEvents steps: a 10,000-step loop does not grow it without bound.
  static constexpr size_t kMaxEvents = 1 << 14;
  void clear() { events_.clear(); }
  // Bumped on every change, so views can redraw caches only then.
  uint64_t version() const { return version_; }

 private:
  Executor& ex_;
  int listener_;
  std::vector<StepEvent> events_;
  uint64_t version_ = 0;
};

}  // namespace opscope::viz
