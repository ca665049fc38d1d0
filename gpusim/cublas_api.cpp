// The simulator's answer to ops/cuda/cublas_loader.cu: the cuBLAS entry points are the reference
// GEMMs of cublas_reference.cpp, linked in (nothing to open). Compiled against the rewritten
// ops/cuda headers, whose namespace is opscope::gpusim_cuda.
#include "cublas_loader.cuh"

namespace opscope::gpusim_cuda {

const CublasApi& cublas_api() {
  static const CublasApi api{&cublasCreate_v2, &cublasSetStream_v2,        &cublasSgemm_v2,
                             &cublasDgemm_v2,  &cublasSgemmStridedBatched, &cublasDgemmStridedBatched};
  return api;
}

}  // namespace opscope::gpusim_cuda
