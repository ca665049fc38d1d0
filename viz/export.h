// Exporters: the graph as Graphviz DOT (deterministic), and executed steps as a Chrome
// trace-event file (opens in Perfetto or chrome://tracing).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/graph.h"

namespace opscope::viz {

// Forward and backward nodes, scopes (composite functions) as clusters, shapes on edges.
// The same graph always gives the same text.
std::string graph_to_dot(const Graph& g);
// Only the listed nodes, in that order (a compiled program's schedule: fused nodes, recomputed
// values and SGD updates as the program runs them).
std::string graph_to_dot(const Graph& g, const std::vector<int>& nodes);
// `expanded` nodes (an @op, a fused node) are drawn as a frame holding the ops of their body.
std::string graph_to_dot(const Graph& g, const std::vector<int>& nodes, const std::set<int>& expanded);

// Collects StepEvents while attached to an executor.
class TraceRecorder {
 public:
  explicit TraceRecorder(Executor& ex);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;
  const std::vector<StepEvent>& events() const { return events_; }
  std::vector<std::string> labels;  // node label at the time of the step (graphs can be reset later)

 private:
  Executor& ex_;
  int id_;
  std::vector<StepEvent> events_;
};

// One "X" slice per step (name, phase, shapes, FLOPs, bytes) laid end to end, and "C" counter
// tracks for memory by category.
std::string chrome_trace_json(const std::vector<StepEvent>& events, const std::vector<std::string>& labels);

}  // namespace opscope::viz
