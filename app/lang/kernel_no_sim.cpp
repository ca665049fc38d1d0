// `@kernel` where the simulated GPU is not built (a sanitizer or fuzzing build): a kernel can be
// defined, but its launch and last_launch() say why they cannot run.
#include <algorithm>

#include "app/lang/interpreter.h"
#include "app/lang/kernel.h"

namespace opscope::lang {

namespace {
const char* const kWhy = "the simulated GPU is not built in this configuration (sanitizer or fuzzing build)";
}

bool define_kernel(Interpreter& in, const Stmt& def, const std::shared_ptr<Function>&) {
  if (std::find(def.decorators.begin(), def.decorators.end(), "kernel") == def.decorators.end()) return false;
  in.fail(def.pos, std::string("@kernel: ") + kWhy, "use a regular build of opscope");
}

void install_kernel_builtins(std::map<std::string, Builtin>& table) {
  table["last_launch"] =
      Builtin{"last_launch", "last_launch()", "the last launch on the simulated GPU (not built here)",
              [](Interpreter& in, CallArgs& args) -> Value {
                in.fail(args.pos, std::string("last_launch(): ") + kWhy);
              }};
  table["last_launches"] =
      Builtin{"last_launches", "last_launches()", "every launch of the last op on the simulated GPU (not built here)",
              [](Interpreter& in, CallArgs& args) -> Value {
                in.fail(args.pos, std::string("last_launches(): ") + kWhy);
              }};
}

const LanguageKernelTrace& last_language_kernel_trace() {
  static const LanguageKernelTrace none;
  return none;
}

SimLaunchCapture::SimLaunchCapture(bool) : active_(false) {}
SimLaunchCapture::~SimLaunchCapture() = default;

}  // namespace opscope::lang
