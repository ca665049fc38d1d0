// This core's FMA peak and the Transformer block's GEMM shapes (bench/vs_torch/transformer.ops)
// against it: each product the block's training step runs, through opscope's `blas` (cut into
// panels as ops/gemm.h does: OpenBLAS, and oneDNN's GEMM from 2^20 multiply-adds) and `eigen`
// algorithms, and through OpenBLAS and oneDNN called directly in one call (oneDNN's at one
// thread: the 1-thread table), at one thread and at all cores. Tells which shapes hold the
// block's GEMM time below the peak and which library does each better; the reference rows
// below the block's are the sizes around ops/gemm.cpp's 2^20 threshold.
//
// Run: flock /tmp/opscope-build.lock ./build/bench_peak [--repeats N]   (prints tables; exit 0)
#include <cstring>
#include <vector>

#include "bench/bench_util.h"
#include "bench/fma_peak.h"
#include "core/parallel.h"
#include "ops/gemm.h"
#include "ops/onednn_loader.h"

using namespace opscope;
using namespace opscope::bench;

namespace {

// One product of the block: C[M×N] = op(A)·op(B), `count` times a step (attention: per head).
struct GemmShape {
  const char* what;
  int64_t M, N, K;
  bool ta, tb;
  int count;
  bool in_step = true;  // false: a reference row, left out of the step's sum
};

// x [8·128, 256]; the layers' weights are [out, in] (linear: x·Wᵀ); 4 heads × 8 of 128×64.
const std::vector<GemmShape> kBlockShapes = {
    {"qkv = h·Wqkvᵀ", 1024, 768, 256, false, true, 1},
    {"attn out · Woᵀ", 1024, 256, 256, false, true, 1},
    {"ff1 = h2·W1ᵀ", 1024, 1024, 256, false, true, 1},
    {"ff2 = g·W2ᵀ", 1024, 256, 1024, false, true, 1},
    {"dh = dqkv·Wqkv", 1024, 256, 768, false, false, 1},
    {"da = dy·Wo", 1024, 256, 256, false, false, 1},
    {"dh2 = dff1·W1", 1024, 256, 1024, false, false, 1},
    {"dg = dy·W2", 1024, 1024, 256, false, false, 1},
    {"dWqkv = dqkvᵀ·h", 768, 256, 1024, true, false, 1},
    {"dWo = dyᵀ·a", 256, 256, 1024, true, false, 1},
    {"dW1 = dff1ᵀ·h2", 1024, 256, 1024, true, false, 1},
    {"dW2 = dyᵀ·g", 256, 1024, 1024, true, false, 1},
    // attention's 64×64 tiles, 3 of 4 visible per head (causal), 32 heads: Q·Kᵀ three times (forward,
    // the backward's two sweeps) and dO·Vᵀ, run on Kᵀ and Vᵀ transposed once (ops/cpu/attention.cpp;
    // the row below it: the same products on K and V as they lie, which ran at about half the rate);
    // P·V and dS·K; Pᵀ·dO and dSᵀ·Q.
    {"S, dP tiles", 64, 64, 64, false, false, 32 * 12},
    {"  (on K, V: ·ᵀ)", 64, 64, 64, false, true, 32 * 12, false},
    {"P·V, dS·K tiles", 64, 64, 64, false, false, 32 * 6},
    {"Pᵀ·dO, dSᵀ·Q tiles", 64, 64, 64, true, false, 32 * 6},
    // Around the threshold (not in the step): half and twice 2^20 multiply-adds, and an MLP layer.
    {"ref 2^19", 64, 128, 64, false, false, 1, false},
    {"ref 2^20", 128, 128, 64, false, true, 1, false},
    {"ref 2^21", 128, 128, 128, false, false, 1, false},
    {"ref MLP 64·784·256", 64, 256, 784, false, true, 1, false},
};

}  // namespace

