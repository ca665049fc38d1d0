// Matrix multiplication C = A·B, 2-D and batched (batch axes broadcast NumPy-style), with
// four algorithms side by side: "blas" (the default: OpenBLAS on opscope's threads, see
// ops/gemm.h), "eigen" (Eigen's GEMM, built per instruction set), "naive" (the i-j-k triple
// loop the course warns about) and "blocked" (cache tiling, i-k-j inner order). blas and eigen
// read the operands' own buffers (a transposed view as a column-major matrix) and are checked
// against naive. Shape letters: M rows of A, K inner size, N columns of B.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu_util.h"
#include "ops/gemm.h"

namespace opscope {
namespace {

using cpu::gc;

// ---------------------------------------------------------------------------------------------
// Operands as the kernels see them: the last two axes of a tensor as a strided matrix, either
// row-major (column stride 1) or column-major (row stride 1; a transposed view), plus the
// element offset of each matrix of the broadcast batch.
struct Operand {
  Tensor t;  // the tensor read (a contiguous copy only when neither layout fits)
  int64_t rs, cs;  // row and column strides (elements)
  bool row_major;  // cs == 1; else rs == 1
  int64_t ld;  // leading dimension: rs if row-major, cs if column-major
  std::vector<int64_t> batch_offsets;  // one per matrix of the output batch
};

// Row-major fits when columns are adjacent and rows don't overlap; column-major likewise.
bool fits_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool row_major, int64_t& ld) {
  if (!row_major) {
    std::swap(rows, cols);
    std::swap(rs, cs);
  }
  if (cols > 1 && cs != 1) return false;
  if (rows > 1 && rs < std::max<int64_t>(cols, 1)) return false;
  ld = rows > 1 ? rs : std::max<int64_t>(cols, 1);
  return true;
}

Operand make_operand(const Tensor& x, DType dt, const Shape& batch) {
  Operand o;
  o.t = cpu::as_dtype(x, dt);
  const int64_t r = o.t.dim(), rows = o.t.shape()[r - 2], cols = o.t.shape()[r - 1];
  auto layout = [&] {
    const int64_t rs = o.t.strides()[r - 2], cs = o.t.strides()[r - 1];
    if (fits_layout(rows, cols, rs, cs, true, o.ld)) o.row_major = true;
    else if (fits_layout(rows, cols, rs, cs, false, o.ld)) o.row_major = false;
    else return false;
    o.rs = o.row_major ? o.ld : 1;
    o.cs = o.row_major ? 1 : o.ld;
    return true;
  };
  if (!layout()) {  // neither the last nor the second-last stride is 1: copy once
    o.t = o.t.contiguous(MemCategory::temporary);
    layout();
  }
  // Batch offsets: the operand's batch axes aligned to the right of the output's; an axis of
  // size 1 (or a missing one) is broadcast with stride 0.
  const int64_t nb = static_cast<int64_t>(batch.size()), own = r - 2;
  Strides bs(batch.size(), 0);
  for (int64_t i = 0; i < own; ++i)
    if (o.t.shape()[i] != 1) bs[nb - own + i] = o.t.strides()[i];
  o.batch_offsets = cpu::batch_offsets(batch, bs);
  return o;
}

// Runs `gemm(A, B, C, M, N, K)` for every matrix of the batch (C is the contiguous output).
template <class T, class F> void for_each_matrix(KernelCtx& k, F gemm) {
  Tensor& out = k.out();
  const DType dt = out.dtype();
  const int64_t r = out.dim(), M = out.shape()[r - 2], N = out.shape()[r - 1];
  const int64_t K = k.in(0).shape().back();
  if (out.numel() == 0) return;
  if (K == 0) {  // an empty sum: C = 0
    out.fill(0.0);
    return;
  }
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const Operand a = make_operand(k.in(0), dt, batch), b = make_operand(k.in(1), dt, batch);
  const T* pa = a.t.data<T>();
  const T* pb = b.t.data<T>();
  T* pc = out.data<T>();
  for (size_t i = 0; i < a.batch_offsets.size(); ++i)
    gemm(a, pa + a.batch_offsets[i], b, pb + b.batch_offsets[i], pc + static_cast<int64_t>(i) * M * N, M, N, K);
}

// ---------------------------------------------------------------------------------------------
// naive: C[i][j] = Σ_k A[i][k]·B[k][j] in the textbook i-j-k order. The inner loop walks B
// down a column, N elements apart in memory: a cache miss per step once B outgrows the cache.
// Kept this way on purpose: it is the baseline the other algorithms are measured against.
template <class T>
void gemm_naive(const Operand& a, const T* A, const Operand& b, const T* B, T* C, int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += A[i * a.rs + k * a.cs] * B[k * b.rs + j * b.cs];
      C[i * N + j] = acc;
    }
}

