// CUDA sgd_update: w ← w − lr·dw, one thread per element (grid-stride), and sgd_matmul_update:
// w ← w − lr·(a·b) as one cuBLAS GEMM with alpha = −lr and beta = 1, accumulating into w (the
// gradient a·b is never stored). A compiled training program passes w itself as the output, so
// both update in place.
#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

template <class T>
__global__ void sgd_step(const T* w, const T* g, T* y, T lr, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = w[i] - lr * g[i];
}

void sgd_update(KernelCtx& k) {
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
  add_kernel("sgd_matmul_update", "cublas", sgd_matmul_update);
}

}  // namespace
}  // namespace opscope::cuda