int main(int argc, char** argv) {
  int repeats = 15;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
  print_build_info();
  const FmaPeak peak = measure_fma_peak();
  std::printf("\nFMA peak of one core: %.1f GFLOP/s (float32, %s; best of 5 runs of an FMA loop, bench/fma_peak.h)\n",
              peak.gflops, peak.vectors);
  const cpu::BlasLibrary* direct = cpu::blas_library();
  const cpu::OnednnModule& onednn = cpu::onednn_module();
  const int all = hardware_threads();
  for (int t : all > 1 ? std::vector<int>{1, all} : std::vector<int>{1}) {
    NumThreadsScope nt(t);
    std::printf("\n== the block's GEMMs, %d thread%s: GFLOP/s (fraction of %d × peak) ==\n", t, t == 1 ? "" : "s", t);
    std::printf("%-20s %5s %5s %5s %4s %15s %15s %15s %15s\n", "product", "M", "N", "K", "x", "blas (opscope)", "eigen",
                "OpenBLAS 1 call", "oneDNN 1 call");
    double flops_sum = 0, blas_sum = 0;
    for (const GemmShape& g : kBlockShapes) {
      std::vector<float> A(g.M * g.K), B(g.K * g.N), C(g.M * g.N);
      Tensor r = random_tensor({static_cast<int64_t>(A.size() + B.size())}, 7);
      std::copy(r.data<float>(), r.data<float>() + A.size(), A.begin());
      std::copy(r.data<float>() + A.size(), r.data<float>() + A.size() + B.size(), B.begin());
      const int64_t lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
      auto run = [&](cpu::GemmAlgo algo) {
        return [&, algo] {
          for (int c = 0; c < g.count; ++c)
            cpu::gemm<float>(algo, g.ta, g.tb, g.M, g.N, g.K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), g.N);
        };
      };
      std::vector<std::function<void()>> fns = {run(cpu::GemmAlgo::blas), run(cpu::GemmAlgo::eigen)};
      if (direct) {
        fns.push_back([&] {
          direct->set_num_threads(t);
          for (int c = 0; c < g.count; ++c)
            direct->sgemm(101, g.ta ? 112 : 111, g.tb ? 112 : 111, int(g.M), int(g.N), int(g.K), 1.f, A.data(),
                          int(lda), B.data(), int(ldb), 0.f, C.data(), int(g.N));
          direct->set_num_threads(1);
        });
      }
      const bool onednn_row = onednn.loaded && t == 1;  // its calls run on one thread
      if (onednn_row)
        fns.push_back([&] {
          for (int c = 0; c < g.count; ++c)
            onednn.sgemm(g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', g.M, g.N, g.K, 1.f, A.data(), lda, B.data(), ldb, 0.f,
                         C.data(), g.N);
        });
      const std::vector<double> s = interleaved_medians(fns, repeats, 2);
      const double flops = 2.0 * g.M * g.N * g.K * g.count;
      auto cell = [&](double sec) {
        char b[32];
        std::snprintf(b, sizeof b, "%6.1f (%.2f)", flops / sec / 1e9, flops / sec / 1e9 / (peak.gflops * t));
        return std::string(b);
      };
      const size_t onednn_at = direct ? 3 : 2;
      std::printf("%-20s %5lld %5lld %5lld %4d %15s %15s %15s %15s\n", g.what, (long long)g.M, (long long)g.N,
                  (long long)g.K, g.count, cell(s[0]).c_str(), cell(s[1]).c_str(), direct ? cell(s[2]).c_str() : "-",
                  onednn_row ? cell(s[onednn_at]).c_str() : "-");
      if (g.in_step) {
        flops_sum += flops;
        blas_sum += s[0];
      }
    }
    std::printf("all products, blas: %.1f GFLOP/s = %.2f of %d × peak\n", flops_sum / blas_sum / 1e9,
                flops_sum / blas_sum / 1e9 / (peak.gflops * t), t);
  }
  return 0;
}
