#include "ops/cpu/gemm_simd128.h"

#include <wasm_simd128.h>

#include <algorithm>
#include <vector>

namespace opscope::cpu {

namespace {

constexpr int64_t kMr = 4, kNr = 8;  // the micro-kernel's tile of C: 4 rows × 2 registers
// Blocks: a panel of A (kMr × kKc, 4 KB) and one of B (kKc × kNr, 8 KB) stay in L1 while the
// micro-kernel runs; a block of A (kMc × kKc, 96 KB) in L2, B's block (kKc × kNc, 512 KB) in L2/L3.
constexpr int64_t kKc = 256, kMc = 96, kNc = 512;

float at(ConstMatrix<float> m, int64_t row, int64_t col) {
  return m.row_major ? m.data[row * m.ld + col] : m.data[col * m.ld + row];
}

// Rows [i0, i0 + mc) × columns [k0, k0 + kc) of A as panels of kMr rows, each stored k by k
// (the kMr values of one k together); rows past M are zeros.
void pack_a(ConstMatrix<float> A, int64_t M, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += kMr)
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t r = 0; r < kMr; ++r) {
        const int64_t i = i0 + ir + r;
        *out++ = i < M ? at(A, i, k0 + k) : 0.f;
      }
}

// Rows [k0, k0 + kc) × columns [j0, j0 + nc) of B as panels of kNr columns, each stored k by k;
// columns past N are zeros. A row-major B gives each k's 8 values as two vector loads.
void pack_b(ConstMatrix<float> B, int64_t N, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t j = j0 + jr, width = std::min(kNr, N - j);
    for (int64_t k = 0; k < kc; ++k, out += kNr) {
      if (B.row_major && width == kNr) {
        const float* src = B.data + (k0 + k) * B.ld + j;
        wasm_v128_store(out, wasm_v128_load(src));
        wasm_v128_store(out + 4, wasm_v128_load(src + 4));
        continue;
      }
      for (int64_t c = 0; c < kNr; ++c) out[c] = c < width ? at(B, k0 + k, j + c) : 0.f;
    }
  }
}

// C[mr × nr] += alpha · (A's panel · B's panel) over kc; mr ≤ 4, nr ≤ 8 at the edges.
void micro_kernel(int64_t kc, const float* a, const float* b, float alpha, float* c, int64_t ldc, int64_t mr,
                  int64_t nr) {
  v128_t acc[kMr][2];
  for (auto& row : acc) row[0] = row[1] = wasm_f32x4_splat(0.f);
  for (int64_t k = 0; k < kc; ++k, a += kMr, b += kNr) {
    const v128_t b_lo = wasm_v128_load(b), b_hi = wasm_v128_load(b + 4);
    for (int64_t r = 0; r < kMr; ++r) {  // unrolled by the compiler: kMr is a constant
      const v128_t ar = wasm_v128_load32_splat(a + r);
      acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(ar, b_lo));
      acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(ar, b_hi));
    }
  }
  const v128_t va = wasm_f32x4_splat(alpha);
  if (mr == kMr && nr == kNr) {
    for (int64_t r = 0; r < kMr; ++r) {
      float* cr = c + r * ldc;
      wasm_v128_store(cr, wasm_f32x4_add(wasm_v128_load(cr), wasm_f32x4_mul(va, acc[r][0])));
      wasm_v128_store(cr + 4, wasm_f32x4_add(wasm_v128_load(cr + 4), wasm_f32x4_mul(va, acc[r][1])));
    }
    return;
  }
  float tile[kMr * kNr];
  for (int64_t r = 0; r < kMr; ++r) {
    wasm_v128_store(tile + r * kNr, wasm_f32x4_mul(va, acc[r][0]));
    wasm_v128_store(tile + r * kNr + 4, wasm_f32x4_mul(va, acc[r][1]));
  }
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) c[r * ldc + j] += tile[r * kNr + j];
}

// C = beta·C first (beta 0 writes zeros without reading C, which may hold NaN); the blocks
// then add alpha·A·B into it.
void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  if (beta == 1.f) return;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
}

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

}  // namespace

void gemm_simd128(int64_t M, int64_t N, int64_t K, ConstMatrix<float> A, ConstMatrix<float> B, float alpha, float beta,
                  float* C, int64_t ldc) {
  scale_c(M, N, beta, C, ldc);
  if (M <= 0 || N <= 0 || K <= 0 || alpha == 0.f) return;
  // The packed blocks, kept between calls (one thread in the browser; thread_local elsewhere).
  thread_local std::vector<float> a_block, b_block;
  a_block.resize(static_cast<size_t>(round_up(std::min(M, kMc), kMr) * std::min(K, kKc)));
  b_block.resize(static_cast<size_t>(round_up(std::min(N, kNc), kNr) * std::min(K, kKc)));
  for (int64_t j0 = 0; j0 < N; j0 += kNc) {
    const int64_t nc = std::min(kNc, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kKc) {
      const int64_t kc = std::min(kKc, K - k0);
      pack_b(B, N, k0, kc, j0, round_up(nc, kNr), b_block.data());
      for (int64_t i0 = 0; i0 < M; i0 += kMc) {
        const int64_t mc = std::min(kMc, M - i0);
        pack_a(A, M, i0, round_up(mc, kMr), k0, kc, a_block.data());
        for (int64_t jr = 0; jr < nc; jr += kNr)
          for (int64_t ir = 0; ir < mc; ir += kMr)
            micro_kernel(kc, a_block.data() + ir * kc, b_block.data() + jr * kc, alpha, C + (i0 + ir) * ldc + j0 + jr,
                         ldc, std::min(kMr, mc - ir), std::min(kNr, nc - jr));
      }
    }
  }
}

}  // namespace opscope::cpu
