// cuBLAS on the simulated device: a reference GEMM on the host, in the operands' precision with
// a double accumulator. A library, not simulated: recorded as a launch marked `library`, with
// its 2·M·N·K FLOPs and no memory counters.
#include <cstdint>

#include "gpusim/state.h"
#include "include/cublas_v2.h"

namespace {

template <class T>
void reference_gemm(const char* name, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, T alpha,
                    const T* A, int lda, long long sa, const T* B, int ldb, long long sb, T beta, T* C, int ldc,
                    long long sc, int batch) {
  // Column-major, as cuBLAS: C(i,j) = alpha·Σ op(A)(i,l)·op(B)(l,j) + beta·C(i,j).
  for (int b = 0; b < batch; ++b) {
    const T* a = A + b * sa;
    const T* bb = B + b * sb;
    T* c = C + b * sc;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        for (int l = 0; l < k; ++l) {
          const T x = ta == CUBLAS_OP_N ? a[i + int64_t(l) * lda] : a[l + int64_t(i) * lda];
          const T y = tb == CUBLAS_OP_N ? bb[l + int64_t(j) * ldb] : bb[j + int64_t(l) * ldb];
          acc += double(x) * double(y);
        }
        T& out = c[i + int64_t(j) * ldc];
        out = T(alpha * T(acc)) + (beta == T(0) ? T(0) : beta * out);
      }
  }
  gpusim::LaunchRecord r;
  r.kernel = std::string(name) + " (library, not simulated)";
  r.library = true;
  r.flops = uint64_t(2) * uint64_t(m) * uint64_t(n) * uint64_t(k) * uint64_t(batch);
  r.grid[0] = r.block[0] = 0;
  if (gpusim::g_recording) gpusim::add_record(std::move(r));
}

}  // namespace

namespace gpusim_rt {

struct cublasContext {};

cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  *h = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSgemm_v2(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta,
                              float* C, int ldc) {
  reference_gemm("cublasSgemm", ta, tb, m, n, k, *alpha, A, lda, 0, B, ldb, 0, *beta, C, ldc, 0, 1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const double* alpha, const double* A, int lda, const double* B, int ldb,
                              const double* beta, double* C, int ldc) {
  reference_gemm("cublasDgemm", ta, tb, m, n, k, *alpha, A, lda, 0, B, ldb, 0, *beta, C, ldc, 0, 1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float* alpha, const float* A, int lda, long long sa,
                                         const float* B, int ldb, long long sb, const float* beta, float* C, int ldc,
                                         long long sc, int batch) {
  reference_gemm("cublasSgemmStridedBatched", ta, tb, m, n, k, *alpha, A, lda, sa, B, ldb, sb, *beta, C, ldc, sc,
                 batch);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double* alpha, const double* A, int lda, long long sa,
                                         const double* B, int ldb, long long sb, const double* beta, double* C, int ldc,
                                         long long sc, int batch) {
  reference_gemm("cublasDgemmStridedBatched", ta, tb, m, n, k, *alpha, A, lda, sa, B, ldb, sb, *beta, C, ldc, sc,
                 batch);
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace gpusim_rt
