// exp for the per-instruction-set kernels of ops/cpu (softmax, attention): a SIMD loop over
// float32 rows with the widest registers of the build, Eigen's exp otherwise.
//
// exp(v) = 2^k · exp(r) with k = round(v·log2 e) and r = v − k·ln 2 in [−ln2/2, ln2/2]; exp(r)
// by the Cephes degree-6 polynomial (about 4 ulp). v below −87.3 (where float32 would go
// subnormal) gives exactly 0, so masked entries (−inf) weigh 0; NaN stays NaN. Eigen's own exp
// takes about twice the time of the memory traffic around it, which is what bounds softmax.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "ops/cpu/isa_build.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {

template <class T> using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;
template <class T> using RowMap = Eigen::Map<RowArray<T>>;
template <class T> using ConstRowMap = Eigen::Map<const RowArray<T>>;

// o = exp(v) for v <= 0, with 0 where the result would be subnormal: Eigen's exp never reaches
// 0 (about 5e-309 for exp(-inf) in float64). The fix-up runs only for rows that need it.
template <class T, class Expr> inline void assign_exp_flushed(RowMap<T> o, const Expr& v) {
  static const T kLowest = std::log(std::numeric_limits<T>::min());  // -87.3 float, -708.4 double
  o = v.exp();
  if (o.size() > 0 && v.minCoeff() < kLowest) o = (v < kLowest).select(static_cast<T>(0), o);
}

// Σ exp(x[i] − m) over a row, each term written to out (when not null); here x − m <= 0.
template <class T> inline T exp_shifted_sum(const T* x, T m, T* out, int64_t n, const T* /*prefetch*/) {
  ConstRowMap<T> xr(x, n);
  if (!out) return (xr - m).exp().sum();  // terms below 1e-308 don't change a sum that is >= 1
  RowMap<T> o(out, n);
  assign_exp_flushed<T>(o, xr - m);
  return o.sum();
}

#if defined(__AVX512F__)
// The sum of the 16 lanes in _mm512_reduce_add_ps's order (the upper half onto the lower,
// three times, then the last pair), through memory: GCC 12 warns that the operand the
// intrinsics leave undefined is used uninitialized wherever it inlines them into this loop.
inline float sum16(__m512 v) {
  alignas(64) float x[16];
  _mm512_store_ps(x, v);
  float h[8], q[4];
  for (int i = 0; i < 8; ++i) h[i] = x[8 + i] + x[i];
  for (int i = 0; i < 4; ++i) q[i] = h[4 + i] + h[i];
  return (q[0] + q[2]) + (q[1] + q[3]);
}
template <> inline float exp_shifted_sum<float>(const float* x, float m, float* out, int64_t n, const float* prefetch) {
  const __m512 vm = _mm512_set1_ps(m), lo = _mm512_set1_ps(-87.3f), log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f), ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  const __m512 p0 = _mm512_set1_ps(1.9875691500e-4f), p1 = _mm512_set1_ps(1.3981999507e-3f),
               p2 = _mm512_set1_ps(8.3334519073e-3f), p3 = _mm512_set1_ps(4.1665795894e-2f),
               p4 = _mm512_set1_ps(1.6666665459e-1f), p5 = _mm512_set1_ps(5.0000001201e-1f), one = _mm512_set1_ps(1.0f);
  __m512 acc = _mm512_setzero_ps();
  auto exp16 = [&](__m512 xv) {
    const __m512 v = _mm512_sub_ps(xv, vm);
    const __mmask16 keep = _mm512_cmp_ps_mask(v, lo, _CMP_NLT_UQ);  // not below -87.3 (NaN kept)
    const __m512 vc = _mm512_max_ps(lo, v);  // NaN in v passes through
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(vc, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = _mm512_fnmadd_ps(k, ln2_lo, _mm512_fnmadd_ps(k, ln2_hi, vc));
    __m512 p = _mm512_fmadd_ps(p0, r, p1);
    p = _mm512_fmadd_ps(p, r, p2);
    p = _mm512_fmadd_ps(p, r, p3);
    p = _mm512_fmadd_ps(p, r, p4);
    p = _mm512_fmadd_ps(p, r, p5);
    p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, one));  // 1 + r + r²·P(r)
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, k));  // p·2^k
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (prefetch && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char*>(prefetch + i), _MM_HINT_T0);
    const __m512 e = exp16(_mm512_loadu_ps(x + i));
    if (out) _mm512_storeu_ps(out + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {  // the tail under a mask: the same arithmetic as the body
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(tail, exp16(_mm512_maskz_loadu_ps(tail, x + i)));
    if (out) _mm512_mask_storeu_ps(out + i, tail, e);
    acc = _mm512_add_ps(acc, e);
  }
  return sum16(acc);
}
#elif defined(__AVX2__) && defined(__FMA__)
template <> inline float exp_shifted_sum<float>(const float* x, float m, float* out, int64_t n, const float* prefetch) {
  const __m256 vm = _mm256_set1_ps(m), lo = _mm256_set1_ps(-87.3f), log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f), ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  const __m256 p0 = _mm256_set1_ps(1.9875691500e-4f), p1 = _mm256_set1_ps(1.3981999507e-3f),
               p2 = _mm256_set1_ps(8.3334519073e-3f), p3 = _mm256_set1_ps(4.1665795894e-2f),
               p4 = _mm256_set1_ps(1.6666665459e-1f), p5 = _mm256_set1_ps(5.0000001201e-1f), one = _mm256_set1_ps(1.0f);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (prefetch && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char*>(prefetch + i), _MM_HINT_T0);
    const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    const __m256 underflow = _mm256_cmp_ps(v, lo, _CMP_LT_OQ);
    const __m256 vc = _mm256_max_ps(lo, v);  // NaN in v passes through (max returns its 2nd operand)
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(vc, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 r = _mm256_fnmadd_ps(k, ln2_lo, _mm256_fnmadd_ps(k, ln2_hi, vc));
    __m256 p = _mm256_fmadd_ps(p0, r, p1);
    p = _mm256_fmadd_ps(p, r, p2);
    p = _mm256_fmadd_ps(p, r, p3);
    p = _mm256_fmadd_ps(p, r, p4);
    p = _mm256_fmadd_ps(p, r, p5);
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, one));  // 1 + r + r²·P(r)
    const __m256i two_k = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    const __m256 e = _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(two_k)));
    if (out) _mm256_storeu_ps(out + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - m);
    if (out) out[i] = e;
    sum += e;
  }
  return sum;
}
#endif

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
