// CUDA matmul in the versions the course names, side by side (as llm.c's dev/cuda does). Each is
// checked against the CPU in tests/test_cuda.cpp before tools/gpu_check.sh times it.
//
// C[M×N] = A[M×K]·B[K×N], row-major. 2·M·N·K FLOPs; a kernel that reads each operand once moves
// 4·(MK + KN + MN) bytes, so at 4096 matmul is compute-bound: the ceiling is cuBLAS SGEMM.
//
//   naive             one thread per C element: K loads of A and B from global memory each
//   tiled             32×32 tiles of A and B staged in shared memory: each global load is reused
//                     32 times
//   tiled_conflicting the same, but B's tile stored transposed (Bt[j][k]) so a warp reading
//                     Bt[tx][k] hits addresses 32 floats apart: all in one bank, a 32-way conflict
//   tiled_padded      the fix: the transposed tile one float wider (33), so row j starts in bank
//                     j mod 32 and the warp's 32 reads land in 32 different banks
//   register_blocked  128×128 block tiles, each thread an 8×8 register tile of C (64 FMAs per
//                     16 shared loads), A and B staged with 16-byte float4 loads
//   wmma              Tensor Cores through WMMA, TF32 inputs (sm_80+), float accumulate
//   wmma_half         Tensor Cores with half inputs (sm_70+), float accumulate
//   cublas            the library, the reference and the ceiling
//
// Tolerances (tests/test_cuda.cpp): float32 kernels ≤ 1e-5·√K relative to max|C|; TF32 and half
// round the inputs to 10 mantissa bits (relative 2⁻¹¹ ≈ 4.9e-4 each), so ≤ 1e-2 of max|C|.
#include <cublas_v2.h>
#include <mma.h>

#include <algorithm>

#include "ops/cuda/cublas_loader.cuh"
#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

// One matmul call: dense operands, a batch walked by blockIdx.z. A batch stride of 0 means
// the operand is shared by every matrix of the batch (broadcast).
template <class T> struct Gemm {
  const T* A;
  const T* B;
  T* C;
  int M, N, K;
  int64_t sa, sb, sc;  // batch strides in elements
};

// --- naive ---------------------------------------------------------------------------------
template <class T> __global__ void mm_naive(Gemm<T> g) {
  const int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  const T* A = g.A + blockIdx.z * g.sa;
  const T* B = g.B + blockIdx.z * g.sb;
  if (i >= g.M || j >= g.N) return;
  T acc = 0;
  for (int k = 0; k < g.K; ++k) acc += A[int64_t(i) * g.K + k] * B[int64_t(k) * g.N + j];
  g.C[blockIdx.z * g.sc + int64_t(i) * g.N + j] = acc;
}

// --- tiled (shared memory), with and without the bank conflict --------------------------------
constexpr int kTile = 32;

template <class T> __global__ void mm_tiled(Gemm<T> g) {
  __shared__ T As[kTile][kTile];
  __shared__ T Bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * kTile + ty, j = blockIdx.x * kTile + tx;
  const T* A = g.A + blockIdx.z * g.sa;
  const T* B = g.B + blockIdx.z * g.sb;
  T acc = 0;
  for (int k0 = 0; k0 < g.K; k0 += kTile) {
    As[ty][tx] = i < g.M && k0 + tx < g.K ? A[int64_t(i) * g.K + k0 + tx] : T(0);
    Bs[ty][tx] = k0 + ty < g.K && j < g.N ? B[int64_t(k0 + ty) * g.N + j] : T(0);
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];  // As: broadcast, Bs: 32 banks
    __syncthreads();
  }
  if (i < g.M && j < g.N) g.C[blockIdx.z * g.sc + int64_t(i) * g.N + j] = acc;
}

