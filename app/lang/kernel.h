// `@kernel`: CUDA-style kernels written in the language and launched on the simulated GPU
// (`k[blocks, threads](args...)`), through the same lanes, checks and counters as ops/cuda's
// kernels; `last_launch()`: the last simulated launch's counters as a dict. Without the simulator
// (a sanitizer build) a launch says so (app/lang/kernel_no_sim.cpp).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "app/lang/value.h"

namespace opscope::lang {

class Interpreter;

// Binds `@kernel def NAME(...)` to a kernel value; false when `def` is not a kernel.
bool define_kernel(Interpreter& in, const Stmt& def, const std::shared_ptr<Function>& f);
void install_kernel_builtins(std::map<std::string, Builtin>& table);  // last_launch()

// The last language kernel's launch as the warp view replays it: block (0,0,0)'s requests (the
// simulator's trace JSON, as `opscope bench --json` gives it under "trace") and the kernel's source.
struct LanguageKernelTrace {
  std::string kernel;
  std::string trace_json;  // empty: no language kernel launched yet
  std::shared_ptr<const SourceText> source;
};
const LanguageKernelTrace& last_language_kernel_trace();

// Around a built-in op that may launch on the simulator: its last launch becomes last_launch()'s.
class SimLaunchCapture {
 public:
  explicit SimLaunchCapture(bool active);
  ~SimLaunchCapture();
  SimLaunchCapture(const SimLaunchCapture&) = delete;
  SimLaunchCapture& operator=(const SimLaunchCapture&) = delete;

 private:
  bool active_;
};

}  // namespace opscope::lang
