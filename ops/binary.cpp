// Binary elementwise operators with NumPy broadcasting: add, sub, mul, div, pow, maximum,
// minimum, mod, fmod, the comparisons, and where. The engine reduces broadcast gradients (sum_to). All but
// where are pointwise: their kernels come from their formulas in ops/pointwise.h.
#include <algorithm>
#include <cmath>

#include "ops/cpu_util.h"
#include "ops/pointwise_cpu.h"

namespace opscope {
namespace {

using cpu::gc;
using pointwise::Formula;

// Result dtype: NumPy promotion; true division of integers gives float32.
std::vector<TensorMeta> infer_binary(const InferCtx& c, bool float_result) {
  TensorMeta m;
  m.shape = broadcast_shapes(c.inputs[0].shape, c.inputs[1].shape, c.op.name.c_str());
  m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  if (float_result && m.dtype == DType::i64) m.dtype = DType::f32;
  return {m};
}

OpDef binary(const std::string& name, const std::string& doc, bool float_result = false) {
  OpDef d = OpDef::declare(name, "elementwise", doc, {"a", "b"});
  d.accepts_strided = true;
  d.infer = [float_result](const InferCtx& c) { return infer_binary(c, float_result); };
  d.cost = cpu::elementwise_cost(1);
  const InputSpec a{{3, 4}}, b{{3, 4}}, row{{4}}, col{{3, 1}};
  d.gradcheck = {gc({a, b}, {}, "same shape"), gc({a, row}, {}, "broadcast a row"),
                 gc({col, row}, {}, "outer broadcast")};
  return d;
}

OpDef add_def() {
  OpDef d = binary("add", "c = a + b");
  cpu::make_pointwise(d, Formula::add);
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0), g.grad_output(0)}; };
  d.backward_note = "da = dc, db = dc";
  return d;
}

OpDef sub_def() {
  OpDef d = binary("sub", "c = a - b");
  cpu::make_pointwise(d, Formula::sub);
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0), -g.grad_output(0)}; };
  d.backward_note = "da = dc, db = -dc";
  return d;
}

OpDef mul_def() {
  OpDef d = binary("mul", "c = a * b (elementwise)");
  cpu::make_pointwise(d, Formula::mul);
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dc = g.grad_output(0);
    return {g.needs_grad(0) ? dc * g.input(1) : Val{}, g.needs_grad(1) ? dc * g.input(0) : Val{}};
  };
  d.backward_note = "da = dc * b, db = dc * a";
  return d;
}

OpDef div_def() {
  OpDef d = binary("div", "c = a / b (true division)", true);
  cpu::make_pointwise(d, Formula::div);
  d.saves = {{SavedRef::input, 1}, {SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dc = g.grad_output(0), b = g.input(1);
    Val da = dc / b;
    return {da, g.needs_grad(1) ? -(da * g.output(0)) : Val{}};
  };
  d.backward_note = "da = dc / b, db = -dc * c / b";
  d.cost = cpu::elementwise_cost(1);
  const InputSpec a{{3, 4}}, b{{3, 4}, Domain::positive}, row{{4}, Domain::positive};
  d.gradcheck = {gc({a, b}), gc({a, row}, {}, "broadcast divisor")};
  return d;
}

OpDef pow_def() {
  OpDef d = binary("pow", "c = a ** b", true);
  cpu::make_pointwise(d, Formula::pow);
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}, {SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dc = g.grad_output(0), a = g.input(0), b = g.input(1);
    Val da, db;
    if (g.needs_grad(0)) da = dc * b * g.call("pow", {a, b - g.scalar_like(1, b)});
    if (g.needs_grad(1)) db = dc * g.output(0) * g.call("log", {a});
    return {da, db};
  };
  d.backward_note = "da = dc * b * a^(b-1), db = dc * c * log(a)";
  d.cost = cpu::elementwise_cost(10);
  d.gradcheck = {gc({{{3, 4}, Domain::positive}, {{3, 4}}}),
                 gc({{{3, 4}, Domain::positive}, {{}}}, {}, "scalar exponent")};
  return d;
}

OpDef where_def() {
  OpDef d = OpDef::declare("where", "elementwise", "c = a where cond != 0 else b (broadcast)", {"cond", "a", "b"});
  d.accepts_strided = true;
  d.elementwise = true;
  d.infer = [](const InferCtx& c) {
    TensorMeta m;
    m.shape =
        broadcast_shapes(broadcast_shapes(c.inputs[0].shape, c.inputs[1].shape, "where"), c.inputs[2].shape, "where");
    m.dtype = promote(c.inputs[1].dtype, c.inputs[2].dtype);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const DType dt = k.out().dtype();
    const Shape& shape = k.out().shape();
    // An operand of the output's shape is read in place and a one-element one (the 0 of
    // where(m, dy, 0)) as a scalar: only a real broadcast is copied out to full size.
    auto readable = [&](const Tensor& t) {
      return t.numel() == 1 || (t.is_contiguous() && t.shape() == shape) ? t : t.view_expand(shape).contiguous();
    };
    const Tensor cc = readable(cpu::as_dtype(k.in(0), DType::i64)), ac = readable(cpu::as_dtype(k.in(1), dt)),
                 bc = readable(cpu::as_dtype(k.in(2), dt));
    const int64_t n = k.out().numel();
    auto step = [](const Tensor& t) -> int64_t { return t.numel() == 1 ? 0 : 1; };
    const int64_t sc = step(cc), sa = step(ac), sb = step(bc);
    visit_dtype(dt, [&](auto z) {
      using T = decltype(z);
      const int64_t* pc = cc.data<int64_t>();
      const T *pa = ac.data<T>(), *pb = bc.data<T>();
      T* o = k.out().data<T>();
      parallel_for(n, grain_for(1.0), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) o[i] = pc[i * sc] ? pa[i * sa] : pb[i * sb];
      });
    });
  });
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dc = g.grad_output(0), zero = g.scalar_like(0, dc), cond = g.input(0);
    return {Val{}, g.call("where", {cond, dc, zero}), g.call("where", {cond, zero, dc})};
  };
  d.backward_note = "da = dc where cond, db = dc where not cond";
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({{{3, 4}, Domain::mask, 0, false}, {{3, 4}}, {{3, 4}}}),
                 gc({{{3, 1}, Domain::mask, 0, false}, {{3, 4}}, {{4}}}, {}, "broadcast")};
  return d;
}

