// CUDA optimizer steps: sgd_update (momentum, weight decay, Nesterov), adam_update and
// adamw_update, one thread per element (grid-stride), with the CPU's formulas
// (ops/optimizer_math.h). Parameter and state are written in place; output 0 is the
// parameter. Adam's step count t lives on the device: each thread reads t + 1 for the bias
// correction, and a one-thread kernel queued after (stream order) stores it.
// sgd_matmul_update: w ← w − lr·(a·b) as one cuBLAS GEMM with alpha = −lr and beta = 1,
// accumulating into w (the gradient a·b is never stored).
#include "ops/cuda/cuda_util.cuh"
#include "ops/optimizer_math.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <class T> __global__ void sgd_step(optim::Sgd<T> c, T* w, const T* g, T* buf, int64_t n) {
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

void sgd_update(KernelCtx& k) {
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
}

// A 2-D operand as cuBLAS takes it: row-major as it is, or a transposed view of a row-major
// matrix (strides [1, rows]: the xᵀ of a weight gradient) read transposed; else a dense copy.
struct GemmOperand {
  Tensor t;
  bool transposed = false;
};
GemmOperand gemm_operand(const Tensor& x, DType dt) {
  Tensor t = x.dtype() == dt ? x : x.cast(dt);
  if (t.is_contiguous()) return {t, false};
  if (t.strides()[0] == 1 && t.strides()[1] == t.shape()[0]) return {t, true};
  return {dense(t), false};
}

void sgd_matmul_update(KernelCtx& k) {
  const DType dt = k.in(0).dtype();
  Tensor& out = k.out();  // w itself in a compiled program
  if (out.raw_data() != k.in(0).raw_data()) out.copy_from(k.in(0));
  const GemmOperand a = gemm_operand(k.in(1), dt), b = gemm_operand(k.in(2), dt);
  const int64_t M = a.t.shape()[0], K = a.t.shape()[1], N = b.t.shape()[1];
  if (M == 0 || N == 0 || K == 0) return;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
    throw Error("sgd_matmul_update: the CUDA kernel takes GEMM sizes below 2^31");
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    gemm<T>(a.transposed, b.transposed, int(M), int(N), int(K), a.t.data<T>(), b.t.data<T>(), out.data<T>(), true,
            static_cast<T>(-k.attrs.f("lr")));
  });
}

OPSCOPE_CUDA_REGISTER(register_optimizer_kernels) {
  add_kernel("sgd_update", "default", sgd_update);
  add_kernel("adam_update", "default", adam_kernel(false));
  add_kernel("adamw_update", "default", adam_kernel(true));
  add_kernel("sgd_matmul_update", "cublas", sgd_matmul_update);
}

}  // namespace
}  // namespace opscope::cuda
