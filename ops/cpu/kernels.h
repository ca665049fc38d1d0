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
template <class T>
struct ConstMatrix {
  const T* data = nullptr;
  int64_t ld = 0;
  bool row_major = true;
};

enum class SoftmaxKind : int { stable, naive, log };
enum class NormAlgo : int { welford, two_pass, naive };

// The kernels of one instruction set for one element type.
template <class T>
struct TypedKernels {
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

template <class T>
const TypedKernels<T>& typed(const KernelTable& t) {
  if constexpr (sizeof(T) == 4) return t.f32;
  else return t.f64;
}
// The kernels of element type T in use now: cpu::kern<float>().gemm(...).
template <class T>
const TypedKernels<T>& kern() {
  return typed<T>(kernels());
}

}  // namespace opscope::cpu
