// This core's floating-point peak, measured: independent chains of float32 fused multiply-adds
// at the widest vectors the CPU has (AVX-512 where cpuid says so, else AVX2+FMA), on the calling
// thread. The yardstick for a GEMM's efficiency: a GEMM is FMAs fed from memory, so its rate over
// this one is the fraction of the machine it uses. Measured rather than computed from a
// datasheet: the clock a VM's core actually runs at (turbo, a neighbour's load) is unknown.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "core/cpu_isa.h"

namespace opscope::bench {

struct FmaPeak {
  double gflops = 0;  // float32 FLOP/s / 1e9, an FMA counted as two
  const char* vectors = "";  // "AVX-512 (16 floats)" or "AVX2 (8 floats)"
};

namespace fma_peak_detail {

// Twelve accumulators: more chains than FMA units × FMA latency (2 × 4 on the cores we run on),
// so the loop is bound by the units' throughput, not by one chain's latency. The empty asm keeps
// the compiler from folding or shortening the chains.
#define OPSCOPE_FMA_CHAINS(V, FMA)                                                                    \
  V a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b, a8 = b, a9 = b, a10 = b, a11 = b; \
  for (long i = 0; i < iters; ++i) {                                                                  \
    a0 = FMA(a0, b, c);                                                                               \
    a1 = FMA(a1, b, c);                                                                               \
    a2 = FMA(a2, b, c);                                                                               \
    a3 = FMA(a3, b, c);                                                                               \
    a4 = FMA(a4, b, c);                                                                               \
    a5 = FMA(a5, b, c);                                                                               \
    a6 = FMA(a6, b, c);                                                                               \
    a7 = FMA(a7, b, c);                                                                               \
    a8 = FMA(a8, b, c);                                                                               \
    a9 = FMA(a9, b, c);                                                                               \
    a10 = FMA(a10, b, c);                                                                             \
    a11 = FMA(a11, b, c);                                                                             \
    asm volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5));                    \
    asm volatile("" : "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));                  \
  }                                                                                                   \
  float sink[16];

__attribute__((target("avx512f"), noinline)) inline float chains_avx512(long iters) {
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  OPSCOPE_FMA_CHAINS(__m512, _mm512_fmadd_ps)
  const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                 _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)),
                                               _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));
  _mm512_storeu_ps(sink, s);
  return sink[0];
}

__attribute__((target("avx2,fma"), noinline)) inline float chains_avx2(long iters) {
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  OPSCOPE_FMA_CHAINS(__m256, _mm256_fmadd_ps)
  const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                 _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)),
                                               _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11))));
  _mm256_storeu_ps(sink, s);
  return sink[0];
}
#undef OPSCOPE_FMA_CHAINS

}  // namespace fma_peak_detail

// The best of `tries` runs of about `seconds` / tries each: on a shared machine a neighbour can
// only slow a run down, so the fastest is the closest to the core's own peak.
inline FmaPeak measure_fma_peak(double seconds = 0.3, int tries = 5) {
  const bool wide = detected_cpu_isa() == CpuIsa::avx512;
  const int lanes = wide ? 16 : 8;
  FmaPeak p;
  p.vectors = wide ? "AVX-512 (16 floats)" : "AVX2 (8 floats)";
  long iters = 1 << 16;
  volatile float keep = 0;
  for (int t = -1; t < tries; ++t) {  // try -1 sizes the loop (and wakes the core up)
    const auto t0 = std::chrono::steady_clock::now();
    keep = keep + (wide ? fma_peak_detail::chains_avx512(iters) : fma_peak_detail::chains_avx2(iters));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (t < 0) {
      iters = std::max(1L << 16, static_cast<long>(iters * (seconds / tries) / std::max(s, 1e-6)));
      continue;
    }
    p.gflops = std::max(p.gflops, 12.0 * lanes * 2.0 * static_cast<double>(iters) / s / 1e9);
  }
  return p;
}

// The same loop on `threads` cores at once, each on its own thread: the rate one core keeps
// while the others are busy too (the lowest of them). With AVX-512 on every core the clock
// drops (the all-core AVX-512 frequency), so a rate measured with several cores busy is
// compared against this, not against one core's loop alone.
inline FmaPeak measure_fma_peak_on(int threads, double seconds = 0.3, int tries = 5) {
  if (threads <= 1) return measure_fma_peak(seconds, tries);
  std::vector<FmaPeak> each(static_cast<size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t)
    running.emplace_back(
        [&each, t, seconds, tries] { each[static_cast<size_t>(t)] = measure_fma_peak(seconds, tries); });
  for (std::thread& t : running) t.join();
  FmaPeak lowest = each.front();
  for (const FmaPeak& p : each)
    if (p.gflops < lowest.gflops) lowest = p;
  return lowest;
}

}  // namespace opscope::bench
