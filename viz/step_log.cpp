#include "viz/step_log.h"

#include <algorithm>

namespace opscope::viz {

StepLog::StepLog(Executor& ex) : ex_(ex) {
  listener_ = ex_.add_listener([this](const StepEvent& e) {
    events_.push_back(e);
    ++version_;
  });
}

StepLog::~StepLog() { ex_.remove_listener(listener_); }

void StepLog::drop_nodes_from(int first_missing_node) {
  auto it = std::remove_if(events_.begin(), events_.end(), [&](const StepEvent& e) { return e.node >= first_missing_node; });
  if (it != events_.end()) {
    events_.erase(it, events_.end());
    ++version_;
  }
}

}  // namespace opscope::viz