// Pad = 0: B's tile transposed with rows 32 wide, a warp's reads Bt[tx][k] are 32 floats apart
// (one bank, 32-way conflict). Pad = 1: rows 33 wide, conflict-free.
template <class T, int Pad> __global__ void mm_tiled_transposed_b(Gemm<T> g) {
  __shared__ T As[kTile][kTile];
  __shared__ T Bt[kTile][kTile + Pad];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * kTile + ty, j = blockIdx.x * kTile + tx;
  const T* A = g.A + blockIdx.z * g.sa;
  const T* B = g.B + blockIdx.z * g.sb;
  T acc = 0;
  for (int k0 = 0; k0 < g.K; k0 += kTile) {
    As[ty][tx] = i < g.M && k0 + tx < g.K ? A[int64_t(i) * g.K + k0 + tx] : T(0);
    Bt[tx][ty] = k0 + ty < g.K && j < g.N ? B[int64_t(k0 + ty) * g.N + j] : T(0);
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bt[tx][k];
    __syncthreads();
  }
  if (i < g.M && j < g.N) g.C[blockIdx.z * g.sc + int64_t(i) * g.N + j] = acc;
}

// --- register blocked ----------------------------------------------------------------------
constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;  // 256 threads, 8×8 outputs each

// Four consecutive elements of row r of a row-major [rows, cols] matrix from column c, zeros
// outside it. Vec: cols is a multiple of 4 and M 16-byte aligned, so the four are all in range
// or all out, and one float4 load fetches them.
template <bool Vec, class T> __device__ void load4(const T* M, int r, int c, int rows, int cols, T v[4]) {
  if constexpr (Vec) {
    if (r < rows && c < cols) {
      const float4 f = *reinterpret_cast<const float4*>(&M[int64_t(r) * cols + c]);
      v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    } else {
      v[0] = v[1] = v[2] = v[3] = T(0);
    }
  } else {
    for (int t = 0; t < 4; ++t) v[t] = r < rows && c + t < cols ? M[int64_t(r) * cols + c + t] : T(0);
  }
}

// Vec: K and N are multiples of 4 and the operands 16-byte aligned (see load4).
template <class T, bool Vec> __global__ void __launch_bounds__(256) mm_register_blocked(Gemm<T> g) {
  __shared__ T As[kBK][kBM];  // A's tile transposed: a thread's 8 rows are contiguous
  __shared__ T Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int trow = (tid / (kBN / kTN)) * kTM, tcol = (tid % (kBN / kTN)) * kTN;
  const T* A = g.A + blockIdx.z * g.sa;
  const T* B = g.B + blockIdx.z * g.sb;
  T acc[kTM][kTN] = {};
  T ra[kTM], rb[kTN];
  // Each thread stages 4 of A's 128×8 tile (row tid/2, columns (tid%2)*4..+3) and 4 of B's
  // 8×128 tile (row tid/32, columns (tid%32)*4..+3).
  const int ar = tid / 2, ac = (tid % 2) * 4, br = tid / 32, bc = (tid % 32) * 4;
  for (int k0 = 0; k0 < g.K; k0 += kBK) {
    T va[4], vb[4];
    load4<Vec>(A, row0 + ar, k0 + ac, g.M, g.K, va);
    for (int t = 0; t < 4; ++t) As[ac + t][ar] = va[t];
    load4<Vec>(B, k0 + br, col0 + bc, g.K, g.N, vb);
    for (int t = 0; t < 4; ++t) Bs[br][bc + t] = vb[t];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
#pragma unroll
      for (int m = 0; m < kTM; ++m) ra[m] = As[k][trow + m];
#pragma unroll
      for (int n = 0; n < kTN; ++n) rb[n] = Bs[k][tcol + n];
#pragma unroll
      for (int m = 0; m < kTM; ++m)
#pragma unroll
        for (int n = 0; n < kTN; ++n) acc[m][n] += ra[m] * rb[n];
    }
    __syncthreads();
  }
  T* C = g.C + blockIdx.z * g.sc;
  for (int m = 0; m < kTM; ++m)
    for (int n = 0; n < kTN; ++n) {
      const int i = row0 + trow + m, j = col0 + tcol + n;
      if (i < g.M && j < g.N) C[int64_t(i) * g.N + j] = acc[m][n];
    }
}