// blocked: the same sum over tiles, so a kTileK×kTileJ block of B (256 KiB in float32) stays
// in cache while kTileI rows of A use it. Inside a tile the order is i-k-j: the inner loop
// C[i][j0..j1] += A[i][k]·B[k][j0..j1] walks B and C along rows (contiguous), so it vectorizes.
constexpr int64_t kTileI = 64, kTileK = 256, kTileJ = 256;

template <class T>
void gemm_blocked(const Operand& a, const T* A, const T* B, int64_t ldb, T* C, int64_t M, int64_t N, int64_t K) {
  std::fill(C, C + M * N, T(0));
  for (int64_t i0 = 0; i0 < M; i0 += kTileI) {
    const int64_t i1 = std::min(M, i0 + kTileI);
    for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
      const int64_t k1 = std::min(K, k0 + kTileK);
      for (int64_t j0 = 0; j0 < N; j0 += kTileJ) {
        const int64_t j1 = std::min(N, j0 + kTileJ);
        for (int64_t i = i0; i < i1; ++i) {
          T* __restrict c = C + i * N;
          for (int64_t k = k0; k < k1; ++k) {
            const T aik = A[i * a.rs + k * a.cs];
            const T* __restrict brow = B + k * ldb;
            for (int64_t j = j0; j < j1; ++j) c[j] += aik * brow[j];
          }
        }
      }
    }
  }
}

// blas and eigen: the product through ops/gemm.h on the operands' own buffers.
template <class T> cpu::ConstMatrix<T> matrix_of(const Operand& o, const T* p) { return {p, o.ld, o.row_major}; }

// True when B is one matrix for the whole batch (broadcast) and A's matrices are row-major and
// follow each other at one row stride, so A's batch is a single matrix of count·M rows.
inline bool stacks_rows(const Operand& a, const Operand& b, int64_t M) {
  if (!a.row_major) return false;
  for (size_t i = 0; i < b.batch_offsets.size(); ++i)
    if (b.batch_offsets[i] != b.batch_offsets[0]) return false;
  const int64_t step = M * a.ld;
  for (size_t i = 0; i < a.batch_offsets.size(); ++i)
    if (a.batch_offsets[i] != a.batch_offsets[0] + static_cast<int64_t>(i) * step) return false;
  return true;
}

