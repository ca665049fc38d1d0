// A fused swish (SiLU), written as an opscope extension:
//
//     y = swish(x) = x·σ(x) = x / (1 + e⁻ˣ)
//
// Written in the language, `x * sigmoid(x)` is two ops: two passes over memory and one
// temporary as large as x. Here it is one kernel that reads x once and writes y once, and its
// backward is one kernel too. Load it into a running opscope:
//
//     >>> load_extension("assets/examples/extensions/swish.cpp")     (or :load ...)
//     >>> y = swish(randn(4, 5))
//     >>> :doc swish
//
// It is declared exactly like the built-in operators of ops/*.cpp: the same OpDef, the same
// OPSCOPE_REGISTER_OPS block. swish_cuda.cu adds the CUDA kernels.
#include "ops/cpu_util.h"

namespace {

using namespace opscope;
using cpu::ArrayMap;
using cpu::ConstArrayMap;

// x and dy must have one shape: dx = swish_backward(x, dy) has it too.
std::vector<TensorMeta> infer_swish_backward(const InferCtx& c) {
  c.expect_float(0);
  if (c.inputs[0].shape != c.inputs[1].shape)
    c.fail("x " + shape_str(c.inputs[0].shape) + " and dy " + shape_str(c.inputs[1].shape) + " must have one shape");
  return {c.inputs[0]};
}

OPSCOPE_REGISTER_OPS(register_swish) {
  {
    OpDef d = OpDef::declare("swish", "activation", "y = x·σ(x) = x / (1 + e^-x), fused: one pass over memory", {"x"});
    d.infer = cpu::float_like_input0;  // y has x's shape and dtype; an int64 x is refused
    // The first kernel registered is the default algorithm. Inputs arrive contiguous.
    d.kernel(Device::cpu, "fused", [](KernelCtx& k) {
      cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto zero) {
        using T = decltype(zero);
        ConstArrayMap<T> x(k.in(0).data<T>(), k.in(0).numel());
        ArrayMap<T> y(k.out().data<T>(), k.out().numel());
        y = x * x.logistic();  // one vectorized pass (Eigen's overflow-safe σ)
      });
    });
    // Backward needs x (what its formula uses), so x is saved: the memory panel shows it.
    d.saves = {{SavedRef::input, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      return {g.call("swish_backward", {g.input(0), g.grad_output(0)})};
    };
    d.backward_note = "dx = swish_backward(x, dy) = dy·σ(x)·(1 + x·(1 − σ(x)))";
    // One read of x, one write of y; σ costs an exp, an add and a divide: about 5 FLOPs a value.
    d.cost = cpu::elementwise_cost(5);
    // gradcheck compares the backward with central differences, in float64.
    d.gradcheck = {cpu::gc({{{3, 4}}}), cpu::gc({{{2, 3, 5}}}, {}, "rank 3")};
    registry.add(std::move(d));
  }
  {
    // d/dx [x·σ(x)] = σ(x) + x·σ(x)·(1 − σ(x)) = σ(x)·(1 + x·(1 − σ(x)))
    OpDef d = OpDef::declare("swish_backward", "activation", "dx = dy·σ(x)·(1 + x·(1 − σ(x))), fused", {"x", "dy"});
    d.infer = infer_swish_backward;
    d.kernel(Device::cpu, "default", [](KernelCtx& k) {
      cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto zero) {
        using T = decltype(zero);
        const int64_t n = k.in(0).numel();
        Tensor dy_same = cpu::as_dtype(k.in(1), k.in(0).dtype());
        ConstArrayMap<T> x(k.in(0).data<T>(), n), dy(dy_same.data<T>(), n);
        ArrayMap<T> dx(k.out().data<T>(), n);
        const auto s = x.logistic().eval();
        dx = dy * s * (T(1) + x * (T(1) - s));
      });
    });
    d.differentiable = false;  // no second derivative here
    d.checked_via = "swish";  // swish's gradcheck exercises this op
    d.cost = cpu::elementwise_cost(9);
    registry.add(std::move(d));
  }
}

}  // namespace