// maximum (is_max) or minimum.
OpDef extremum_def(bool is_max) {
  OpDef d = binary(is_max ? "maximum" : "minimum", is_max ? "c = max(a, b) elementwise" : "c = min(a, b) elementwise");
  cpu::make_pointwise(d, is_max ? Formula::maximum : Formula::minimum);
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [is_max](GradCtx& g) -> std::vector<Val> {
    // The gradient goes to the input that won; ties go to a.
    Val dc = g.grad_output(0);
    Val a_wins = g.call(is_max ? "ge" : "le", {g.input(0), g.input(1)});
    Val zero = g.scalar_like(0, dc);
    return {g.call("where", {a_wins, dc, zero}), g.call("where", {a_wins, zero, dc})};
  };
  d.backward_note = is_max ? "da = dc where a >= b, db = dc where a < b" : "da = dc where a <= b, db = dc where a > b";
  const InputSpec a{{3, 4}, Domain::distinct}, b{{3, 4}, Domain::distinct}, row{{4}, Domain::distinct};
  d.gradcheck = {gc({a, b}), gc({a, row}, {}, "broadcast")};
  return d;
}

// The two remainders: c = a − q·b with q = ⌊a/b⌋ (mod: the sign of b, Python's %) or q =
// trunc(a/b) (fmod: the sign of a). Backward reads q back as (a − c)/b.
OpDef remainder_def(bool floor_q) {
  OpDef d = binary(floor_q ? "mod" : "fmod",
                   floor_q ? "c = a − ⌊a/b⌋·b, the remainder with the sign of b (Python's %, torch.remainder)"
                           : "c = a − trunc(a/b)·b, the remainder with the sign of a (C's fmod, torch.fmod)");
  cpu::make_pointwise(d, floor_q ? Formula::mod : Formula::fmod);
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}, {SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dc = g.grad_output(0);
    Val db;
    if (g.needs_grad(1)) db = -(dc * ((g.input(0) - g.output(0)) / g.input(1)));
    return {dc, db};
  };
  d.backward_note =
      floor_q ? "da = dc, db = −dc·⌊a/b⌋ (read as (a − c)/b)" : "da = dc, db = −dc·trunc(a/b) (read as (a − c)/b)";
  d.cost = cpu::elementwise_cost(4);
  // b away from 0, so that a/b stays away from the jumps at whole numbers by more than the
  // central differences' step.
  const InputSpec a{{3, 4}}, b{{3, 4}, Domain::positive}, row{{4}, Domain::positive}, col{{3, 1}};
  d.gradcheck = {gc({a, b}, {}, "same shape"), gc({a, row}, {}, "broadcast divisor"),
                 gc({col, row}, {}, "outer broadcast")};
  return d;
}

// eq, ne, lt, le, gt, ge: 0/1 as int64, no gradient.
OpDef comparison_def(const char* name, const char* doc, Formula formula) {
  OpDef d = binary(name, doc);
  d.family = "comparison";
  d.differentiable = false;  // its cases (binary's) serve the CUDA tests
  d.infer = [](const InferCtx& ctx) {
    auto m = infer_binary(ctx, false);
    m[0].dtype = DType::i64;
    return m;
  };
  cpu::make_pointwise(d, formula);
  return d;
}

OPSCOPE_REGISTER_OPS(register_binary_ops) {
  registry.add(add_def());
  registry.add(sub_def());
  registry.add(mul_def());
  registry.add(div_def());
  registry.add(pow_def());
  registry.add(extremum_def(true));
  registry.add(extremum_def(false));
  registry.add(remainder_def(true));
  registry.add(remainder_def(false));
  registry.add(comparison_def("eq", "c = (a == b) as int64 0/1", Formula::eq));
  registry.add(comparison_def("ne", "c = (a != b) as int64 0/1", Formula::ne));
  registry.add(comparison_def("lt", "c = (a < b) as int64 0/1", Formula::lt));
  registry.add(comparison_def("le", "c = (a <= b) as int64 0/1", Formula::le));
  registry.add(comparison_def("gt", "c = (a > b) as int64 0/1", Formula::gt));
  registry.add(comparison_def("ge", "c = (a >= b) as int64 0/1", Formula::ge));
  registry.add(where_def());
}

}  // namespace
}  // namespace opscope