// --- WMMA (Tensor Cores) -------------------------------------------------------------------
// A block of 4 warps computes a 32×32 tile of C, each warp one 16×16 fragment. Tiles of A and B
// are staged in shared memory (zero-padded at the edges, so any M, N, K work) in the input
// precision; the accumulator stays float.
namespace wmma = nvcuda::wmma;

template <bool Half> __global__ void mm_wmma(Gemm<float> g) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800 || (Half && __CUDA_ARCH__ >= 700))
  constexpr int KT = Half ? 16 : 8;  // the fragment's k: 16 for half, 8 for TF32
  using In = std::conditional_t<Half, __half, float>;
  using Prec = std::conditional_t<Half, __half, wmma::precision::tf32>;
  // Padded rows keep ldm a multiple of 8 (half) / 4 (float); WMMA wants 32-byte aligned tiles.
  __shared__ __align__(32) In As[32][KT + 8];
  __shared__ __align__(32) In Bs[KT][32 + 8];
  __shared__ __align__(32) float Cs[32][32 + 4];
  const int warp = threadIdx.x / 32, wi = (warp / 2) * 16, wj = (warp % 2) * 16;
  const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  const float* A = g.A + blockIdx.z * g.sa;
  const float* B = g.B + blockIdx.z * g.sb;
  wmma::fragment<wmma::accumulator, 16, 16, KT, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < g.K; k0 += KT) {
    for (int e = threadIdx.x; e < 32 * KT; e += blockDim.x) {
      const int r = e / KT, c = e % KT, gi = row0 + r, gk = k0 + c;
      const float v = gi < g.M && gk < g.K ? A[int64_t(gi) * g.K + gk] : 0.0f;
      if constexpr (Half) As[r][c] = __float2half(v);
      else As[r][c] = wmma::__float_to_tf32(v);
    }
    for (int e = threadIdx.x; e < KT * 32; e += blockDim.x) {
      const int r = e / 32, c = e % 32, gk = k0 + r, gj = col0 + c;
      const float v = gk < g.K && gj < g.N ? B[int64_t(gk) * g.N + gj] : 0.0f;
      if constexpr (Half) Bs[r][c] = __float2half(v);
      else Bs[r][c] = wmma::__float_to_tf32(v);
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, KT, Prec, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, KT, Prec, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, &As[wi][0], KT + 8);
    wmma::load_matrix_sync(fb, &Bs[0][wj], 32 + 8);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncthreads();
  }
  wmma::store_matrix_sync(&Cs[wi][wj], acc, 32 + 4, wmma::mem_row_major);
  __syncthreads();
  float* C = g.C + blockIdx.z * g.sc;
  for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
    const int r = e / 32, c = e % 32, i = row0 + r, j = col0 + c;
    if (i < g.M && j < g.N) C[int64_t(i) * g.N + j] = Cs[r][c];
  }
#endif
}

// --- cuBLAS --------------------------------------------------------------------------------
cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t handle;
    if (cublas_api().create(&handle) != CUBLAS_STATUS_SUCCESS)
      throw Error("cuBLAS could not be initialised", "is the GPU visible (nvidia-smi)?");
    return handle;
  }();
  cublas_api().set_stream(h, stream());
  return h;
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error in ") + what + ": status " + std::to_string(static_cast<int>(s)),
                "the shapes reached cuBLAS as printed in the node; see cublasStatus_t");
}

