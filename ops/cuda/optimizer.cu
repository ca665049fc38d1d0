// CUDA sgd_update: w ← w − lr·dw, one thread per element (grid-stride). A compiled training
// program passes w itself as the output, so the update is in place. The compiler's other ops
// (fused_elementwise, sgd_matmul_update) are CPU-only: its fusion passes fuse CPU values only.
#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

template <class T>
__global__ void sgd_step(const T* w, const T* g, T* y, T lr, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = w[i] - lr * g[i];
}

struct RegisterOptimizer {
  RegisterOptimizer() {
    add_kernel("sgd_update", "default", [](KernelCtx& k) {
      const DType dt = k.in(0).dtype();
      const Tensor w = dense(k.in(0)), g = dense(k.in(1).dtype() == dt ? k.in(1) : k.in(1).cast(dt));
      const int64_t n = w.numel();
      if (n == 0) return;
      visit_float(dt, k.op.name, [&](auto z) {
        using T = decltype(z);
        sgd_step<T><<<grid_for(n), kThreads, 0, stream()>>>(w.data<T>(), g.data<T>(), k.out().data<T>(),
                                                           static_cast<T>(k.attrs.f("lr")), n);
        OPSCOPE_CUDA_LAUNCHED("sgd_step");
      });
    });
  }
} register_optimizer;

}  // namespace
}  // namespace opscope::cuda
