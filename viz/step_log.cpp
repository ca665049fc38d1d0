#include "viz/step_log.h"

#include <algorithm>

namespace opscope::viz {

StepLog::StepLog(Executor& ex) : ex_(ex) {
  listener_ = ex_.add_listener([this](const StepEvent& e) {
    if (events_.size() >= kMaxEvents) events_.erase(events_.begin(), events_.begin() + kMaxEvents / 2);
    events_.push_back(e);
    ++version_;
  });
}

StepLog::~StepLog() { ex_.remove_listener(listener_); }

void StepLog::forget_missing_nodes(const Graph* graph) {
  auto it = std::remove_if(events_.begin(), events_.end(), [&](const StepEvent& e) {
    return (e.graph == nullptr || e.graph == graph) && !graph->has_node(e.node);
  });
  if (it != events_.end()) {
    events_.erase(it, events_.end());
    ++version_;
  }
}

void StepLog::drop_nodes_from(const Graph* graph, int first_missing_node) {
  // Steps of a compiled program (another graph) keep their nodes: the program holds them.
  auto it = std::remove_if(events_.begin(), events_.end(), [&](const StepEvent& e) {
    return (e.graph == nullptr || e.graph == graph) && e.node >= first_missing_node;
  });
  if (it != events_.end()) {
    events_.erase(it, events_.end());
    ++version_;
  }
}

}  // namespace opscope::viz