// A batch against one broadcast B is one tall product (stacks_rows). Otherwise many small
// matrices (a batch of heads) run one matrix per thread; a large one is split into
// panels by cpu::gemm. Which of the two depends on the shapes only, so the bits do not depend
// on the thread count.
template <class T> void for_each_product(KernelCtx& k, cpu::GemmAlgo algo) {
  Tensor& out = k.out();
  const int64_t r = out.dim(), M = out.shape()[r - 2], N = out.shape()[r - 1];
  const int64_t K = k.in(0).shape().back();
  if (out.numel() == 0) return;
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const Operand a = make_operand(k.in(0), out.dtype(), batch), b = make_operand(k.in(1), out.dtype(), batch);
  const T* pa = a.t.data<T>();
  const T* pb = b.t.data<T>();
  T* pc = out.data<T>();
  const int64_t count = static_cast<int64_t>(a.batch_offsets.size());
  if (count > 1 && stacks_rows(a, b, M)) {
    // [batch..., M, K] @ [K, N] (x·W of a layer): one product of batch·M rows, as PyTorch's
    // matmul folds it, so B is packed once, not once per matrix of the batch.
    const cpu::ConstMatrix<T> A = matrix_of(a, pa + a.batch_offsets[0]), B = matrix_of(b, pb + b.batch_offsets[0]);
    cpu::gemm<T>(algo, count * M, N, K, A, B, T(1), T(0), pc, N);
    return;
  }
  auto one = [&](int64_t i, bool split) {
    const cpu::ConstMatrix<T> A = matrix_of(a, pa + a.batch_offsets[i]), B = matrix_of(b, pb + b.batch_offsets[i]);
    T* C = pc + i * M * N;
    if (split) cpu::gemm<T>(algo, M, N, K, A, B, T(1), T(0), C, N);
    else cpu::gemm_serial<T>(algo, M, N, K, A, B, T(1), T(0), C, N);
  };
  const double macs = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (count > 1 && macs < double(1 << 22)) {
    parallel_for(count, grain_for(macs), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) one(i, false);
    });
  } else {
    for (int64_t i = 0; i < count; ++i) one(i, true);
  }
}

// ---------------------------------------------------------------------------------------------
// NumPy broadcasting of batch shapes (matched from the right); false if some pair differs
// with neither side 1.
bool broadcast_batch(const Shape& a, const Shape& b, Shape& out) { return try_broadcast_shapes(a, b, out); }

std::vector<TensorMeta> infer_matmul(const InferCtx& c) {
  const Shape &a = c.inputs[0].shape, &b = c.inputs[1].shape;
  for (int i = 0; i < 2; ++i) {
    const Shape& s = c.inputs[i].shape;
    if (s.size() >= 2) continue;
    const std::string name = i == 0 ? "a" : "b";
    if (s.empty())
      c.fail("expected tensors of rank >= 2, got " + shape_str(a) + " @ " + shape_str(b) + " (" + name +
                 " is a 0-d scalar)",
             "to scale by a scalar use mul (" + name + " * x)");
    const std::string n = std::to_string(s[0]);
    c.fail("expected tensors of rank >= 2, got " + shape_str(a) + " @ " + shape_str(b) + " (" + name +
               " is a 1-D vector)",
           i == 0 ? "reshape it into a row: reshape(a, [1, " + n + "])"
                  : "reshape it into a column: reshape(b, [" + n + ", 1])");
  }
  c.expect_float(0);
  c.expect_float(1);
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  const int64_t M = a[ra - 2], K = a[ra - 1], Kb = b[rb - 2], N = b[rb - 1];
  if (K != Kb) {
    const bool batched = ra > 2 || rb > 2;
    std::string hint = "the last dimension of a must equal the second-last dimension of b";
    if (K == N)
      hint =
          batched ? "did you mean transpose(b) (swaps b's last two axes)?" : "did you mean b.T (transpose(b, 0, 1))?";
    else if (M == Kb)
      hint =
          batched ? "did you mean transpose(a) (swaps a's last two axes)?" : "did you mean a.T (transpose(a, 0, 1))?";
    c.fail("inner dimensions differ: " + shape_str(a) + " @ " + shape_str(b) + " (" + std::to_string(K) +
               " != " + std::to_string(Kb) + ")",
           hint);
  }
  // Batch axes (all but the last two) broadcast NumPy-style.
  const Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  TensorMeta m;
  if (!broadcast_batch(ba, bb, m.shape))
    c.fail("batch dimensions " + shape_str(ba) + " and " + shape_str(bb) + " cannot be broadcast (" + shape_str(a) +
               " @ " + shape_str(b) + ")",
           "batch axes must be equal or 1 (matched from the right)");
  m.shape.push_back(M);
  m.shape.push_back(N);
  m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  return {m};
}

