// cuBLAS, loaded on first use. Linking libcublas would cost every process about 110 ms and
// 220 MB at start-up (libcublasLt's 540 MB mapped and relocated), GPU or not; opened with
// dlopen when a CUDA matmul first asks for it, it costs nothing to the many runs that never do.
#pragma once
#include <cublas_v2.h>

namespace opscope::cuda {

// The few cuBLAS entry points opscope calls, with their own declared types.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched = nullptr;
};

// Loads libcublas on the first call; throws a student-readable Error when it cannot.
const CublasApi& cublas_api();

}  // namespace opscope::cuda
