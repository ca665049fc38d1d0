#include "ops/cuda/cublas_loader.cuh"

#include <dlfcn.h>

#include <string>

#include "core/error.h"

#ifndef OPSCOPE_CUBLAS_DIR
#define OPSCOPE_CUBLAS_DIR ""
#endif

namespace opscope::cuda {

namespace {

#define OPSCOPE_STR2(x) #x
#define OPSCOPE_STR(x) OPSCOPE_STR2(x)

template <class F> void resolve(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

CublasApi load() {
  // The library of the toolkit this was built with: by name (the loader's search path), then
  // in the toolkit's own folder.
  const std::string soname = "libcublas.so." OPSCOPE_STR(CUBLAS_VER_MAJOR);
  void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib && *OPSCOPE_CUBLAS_DIR)
    lib = dlopen((std::string(OPSCOPE_CUBLAS_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    throw Error("cuBLAS could not be loaded: " + std::string(why ? why : soname),
                "install the CUDA toolkit's cuBLAS (" + soname +
                    ") or add its folder to LD_LIBRARY_PATH; the "
                    "other matmul algorithms (register_blocked, wmma) need no cuBLAS");
  }
  CublasApi api;
  std::string missing;
  resolve(lib, "cublasCreate_v2", api.create, missing);
  resolve(lib, "cublasSetStream_v2", api.set_stream, missing);
  resolve(lib, "cublasSgemm_v2", api.sgemm, missing);
  resolve(lib, "cublasDgemm_v2", api.dgemm, missing);
  resolve(lib, "cublasSgemmStridedBatched", api.sgemm_strided_batched, missing);
  resolve(lib, "cublasDgemmStridedBatched", api.dgemm_strided_batched, missing);
  if (!missing.empty())
    throw Error(soname + " lacks " + missing, "is it the cuBLAS of the toolkit opscope was built with?");
  return api;
}

}  // namespace

const CublasApi& cublas_api() {
  static const CublasApi api = load();  // a failed load throws and is retried next time
  return api;
}

}  // namespace opscope::cuda
