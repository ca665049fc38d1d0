// The browser's single-precision GEMM, for WebAssembly's 128-bit SIMD: the `blas` algorithm
// there (a browser has no OpenBLAS). Eigen 3.4 has no WebAssembly packet path, so its GEMM runs
// scalar in the page, 7× the desktop's time on the MLP's 64×784 · 784×256.
//
// The GotoBLAS structure (as in BLIS and OpenBLAS): B is packed in panels of 8 columns and A in
// panels of 4 rows, one block of K at a time, and a 4×8 micro-kernel keeps its tile of C in 8
// registers while it runs down K, so each float loaded is used 4 or 8 times.
#pragma once
#include <cstdint>

#include "ops/cpu/kernels.h"

namespace opscope::cpu {

// C[M×N] (row-major, row stride ldc) = alpha·A·B + beta·C; beta 0 never reads C.
void gemm_simd128(int64_t M, int64_t N, int64_t K, ConstMatrix<float> A, ConstMatrix<float> B, float alpha, float beta,
                  float* C, int64_t ldc);

}  // namespace opscope::cpu
