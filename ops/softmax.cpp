// Softmax along one axis: softmax (algorithms "stable" and "naive"), its fused backward
// softmax_backward, and log_softmax.
//
// The axis splits x into [A, C, B]: A independent groups of C rows of B contiguous elements.
// The kernels (ops/cpu/softmax.cpp, built per instruction set) handle the last axis and any
// other without a transposed copy; the groups A are spread over the thread pool (each row is
// computed the same way whichever thread gets it: the same bits for any thread count).
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

AttrSpec axis_attr() {
  return make_attr("axis", AttrType::integer, int64_t{-1},
                   "the axis whose entries sum to 1 (negative counts from the end)");
}

struct AxisSplit {
  int64_t A = 1, C = 1, B = 1;
};

// x of `shape` as [A, C, B] around `axis` (a 0-d tensor is one row of one element).
AxisSplit split_at(const Shape& shape, int64_t axis, const char* op) {
  AxisSplit s;
  if (shape.empty()) return s;
  const int64_t ax = normalize_axis(axis, static_cast<int64_t>(shape.size()), op);
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < ax) s.A *= shape[i];
    else if (i == ax) s.C = shape[i];
    else s.B *= shape[i];
  }
  return s;
}

using cpu::SoftmaxKind;

// Groups of the [A, C, B] split per thread: a chunk is worth a thread at ~32K element operations.
int64_t group_grain(const AxisSplit& s, double ops_per_element) {
  return grain_for(static_cast<double>(s.C) * static_cast<double>(s.B) * ops_per_element);
}

KernelFn softmax_kernel(SoftmaxKind kind) {
  return [kind](KernelCtx& k) {
    const Tensor& x = k.in(0);
    if (x.numel() == 0) return;
    const AxisSplit s = split_at(x.shape(), k.attrs.i("axis"), k.op.name.c_str());
    cpu::visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* px = x.data<T>();
      T* po = k.out().data<T>();
      parallel_for(s.A, group_grain(s, 4),
                   [&](int64_t a0, int64_t a1) { cpu::kern<T>().softmax_rows(px, po, a0, a1, s.C, s.B, kind); });
    });
  };
}

std::vector<TensorMeta> infer_softmax(const InferCtx& c) {
  c.expect_float(0);
  normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(c.inputs[0].shape.size()), c.op.name.c_str());
  return {c.inputs[0]};
}

OpDef softmax_like(const std::string& name, const std::string& doc, double flops_per_element) {
  OpDef d = OpDef::declare(name, "softmax", doc, {"x"});
  d.attrs = {axis_attr()};
  d.infer = infer_softmax;
  d.cost = cpu::elementwise_cost(flops_per_element);
  const InputSpec x2{{3, 5}}, x3{{2, 3, 4}}, x1{{6}};
  d.gradcheck = {gc({x2}, {}, "last axis"), gc({x3}, {{"axis", int64_t{1}}}, "middle axis"),
                 gc({x3}, {{"axis", int64_t{0}}}, "leading axis"), gc({x3}, {{"axis", int64_t{-2}}}, "negative axis"),
                 gc({x1}, {}, "one row")};
  return d;
}

OpDef softmax_backward_def() {
  OpDef d = OpDef::declare("softmax_backward", "softmax", "dx = s * (dy - Σ dy·s) along axis, with s = softmax(x)",
                           {"s", "dy"});
  d.attrs = {axis_attr()};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    c.expect_float(1);
    if (c.inputs[0].shape != c.inputs[1].shape)
      c.fail("s has shape " + shape_str(c.inputs[0].shape) + " but dy has shape " + shape_str(c.inputs[1].shape) +
             "; they must be equal");
    normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(c.inputs[0].shape.size()), c.op.name.c_str());
    TensorMeta m = c.inputs[0];
    m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const DType dt = k.out().dtype();
    Tensor s = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
    if (s.numel() == 0) return;
    const AxisSplit split = split_at(s.shape(), k.attrs.i("axis"), "softmax_backward");
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      const T *ps = s.data<T>(), *pd = dy.data<T>();
      T* px = k.out().data<T>();
      parallel_for(split.A, group_grain(split, 3), [&](int64_t a0, int64_t a1) {
        cpu::kern<T>().softmax_backward_rows(ps, pd, px, a0, a1, split.C, split.B);
      });
    });
  });
  d.differentiable = false;
  d.checked_via = "softmax";
  // Cases for the CUDA tests (gradchecked through softmax): s is a softmax output, positive.
  d.gradcheck = {gc({{{3, 5}, Domain::positive}, {{3, 5}}}),
                 gc({{{4, 3, 2}, Domain::positive}, {{4, 3, 2}}}, {{"axis", int64_t{1}}}, "columns")};
  d.cost = cpu::elementwise_cost(4);
  return d;
}

OpDef log_softmax_def() {
  OpDef d = softmax_like("log_softmax", "y = x - max - log Σ exp(x - max) along axis", 5);
  d.kernel(Device::cpu, "stable", softmax_kernel(SoftmaxKind::log));
  d.saves = {{SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dy = g.grad_output(0);
    Val total = g.call("sum", {dy}, {{"axes", std::vector<int64_t>{g.attrs().i("axis")}}, {"keepdim", true}});
    return {dy - g.call("exp", {g.output(0)}) * total};
  };
  d.backward_note = "dx = dy - exp(y) * Σ dy along axis";
  return d;
}

OPSCOPE_REGISTER_OPS(register_softmax_ops) {
  {
    // max, subtract, exp, sum, scale: about 5 FLOPs per element (exp counted as one).
    OpDef d = softmax_like("softmax", "s = exp(x - max) / Σ exp(x - max) along axis", 5);
    d.kernel(Device::cpu, "stable", softmax_kernel(SoftmaxKind::stable));
    d.kernel(Device::cpu, "naive", softmax_kernel(SoftmaxKind::naive));
    d.default_algo = "stable";
    d.anomaly_hint = "the naive softmax overflows for large inputs; use algo=\"stable\"";
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      return {g.call("softmax_backward", {g.output(0), g.grad_output(0)}, {{"axis", g.attrs().i("axis")}})};
    };
    d.backward_note = "dx = s * (dy - Σ dy·s) along axis (one fused softmax_backward op)";
    d.lab = cpu::lab_rows_cols();
    registry.add(std::move(d));
  }
  registry.add(softmax_backward_def());
  registry.add(log_softmax_def());
}

}  // namespace
}  // namespace opscope
