// Scaled dot-product attention's tile loops (built per instruction set): the naive T×S
// algorithm for one batch index, the flash algorithm for one block of query rows, and the
// backward (FlashAttention's recomputation) for one batch index. See ops/attention.cpp for the
// algorithms. The op spreads batch indices (and, for flash, query blocks) over threads; each
// thread has its own scratch tiles. The tile products go to OpenBLAS (ops/gemm.h), on the
// calling thread; the softmax parts use this build's SIMD exp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/vec_exp.h"
#include "ops/gemm.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

template <class T> constexpr T kNegInf = -std::numeric_limits<T>::infinity();

template <class T> using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T> using MatMap = Eigen::Map<RowMat<T>>;

// C[rows × cols] (row stride ldc) = alpha·op(A)·op(B) + beta·C on this thread.
template <class T>
void product(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
             int64_t ldb, T beta, T* C, int64_t ldc) {
  gemm_serial<T>(default_gemm(), M, N, K, ConstMatrix<T>{A, lda, !ta}, ConstMatrix<T>{B, ldb, !tb}, alpha, beta, C,
                 ldc);
}

// dst[c, r] = src[r, c] for an n × m block of src (rows ld apart); dst's rows are ldd apart.
template <class T> void transpose_block(const T* src, int64_t n, int64_t m, int64_t ld, T* dst, int64_t ldd) {
  constexpr int64_t kStep = 16;  // 16×16 blocks: both sides stay within a few cache lines
  for (int64_t r0 = 0; r0 < n; r0 += kStep)
    for (int64_t c0 = 0; c0 < m; c0 += kStep) {
      const int64_t r1 = std::min(n, r0 + kStep), c1 = std::min(m, c0 + kStep);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) dst[c * ldd + r] = src[r * ld + c];
    }
}

// scores[r, c] (+)= mask for query rows i0.., key columns j0.. of batch b; ld = row stride.
template <class T>
void apply_mask(const AttentionArgs<T>& a, T* scores, int64_t ld, int64_t b, int64_t i0, int64_t rows, int64_t j0,
                int64_t cols) {
  if (a.additive) {
    const T* m = a.additive + a.mask_offsets[b];
    for (int64_t r = 0; r < rows; ++r) {
      T* s = scores + r * ld;
      const T* mr = m + (i0 + r) * a.mask_rs + j0 * a.mask_cs;
      if (a.mask_cs == 1)
        for (int64_t c = 0; c < cols; ++c) s[c] += mr[c];
      else
        for (int64_t c = 0; c < cols; ++c) s[c] += mr[c * a.mask_cs];
    }
  } else if (a.keep) {
    const int64_t* m = a.keep + a.mask_offsets[b];
    for (int64_t r = 0; r < rows; ++r) {
      T* s = scores + r * ld;
      const int64_t* mr = m + (i0 + r) * a.mask_rs + j0 * a.mask_cs;
      for (int64_t c = 0; c < cols; ++c)
        if (mr[c * a.mask_cs] == 0) s[c] = kNegInf<T>;
    }
  }
  if (a.causal)  // key j is visible to query i when j <= i
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t first_hidden = std::max<int64_t>(0, i0 + r + 1 - j0);
      T* s = scores + r * ld;
      for (int64_t c = first_hidden; c < cols; ++c) s[c] = kNegInf<T>;
    }
}

template <class T> bool any_mask(const AttentionArgs<T>& a) { return a.additive || a.keep || a.causal; }

// Causal tiles entirely above the diagonal hold nothing visible: skipped.
template <class T> bool tile_hidden(const AttentionArgs<T>& a, int64_t i0, int64_t rows, int64_t j0) {
  return a.causal && j0 > i0 + rows - 1;
}

// Row softmax in place over `cols` scores; a fully masked row (max −inf) becomes all 0.
template <class T> void softmax_row_inplace(T* row, int64_t cols) {
  RowMap<T> r(row, cols);
  const T m = cols > 0 ? r.maxCoeff() : kNegInf<T>;
  if (m == kNegInf<T>) {
    r.setZero();
    return;
  }
  r *= static_cast<T>(1) / exp_shifted_sum<T>(row, m, row, cols, nullptr);
}

