#include "app/gui/recompute_compare.h"

#include "app/lang/interpreter.h"
#include "core/error.h"
#include "core/program_run.h"
#include "core/workspace.h"

namespace opscope::app {

namespace {

// Total live bytes after each step of `p` run in a scratch workspace, plus `offset` (the real
// workspace's parameters and inputs, which the scratch run reads but does not own).
std::vector<int64_t> measure(Workspace& ws, const CompileOptions& opt, const ProgramRun& run, int64_t offset) {
  Workspace scratch;
  WorkspaceScope scope(scratch);  // every allocation of the measuring run counts here
  auto p = compile_program(ws, opt);
  std::vector<int64_t> totals;
  const int id = scratch.executor().add_listener(
      [&](const StepEvent&) { totals.push_back(scratch.tracker().live_total() + offset); });
  try {
    ProgramRun measuring(scratch, p, run.feeds(), false, /*side_effects=*/false);
    measuring.run_all();
  } catch (const Error&) {
    totals.clear();  // a comparison that cannot run is left out, not drawn wrong
  }
  scratch.executor().remove_listener(id);
  return totals;
}

}  // namespace

void update_recompute_comparison(RecomputeComparison& c, Workspace& ws, lang::Interpreter& in, const ProgramRun& run) {
  const Program& p = run.program();
  if (c.program == &p) return;
  c.program = &p;
  c.overlays.clear();
  bool has_backward = false;
  for (int id : p.schedule) has_backward = has_backward || p.graph.node(id).phase == Phase::backward;
  if (!has_backward || in.statics().last.get() != &p) return;
  CompileOptions off = in.statics().last_options, on = off;
  off.recompute = {};
  if (on.recompute.kind == RecomputePolicy::none) {
    on.recompute.kind = RecomputePolicy::every_k;
    on.recompute.k = 2;
  }
  const MemoryTracker& tr = ws.tracker();
  const int64_t offset = tr.live(MemCategory::parameter) + tr.live(MemCategory::input);
  viz::MemoryOverlay a{"recompute off", measure(ws, off, run, offset), false};
  viz::MemoryOverlay b{"recompute on (" + on.recompute.describe() + ")", measure(ws, on, run, offset), true};
  if (!a.totals.empty()) c.overlays.push_back(std::move(a));
  if (!b.totals.empty()) c.overlays.push_back(std::move(b));
}

}  // namespace opscope::app
