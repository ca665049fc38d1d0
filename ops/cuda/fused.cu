// CUDA fused_elementwise: the compiler's chain of pointwise ops (ops/pointwise_op.h) in one
// kernel, one thread per output element (grid-stride). Each thread reads its element of every
// input once (through its strides: broadcast inputs have stride 0), runs the chain's formulas
// (ops/pointwise.h, the same functions as the CPU) in registers, and writes one value: the
// intermediate tensors of the unfused graph never exist. The chain and the inputs' indices
// travel as kernel parameters (core/op.h caps a chain at kMaxFusedOps and kMaxFusedInputs).
#include "ops/cuda/cuda_util.cuh"
#include "ops/pointwise_op.h"

namespace opscope::cuda {
namespace {

constexpr int kMaxOps = static_cast<int>(kMaxFusedOps);
constexpr int kMaxInputs = static_cast<int>(kMaxFusedInputs);

struct DeviceChain {
  int ops = 0, inputs = 0;
  pointwise::Formula formula[kMaxOps];
  pointwise::Params params[kMaxOps];
  char kind[kMaxOps][2];  // 'i': input index[..]; 'r': the result of instruction index[..]
  signed char index[kMaxOps][2];
  StridedIndex in[kMaxInputs];
};

template <class T> struct InputPointers { const T* p[kMaxInputs]; };

template <class T> __global__ void fused_chain_kernel(DeviceChain c, InputPointers<T> in, T* out, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    T x[kMaxInputs], r[kMaxOps];
    for (int i = 0; i < c.inputs; ++i) x[i] = in.p[i][offset_of(c.in[i], e)];
    for (int k = 0; k < c.ops; ++k) {
      const T a = c.kind[k][0] == 'i' ? x[c.index[k][0]] : r[c.index[k][0]];
      const T b = c.kind[k][1] == 'i' ? x[c.index[k][1]] : r[c.index[k][1]];
      r[k] = pointwise::eval<T>(c.formula[k], a, b, c.params[k]);
    }
    out[e] = r[c.ops - 1];
  }
}

void fused_elementwise(KernelCtx& k) {
  const std::vector<FusedInstruction> prog = parse_fused_chain(k.attrs.s("chain"), k.inputs.size());
  const Tensor& out = k.out();
  const int64_t n = out.numel();
  if (n == 0) return;
  if (prog.size() > kMaxFusedOps || k.inputs.size() > kMaxFusedInputs)
    throw Error("fused_elementwise: the CUDA kernel takes chains of up to " + std::to_string(kMaxFusedOps) +
                " ops and " + std::to_string(kMaxFusedInputs) + " inputs, got " + std::to_string(prog.size()) +
                " and " + std::to_string(k.inputs.size()));
  DeviceChain c;
  c.ops = static_cast<int>(prog.size());
  c.inputs = static_cast<int>(k.inputs.size());
  for (int i = 0; i < c.ops; ++i) {
    const FusedInstruction& in = prog[static_cast<size_t>(i)];
    c.formula[i] = in.formula;
    c.params[i] = in.params;
    for (int a = 0; a < 2; ++a) {
      c.kind[i][a] = a < in.arity ? in.kind[a] : 'i';
      c.index[i][a] = static_cast<signed char>(a < in.arity ? in.index[a] : 0);
    }
  }
  std::vector<Tensor> ins;  // in the output's dtype (as on the CPU), any strides
  for (int i = 0; i < c.inputs; ++i) {
    const Tensor& t = k.in(static_cast<size_t>(i));
    ins.push_back(t.dtype() == out.dtype() ? t : t.cast(out.dtype()));
    c.in[i] = strided_index(out.shape(), ins.back().shape(), ins.back().strides(), "fused_elementwise");
  }
  visit_float(out.dtype(), "fused_elementwise", [&](auto z) {
    using T = decltype(z);
    InputPointers<T> ptrs{};
    for (int i = 0; i < c.inputs; ++i) ptrs.p[i] = ins[static_cast<size_t>(i)].data<T>();
    fused_chain_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(c, ptrs, out.data<T>(), n);
    OPSCOPE_CUDA_LAUNCHED("fused_chain_kernel");
  });
}

OPSCOPE_CUDA_REGISTER(register_fused_kernels) { add_kernel("fused_elementwise", "default", fused_elementwise); }

}  // namespace
}  // namespace opscope::cuda
