// CUDA einsum: one thread per output element runs the loops of ops/einsum.h (the CPU's "naive"
// algorithm): the product of the operands summed over the letters the output leaves out. The
// CPU's "matmul" algorithm (one batched GEMM) is not here: on CUDA, call matmul for large ones.
#include "ops/cuda/cuda_util.cuh"
#include "ops/einsum.h"

namespace opscope::cuda {
namespace {

template <class T> struct Operands {
  const T* p[kEinsumMaxOperands];
  __device__ const T* operator[](int k) const { return p[k]; }
};

template <class T> __global__ void einsum_kernel(EinsumPlan plan, Operands<T> ops, T* y, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x)
    y[e] = einsum_element<T>(plan, ops, e);
}

OPSCOPE_CUDA_REGISTER(register_einsum_kernels) {
  add_kernel(
      "einsum", "naive",
      [](KernelCtx& k) {
        const int64_t n = k.out().numel();
        if (n == 0) return;
        std::vector<Shape> shapes;
        for (auto& t : k.inputs) shapes.push_back(t.shape());
        const EinsumPlan plan = einsum_plan(parse_einsum(k.attrs.s("equation"), shapes), k.op.name);
        const DType dt = k.out().dtype();
        std::vector<Tensor> dense_ins;
        for (auto& t : k.inputs) dense_ins.push_back(dense(t.dtype() == dt ? t : t.cast(dt)));
        visit_float(dt, k.op.name, [&](auto z) {
          using T = decltype(z);
          Operands<T> ops{};
          for (size_t i = 0; i < dense_ins.size(); ++i) ops.p[i] = dense_ins[i].data<T>();
          einsum_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(plan, ops, k.out().data<T>(), n);
          OPSCOPE_CUDA_LAUNCHED("einsum_kernel");
        });
      },
      true);
}

}  // namespace
}  // namespace opscope::cuda
