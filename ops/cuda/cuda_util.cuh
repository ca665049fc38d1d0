// Helpers shared by the CUDA kernels of ops/cuda: checked calls and launches (errors become the
// project's Error naming the kernel), the one stream every kernel is queued on, launch sizes,
// warp and block reductions, and registration of CUDA kernels into the op registry.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/op.h"
#include "core/tensor.h"

namespace opscope::cuda {

// The stream every kernel and copy is queued on (stream order = program order; the executor
// synchronises at each step boundary).
cudaStream_t stream();

[[noreturn]] void fail(cudaError_t e, const char* what, const char* file, int line);
// Records that the process has called the CUDA runtime (DeviceBackend::initialized).
void note_runtime_used();
inline void check(cudaError_t e, const char* what, const char* file, int line) {
  note_runtime_used();
  if (e != cudaSuccess) fail(e, what, file, line);
}
// Every runtime call: OPSCOPE_CUDA_CHECK(cudaMemcpyAsync(...)).
#define OPSCOPE_CUDA_CHECK(call) ::opscope::cuda::check((call), #call, __FILE__, __LINE__)
// After every launch: a bad configuration is reported with the kernel's name.
#define OPSCOPE_CUDA_LAUNCHED(name) ::opscope::cuda::check(cudaGetLastError(), name, __FILE__, __LINE__)

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over n items: enough to fill the device, never more than needed.
inline unsigned grid_for(int64_t n, int threads = kThreads) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

// Registers a CUDA kernel for a registered op (attached when the op is declared, whatever the
// static initialisation order).
inline void add_kernel(const std::string& op, const std::string& algo, KernelFn fn, bool device_default = false) {
  OpRegistry::instance().add_kernel(op, Device::cuda, algo, std::move(fn), device_default);
}

// Runs the body at static-initialisation time, as OPSCOPE_REGISTER_OPS does for the ops: each
// file of ops/cuda registers its kernels (backend.cu: the device backend) in one such block.
//   OPSCOPE_CUDA_REGISTER(register_conv_kernels) { add_kernel("conv2d", "im2col", ...); }
#define OPSCOPE_CUDA_REGISTER(fn)                                                 \
  static void fn();                                                               \
  [[maybe_unused]] static const bool OPSCOPE_CAT(fn, _registered) = (fn(), true); \
  static void fn()

// Calls f(T{}) for float32/float64 (the only element types the CUDA kernels compute in).
template <class F> void visit_float(DType dt, const std::string& op, F&& f) {
  if (dt == DType::f32) f(float{});
  else if (dt == DType::f64) f(double{});
  else throw Error(op + ": the CUDA kernel takes float32 or float64, got int64", "cast it first: x.float()");
}

// Dense data on the device (a temporary copy when strided).
inline Tensor dense(const Tensor& t) { return t.contiguous(MemCategory::temporary); }

// Row-major C = alpha·op(A)·op(B) (+ C when accumulate) through cuBLAS, for the kernels that
// need a GEMM (conv2d im2col, sgd_matmul_update). op(A) is M×K, op(B) K×N; a transposed operand
// is stored the other way round. Defined in matmul.cu, next to the row- vs column-major explanation.
template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const T* A, const T* B, T* C, bool accumulate,
          T alpha = T(1));

// The first flat position of the int64 tensor `idx` (dense, on the device) whose value lies
// outside [lo, bound), or -1: found on the device (atomicMin), 8 bytes read back (a
// synchronisation). The kernels throw ops/index_check.h's errors with it.
int64_t first_out_of_range(const KernelCtx& k, const Tensor& idx, int64_t bound, int64_t lo = 0);

// A tensor's shape and strides by value, for index arithmetic inside a kernel.
constexpr int kMaxRank = 8;
struct StridedIndex {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};
// `strides` of a tensor seen with `shape` (right-aligned; broadcast axes get stride 0).
StridedIndex strided_index(const Shape& shape, const Shape& own_shape, const Strides& own_strides, const char* kernel);

#ifdef __CUDACC__
// Element offset of the flat row-major index `flat`.
__device__ __forceinline__ int64_t offset_of(const StridedIndex& s, int64_t flat) {
  int64_t off = 0;
  for (int i = s.rank - 1; i >= 0; --i) {
    const int64_t d = s.shape[i];
    off += (flat % d) * s.stride[i];
    flat /= d;
  }
  return off;
}

template <class T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <class T> __device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
template <class T> __device__ T block_sum(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  T t = lane < warps ? partial[lane] : T(0);
  return warp_sum(t);
}
template <class T> __device__ T block_max(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  T t = lane < warps ? partial[lane] : T(-INFINITY);
  return warp_max(t);
}
#endif

}  // namespace opscope::cuda