template <class T> void gemm_cublas(const Gemm<T>& g, int batch) {
  // cuBLAS is column-major (Fortran): it reads our row-major C[M×N] as the column-major matrix
  // Cᵀ[N×M]. Since Cᵀ = Bᵀ·Aᵀ, and our row-major B and A are exactly column-major Bᵀ[N×K] and
  // Aᵀ[K×M], we ask for Bᵀ·Aᵀ with no transposes: swap the operands and pass (N, M, K), with
  // leading dimensions N (B), K (A) and N (C). Passing (A, B, M, N, K) instead would compute
  // something else entirely without any error: the classic row- vs column-major pitfall.
  const T one = 1, zero = 0;
  if constexpr (std::is_same_v<T, float>)
    check_cublas(cublas_api().sgemm_strided_batched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &one, g.B, g.N,
                                                    g.sb, g.A, g.K, g.sa, &zero, g.C, g.N, g.sc, batch),
                 "cublasSgemmStridedBatched");
  else
    check_cublas(cublas_api().dgemm_strided_batched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &one, g.B, g.N,
                                                    g.sb, g.A, g.K, g.sa, &zero, g.C, g.N, g.sc, batch),
                 "cublasDgemmStridedBatched");
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, const T* B, T* C, bool accumulate, T alpha) {
  // As in gemm_cublas: ask cuBLAS for Cᵀ = op(B)ᵀ·op(A)ᵀ. A row-major operand is its own
  // transpose seen column-major, so an untransposed operand passes as CUBLAS_OP_N with its row
  // length as leading dimension, a transposed one as CUBLAS_OP_T.
  const T beta = accumulate ? 1 : 0;
  const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = trans_b ? K : N, lda = trans_a ? M : K;
  if constexpr (std::is_same_v<T, float>)
    check_cublas(cublas_api().sgemm(cublas(), ob, oa, N, M, K, &alpha, B, ldb, A, lda, &beta, C, N), "cublasSgemm");
  else check_cublas(cublas_api().dgemm(cublas(), ob, oa, N, M, K, &alpha, B, ldb, A, lda, &beta, C, N), "cublasDgemm");
}
template void gemm<float>(bool, bool, int, int, int, const float*, const float*, float*, bool, float);
template void gemm<double>(bool, bool, int, int, int, const double*, const double*, double*, bool, double);

namespace {

// --- dispatch ------------------------------------------------------------------------------
enum class Algo { naive, tiled, tiled_conflicting, tiled_padded, register_blocked, wmma, wmma_half, cublas };

int device_major() {
  static const int major = [] {
    int dev = 0, m = 0;
    OPSCOPE_CUDA_CHECK(cudaGetDevice(&dev));
    OPSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev));
    return m;
  }();
  return major;
}

template <class T> void run_gemm(Algo algo, const Gemm<T>& g, int batch) {
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {  // an empty sum: C = 0
    OPSCOPE_CUDA_CHECK(cudaMemsetAsync(g.C, 0, sizeof(T) * size_t(batch) * g.M * g.N, stream()));
    return;
  }
  const unsigned z = static_cast<unsigned>(batch);
  switch (algo) {
    case Algo::naive: {
      dim3 block(16, 16), grid((g.N + 15) / 16, (g.M + 15) / 16, z);
      mm_naive<<<grid, block, 0, stream()>>>(g);
      OPSCOPE_CUDA_LAUNCHED("mm_naive");
      return;
    }
    case Algo::tiled:
    case Algo::tiled_conflicting:
    case Algo::tiled_padded: {
      dim3 block(kTile, kTile), grid((g.N + kTile - 1) / kTile, (g.M + kTile - 1) / kTile, z);
      if (algo == Algo::tiled) mm_tiled<<<grid, block, 0, stream()>>>(g);
      else if (algo == Algo::tiled_conflicting) mm_tiled_transposed_b<T, 0><<<grid, block, 0, stream()>>>(g);
      else mm_tiled_transposed_b<T, 1><<<grid, block, 0, stream()>>>(g);
      OPSCOPE_CUDA_LAUNCHED(algo == Algo::tiled ? "mm_tiled" : "mm_tiled_transposed_b");
      return;
    }
    case Algo::register_blocked: {
      dim3 grid((g.N + kBN - 1) / kBN, (g.M + kBM - 1) / kBM, z);
      bool vec = false;
      if constexpr (std::is_same_v<T, float>)
        vec = g.K % 4 == 0 && g.N % 4 == 0 && (reinterpret_cast<uintptr_t>(g.A) & 15) == 0 &&
              (reinterpret_cast<uintptr_t>(g.B) & 15) == 0 && g.sa % 4 == 0 && g.sb % 4 == 0;
      if (vec) mm_register_blocked<T, true><<<grid, 256, 0, stream()>>>(g);
      else mm_register_blocked<T, false><<<grid, 256, 0, stream()>>>(g);
      OPSCOPE_CUDA_LAUNCHED("mm_register_blocked");
      return;
    }
    case Algo::wmma:
    case Algo::wmma_half: {
      if constexpr (std::is_same_v<T, float>) {
        const bool half = algo == Algo::wmma_half;
        if (device_major() < (half ? 7 : 8))
          throw Error(std::string("matmul: algo=\"") + (half ? "wmma_half" : "wmma") +
                          "\" needs a GPU of compute capability " + (half ? "7.0" : "8.0") + " or newer (Tensor Cores" +
                          (half ? "" : " with TF32") + ")",
                      "use algo=\"register_blocked\" or \"cublas\"");
        dim3 grid((g.N + 31) / 32, (g.M + 31) / 32, z);
        if (half) mm_wmma<true><<<grid, 128, 0, stream()>>>(g);
        else mm_wmma<false><<<grid, 128, 0, stream()>>>(g);
        OPSCOPE_CUDA_LAUNCHED("mm_wmma");
      } else {
        throw Error("matmul: the WMMA kernels take float32 (Tensor Cores round to TF32 or half)",
                    "cast to float32, or use algo=\"cublas\" for float64");
      }
      return;
    }
    case Algo::cublas: gemm_cublas(g, batch); return;
  }
}

