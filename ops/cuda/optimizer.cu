// CUDA optimizer steps: sgd_update (momentum, weight decay, Nesterov), adam_update and
// adamw_update, one thread per element (grid-stride), with the CPU's formulas
// (ops/optimizer_math.h). Parameter and state are written in place; output 0 is the
// parameter. Adam's step count t lives on the device: each thread reads t + 1 for the bias
// correction, and a one-thread kernel queued after (stream order) stores it. The compiler's
// other ops (fused_elementwise, sgd_matmul_update) are CPU-only: its fusion passes fuse CPU
// values only.
#include "ops/cuda/cuda_util.cuh"
#include "ops/optimizer_math.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <class T>
__global__ void sgd_step(optim::Sgd<T> c, T* w, const T* g, T* buf, int64_t n) {
  GRID_STRIDE(i, n) optim::sgd_element(c, w[i], g[i], buf ? buf + i : nullptr);
}

template <class T>
__global__ void adam_step(T lr, T beta1, T beta2, T eps, T weight_decay, bool decoupled, const float* t, T* w,
                          const T* g, T* m, T* v, int64_t n) {
  const auto c = optim::adam_at_step<T>(lr, beta1, beta2, eps, weight_decay, decoupled, static_cast<T>(*t + 1.f));
  GRID_STRIDE(i, n) optim::adam_element(c, w[i], g[i], m[i], v[i]);
}

__global__ void count_step(float* t) { *t += 1.f; }

void check_dense(const KernelCtx& k, size_t i) {
  if (!k.in(i).is_contiguous())
    throw Error(k.op.name + ": '" + k.op.input_names[i] + "' must be a contiguous tensor: it is updated in place");
}

KernelFn adam_kernel(bool decoupled) {
  return [decoupled](KernelCtx& k) {
    for (size_t i : {0, 2, 3, 4}) check_dense(k, i);
    k.out() = k.in(0);
    const DType dt = k.in(0).dtype();
    const Tensor g = dense(k.in(1).dtype() == dt ? k.in(1) : k.in(1).cast(dt));
    const int64_t n = k.in(0).numel();
    float* t = k.in(4).data<float>();
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      if (n > 0) {
        adam_step<T><<<grid_for(n), kThreads, 0, stream()>>>(
            static_cast<T>(k.attrs.f("lr")), static_cast<T>(k.attrs.f("beta1")), static_cast<T>(k.attrs.f("beta2")),
            static_cast<T>(k.attrs.f("eps")), static_cast<T>(k.attrs.f("weight_decay")), decoupled, t,
            k.in(0).data<T>(), g.data<T>(), k.in(2).data<T>(), k.in(3).data<T>(), n);
        OPSCOPE_CUDA_LAUNCHED("adam_step");
      }
      count_step<<<1, 1, 0, stream()>>>(t);
      OPSCOPE_CUDA_LAUNCHED("count_step");
    });
  };
}

struct RegisterOptimizer {
  RegisterOptimizer() {
    add_kernel("sgd_update", "default", [](KernelCtx& k) {
      check_dense(k, 0);
      const bool has_buffer = k.inputs.size() > 2;
      if (has_buffer) check_dense(k, 2);
      k.out() = k.in(0);
      const DType dt = k.in(0).dtype();
      const Tensor g = dense(k.in(1).dtype() == dt ? k.in(1) : k.in(1).cast(dt));
      const int64_t n = k.in(0).numel();
      if (n == 0) return;
      visit_float(dt, k.op.name, [&](auto z) {
        using T = decltype(z);
        const optim::Sgd<T> c{static_cast<T>(k.attrs.f("lr")), static_cast<T>(k.attrs.f("momentum")),
                              static_cast<T>(k.attrs.f("weight_decay")), k.attrs.b("nesterov")};
        sgd_step<T><<<grid_for(n), kThreads, 0, stream()>>>(c, k.in(0).data<T>(), g.data<T>(),
                                                            has_buffer ? k.in(2).data<T>() : nullptr, n);
        OPSCOPE_CUDA_LAUNCHED("sgd_step");
      });
    });
    add_kernel("adam_update", "default", adam_kernel(false));
    add_kernel("adamw_update", "default", adam_kernel(true));
  }
} register_optimizer;

}  // namespace
}  // namespace opscope::cuda
