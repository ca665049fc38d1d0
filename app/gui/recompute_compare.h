// The memory panel's overlay in static mode: the program being stepped, run twice in a scratch
// workspace (recomputation off, and on), so the student sees what checkpointing saves. The
// numbers are the scratch allocator's real bytes, not an estimate.
#pragma once
#include <memory>
#include <vector>

#include "viz/memory_panel.h"

namespace opscope {
class Workspace;
class ProgramRun;
struct Program;
namespace lang {
class Interpreter;
}

namespace app {

struct RecomputeComparison {
  const Program* program = nullptr;  // what the overlays were measured for
  std::vector<viz::MemoryOverlay> overlays;
};

// Measures (once per program) the stepped program with recompute off and on; no overlay for a
// program without a backward pass.
void update_recompute_comparison(RecomputeComparison& c, Workspace& ws, lang::Interpreter& in, const ProgramRun& run);

}  // namespace app
}  // namespace opscope