// Batch axes: equal on both sides, or one side without batch (size 1) shared by all; anything
// else (partial broadcasting) is expanded into a dense copy first.
void matmul_kernel(KernelCtx& k, Algo algo) {
  const Tensor& out = k.out();
  const DType dt = out.dtype();
  if (dt == DType::i64) throw Error("matmul: the CUDA kernels take floating-point tensors", "cast with x.float()");
  if (out.numel() == 0) return;
  Tensor a = k.in(0).dtype() == dt ? k.in(0) : k.in(0).cast(dt);
  Tensor b = k.in(1).dtype() == dt ? k.in(1) : k.in(1).cast(dt);
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape().back(), N = b.shape().back();
  const Shape batch_shape(out.shape().begin(), out.shape().end() - 2);
  const int64_t batch = shape_numel(batch_shape);
  int64_t sa = 0, sb = 0;
  Tensor ad, bd;
  {
    const Shape oa(a.shape().begin(), a.shape().end() - 2), ob(b.shape().begin(), b.shape().end() - 2);
    auto prepare = [&](const Tensor& t, const Shape& own, int64_t rows, int64_t cols, int64_t& stride) {
      if (shape_numel(own) == 1 && batch > 1) {
        stride = 0;
        return dense(t);
      }
      stride = rows * cols;
      if (own == batch_shape) return dense(t);
      Shape full = batch_shape;
      full.push_back(rows);
      full.push_back(cols);
      return dense(t.view_expand(full));
    };
    ad = prepare(a, oa, M, K, sa);
    bd = prepare(b, ob, K, N, sb);
  }
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batch > 65535)
    throw Error("matmul: the CUDA kernels take sizes below 2^31 and batches up to 65535");
  visit_float(dt, "matmul", [&](auto z) {
    using T = decltype(z);
    Gemm<T> g{ad.data<T>(), bd.data<T>(), out.data<T>(), int(M), int(N), int(K), sa, sb, M * N};
    run_gemm<T>(algo, g, static_cast<int>(std::max<int64_t>(batch, 1)));
  });
}

OPSCOPE_CUDA_REGISTER(register_matmul_kernels) {
  const std::pair<const char*, Algo> algos[] = {
      {"naive", Algo::naive},
      {"tiled", Algo::tiled},
      {"tiled_conflicting", Algo::tiled_conflicting},
      {"tiled_padded", Algo::tiled_padded},
      {"register_blocked", Algo::register_blocked},
      {"wmma", Algo::wmma},
      {"wmma_half", Algo::wmma_half},
      {"cublas", Algo::cublas},
  };
  for (auto [name, algo] : algos)
    add_kernel(
        "matmul", name, [algo = algo](KernelCtx& k) { matmul_kernel(k, algo); }, algo == Algo::cublas);
}

}  // namespace
}  // namespace opscope::cuda
