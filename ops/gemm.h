// Matrix products for the CPU kernels of ops/: C = alpha·A·B + beta·C through OpenBLAS (the
// `blas` algorithm; its float32 products of 2^20 multiply-adds and more go to oneDNN's GEMM,
// faster there, when oneDNN is installed: ops/onednn_loader.h) or through Eigen (the `eigen`
// algorithm, built per instruction set: ops/cpu/gemm.cpp). default_gemm() says which of the
// two is the default of matmul and linear and runs conv's GEMMs and attention's products. In
// the browser, which has no OpenBLAS, `blas` is opscope's own WebAssembly SIMD128 GEMM in
// float32 (ops/cpu/gemm_simd128.h).
//
// OpenBLAS is loaded on first use, after opscope has told it which kernels to run
// (OPENBLAS_CORETYPE, unless the user set it): its own CPU detection falls back to its oldest
// SSE3 kernels on CPUs newer than the library (this one), at an eighth of the speed. It runs
// single-threaded on opscope's thread pool: a large product is cut into column (or row)
// panels, each a separate BLAS call on a pool thread. The panels depend on the shape and on
// the machine's core count, never on the thread setting, so the result has the same bits for
// any number of threads; and there is one pool, not OpenBLAS's spinning beside opscope's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/cpu/kernels.h"

namespace opscope::cpu {

enum class GemmAlgo { blas, eigen };
const char* gemm_algo_name(GemmAlgo a);  // "blas", "eigen": the matmul algorithm names

// The production GEMM: OpenBLAS, unless its kernels are narrower than opscope's own kernel
// set, as when OPENBLAS_CORETYPE names an AVX2 core (Haswell, Zen) on a machine where opscope
// runs its AVX-512 kernels. Eigen's AVX-512 build then runs the same products about 1.8x
// faster (bench_engine's matmul table), so it is the default. Chosen once, at first use,
// from the kernel set active then (OPSCOPE_CPU_ISA); no library is loaded to choose.
GemmAlgo default_gemm();
// The rule itself, for tests: the active kernel set, the user's OPENBLAS_CORETYPE (nullptr
// when unset: opscope then asks OpenBLAS for kernels as wide as its own) and whether this
// build has OpenBLAS.
GemmAlgo choose_default_gemm(CpuIsa kernels, const char* user_coretype, bool have_openblas);
// For :device and --version: the default and, when it is not OpenBLAS, why.
std::string default_gemm_description();

// C[M×N] (row-major, row stride ldc) = alpha·A·B + beta·C; beta 0 never reads C.
template <class T>
void gemm(GemmAlgo algo, int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha, T beta, T* C,
          int64_t ldc);

// Row-major operands, as most kernels have them: op(A) is M×K, op(B) is K×N.
template <class T>
void gemm(GemmAlgo algo, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  gemm<T>(algo, M, N, K, ConstMatrix<T>{A, lda, !trans_a}, ConstMatrix<T>{B, ldb, !trans_b}, alpha, beta, C, ldc);
}

// One product on the calling thread only (inside a parallel_for body: attention's tiles).
template <class T>
void gemm_serial(GemmAlgo algo, int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha, T beta,
                 T* C, int64_t ldc);

// What the GEMMs cost while a tally runs (benchmarks: a training step's GEMM time against the
// core's FMA peak). Counted at the innermost call, one library call on one thread: `seconds`
// sums the calls' times over all threads (core-seconds), so flops / seconds is the rate of one
// core, whatever the thread count. Off by default; off, a GEMM pays one relaxed atomic load.
enum class GemmLibrary { openblas, onednn, eigen, simd128 };
const char* gemm_library_name(GemmLibrary l);  // "OpenBLAS", "oneDNN", "Eigen", "SIMD128"
struct GemmShapeTally {  // the calls of one shape that one library ran
  int64_t M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  GemmLibrary library = GemmLibrary::openblas;
  double seconds = 0, flops = 0;
  int64_t calls = 0;
};
struct GemmTally {
  double seconds = 0, flops = 0;  // flops: 2·M·N·K of the products actually run
  int64_t calls = 0;
  std::vector<GemmShapeTally> shapes;  // by shape and library, the costliest first
};
void gemm_tally_start();  // zeroes the tally and starts counting
GemmTally gemm_tally_stop();  // stops counting and returns what was counted

// The loaded library's own entry points, for benchmarks that compare against OpenBLAS called
// directly (with its own threads); nullptr when it is not loaded. CBLAS enums are ints.
struct BlasLibrary {
  void (*sgemm)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) = nullptr;
  void (*set_num_threads)(int) = nullptr;
};
const BlasLibrary* blas_library();

// True when OpenBLAS could be loaded (else `blas` runs Eigen's GEMM, and says so).
bool blas_available();
// "OpenBLAS 0.3.21 (SkylakeX kernels, pthread build, 1 thread per call on opscope's pool)",
// or why it is not there.
std::string blas_description();

}  // namespace opscope::cpu
