// A student's CUDA extension, as load_extension("student_kernels.cu") compiles it: on a real GPU
// with nvcc, on the simulated GPU (sim) everywhere else. One good kernel and two with a defect
// each, which the simulator must catch at this file's lines (tests/test_extension.cpp).
#include "core/op.h"
#include "ops/cuda/cuda_util.cuh"

namespace {

using namespace opscope;

// y = 2·x + 1, one thread per element.
__global__ void axpy_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}

// The off-by-one guard (launched with n / 32 + 1 blocks of 32): thread n reads x[n], one past the end.
__global__ void shift_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i % n] = x[i];
}

// A block sum with its barrier forgotten: thread 0 reads s[j] before thread j wrote it.
__global__ void block_sum_kernel(const float* x, float* out, int n) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = t < n ? x[t] : 0.0f;
  if (t == 0) {
    float acc = 0;
    for (int j = 0; j < 64; ++j) acc += s[j];
    out[0] = acc;
  }
}

void check_f32(const KernelCtx& k) {
  if (k.in(0).dtype() != DType::f32) throw Error(k.op.name + " takes float32", "cast it: x.float()");
}

OpDef student_op(const std::string& name, const std::string& doc, KernelFn cpu, KernelFn gpu, bool scalar_out = false) {
  OpDef d = OpDef::declare(name, "student", doc, {"x"});
  d.infer = [scalar_out](const InferCtx& c) {
    c.expect_float(0);
    return std::vector<TensorMeta>{scalar_out ? TensorMeta{Shape{1}, c.inputs[0].dtype, c.inputs[0].device}
                                              : c.inputs[0]};
  };
  d.kernel(Device::cpu, "default", std::move(cpu));
  d.kernel(Device::cuda, "default", std::move(gpu));
  d.differentiable = false;
  d.cost = [](auto&, auto&, auto&, auto) { return Cost{}; };
  return d;
}

OPSCOPE_REGISTER_OPS(register_student_kernels) {
  registry.add(student_op(
      "student_axpy", "y = 2·x + 1",
      [](KernelCtx& k) {
        check_f32(k);
        for (int64_t i = 0; i < k.in(0).numel(); ++i) k.out().data<float>()[i] = 2.0f * k.in(0).data<float>()[i] + 1.0f;
      },
      [](KernelCtx& k) {
        check_f32(k);
        const Tensor x = cuda::dense(k.in(0));
        const int n = int(x.numel());
        axpy_kernel<<<(n + 255) / 256, 256, 0, cuda::stream()>>>(x.data<float>(), k.out().data<float>(), n);
        OPSCOPE_CUDA_LAUNCHED("axpy_kernel");
      }));
  registry.add(student_op(
      "student_shift", "y = x (with an off-by-one guard on the GPU)", [](KernelCtx& k) { k.out().copy_from(k.in(0)); },
      [](KernelCtx& k) {
        check_f32(k);
        const Tensor x = cuda::dense(k.in(0));
        const int n = int(x.numel());
        shift_kernel<<<n / 32 + 1, 32, 0, cuda::stream()>>>(x.data<float>(), k.out().data<float>(), n);
        OPSCOPE_CUDA_LAUNCHED("shift_kernel");
      }));
  registry.add(student_op(
      "student_block_sum", "y = Σ x[:64] (its barrier forgotten on the GPU)",
      [](KernelCtx& k) {
        float acc = 0;
        for (int64_t i = 0; i < k.in(0).numel() && i < 64; ++i) acc += k.in(0).data<float>()[i];
        k.out().data<float>()[0] = acc;
      },
      [](KernelCtx& k) {
        check_f32(k);
        const Tensor x = cuda::dense(k.in(0));
        block_sum_kernel<<<1, 64, 0, cuda::stream()>>>(x.data<float>(), k.out().data<float>(), int(x.numel()));
        OPSCOPE_CUDA_LAUNCHED("block_sum_kernel");
      },
      true));
}

}  // namespace