// naive: the whole T×S score matrix of batch b in `scores`.
template <class T> void naive_batch(const AttentionArgs<T>& a, int64_t b, T* scores) {
  const T* Q = a.q + a.q_offsets[b];
  const T* K = a.k + a.k_offsets[b];
  const T* V = a.v + a.v_offsets[b];
  product<T>(false, true, a.Tq, a.S, a.D, a.scale, Q, a.ldq, K, a.ldk, T(0), scores, a.S);  // Q·Kᵀ·scale
  if (any_mask(a)) apply_mask(a, scores, a.S, b, 0, a.Tq, 0, a.S);
  for (int64_t i = 0; i < a.Tq; ++i) softmax_row_inplace<T>(scores + i * a.S, a.S);
  product<T>(false, false, a.Tq, a.Dv, a.S, T(1), scores, a.S, V, a.ldv, T(0), a.out + b * a.Tq * a.Dv, a.Dv);
}

// flash: query rows [i0, i0 + rows) of batch b, online softmax over key tiles; O itself is the
// accumulator. rows <= attention_tile_rows(Tq).
template <class T> void flash_rows(const AttentionArgs<T>& a, int64_t b, int64_t i0, int64_t rows, T* scratch) {
  const int64_t br = attention_tile_rows(a.Tq), bc = attention_tile_cols(a.S);
  T* sp = scratch;  // attention_flash_scratch(): br·bc scores, m and l, then a key tile Kᵀ
  T* m = sp + br * bc;
  T* l = m + br;
  T* kt = l + br;
  const T* Qb = a.q + a.q_offsets[b] + i0 * a.ldq;
  const T* Kb = a.k + a.k_offsets[b];
  const T* Vb = a.v + a.v_offsets[b];
  T* Ob = a.out + (b * a.Tq + i0) * a.Dv;
  MatMap<T> O(Ob, rows, a.Dv);
  O.setZero();
  std::fill(m, m + rows, kNegInf<T>);
  std::fill(l, l + rows, T(0));
  for (int64_t j0 = 0; j0 < a.S; j0 += bc) {
    if (tile_hidden(a, i0, rows, j0)) break;  // later tiles are further right: hidden too
    const int64_t cols = std::min(bc, a.S - j0);
    transpose_block(Kb + j0 * a.ldk, cols, a.D, a.ldk, kt, cols);
    product<T>(false, false, rows, cols, a.D, a.scale, Qb, a.ldq, kt, cols, T(0), sp, cols);
    if (any_mask(a)) apply_mask(a, sp, cols, b, i0, rows, j0, cols);
    for (int64_t r = 0; r < rows; ++r) {
      T* s = sp + r * cols;
      const T m_new = std::max(m[r], RowMap<T>(s, cols).maxCoeff());
      if (m_new == kNegInf<T>) {  // nothing visible in this row yet
        std::fill(s, s + cols, T(0));
        continue;
      }
      const T alpha = std::exp(m[r] - m_new);  // 0 on the first visible tile (m = −inf)
      l[r] = l[r] * alpha + exp_shifted_sum<T>(s, m_new, s, cols, nullptr);
      if (alpha != T(1)) O.row(r) *= alpha;
      m[r] = m_new;
    }
    product<T>(false, false, rows, a.Dv, cols, T(1), sp, cols, Vb + j0 * a.ldv, a.ldv, T(1), Ob, a.Dv);  // O += P·V
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (l[r] > T(0)) O.row(r) *= static_cast<T>(1) / l[r];
    else O.row(r).setZero();  // fully masked row: 0
  }
}

