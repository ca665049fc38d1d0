// One Fashion-MNIST epoch of assets/examples/fashion_mnist_cnn.ops, in opscope (the example run
// by the language, as a student runs it) and in PyTorch (bench/vs_torch/fashion_epoch.py, the
// same model, initialisation, batches and optimizer). Shared by bench_train and bench_vs_torch.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "core/workspace.h"

namespace opscope::bench {

inline const char* const kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

inline bool have_fashion_mnist() {
  return std::ifstream(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz").good();
}

struct EpochResult {
  double epoch_s = -1, accuracy = -1;  // -1: not run or failed
  std::string blas, version;  // PyTorch's side only
};

// Runs the example in `ws` (a workspace of the caller's, so that it can read the tracker), on
// the current thread count. The epoch's time is the first training loop's, loading and
// evaluation left out. `on_step(done, total)`, if given, sees every batch of that loop.
inline EpochResult run_opscope_epoch(Workspace& ws, const std::function<void(int64_t, int64_t)>& on_step = {}) {
  EpochResult r;
  const std::string example = std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/fashion_mnist_cnn.ops";
  std::ifstream f(example);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", example.c_str());
    return r;
  }
  std::stringstream code;
  code << f.rdbuf();
  lang::Session session(ws);
  bool first_loop = true;
  session.interpreter().set_progress_hook([&](const lang::Interpreter::LoopProgress& p) {
    using P = lang::Interpreter::LoopProgress;
    if (!first_loop) return;
    if (p.event == P::step && on_step) on_step(p.done_items, p.total);
    if (p.event == P::done) r.epoch_s = p.seconds, first_loop = false;
  });
  std::ostringstream out;
  if (!session.run(code.str(), example, out, std::cerr)) return EpochResult{};
  std::smatch m;
  const std::string printed = out.str();
  if (std::regex_search(printed, m, std::regex(R"(test accuracy: ([0-9.]+))"))) r.accuracy = std::stod(m[1]);
  return r;
}

// PyTorch's epoch at `threads`, with OpenBLAS on `openblas_core` kernels ("" leaves its own
// choice); epoch_s -1 when python3-torch is missing or the script fails.
inline EpochResult run_torch_epoch(int threads, const std::string& openblas_core = "") {
  EpochResult r;
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return r;
  std::string cmd = "OPENBLAS_NUM_THREADS=" + std::to_string(threads) + " OMP_NUM_THREADS=" + std::to_string(threads);
  if (!openblas_core.empty()) cmd += " OPENBLAS_CORETYPE=" + openblas_core;
  cmd += std::string(" /usr/bin/python3 ") + OPSCOPE_SOURCE_DIR + "/bench/vs_torch/fashion_epoch.py " +
         kFashionMnistDir + " --threads " + std::to_string(threads) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(epoch ([0-9.]+) accuracy ([0-9.]+) blas (\S+) torch (\S+))"))) {
    r.epoch_s = std::stod(m[1]);
    r.accuracy = std::stod(m[2]);
    r.blas = m[3];
    r.version = m[4];
  } else {
    std::fprintf(stderr, "PyTorch's epoch failed:\n%s\n", out.c_str());
  }
  return r;
}

}  // namespace opscope::bench
