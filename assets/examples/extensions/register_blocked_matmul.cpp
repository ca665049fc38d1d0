// A student's matmul algorithm, "mine": register blocking on the CPU, added to the built-in
// matmul beside naive, blocked and eigen. Load it and the kernel lab checks it against naive
// and times it beside the others (lesson 7):
//
//     >>> load_extension("assets/examples/extensions/register_blocked_matmul.cpp")
//     >>> :bench matmul 512
//     >>> C = matmul(A, B, algo="mine")
//
// The idea. `blocked` (ops/matmul.cpp) keeps tiles of B in cache, but every multiply-add still
// loads and stores C[i][j]: one FMA per load and store. Here a 4-row tile of C lives in
// registers for the whole k loop: two vector registers per row (2 × 8 floats with AVX2), eight in
// all. Each step of k loads two vectors of B and four values of A and does 4 × 2 vector FMAs
// (64 multiply-adds in float32) with them; C is written once, at the end. The 16 columns of B
// the tile needs are first copied into a dense K×16 panel (counted as workspace): read
// in place they would be rows 4·N bytes apart, which the cache maps onto a few sets and evicts.
//
// Why a vector type and not `float acc[4][16]`: GCC keeps an array in memory across a loop, so
// that version loads and stores acc on every k and runs at ~3 GFLOP/s, slower than `blocked`.
// `V` below is GCC's vector extension: one value is one register, and acc really stays there.
#include <algorithm>

#include "ops/cpu_util.h"

namespace {

using namespace opscope;

constexpr int64_t kRows = 4;  // rows of the tile of C held in registers
constexpr int64_t kVectorBytes = 32;  // one AVX2 register (opscope is built for x86-64-v3)

template <class T> using Vector [[gnu::vector_size(kVectorBytes)]] = T;
template <class T> constexpr int64_t kLanes = kVectorBytes / sizeof(T);  // 8 floats or 4 doubles
template <class T> constexpr int64_t kCols = 2 * kLanes<T>;  // columns of the tile: two registers a row

// C[0..4)[0..kCols) = A[0..4)[0..K) · panel, where panel is B's kCols columns as K dense rows.
template <class T> void tile_in_registers(const T* A, int64_t lda, const T* panel, int64_t K, T* C, int64_t ldc) {
  using V = Vector<T>;
  V acc[kRows][2] = {};
  for (int64_t k = 0; k < K; ++k) {
    V b0, b1;
    __builtin_memcpy(&b0, panel + k * kCols<T>, sizeof(V));  // unaligned vector loads
    __builtin_memcpy(&b1, panel + k * kCols<T> + kLanes<T>, sizeof(V));
    for (int64_t r = 0; r < kRows; ++r) {
      const T a = A[r * lda + k];  // broadcast to every lane
      acc[r][0] += a * b0;
      acc[r][1] += a * b1;
    }
  }
  for (int64_t r = 0; r < kRows; ++r) {
    __builtin_memcpy(C + r * ldc, &acc[r][0], sizeof(V));
    __builtin_memcpy(C + r * ldc + kLanes<T>, &acc[r][1], sizeof(V));
  }
}

// A tile at the bottom or right edge of C (fewer rows or columns): the plain sum.
template <class T>
void edge_tile(const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc, int64_t rows, int64_t cols,
               int64_t K) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      T sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += A[r * lda + k] * B[k * ldb + c];
      C[r * ldc + c] = sum;
    }
}

// C (M×N) = A (M×K) · B (K×N), all row-major and dense; `panel` has room for K×kCols values.
template <class T> void gemm_register_blocked(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, T* panel) {
  for (int64_t j0 = 0; j0 < N; j0 += kCols<T>) {
    const int64_t cols = std::min(kCols<T>, N - j0);
    if (cols == kCols<T>)
      for (int64_t k = 0; k < K; ++k) std::copy(B + k * N + j0, B + k * N + j0 + cols, panel + k * kCols<T>);
    for (int64_t i0 = 0; i0 < M; i0 += kRows) {
      const int64_t rows = std::min(kRows, M - i0);
      if (rows == kRows && cols == kCols<T>) tile_in_registers(A + i0 * K, K, panel, K, C + i0 * N + j0, N);
      else edge_tile(A + i0 * K, K, B + j0, N, C + i0 * N + j0, N, rows, cols, K);
    }
  }
}

// Where each matrix of `t` starts, for every matrix of the output's batch: matmul broadcasts
// batch axes NumPy-style (a missing axis or one of size 1 repeats the same matrix).
std::vector<int64_t> matrix_offsets(const Tensor& t, const Shape& batch) {
  Strides strides(batch.size(), 0);
  const size_t own = t.shape().size() - 2;
  for (size_t i = 0; i < own; ++i)
    if (t.shape()[i] != 1) strides[batch.size() - own + i] = t.strides()[i];
  return cpu::batch_offsets(batch, strides);
}

void matmul_mine(KernelCtx& k) {
  Tensor& out = k.out();
  cpu::visit_float(out.dtype(), "matmul", [&](auto zero) {
    using T = decltype(zero);
    // matmul accepts strided inputs (a transposed view in backward): this kernel wants dense
    // rows, so it copies those once (counted as temporary memory).
    const Tensor a = cpu::as_dtype(k.in(0), out.dtype()).contiguous();
    const Tensor b = cpu::as_dtype(k.in(1), out.dtype()).contiguous();
    const int64_t r = out.dim(), M = out.shape()[r - 2], N = out.shape()[r - 1], K = a.shape().back();
    const Shape batch(out.shape().begin(), out.shape().end() - 2);
    const std::vector<int64_t> oa = matrix_offsets(a, batch), ob = matrix_offsets(b, batch);
    Tensor panel = k.workspace({std::max<int64_t>(K, 1), kCols<T>}, out.dtype());  // freed when the kernel returns
    for (size_t i = 0; i < oa.size(); ++i)
      gemm_register_blocked<T>(a.data<T>() + oa[i], b.data<T>() + ob[i],
                               out.data<T>() + static_cast<int64_t>(i) * M * N, M, N, K, panel.data<T>());
  });
}

OPSCOPE_REGISTER_OPS(register_my_matmul) {
  // A new algorithm of an existing op: its shape inference, backward, cost and gradcheck cases
  // are matmul's own, so gradcheck and the kernel lab check "mine" like the built-in ones.
  registry.add_kernel("matmul", Device::cpu, "mine", matmul_mine);
}

}  // namespace
