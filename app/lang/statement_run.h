// What the session keeps around each top-level statement, apart from evaluating it:
// StatementRollback puts everything back when a statement fails (variables, graph, memory
// timeline, metrics, random generator, shown values); TapePruner drops the tape no tensor can
// reach while a statement runs and after it, and tracks the statement's outermost loop so the
// GUI and :graph can say which iterations went. The Session owns both; the Interpreter calls them.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "app/lang/session.h"
#include "app/lang/statement_undo.h"
#include "app/lang/value.h"
#include "core/graph.h"
#include "viz/metrics.h"

namespace opscope {
class Workspace;
}

namespace opscope::lang {

// A statement looks for tape no tensor can reach once it has made this many nodes (and then
// after twice as many as it kept): a loop's tape stays bounded, each look costs O(1) a node.
constexpr size_t kTapeCheckMin = 512;

// What the last statement that ran a loop did to the tape: a training loop's earlier iterations
// are dropped once no tensor reaches them, and the GUI and :graph say so next to the iteration
// that is left.
struct LoopTape {
  int line = 0;  // the outermost loop's line (0: no loop ran yet)
  std::shared_ptr<const SourceText> source;
  int64_t iterations = 0;  // iterations it ran
  int64_t dropped_iterations = 0;  // iterations whose nodes were all dropped
  int64_t dropped_nodes = 0;  // nodes the statement dropped (its own and older ones)
  int first_kept_node = -1;  // the first node of the oldest iteration still in the graph (-1: none)
};

// The state of the session a failed statement must get back (besides what its undo log keeps).
struct SessionState {
  std::map<std::string, Value>& globals;
  std::vector<std::map<std::string, Value>>& frames;  // locals of the user functions running
  std::vector<ShownValue>& shown;
  viz::MetricLog& metrics;
  std::mt19937_64& rng;
};

class StatementRollback {
 public:
  explicit StatementRollback(Workspace& ws) : ws_(ws) {}
  // A statement starts: remembers where the graph, timeline, metrics and shown values stand and
  // journals the workspace's changes from now on.
  void begin(const SessionState& s);
  void commit();  // it succeeded: forget the log
  void rollback(const SessionState& s);  // it failed: put everything back, latest change first
  bool running() const { return undo_.active(); }  // between begin and commit/rollback
  // Counts statements: an object changed in place saves its state once per statement.
  uint64_t serial() const { return serial_; }
  // Before the generator draws during a statement: keeps its state once (2.5 KB) to put back.
  void before_drawing(const std::mt19937_64& rng) {
    if (running() && !rng_before_) rng_before_ = rng;
  }
  StatementUndo& undo() { return undo_; }
  const StatementUndo& undo() const { return undo_; }

 private:
  Workspace& ws_;
  StatementUndo undo_;  // the undo log; also the workspace's ChangeJournal while a statement runs
  uint64_t serial_ = 0;
  Graph::Mark mark_{0, 0};
  size_t timeline_ = 0;
  size_t shown_ = 0;
  bool grad_mode_ = true;
  viz::MetricLog::Mark metrics_{};
  std::optional<std::mt19937_64> rng_before_;
};

// Tape no tensor can reach goes, as PyTorch frees a graph once nothing refers to it: while a
// statement runs (once its tape has grown enough) and after it. What must stay (a stepped
// backward's nodes, the values :compile compiles again) is asked of `pins` each time.
class TapePruner {
 public:
  struct Pins {
    std::vector<int> nodes, values;
  };
  explicit TapePruner(Workspace& ws) : ws_(ws) {}
  void set_pins(std::function<Pins()> pins) { pins_ = std::move(pins); }

  void begin_statement();
  // The statement ended well: drops what it left unreachable (after a loop, so the graph shows
  // its last iteration; else once the tape has doubled) and records its loop as last_loop().
  void end_statement();
  // A loop starts or ends (nested ones too): the outermost one's iterations are tracked.
  void enter_loop() { ++loop_depth_; }
  void leave_loop() { --loop_depth_; }
  // At each loop back-edge: where the outermost loop's iteration begins, then a look for dead
  // tape when enough has grown.
  void on_iteration(int line, const std::shared_ptr<const SourceText>& source);
  void maybe_drop();  // during a statement, when its tape has grown enough since the last look
  const LoopTape& last_loop() const { return last_loop_; }
  void reset();  // :reset

 private:
  void drop_dead_tape(const Graph::Mark& from);  // nodes from `from` on; updates the loop's counts

  Workspace& ws_;
  std::function<Pins()> pins_;
  Graph::Mark statement_mark_{0, 0};  // where the running statement's tape began
  size_t nodes_before_statement_ = 0;
  size_t next_tape_check_ = 0;
  size_t next_full_drop_ = kTapeCheckMin;  // the whole graph is looked at when it reaches this
  int loop_depth_ = 0;
  LoopTape loop_;
  // The outermost loop's iterations that still have nodes: (iteration, its first node id).
  std::vector<std::pair<int64_t, int>> iteration_starts_;
  LoopTape last_loop_;
};

}  // namespace opscope::lang
