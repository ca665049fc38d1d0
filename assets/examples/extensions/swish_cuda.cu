// CUDA kernels for the swish of swish.cpp: the same fused forward and backward, one thread per
// element. Load swish.cpp first (it declares the ops), then this file (it adds kernels to them):
//
//     >>> load_extension("assets/examples/extensions/swish.cpp")
//     >>> load_extension("assets/examples/extensions/swish_cuda.cu")   # compiled by nvcc
//     >>> :device cuda
//     >>> y = swish(randn(1000, 1000))
//
// Each element moves 8 bytes (read x, write y) for ~5 FLOPs: bandwidth-bound, like relu.
#include "ops/cuda/cuda_util.cuh"

namespace {

using namespace opscope;

template <class T> __device__ T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }

template <class T> __global__ void swish_forward(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] * sigmoid(x[i]);
}

template <class T> __global__ void swish_backward(const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const T s = sigmoid(x[i]);
    dx[i] = dy[i] * s * (T(1) + x[i] * (T(1) - s));
  }
}

OPSCOPE_REGISTER_OPS(register_swish_cuda) {
  // Same algorithm names as the CPU kernels, so swish(x) on a cuda tensor finds its default.
  registry.add_kernel("swish", Device::cuda, "fused", [](KernelCtx& k) {
    cuda::visit_float(k.in(0).dtype(), "swish", [&](auto zero) {
      using T = decltype(zero);
      const Tensor x = cuda::dense(k.in(0));
      const int64_t n = x.numel();
      if (n == 0) return;
      swish_forward<<<cuda::grid_for(n), cuda::kThreads, 0, cuda::stream()>>>(x.data<T>(), k.out().data<T>(), n);
      OPSCOPE_CUDA_LAUNCHED("swish");
    });
  });
  registry.add_kernel("swish_backward", Device::cuda, "default", [](KernelCtx& k) {
    cuda::visit_float(k.in(0).dtype(), "swish_backward", [&](auto zero) {
      using T = decltype(zero);
      const Tensor x = cuda::dense(k.in(0));
      const Tensor dy = cuda::dense(k.in(1).dtype() == x.dtype() ? k.in(1) : k.in(1).cast(x.dtype()));
      const int64_t n = x.numel();
      if (n == 0) return;
      swish_backward<<<cuda::grid_for(n), cuda::kThreads, 0, cuda::stream()>>>(x.data<T>(), dy.data<T>(),
                                                                               k.out().data<T>(), n);
      OPSCOPE_CUDA_LAUNCHED("swish_backward");
    });
  });
}

}  // namespace
