// The simulator's cuBLAS: the entry points opscope calls, computed by a reference GEMM on the
// host (gpusim/cublas_reference.cpp). A library, not simulated: no lanes, no counters; each call
// is recorded as a launch marked so.
#pragma once
#include "cuda_runtime.h"

#define CUBLAS_VER_MAJOR 0
namespace gpusim_rt {
struct cublasContext;
using cublasHandle_t = cublasContext*;
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };

cublasStatus_t cublasCreate_v2(cublasHandle_t* h);
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc);
cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const double* alpha, const double* A, int lda, const double* B, int ldb,
                              const double* beta, double* C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float* alpha, const float* A, int lda, long long sa,
                                         const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                         long long sc, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double* alpha, const double* A, int lda, long long sa,
                                         const double* B, int ldb, long long sb, const double* beta, double* C, int ldc,
                                         long long sc, int batch);
}  // namespace gpusim_rt
#define cublasCreate cublasCreate_v2
#define cublasSetStream cublasSetStream_v2
#define cublasSgemm cublasSgemm_v2
#define cublasDgemm cublasDgemm_v2