// attention_backward for batch b: dQ, dK, dV (zeroed by the op) by recomputing the softmax
// tile by tile. scratch: attention_backward_scratch() (two tiles P, dP; four rows of stats; Kᵀ
// and Vᵀ, transposed once here for all the query blocks' products).
template <class T> void backward_batch(const AttentionArgs<T>& a, int64_t b, T* scratch) {
  const int64_t br = attention_tile_rows(a.Tq), bc = attention_tile_cols(a.S);
  T* pp = scratch;
  T* dpp = pp + br * bc;
  T* L = dpp + br * bc;  // row logsumexp (−inf: fully masked row)
  T* delta = L + br;  // Δ = rowsum(dO ∘ O)
  T* m = delta + br;  // running max and sum of sweep 1
  T* l = m + br;
  T* Kt = l + br;  // D × S
  T* Vt = Kt + a.D * a.S;  // Dv × S
  const T* Qb = a.q + a.q_offsets[b];
  const T* Kb = a.k + a.k_offsets[b];
  const T* Vb = a.v + a.v_offsets[b];
  const T* Ob = a.o + a.o_offsets[b];
  const T* dOb = a.dout + a.dout_offsets[b];
  T* dQb = a.dq + b * a.Tq * a.D;
  T* dKb = a.dk + b * a.S * a.D;
  T* dVb = a.dv + b * a.S * a.Dv;
  transpose_block(Kb, a.S, a.D, a.ldk, Kt, a.S);
  transpose_block(Vb, a.S, a.Dv, a.ldv, Vt, a.S);
  for (int64_t i0 = 0; i0 < a.Tq; i0 += br) {
    const int64_t rows = std::min(br, a.Tq - i0);
    const T* Q = Qb + i0 * a.ldq;
    const T* dO = dOb + i0 * a.lddo;
    const T* O = Ob + i0 * a.ldo;
    // Sweep 1: the row statistics, by the same online max/sum as the flash forward.
    std::fill(m, m + rows, kNegInf<T>);
    std::fill(l, l + rows, T(0));
    for (int64_t j0 = 0; j0 < a.S; j0 += bc) {
      if (tile_hidden(a, i0, rows, j0)) break;
      const int64_t cols = std::min(bc, a.S - j0);
      product<T>(false, false, rows, cols, a.D, a.scale, Q, a.ldq, Kt + j0, a.S, T(0), pp, cols);
      if (any_mask(a)) apply_mask(a, pp, cols, b, i0, rows, j0, cols);
      for (int64_t r = 0; r < rows; ++r) {
        const T* s = pp + r * cols;
        const T m_new = std::max(m[r], ConstRowMap<T>(s, cols).maxCoeff());
        if (m_new == kNegInf<T>) continue;
        l[r] = l[r] * std::exp(m[r] - m_new) + exp_shifted_sum<T>(s, m_new, nullptr, cols, nullptr);
        m[r] = m_new;
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      L[r] = l[r] > T(0) ? m[r] + std::log(l[r]) : kNegInf<T>;
      delta[r] = (ConstRowMap<T>(dO + r * a.lddo, a.Dv) * ConstRowMap<T>(O + r * a.ldo, a.Dv)).sum();
    }
    // Sweep 2: per tile P = exp(S − L), then the four gradient products.
    for (int64_t j0 = 0; j0 < a.S; j0 += bc) {
      if (tile_hidden(a, i0, rows, j0)) break;
      const int64_t cols = std::min(bc, a.S - j0);
      const T* K = Kb + j0 * a.ldk;
      product<T>(false, false, rows, cols, a.D, a.scale, Q, a.ldq, Kt + j0, a.S, T(0), pp, cols);
      if (any_mask(a)) apply_mask(a, pp, cols, b, i0, rows, j0, cols);
      for (int64_t r = 0; r < rows; ++r) {
        T* s = pp + r * cols;
        if (L[r] == kNegInf<T>) std::fill(s, s + cols, T(0));  // fully masked row: no gradient
        else exp_shifted_sum<T>(s, L[r], s, cols, nullptr);  // P = exp(S − L), S − L <= 0
      }
      product<T>(true, false, cols, a.Dv, rows, T(1), pp, cols, dO, a.lddo, T(1), dVb + j0 * a.Dv,
                 a.Dv);  // dV += Pᵀ·dO
      product<T>(false, false, rows, cols, a.Dv, T(1), dO, a.lddo, Vt + j0, a.S, T(0), dpp, cols);  // dP = dO·Vᵀ
      for (int64_t r = 0; r < rows; ++r) {  // dS = P ∘ (dP − Δ), in dP's buffer
        RowMap<T> dp(dpp + r * cols, cols);
        dp = ConstRowMap<T>(pp + r * cols, cols) * (dp - delta[r]);
      }
      product<T>(false, false, rows, a.D, cols, a.scale, dpp, cols, K, a.ldk, T(1), dQb + i0 * a.D,
                 a.D);  // dQ += dS·K·scale
      product<T>(true, false, cols, a.D, rows, a.scale, dpp, cols, Q, a.ldq, T(1), dKb + j0 * a.D,
                 a.D);  // dK += dSᵀ·Q·scale
    }
  }
}

template <class T> void add_typed(TypedKernels<T>& k) {
  k.attention_naive_batch = naive_batch<T>;
  k.attention_flash_rows = flash_rows<T>;
  k.attention_backward_batch = backward_batch<T>;
}

}  // namespace

void add_attention_kernels(KernelTable& t) {
  add_typed(t.f32);
  add_typed(t.f64);
}

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
