// Unary elementwise operators: neg, exp, log, sqrt, abs, sign, erf, clip, floor, ceil, round,
// sin, cos (pointwise: kernels from their formulas in ops/pointwise.h), and cast between dtypes.
#include <limits>

#include "ops/cpu_util.h"
#include "ops/pointwise_cpu.h"

namespace opscope {
namespace {

using cpu::gc;
using pointwise::Formula;

OpDef unary(const std::string& name, const std::string& doc, bool float_only) {
  OpDef d = OpDef::declare(name, "elementwise", doc, {"x"});
  d.infer = float_only ? cpu::float_like_input0 : cpu::same_as_input0;
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({{{3, 4}}})};
  return d;
}

OpDef neg_def() {
  OpDef d = unary("neg", "y = -x", false);
  cpu::make_pointwise(d, Formula::neg);
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {-g.grad_output(0)}; };
  d.backward_note = "dx = -dy";
  return d;
}

OpDef exp_def() {
  OpDef d = unary("exp", "y = e^x", true);
  cpu::make_pointwise(d, Formula::exp);
  d.saves = {{SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * g.output(0)}; };
  d.backward_note = "dx = dy * y";
  d.cost = cpu::elementwise_cost(10);
  return d;
}

OpDef log_def() {
  OpDef d = unary("log", "y = ln(x)", true);
  cpu::make_pointwise(d, Formula::log);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) / g.input(0)}; };
  d.backward_note = "dx = dy / x";
  d.cost = cpu::elementwise_cost(10);
  d.gradcheck = {gc({{{3, 4}, Domain::positive}})};
  return d;
}

OpDef sqrt_def() {
  OpDef d = unary("sqrt", "y = √x", true);
  cpu::make_pointwise(d, Formula::sqrt);
  d.saves = {{SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * 0.5 / g.output(0)}; };
  d.backward_note = "dx = dy / (2 y)";
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({{{3, 4}, Domain::positive}})};
  return d;
}

OpDef abs_def() {
  OpDef d = unary("abs", "y = |x|", false);
  cpu::make_pointwise(d, Formula::abs);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * g.call("sign", {g.input(0)})}; };
  d.backward_note = "dx = dy * sign(x)  (0 at the kink x = 0)";
  d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {}, "kink at 0 avoided")};
  return d;
}

OpDef sign_def() {
  OpDef d = unary("sign", "y = -1, 0 or 1 by the sign of x", false);
  cpu::make_pointwise(d, Formula::sign);
  d.differentiable = false;  // its derivative is 0 almost everywhere (its case serves the CUDA tests)
  return d;
}

OpDef erf_def() {
  OpDef d = unary("erf", "y = erf(x) = 2/√π·∫₀ˣ e^(−t²) dt (the Gauss error function)", true);
  cpu::make_pointwise(d, Formula::erf);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    constexpr double kTwoOverSqrtPi = 1.1283791670955126;
    Val x = g.input(0);
    return {g.grad_output(0) * g.call("exp", {-(x * x)}) * kTwoOverSqrtPi};
  };
  d.backward_note = "dx = dy · 2/√π · e^(−x²)";
  d.cost = cpu::elementwise_cost(10);
  d.gradcheck = {gc({{{3, 4}}}), gc({{{2, 5}, Domain::positive}}, {}, "the flat tail (x up to 2)")};
  return d;
}

OpDef sin_def() {
  OpDef d = unary("sin", "y = sin(x) (radians)", true);
  cpu::make_pointwise(d, Formula::sin);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * g.call("cos", {g.input(0)})}; };
  d.backward_note = "dx = dy · cos(x)";
  d.cost = cpu::elementwise_cost(10);
  return d;
}

OpDef cos_def() {
  OpDef d = unary("cos", "y = cos(x) (radians)", true);
  cpu::make_pointwise(d, Formula::cos);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {-(g.grad_output(0) * g.call("sin", {g.input(0)}))}; };
  d.backward_note = "dx = −dy · sin(x)";
  d.cost = cpu::elementwise_cost(10);
  return d;
}

OpDef clip_def() {
  OpDef d = unary("clip", "y = min(max(x, min), max) (PyTorch's clamp)", false);
  d.attrs = {make_attr("min", AttrType::real, -std::numeric_limits<double>::infinity(), "lower bound (-inf: none)"),
             make_attr("max", AttrType::real, std::numeric_limits<double>::infinity(), "upper bound (inf: none)")};
  cpu::make_pointwise(d, Formula::clip, {"min", "max"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val x = g.input(0), dy = g.grad_output(0);
    Val inside = g.call("ge", {x, g.scalar_like(g.attrs().f("min"), x)}) *
                 g.call("le", {x, g.scalar_like(g.attrs().f("max"), x)});
    return {g.call("where", {inside, dy, g.scalar_like(0, dy)})};
  };
  d.backward_note = "dx = dy where min <= x <= max, else 0";
  d.gradcheck = {gc({{{3, 4}}}, {{"min", -0.5}, {"max", 0.5}}, "both bounds (no draw within 1e-6 of a kink)"),
                 gc({{{3, 4}}}, {{"min", 0.25}}, "lower bound only")};
  return d;
}

OpDef cast_def() {
  OpDef d = unary("cast", "y = x converted to dtype", false);
  d.attrs = {make_attr("dtype", AttrType::string, std::string("float32"), "target dtype", {}, {},
                       {"float32", "float64", "int64"})};
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
  // A plain copy (cast to its own dtype): the bandwidth ceiling of the bandwidth-bound ops.
  d.lab = cpu::lab_rows_cols({{"dtype", std::string("float32")}});
  return d;
}

OPSCOPE_REGISTER_OPS(register_unary_ops) {
  registry.add(neg_def());
  registry.add(exp_def());
  registry.add(log_def());
  registry.add(sqrt_def());
  registry.add(abs_def());
  registry.add(sign_def());
  registry.add(erf_def());
  struct Rounding {
    const char* name;
    const char* doc;
    Formula formula;
  };
  for (Rounding r : {Rounding{"floor", "y = ⌊x⌋, the largest whole number <= x", Formula::floor},
                     Rounding{"ceil", "y = ⌈x⌉, the smallest whole number >= x", Formula::ceil},
                     Rounding{"round", "y = x rounded to the nearest whole number, ties to even (round(2.5) = 2)",
                              Formula::round}}) {
    OpDef d = unary(r.name, r.doc, false);
    cpu::make_pointwise(d, r.formula);
    d.differentiable = false;  // a staircase: its derivative is 0 almost everywhere (the case serves the CUDA tests)
    registry.add(std::move(d));
  }
  registry.add(sin_def());
  registry.add(cos_def());
  registry.add(clip_def());
  registry.add(cast_def());
}

}  // namespace
}  // namespace opscope
