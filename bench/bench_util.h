// Timing and table helpers for the benchmarks (medians of repeats; never timed tests).
#pragma once
#include <algorithm>
#include <random>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>
#include "core/cpu_isa.h"
#include "core/tensor.h"

namespace opscope::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median seconds of `fn` over `repeats` runs after `warmup` runs.
inline double median_time(const std::function<void()>& fn, int repeats, int warmup = 1) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    double t0 = now_s();
    fn();
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Medians of several functions timed in turns (f0, f1, ..., f0, f1, ...), so that a slow
// stretch of a shared machine slows every candidate alike instead of one of them.
inline std::vector<double> interleaved_medians(const std::vector<std::function<void()>>& fns, int repeats,
                                               int warmup = 1) {
  for (int i = 0; i < warmup; ++i)
    for (auto& f : fns) f();
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < repeats; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      const double t0 = now_s();
      fns[i]();
      t[i].push_back(now_s() - t0);
    }
  std::vector<double> med;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

// A float32 tensor of standard normal samples, reproducible from `seed`.
inline Tensor random_tensor(const Shape& shape, uint64_t seed, MemCategory cat = MemCategory::input) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  Tensor t = Tensor::empty(shape, DType::f32, cat);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = nd(rng);
  return t;
}

inline const char* verdict(bool ok) { return ok ? "PASS" : "MISS"; }

// The OpenBLAS kernels a PyTorch reference runs: the user's OPENBLAS_CORETYPE, else the ones
// opscope's own OpenBLAS calls use on this CPU. Debian's OpenBLAS 0.3.21 falls back to its SSE3
// kernels on CPUs newer than itself, which would make PyTorch's matrix products ~4x slower.
inline std::string reference_openblas_core() {
  if (const char* user = std::getenv("OPENBLAS_CORETYPE")) return user;
  return cpu_isa() == CpuIsa::avx512 ? "SkylakeX" : "Haswell";
}

inline void print_build_info() {
#if defined(__OPTIMIZE__)
  const char* opt = "optimized";
#else
  const char* opt = "NOT optimized";
#endif
#if defined(__AVX512F__)
  const char* isa = "AVX-512 (-march=native)";
#elif defined(__AVX2__)
  const char* isa = "AVX2+FMA (x86-64-v3)";
#else
  const char* isa = "baseline";
#endif
  // The binary's baseline, then what runs: the kernel set chosen at start-up, threads, BLAS.
  std::printf("build: %s, %s baseline, compiler %s\nrun: %s\n", opt, isa, __VERSION__, cpu_description().c_str());
}

}  // namespace opscope::bench
