#include "ops/onednn_conv.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "core/module_file.h"
#include "core/parallel.h"
#include "ops/onednn/onednn_abi.h"
#include "ops/scoped_env.h"

namespace opscope::cpu {

namespace {

constexpr const char* kModuleName = "libopscope_onednn.so";
constexpr const char* kHowToGet =
    "install libdnnl-dev (bash tools/setup.sh) and rebuild, so that CMake builds libopscope_onednn.so; "
    "algo=\"im2col\" (the default) needs nothing";

struct Module {
  bool tried = false, loaded = false;
  std::string description;  // the version, or why it is missing
  opscope_onednn_plan_fn plan = nullptr;
  opscope_onednn_run_fn run = nullptr;
};

std::mutex module_mutex;
Module module_state;

// The build tree's copy, where CMake made one.
#ifdef OPSCOPE_ONEDNN_BUILT_MODULE
constexpr const char* kBuiltModule = OPSCOPE_ONEDNN_BUILT_MODULE;
#else
constexpr const char* kBuiltModule = nullptr;
#endif

void load(Module& m) {
  m.tried = true;
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
  if (!abi || !version || !m.plan || !m.run || abi() != OPSCOPE_ONEDNN_ABI) {
    m.description = "not available (the module found is of another opscope version: rebuild it)";
    return;
  }
  m.description = version();
  m.loaded = true;
}

const Module& module() {
  std::lock_guard<std::mutex> lock(module_mutex);
  if (!module_state.tried) load(module_state);
  return module_state;
}

const Module& module_or_throw() {
  const Module& m = module();
  if (!m.loaded) throw Error("conv2d: onednn " + m.description, kHowToGet);
  return m;
}

OpscopeOnednnConv describe(OnednnPass pass, const ConvGeom& g, bool bias) {
  OpscopeOnednnConv c{};
  c.N = g.N, c.C = g.C, c.H = g.H, c.W = g.W, c.K = g.K, c.R = g.R, c.S = g.S, c.OH = g.OH, c.OW = g.OW;
  c.sh = g.sh, c.sw = g.sw, c.ph = g.ph, c.pw = g.pw, c.dh = g.dh, c.dw = g.dw, c.G = g.G;
  c.pass = pass == OnednnPass::forward         ? opscope_onednn_forward
           : pass == OnednnPass::backward_data ? opscope_onednn_backward_data
                                               : opscope_onednn_backward_weights;
  c.has_bias = bias ? 1 : 0;
  // opscope's thread setting (:threads, OPSCOPE_NUM_THREADS); one thread inside a parallel loop.
  c.threads = in_parallel_region() ? 1 : num_threads();
  return c;
}

const char* pass_name(OnednnPass pass) {
  return pass == OnednnPass::forward         ? "conv2d"
         : pass == OnednnPass::backward_data ? "conv2d_backward_input"
                                             : "conv2d_backward_weight";
}

}  // namespace

void onednn_conv(const KernelCtx& k, OnednnPass pass, const ConvGeom& g, const float* a, const float* b, const float* c,
                 float* out) {
  const Module& m = module_or_throw();
  const OpscopeOnednnConv d = describe(pass, g, c != nullptr);
  size_t bytes = 0;
  if (const char* e = m.plan(&d, &bytes))
    throw Error(std::string(pass_name(pass)) + ": onednn: " + e, "algo=\"im2col\" runs every geometry");
  // Float32 elements; the CPU allocator aligns every block to 64 bytes, as oneDNN wants.
  Tensor ws = k.workspace({static_cast<int64_t>(std::max<size_t>(1, (bytes + 3) / 4))}, DType::f32);
  if (const char* e = m.run(&d, a, b, c, out, ws.data<float>()))
    throw Error(std::string(pass_name(pass)) + ": onednn: " + e, "algo=\"im2col\" runs every geometry");
}

bool onednn_available() { return module().loaded; }

std::string onednn_description() {
  std::lock_guard<std::mutex> lock(module_mutex);
#ifndef OPSCOPE_ONEDNN_BUILT_MODULE
  if (!module_state.tried && !std::getenv("OPSCOPE_ONEDNN_MODULE")) return "not built (libdnnl-dev was not found)";
#endif
  if (!module_state.tried) return "on first use (conv2d algo=\"onednn\")";
  return module_state.description;
}

double onednn_workspace_bytes(OnednnPass pass, const ConvGeom& g, bool bias) {
  std::lock_guard<std::mutex> lock(module_mutex);
  if (!module_state.loaded) return 0;
  const OpscopeOnednnConv d = describe(pass, g, bias);
  size_t bytes = 0;
  return module_state.plan(&d, &bytes) ? 0 : static_cast<double>(bytes);
}

}  // namespace opscope::cpu
