#include "app/lang/statement_run.h"

#include <algorithm>

#include "core/workspace.h"

namespace opscope::lang {

void StatementRollback::begin(const SessionState& s) {
  mark_ = ws_.graph().mark();
  timeline_ = ws_.tracker().timeline_recorded();
  shown_ = s.shown.size();
  grad_mode_ = ws_.grad_enabled();
  metrics_ = s.metrics.mark();
  rng_before_.reset();
  ++serial_;
  undo_.begin(ws_, static_cast<int>(mark_.nodes));
  ws_.set_journal(&undo_);
}

void StatementRollback::commit() {
  ws_.set_journal(nullptr);
  undo_.end();
}

void StatementRollback::rollback(const SessionState& s) {
  ws_.set_journal(nullptr);
  // Undo in reverse: in-place changes and variables first (their tensors free), then the
  // graph and timeline. A stepped pass this statement made points at nodes about to go:
  // the undo log put the one before it back.
  undo_.undo(s.globals);
  s.frames.clear();
  ws_.graph().rollback(mark_);
  ws_.tracker().truncate_timeline(timeline_);
  s.metrics.rollback(metrics_);
  if (rng_before_) s.rng = *rng_before_;
  s.shown.resize(shown_);
  ws_.set_grad_enabled(grad_mode_);
  while (!ws_.scope().empty()) ws_.pop_scope();
}

void TapePruner::begin_statement() {
  const Graph& g = ws_.graph();
  statement_mark_ = g.mark();
  nodes_before_statement_ = g.node_count();
  next_tape_check_ = statement_mark_.nodes + kTapeCheckMin;
  loop_depth_ = 0;
  loop_ = {};
  iteration_starts_.clear();
}

void TapePruner::end_statement() {
  // What the statement left unreachable goes, older tape included: after a loop, so the graph
  // shows its last iteration; else once the tape has grown by as much as it holds, so a look
  // costs O(1) a node.
  const Graph& g = ws_.graph();
  if (loop_.iterations > 0 || g.num_nodes() >= next_full_drop_) {
    drop_dead_tape({0, 0});
    next_full_drop_ = g.num_nodes() + std::max(kTapeCheckMin, g.node_count());
  }
  if (loop_.line) {
    loop_.first_kept_node = iteration_starts_.empty() ? -1 : iteration_starts_.front().second;
    last_loop_ = loop_;
  }
}

void TapePruner::on_iteration(int line, const std::shared_ptr<const SourceText>& source) {
  if (loop_depth_ == 1) {  // the statement's outermost loop: where this iteration's nodes begin
    if (!loop_.line) {
      loop_.line = line;
      loop_.source = source;
    }
    const int first = static_cast<int>(ws_.graph().num_nodes());
    if (!iteration_starts_.empty() && iteration_starts_.back().second == first)
      iteration_starts_.back().first = loop_.iterations;
    else iteration_starts_.emplace_back(loop_.iterations, first);
    ++loop_.iterations;
  }
  maybe_drop();
}

void TapePruner::maybe_drop() {
  const Graph& g = ws_.graph();
  if (g.num_nodes() < next_tape_check_) return;
  drop_dead_tape(statement_mark_);
  const size_t kept = g.node_count() - nodes_before_statement_;  // of this statement's nodes
  next_tape_check_ = g.num_nodes() + std::max(kTapeCheckMin, 2 * kept);
}

void TapePruner::drop_dead_tape(const Graph::Mark& from) {
  Graph& g = ws_.graph();
  const Pins pins = pins_ ? pins_() : Pins{};
  const TapeDrops d = g.drop_unreachable(from, pins.nodes, pins.values);
  if (!d.nodes) return;
  loop_.dropped_nodes += d.nodes;
  // Iterations of the loop with no node left were dropped whole.
  std::vector<std::pair<int64_t, int>> left;
  const auto& nodes = g.nodes();
  for (size_t k = 0; k < iteration_starts_.size(); ++k) {
    const int begin = iteration_starts_[k].second;
    const int end =
        k + 1 < iteration_starts_.size() ? iteration_starts_[k + 1].second : static_cast<int>(g.num_nodes());
    auto it = std::lower_bound(nodes.begin(), nodes.end(), begin, [](const Node& n, int id) { return n.id < id; });
    if (it != nodes.end() && it->id < end) left.push_back(iteration_starts_[k]);
    else ++loop_.dropped_iterations;
  }
  iteration_starts_ = std::move(left);
}

void TapePruner::reset() {
  last_loop_ = {};
  next_full_drop_ = kTapeCheckMin;
}

}  // namespace opscope::lang
