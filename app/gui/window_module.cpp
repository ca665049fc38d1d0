// The executable's side of the window module (window_module.h): opened when a window is.
#include "app/gui/window_module.h"

#include <string>

#include "core/error.h"
#include "core/module_file.h"
#include "opscope_abi.h"

namespace opscope::app {

namespace {

constexpr const char* kModuleName = "libopscope_window.so";
constexpr const char* kEnvVar = "OPSCOPE_WINDOW_MODULE";  // names another copy of it

const WindowModule& window_module() {
  // Opened once per process, from the main thread (the window is the whole session).
  static const WindowModule* module = nullptr;
  if (module) return *module;
  std::string why;
  module = open_module_table<WindowModule>(kModuleName, kEnvVar, OPSCOPE_WINDOW_BUILT_MODULE,
                                           OPSCOPE_WINDOW_MODULE_ENTRY, kWindowModuleInterface, OPSCOPE_ABI_ID, why);
  if (!module)
    throw Error("cannot open the window: " + why,
                module_hint(kModuleName, kEnvVar) + "; `opscope repl` works without it");
  return *module;
}

}  // namespace

int open_window(GuiOptions o) { return window_module().run_window(std::move(o)); }

}  // namespace opscope::app
