#include "ops/onednn_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/module_file.h"
#include "ops/scoped_env.h"

namespace opscope::cpu {

const char* const kOnednnHowToGet =
    "install libdnnl-dev (bash tools/setup.sh) and rebuild, so that CMake builds libopscope_onednn.so; "
    "algo=\"im2col\" (the default) needs nothing";

namespace {

constexpr const char* kModuleName = "libopscope_onednn.so";

std::mutex module_mutex;
bool module_tried = false;
OnednnModule module_state;

// The build tree's copy, where CMake made one.
#ifdef OPSCOPE_ONEDNN_BUILT_MODULE
constexpr const char* kBuiltModule = OPSCOPE_ONEDNN_BUILT_MODULE;
#else
constexpr const char* kBuiltModule = nullptr;
#endif

void load(OnednnModule& m) {
  ModuleFile file;
  {
    // Debian's oneDNN runs on OpenMP; libgomp reads its settings when it loads. Workers that
    // spin after each convolution (GOMP's default) would take the cores from opscope's own
    // pool for the next op; passive workers sleep at once. A user's OMP_WAIT_POLICY wins.
    ScopedEnv wait("OMP_WAIT_POLICY", "passive", true);
    file = open_module_file(kModuleName, "OPSCOPE_ONEDNN_MODULE", kBuiltModule);
  }
  void* lib = file.handle;
  if (!lib) {
    m.description = "not available (" + file.why + ")";
    return;
  }
  auto abi = reinterpret_cast<opscope_onednn_abi_fn>(dlsym(lib, "opscope_onednn_abi"));
  auto version = reinterpret_cast<opscope_onednn_version_fn>(dlsym(lib, "opscope_onednn_version"));
  m.plan = reinterpret_cast<opscope_onednn_plan_fn>(dlsym(lib, "opscope_onednn_plan"));
  m.run = reinterpret_cast<opscope_onednn_run_fn>(dlsym(lib, "opscope_onednn_run"));
  m.sgemm = reinterpret_cast<opscope_onednn_sgemm_fn>(dlsym(lib, "opscope_onednn_sgemm"));
  if (!abi || !version || !m.plan || !m.run || !m.sgemm || abi() != OPSCOPE_ONEDNN_ABI) {
    m.description = "not available (the module found is of another opscope version: rebuild it)";
    return;
  }
  m.description = version();
  m.loaded = true;
}

}  // namespace

const OnednnModule& onednn_module() {
  std::lock_guard<std::mutex> lock(module_mutex);
  if (!module_tried) {
    module_tried = true;
    load(module_state);
  }
  return module_state;
}

const OnednnModule* onednn_module_if_loaded() {
  std::lock_guard<std::mutex> lock(module_mutex);
  return module_state.loaded ? &module_state : nullptr;
}

bool onednn_available() { return onednn_module().loaded; }

std::string onednn_description() {
  std::lock_guard<std::mutex> lock(module_mutex);
#ifndef OPSCOPE_ONEDNN_BUILT_MODULE
  if (!module_tried && !std::getenv("OPSCOPE_ONEDNN_MODULE")) return "not built (libdnnl-dev was not found)";
#endif
  if (!module_tried) return "on first use (conv2d algo=\"onednn\", float32 products the size of a layer's)";
  return module_state.description;
}

}  // namespace opscope::cpu
