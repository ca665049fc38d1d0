// Activations: relu, leaky_relu, gelu (erf and tanh forms) with its backward op, sigmoid,
// tanh. All bandwidth-bound: one pass over the data, vectorized through Eigen arrays.
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>
#include <cmath>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

using cpu::ArrayMap;
using cpu::ConstArrayMap;

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2Pi = 0.3989422804014327;

OpDef activation(const std::string& name, const std::string& doc) {
  OpDef d = OpDef::declare(name, "activation", doc, {"x"});
  d.infer = cpu::float_like_input0;
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({{{3, 4}}}), gc({{{2, 3, 2}}})};
  return d;
}

// Registers a float kernel `body(in, out, attrs)` over contiguous Eigen arrays.
template <class Body>
KernelFn float_kernel(Body body) {
  return [body](KernelCtx& k) {
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      ConstArrayMap<T> in(k.in(0).data<T>(), k.in(0).numel());
      ArrayMap<T> out(k.out().data<T>(), k.out().numel());
      body(in, out, k.attrs, T{});
    });
  };
}

OPSCOPE_REGISTER_OPS(register_activation_ops) {
  {
    OpDef d = activation("relu", "y = max(x, 0)");
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", float_kernel([](const auto& x, auto& y, const Attrs&, auto z) {
               y = x.max(decltype(z)(0));
             }));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val y = g.output(0), dy = g.grad_output(0);
      return {g.call("where", {g.call("gt", {y, g.scalar_like(0, y)}), dy, g.scalar_like(0, dy)})};
    };
    d.backward_note = "dx = dy where y > 0, else 0";
    d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {}, "kink at 0 avoided")};
    registry.add(std::move(d));
  }
  {
    OpDef d = activation("leaky_relu", "y = x if x > 0 else negative_slope * x");
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.pointwise.params = {"negative_slope"};
    d.attrs = {make_attr("negative_slope", AttrType::real, 0.01, "slope for x < 0", 0.0)};
    d.kernel(Device::cpu, "default", float_kernel([](const auto& x, auto& y, const Attrs& a, auto z) {
               using T = decltype(z);
               const T s = static_cast<T>(a.f("negative_slope"));
               y = (x > T(0)).select(x, x * s);
             }));
    d.saves = {{SavedRef::input, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val x = g.input(0), dy = g.grad_output(0);
      return {g.call("where", {g.call("gt", {x, g.scalar_like(0, x)}), dy, dy * g.attrs().f("negative_slope")})};
    };
    d.backward_note = "dx = dy where x > 0, else negative_slope * dy";
    d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {{"negative_slope", 0.1}}, "kink at 0 avoided")};
    registry.add(std::move(d));
  }
  {
    OpDef d = activation("gelu", "y = x·Φ(x) = x/2·(1 + erf(x/√2)); tanh form: x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))");
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.pointwise.params = {"approximate"};
    d.attrs = {make_attr("approximate", AttrType::string, std::string("none"), "\"none\" (erf) or \"tanh\"", {}, {}, {"none", "tanh"})};
    d.kernel(Device::cpu, "default", float_kernel([](const auto& x, auto& y, const Attrs& a, auto z) {
               using T = decltype(z);
               if (a.s("approximate") == "tanh")
                 y = T(0.5) * x * (T(1) + (T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)).tanh());
               else
                 y = T(0.5) * x * (T(1) + (x * T(1.0 / kSqrt2)).erf());
             }));
    d.saves = {{SavedRef::input, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      return {g.call("gelu_backward", {g.input(0), g.grad_output(0)}, {{"approximate", g.attrs().s("approximate")}})};
    };
    d.backward_note = "dx = gelu_backward(x, dy) = dy·(Φ(x) + x·φ(x))";
    d.cost = cpu::elementwise_cost(20);
    d.gradcheck = {gc({{{3, 4}}}), gc({{{3, 4}}}, {{"approximate", std::string("tanh")}}, "tanh form")};
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("gelu_backward", "activation", "dx = dy·(Φ(x) + x·φ(x)) (erf form) or the derivative of the tanh form", {"x", "dy"});
    d.attrs = {make_attr("approximate", AttrType::string, std::string("none"), "\"none\" (erf) or \"tanh\"", {}, {}, {"none", "tanh"})};
    d.infer = [](const InferCtx& c) {
      c.expect_float(0);
      if (c.inputs[0].shape != c.inputs[1].shape)
        c.fail("x " + shape_str(c.inputs[0].shape) + " and dy " + shape_str(c.inputs[1].shape) + " must have one shape");
      return std::vector<TensorMeta>{c.inputs[0]};
    };
    d.kernel(Device::cpu, "default", [](KernelCtx& k) {
      cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
        using T = decltype(z);
        const int64_t n = k.in(0).numel();
        ConstArrayMap<T> x(k.in(0).data<T>(), n);
        Tensor dyt = cpu::as_dtype(k.in(1), k.in(0).dtype());
        ConstArrayMap<T> dy(dyt.data<T>(), n);
        ArrayMap<T> dx(k.out().data<T>(), n);
        if (k.attrs.s("approximate") == "tanh") {
          auto u = T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x);
          auto t = u.tanh().eval();
          auto du = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
          dx = dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
        } else {
          auto cdf = T(0.5) * (T(1) + (x * T(1.0 / kSqrt2)).erf());
          auto pdf = T(kInvSqrt2Pi) * (T(-0.5) * x * x).exp();
          dx = dy * (cdf + x * pdf);
        }
      });
    });
    d.differentiable = false;
    d.checked_via = "gelu";
    d.cost = cpu::elementwise_cost(30);
    registry.add(std::move(d));
  }
  {
    OpDef d = activation("sigmoid", "y = 1 / (1 + e^-x)");
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", float_kernel([](const auto& x, auto& y, const Attrs&, auto z) {
               (void)z;
               y = x.logistic();  // Eigen's vectorized, overflow-safe 1 / (1 + e^-x)
             }));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val s = g.output(0);
      return {g.grad_output(0) * s * (g.scalar_like(1, s) - s)};
    };
    d.backward_note = "dx = dy · y · (1 - y)";
    d.cost = cpu::elementwise_cost(12);
    registry.add(std::move(d));
  }
  {
    OpDef d = activation("tanh", "y = tanh(x)");
    d.pointwise.arity = 1;
    d.elementwise = true;
    d.kernel(Device::cpu, "default", float_kernel([](const auto& x, auto& y, const Attrs&, auto) { y = x.tanh(); }));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val t = g.output(0);
      return {g.grad_output(0) * (g.scalar_like(1, t) - t * t)};
    };
    d.backward_note = "dx = dy · (1 - y²)";
    d.cost = cpu::elementwise_cost(12);
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
