// The hot CPU kernels, built once per instruction set and chosen at start-up (core/cpu_isa.h),
// as ATen's CPU capability dispatch does: every file of ops/cpu/ except dispatch.cpp is
// compiled twice, for the x86-64-v3 baseline (AVX2 + FMA) and for x86-64-v4 (AVX-512), into
// a namespace of its own (OPSCOPE_CPU_NS). Each build is linked into one object whose only
// global symbol is its table's entry point (CMakeLists.txt: `ld -r` + `objcopy
// --keep-global-symbol`), so an inline function or template instantiated by both builds
// (Eigen's, the standard library's) can never be taken from the wrong one.
//
// The kernels here are plain loops over raw pointers: no Tensor, no allocation, no exception.
// The ops of ops/*.cpp check shapes, allocate, split the work over the thread pool
// (core/parallel.h) and call a kernel per chunk.
#pragma once
#include <cstdint>

#include "core/cpu_isa.h"

namespace opscope::cpu {

// A matrix operand read in place: element (i, j) at data[i·ld + j] (row-major) or
// data[i + j·ld] (column-major: a transposed view).
template <class T> struct ConstMatrix {
  const T* data = nullptr;
  int64_t ld = 0;
  bool row_major = true;
};

enum class SoftmaxKind : int { stable, naive, log };

// conv2d's window over one group of one image: Cg channels of H×W, an R×S kernel. Filled from
// ops/geometry.h's ConvGeom (window_of in ops/conv.cpp), the geometry CPU and CUDA share.
struct ConvWindow {
  int64_t Cg = 1, H = 1, W = 1, R = 1, S = 1, OH = 1, OW = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;  // stride, padding, dilation along H and W
};

// Scaled dot-product attention: Q [batches, Tq, D], K [.., S, D], V [.., S, Dv] (per-batch
// element offsets, broadcast axes repeat them; rows ldq, ldk, ldv elements apart, so the heads
// of a [N, T, H·D] projection are read in place), the optional mask (float added, or int64
// 0 = masked; strides per query row and key column, offsets per batch), O [batches, Tq, Dv];
// for the backward also O, dO (rows ldo, lddo apart) and the outputs dQ, dK, dV (contiguous,
// zeroed by the op).
constexpr int64_t kAttentionBlockRows = 64;  // query rows per tile (flash, backward)
constexpr int64_t kAttentionBlockCols = 64;  // keys per tile
// Tiles shrink to the problem; scratch sizes (elements) per thread.
inline int64_t attention_tile_rows(int64_t Tq) {
  return Tq < kAttentionBlockRows ? (Tq > 0 ? Tq : 1) : kAttentionBlockRows;
}
inline int64_t attention_tile_cols(int64_t S) {
  return S < kAttentionBlockCols ? (S > 0 ? S : 1) : kAttentionBlockCols;
}
// Both hold the keys (and the backward also the values) transposed, so that every tile product
// is untransposed: OpenBLAS ran 64×64×64 products with Bᵀ at 0.54 of the FMA peak, without at
// 0.97 (bench_peak). flash: one key tile, D × cols; backward: all of Kᵀ and Vᵀ of a batch index.
inline int64_t attention_flash_scratch(int64_t Tq, int64_t S, int64_t D) {
  return attention_tile_rows(Tq) * attention_tile_cols(S) + 2 * attention_tile_rows(Tq) + D * attention_tile_cols(S);
}
inline int64_t attention_backward_scratch(int64_t Tq, int64_t S, int64_t D, int64_t Dv) {
  return 2 * attention_tile_rows(Tq) * attention_tile_cols(S) + 4 * attention_tile_rows(Tq) + (D + Dv) * S;
}
template <class T> struct AttentionArgs {
  int64_t Tq = 0, S = 0, D = 0, Dv = 0;
  int64_t ldq = 0, ldk = 0, ldv = 0, ldo = 0, lddo = 0;  // row strides of q, k, v, o, dO
  T scale = 1;
  const T *q = nullptr, *k = nullptr, *v = nullptr;
  const int64_t *q_offsets = nullptr, *k_offsets = nullptr, *v_offsets = nullptr;
  T* out = nullptr;
  const T* additive = nullptr;
  const int64_t* keep = nullptr;
  int64_t mask_rs = 0, mask_cs = 0;
  const int64_t* mask_offsets = nullptr;
  bool causal = false;
  const T *o = nullptr, *dout = nullptr;
  const int64_t *o_offsets = nullptr, *dout_offsets = nullptr;
  T *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

// A pooling window over planes of H×W: KH×KW, strides SH, SW, paddings PH, PW, output OH×OW.
// Filled from ops/geometry.h's PoolWindow (geom_of in ops/pool.cpp), less its N and C.
struct PoolGeom {
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, PH = 0, PW = 0, H = 1, W = 1, OH = 1, OW = 1;
};
enum class NormAlgo : int { welford, two_pass, naive };

// The kernels of one instruction set for one element type.
template <class T> struct TypedKernels {
  // C[M×N] (row-major, row stride ldc) = alpha·A·B + beta·C through Eigen's GEMM (beta 0: C
  // is only written).
  void (*gemm)(int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha, T beta, T* C,
               int64_t ldc) = nullptr;

  // softmax.cpp: x seen as [A, C, B] around the axis; groups [a0, a1).
  void (*softmax_rows)(const T* x, T* out, int64_t a0, int64_t a1, int64_t C, int64_t B, SoftmaxKind kind) = nullptr;
  void (*softmax_backward_rows)(const T* s, const T* dy, T* dx, int64_t a0, int64_t a1, int64_t C, int64_t B) = nullptr;

  // norm.cpp: layer_norm over rows [m0, m1) of N elements; weight w and bias b may be null.
  void (*layer_norm_rows)(const T* x, T* y, int64_t m0, int64_t m1, int64_t N, T eps, const T* w, const T* b,
                          NormAlgo algo) = nullptr;
  // Rows [m0, m1): dx, and this range's Σ dy·x̂ (dw) and Σ dy (db); g is N elements of scratch.
  void (*layer_norm_backward_rows)(const T* x, const T* dy, const T* w, T* dx, T* dw, T* db, T* g, int64_t m0,
                                   int64_t m1, int64_t N, T eps) = nullptr;
  // batch_norm over channels [c0, c1) of x [N, C, S]; training updates rm, rv in place.
  void (*batch_norm_channels)(const T* x, T* y, int64_t c0, int64_t c1, int64_t N, int64_t C, int64_t S, T eps,
                              bool training, T momentum, T* rm, T* rv, const T* w, const T* b, NormAlgo algo) = nullptr;
  void (*batch_norm_backward_channels)(const T* x, const T* dy, const T* rm, const T* rv, const T* w, T* dx, T* dw,
                                       T* db, int64_t c0, int64_t c1, int64_t N, int64_t C, int64_t S, T eps,
                                       bool training) = nullptr;

  // pool.cpp: planes [p0, p1) of x [planes, H, W]; the backward ops write all of dx's planes.
  void (*max_pool_planes)(const T* x, T* y, int64_t p0, int64_t p1, const PoolGeom& g) = nullptr;
  void (*max_pool_backward_planes)(const T* x, const T* dy, T* dx, int64_t p0, int64_t p1, const PoolGeom& g) = nullptr;
  void (*avg_pool_planes)(const T* x, T* y, int64_t p0, int64_t p1, const PoolGeom& g) = nullptr;
  void (*avg_pool_backward_planes)(const T* dy, T* dx, int64_t p0, int64_t p1, const PoolGeom& g) = nullptr;

  // im2col.cpp: rows [q0, q1) of the column buffer (Cg·R·S rows of OH·OW) from x's group xc;
  // col2im adds channels [c0, c1) of a column buffer into dx's group dxc.
  void (*im2col_rows)(const T* xc, T* col, int64_t q0, int64_t q1, const ConvWindow& g) = nullptr;
  void (*col2im_channels)(const T* col, T* dxc, int64_t c0, int64_t c1, const ConvWindow& g) = nullptr;

  // attention.cpp: naive for batch b (scores: Tq·S scratch); flash for query rows [i0, i0 + rows)
  // of batch b (scratch: one tile + 2 rows of stats); the backward for batch b (scratch: two
  // tiles + 4 rows of stats).
  void (*attention_naive_batch)(const AttentionArgs<T>& a, int64_t b, T* scores) = nullptr;
  void (*attention_flash_rows)(const AttentionArgs<T>& a, int64_t b, int64_t i0, int64_t rows, T* scratch) = nullptr;
  void (*attention_backward_batch)(const AttentionArgs<T>& a, int64_t b, T* scratch) = nullptr;

  // gelu.cpp (float32 only; null for float64): y = gelu(x) over n contiguous elements, or
  // gelu_backward(x, dy) when dy is not null; tanh_form: approximate="tanh".
  void (*gelu)(const T* x, const T* dy, T* y, int64_t n, bool tanh_form) = nullptr;
};

struct KernelTable {
  CpuIsa isa = CpuIsa::baseline;
  TypedKernels<float> f32;
  TypedKernels<double> f64;
};

// The table of the kernel set in use (cpu_isa()).
const KernelTable& kernels();
// The table of one kernel set; nullptr when this build has none for it (no AVX-512 compiler).
const KernelTable* kernels_for(CpuIsa isa);

template <class T> const TypedKernels<T>& typed(const KernelTable& t) {
  if constexpr (sizeof(T) == 4) return t.f32;
  else return t.f64;
}
// The kernels of element type T in use now: cpu::kern<float>().gemm(...).
template <class T> const TypedKernels<T>& kern() { return typed<T>(kernels()); }

}  // namespace opscope::cpu
