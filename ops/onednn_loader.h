// libopscope_onednn.so (ops/onednn/), opscope's side: opened with dlopen on the first call that
// needs oneDNN (conv2d's `onednn` algorithm, ops/onednn_conv.h; the float32 products where
// oneDNN's GEMM beats OpenBLAS, ops/gemm.cpp). Never linked: a process that never needs it pays
// nothing for oneDNN (39 MB, OpenMP).
#pragma once
#include <string>

#include "ops/onednn/onednn_abi.h"

namespace opscope::cpu {

struct OnednnModule {
  bool loaded = false;
  std::string description;  // "oneDNN 2.6.3 (OpenMP runtime)", or why it is missing
  opscope_onednn_plan_fn plan = nullptr;
  opscope_onednn_run_fn run = nullptr;
  opscope_onednn_sgemm_fn sgemm = nullptr;
};

// Opens the module on the first call (thread-safe); `loaded` false says why in `description`.
const OnednnModule& onednn_module();
// The module when some call has already opened it, else nullptr: never opens it.
const OnednnModule* onednn_module_if_loaded();
// What to tell a user without the module.
extern const char* const kOnednnHowToGet;

// Whether the module can be opened (opens it on the first call: use where the answer matters).
bool onednn_available();
// Without opening anything: "oneDNN 2.6.3 (OpenMP runtime)" once loaded, "on first use" before,
// or why it is missing. For :device and --version.
std::string onednn_description();

}  // namespace opscope::cpu
