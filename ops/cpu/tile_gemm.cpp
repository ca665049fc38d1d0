// opscope's own GEMM for attention's tiles (built per instruction set): float32
// C[M×N] = alpha·op(A)·op(B) + beta·C for products of at most a tile's size, as the flash
// forward and the backward run them (64×64 score tiles against head sizes up to 256).
//
// Why not OpenBLAS: its SGEMM packs both operands into buffers sized for large matrices and
// runs these 64×64×64 products at about 75 % of what it reaches on the block's large ones
// (bench_peak); here op(B) is packed once into strips two SIMD registers wide, and a 6-row
// micro-kernel keeps its 6 × 2 registers of C from the first k to the last, reading op(A) one
// broadcast element at a time, in place (transposed or not).
//
// The sum over k runs in order, one FMA per term, for every element: the result does not
// depend on the thread count or on where the tile sits.
#include "ops/cpu/isa_build.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#define OPSCOPE_TILE_GEMM 1
#endif

#include <algorithm>
#include <cmath>
#include <cstring>

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

#if OPSCOPE_TILE_GEMM
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
#endif

constexpr int kRows = 6;                 // rows of C per micro-kernel call
constexpr int kStrip = 2 * kLanes;       // columns of C per strip: two registers
constexpr int64_t kPackFloats = 16384;   // op(B) packed: K × N rounded up to strips (64 KiB)

// C rows [0, R) × strip columns [0, cols) from packed strip Bp (K × kStrip, zero-padded).
// a_rs, a_ks: op(A)'s strides along its rows and along k.
template <int R>
void micro(int64_t K, const float* A, int64_t a_rs, int64_t a_ks, const float* Bp, float alpha, float beta, float* C,
           int64_t ldc, int64_t cols) {
  Vec c0[R], c1[R];
  for (int r = 0; r < R; ++r) c0[r] = c1[r] = zero();
  for (int64_t k = 0; k < K; ++k) {
    const Vec b0 = load(Bp + k * kStrip), b1 = load(Bp + k * kStrip + kLanes);
    const float* a = A + k * a_ks;
    for (int r = 0; r < R; ++r) {
      const Vec x = splat(a[r * a_rs]);
      c0[r] = fma(x, b0, c0[r]);
      c1[r] = fma(x, b1, c1[r]);
    }
  }
  const Vec va = splat(alpha), vb = splat(beta);
  for (int r = 0; r < R; ++r) {
    float* c = C + r * ldc;
    if (cols == kStrip) {
      // beta 0 never reads C (it may hold anything, NaN included)
      store(c, beta == 0.f ? mul(va, c0[r]) : fma(vb, load(c), mul(va, c0[r])));
      store(c + kLanes, beta == 0.f ? mul(va, c1[r]) : fma(vb, load(c + kLanes), mul(va, c1[r])));
      continue;
    }
    alignas(64) float t[kStrip];
    store(t, mul(va, c0[r]));
    store(t + kLanes, mul(va, c1[r]));
    for (int64_t j = 0; j < cols; ++j) c[j] = beta == 0.f ? t[j] : std::fma(beta, c[j], t[j]);  // as the full strip
  }
}

using MicroFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, float, float, float*, int64_t, int64_t);
constexpr MicroFn kMicro[kRows + 1] = {nullptr, micro<1>, micro<2>, micro<3>, micro<4>, micro<5>, micro<6>};
#endif

}  // namespace

bool tile_gemm_fits(int64_t M, int64_t N, int64_t K) {
#if OPSCOPE_TILE_GEMM
  const int64_t strips = (N + kStrip - 1) / kStrip;
  return M > 0 && N > 0 && K > 0 && M <= 256 && K * strips * kStrip <= kPackFloats;
#else
  (void)M, (void)N, (void)K;
  return false;  // this build has no tile GEMM: the caller uses gemm_serial
#endif
}

void tile_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
#if OPSCOPE_TILE_GEMM
  // op(B) into strips: strip s holds columns [s·kStrip, s·kStrip + kStrip), row k after row k−1.
  alignas(64) float packed[kPackFloats];
  const int64_t strips = (N + kStrip - 1) / kStrip;
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t j0 = s * kStrip, cols = std::min<int64_t>(kStrip, N - j0);
    float* p = packed + s * K * kStrip;
    for (int64_t k = 0; k < K; ++k, p += kStrip) {
      if (tb)
        for (int64_t j = 0; j < cols; ++j) p[j] = B[(j0 + j) * ldb + k];
      else
        std::memcpy(p, B + k * ldb + j0, cols * sizeof(float));
      std::fill(p + cols, p + kStrip, 0.f);
    }
  }
  const int64_t a_rs = ta ? 1 : lda, a_ks = ta ? lda : 1;
  for (int64_t i0 = 0; i0 < M; i0 += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, M - i0));
    for (int64_t s = 0; s < strips; ++s) {
      const int64_t j0 = s * kStrip;
      kMicro[rows](K, A + i0 * a_rs, a_rs, a_ks, packed + s * K * kStrip, alpha, beta, C + i0 * ldc + j0, ldc,
                   std::min<int64_t>(kStrip, N - j0));
    }
  }
#else
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B, (void)ldb, (void)beta,
      (void)C, (void)ldc;
#endif
}

void add_tile_gemm_kernels(KernelTable& t) {
#if OPSCOPE_TILE_GEMM
  t.f32.tile_gemm = tile_gemm;
  t.f32.tile_gemm_fits = tile_gemm_fits;
#else
  (void)t;
#endif
}

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