OpDef matmul_def() {
  OpDef d = OpDef::declare("matmul", "matmul",
                           "C = A·B: C[..., i, j] = Σ_k A[..., i, k]·B[..., k, j] (batch axes broadcast)", {"a", "b"});
  d.accepts_strided = true;  // transposed views are read in place (column-major), not copied
  d.infer = infer_matmul;
  d.default_algo = cpu::gemm_algo_name(cpu::default_gemm());
  d.float32_only = {"wmma", "wmma_half"};  // the Tensor Core kernels (ops/cuda/matmul.cu): TF32 or half inputs
  d.reduced_precision = {{"wmma", 1e-2}, {"wmma_half", 1e-2}};  // ... keep 10 mantissa bits
  for (auto [name, algo] : {std::pair{"blas", cpu::GemmAlgo::blas}, std::pair{"eigen", cpu::GemmAlgo::eigen}})
    d.kernel(Device::cpu, name, [algo = algo](KernelCtx& k) {
      visit_dtype(k.out().dtype(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) for_each_product<T>(k, algo);
      });
    });
  d.kernel(Device::cpu, "naive", [](KernelCtx& k) {
    visit_dtype(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) for_each_matrix<T>(k, gemm_naive<T>);
    });
  });
  d.kernel(Device::cpu, "blocked", [](KernelCtx& k) {
    visit_dtype(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) {
        Tensor packed;  // B as row-major rows when it arrives column-major (a transposed view)
        for_each_matrix<T>(k, [&](const Operand& a, const T* A, const Operand& b, const T* B, T* C, int64_t M,
                                  int64_t N, int64_t K) {
          if (b.row_major) return gemm_blocked<T>(a, A, B, b.ld, C, M, N, K);
          if (!packed.defined()) packed = k.workspace({K, N}, k.out().dtype());
          T* p = packed.data<T>();
          for (int64_t kk = 0; kk < K; ++kk)
            for (int64_t j = 0; j < N; ++j) p[kk * N + j] = B[kk + j * b.ld];
          gemm_blocked<T>(a, A, p, N, C, M, N, K);
        });
      }
    });
  });
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    // The engine sums dA, dB over broadcast batch axes (sum_to).
    Val dc = g.grad_output(0), da, db;
    if (g.needs_grad(0)) da = g.call("matmul", {dc, g.call("transpose", {g.input(1)})});
    if (g.needs_grad(1)) db = g.call("matmul", {g.call("transpose", {g.input(0)}), dc});
    return {da, db};
  };
  d.backward_note = "dA = dC·Bᵀ, dB = Aᵀ·dC";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    const Shape& s = out[0].shape;
    const double M = static_cast<double>(s[s.size() - 2]), N = static_cast<double>(s.back());
    const double K = static_cast<double>(in[0].shape.back());
    const double batch = cpu::meta_numel(out[0]) / std::max(1.0, M * N);
    c.flops = 2 * M * N * K * batch;
    c.multiplications = M * N * K * batch;
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  d.gradcheck = {gc({{{3, 4}}, {{4, 5}}}, {}, "2-D"),
                 gc({{{2, 3, 4}}, {{2, 4, 5}}}, {}, "batched"),
                 gc({{{2, 3, 4}}, {{4, 5}}}, {}, "broadcast b over a's batch"),
                 gc({{{1, 3, 4}}, {{2, 4, 5}}}, {}, "broadcast batch of size 1"),
                 gc({{{1, 1}}, {{1, 3}}}, {}, "outer product of 1x1"),
                 gc({{{3, 2, 3, 2}}, {{2, 3}}}, {}, "two batch axes")};
  d.lab = {"N [M K]: A is N×K, B is K×M",
           {512},
           1,
           [](const std::vector<int64_t>& s) {
             const int64_t n = s[0], m = cpu::size_or(s, 1, n), k = cpu::size_or(s, 2, n);
             return cpu::lab_case({{n, k}, {k, m}});
           },
           {}};
  return d;
}

OPSCOPE_REGISTER_OPS(register_matmul_ops) { registry.add(matmul_def()); }

}  // namespace
}  // namespace opscope
