// Unary elementwise operators: neg, exp, log, sqrt, abs, sign, and cast between dtypes.
// Kernels map contiguous data through Eigen array expressions (vectorized exp/log/sqrt).
#include <Eigen/Core>
#include <cmath>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

using cpu::ArrayMap;
using cpu::ConstArrayMap;

// out = f(in) over the whole (contiguous) tensor, f an Eigen array expression.
template <class F>
KernelFn eigen_unary(F f, bool float_only) {
  return [f, float_only](KernelCtx& k) {
    const DType dt = k.in(0).dtype();
    if (float_only && !is_floating(dt)) throw Error(k.op.name + ": expected a floating-point tensor");
    visit_dtype(dt, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) {
        ConstArrayMap<T> in(k.in(0).data<T>(), k.in(0).numel());
        ArrayMap<T> out(k.out().data<T>(), k.out().numel());
        out = f(in);
      } else if (!float_only) {
        ConstArrayMap<T> in(k.in(0).data<T>(), k.in(0).numel());
        ArrayMap<T> out(k.out().data<T>(), k.out().numel());
        out = f(in);
      }
    });
  };
}

OpDef unary(const std::string& name, const std::string& doc, bool float_only) {
  OpDef d = OpDef::declare(name, "elementwise", doc, {"x"});
  d.infer = float_only ? cpu::float_like_input0 : cpu::same_as_input0;
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({{{3, 4}}})};
  return d;
}

OPSCOPE_REGISTER_OPS(register_unary_ops) {
  {
    OpDef d = unary("neg", "y = -x", false);
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", eigen_unary([](const auto& x) { return -x; }, false));
    d.backward = [](GradCtx& g) -> std::vector<Val> { return {-g.grad_output(0)}; };
    d.backward_note = "dx = -dy";
    registry.add(std::move(d));
  }
  {
    OpDef d = unary("exp", "y = e^x", true);
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", eigen_unary([](const auto& x) { return x.exp(); }, true));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * g.output(0)}; };
    d.backward_note = "dx = dy * y";
    d.cost = cpu::elementwise_cost(10);
    registry.add(std::move(d));
  }
  {
    OpDef d = unary("log", "y = ln(x)", true);
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", eigen_unary([](const auto& x) { return x.log(); }, true));
    d.saves = {{SavedRef::input, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) / g.input(0)}; };
    d.backward_note = "dx = dy / x";
    d.cost = cpu::elementwise_cost(10);
    d.gradcheck = {gc({{{3, 4}, Domain::positive}})};
    registry.add(std::move(d));
  }
  {
    OpDef d = unary("sqrt", "y = √x", true);
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", eigen_unary([](const auto& x) { return x.sqrt(); }, true));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * 0.5 / g.output(0)}; };
    d.backward_note = "dx = dy / (2 y)";
    d.cost = cpu::elementwise_cost(1);
    d.gradcheck = {gc({{{3, 4}, Domain::positive}})};
    registry.add(std::move(d));
  }
  {
    OpDef d = unary("abs", "y = |x|", false);
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", eigen_unary([](const auto& x) { return x.abs(); }, false));
    d.saves = {{SavedRef::input, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * g.call("sign", {g.input(0)})}; };
    d.backward_note = "dx = dy * sign(x)  (0 at the kink x = 0)";
    d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {}, "kink at 0 avoided")};
    registry.add(std::move(d));
  }
  {
    OpDef d = unary("sign", "y = -1, 0 or 1 by the sign of x", false);
    d.kernel(Device::cpu, "default", eigen_unary([](const auto& x) { return x.sign(); }, false));
    d.differentiable = false;  // its derivative is 0 almost everywhere
    d.gradcheck.clear();
    registry.add(std::move(d));
  }
  {
    OpDef d = unary("cast", "y = x converted to dtype", false);
    d.attrs = {make_attr("dtype", AttrType::string, std::string("float32"), "target dtype", {}, {}, {"float32", "float64", "int64"})};
    d.infer = [](const InferCtx& c) {
      TensorMeta m = c.inputs[0];
      m.dtype = parse_dtype(c.attrs.s("dtype"));
      return std::vector<TensorMeta>{m};
    };
    d.accepts_strided = true;
    d.kernel(Device::cpu, "default", [](KernelCtx& k) { k.out().copy_from(k.in(0)); });
    // The engine casts each gradient back to its input's dtype, so the formula is the identity.
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      return {is_floating(g.input_meta(0).dtype) ? g.grad_output(0) : Val{}};
    };
    d.backward_note = "dx = cast(dy, x.dtype)";
    // float64 only: a float32 round trip loses the 1e-6 perturbation of central differences.
    d.gradcheck = {gc({{{2, 3}}}, {{"dtype", std::string("float64")}})};
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
