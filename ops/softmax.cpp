// Softmax along one axis: softmax (algorithms "stable" and "naive"), its fused backward
// softmax_backward, and log_softmax.
//
// The axis splits x into [A, C, B]: A independent groups of C rows of B contiguous elements.
// The last axis (B = 1) is the fast path: each row of C elements is processed while it sits in
// cache, with Eigen's vectorized exp. Another axis works on whole rows of B elements at a time
// (vectorized over B), so no transposed copy is made either way.
#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

AttrSpec axis_attr() {
  AttrSpec a;
  a.name = "axis";
  a.type = AttrType::integer;
  a.default_value = int64_t{-1};
  a.doc = "the axis whose entries sum to 1 (negative counts from the end)";
  return a;
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

template <class T>
using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;
template <class T>
using RowMap = Eigen::Map<RowArray<T>>;
template <class T>
using ConstRowMap = Eigen::Map<const RowArray<T>>;

enum class SoftmaxKind { stable, naive, log };

// out = softmax(x) (stable: exp(x - max) / Σ exp(x - max); naive: exp(x) / Σ exp(x), which
// overflows for x around 89 in float32 and 710 in float64) or log_softmax(x) = x - max - log Σ exp(x - max).
template <class T>
void softmax_rows(const T* x, T* out, const AxisSplit& s, SoftmaxKind kind) {
  const int64_t C = s.C, B = s.B;
  if (B == 1) {
    for (int64_t a = 0; a < s.A; ++a) {
      ConstRowMap<T> xr(x + a * C, C);
      RowMap<T> o(out + a * C, C);
      switch (kind) {
        case SoftmaxKind::stable: {
          const T m = xr.maxCoeff();
          o = (xr - m).exp();  // pass 2: read x, write exp; the row stays in cache
          o *= static_cast<T>(1) / o.sum();
          break;
        }
        case SoftmaxKind::naive:
          o = xr.exp();
          o /= o.sum();  // inf / inf = nan once exp overflows
          break;
        case SoftmaxKind::log: {
          const T m = xr.maxCoeff();
          o = xr - (m + std::log((xr - m).exp().sum()));
          break;
        }
      }
    }
    return;
  }
  RowArray<T> m(B), sum(B);
  for (int64_t a = 0; a < s.A; ++a) {
    const T* xa = x + a * C * B;
    T* oa = out + a * C * B;
    auto xrow = [&](int64_t c) { return ConstRowMap<T>(xa + c * B, B); };
    auto orow = [&](int64_t c) { return RowMap<T>(oa + c * B, B); };
    if (kind == SoftmaxKind::naive) {
      m.setZero();
    } else {
      m.setConstant(-std::numeric_limits<T>::infinity());
      for (int64_t c = 0; c < C; ++c) m = m.max(xrow(c));
    }
    sum.setZero();
    for (int64_t c = 0; c < C; ++c) {
      auto o = orow(c);
      o = (xrow(c) - m).exp();
      sum += o;
    }
    if (kind == SoftmaxKind::log) {
      m += sum.log();
      for (int64_t c = 0; c < C; ++c) orow(c) = xrow(c) - m;
    } else {
      for (int64_t c = 0; c < C; ++c) orow(c) /= sum;
    }
  }
}

// dx = s * (dy - Σ dy·s) along the axis, in one pass per row.
template <class T>
void softmax_backward_rows(const T* sm, const T* dy, T* dx, const AxisSplit& s) {
  const int64_t C = s.C, B = s.B;
  if (B == 1) {
    for (int64_t a = 0; a < s.A; ++a) {
      ConstRowMap<T> sr(sm + a * C, C), dr(dy + a * C, C);
      RowMap<T> o(dx + a * C, C);
      const T dot = (sr * dr).sum();
      o = sr * (dr - dot);
    }
    return;
  }
  RowArray<T> dot(B);
  for (int64_t a = 0; a < s.A; ++a) {
    const int64_t base = a * C * B;
    dot.setZero();
    for (int64_t c = 0; c < C; ++c) dot += ConstRowMap<T>(sm + base + c * B, B) * ConstRowMap<T>(dy + base + c * B, B);
    for (int64_t c = 0; c < C; ++c) {
      ConstRowMap<T> sr(sm + base + c * B, B), dr(dy + base + c * B, B);
      RowMap<T>(dx + base + c * B, B) = sr * (dr - dot);
    }
  }
}

KernelFn softmax_kernel(SoftmaxKind kind) {
  return [kind](KernelCtx& k) {
    const Tensor& x = k.in(0);
    if (x.numel() == 0) return;
    const AxisSplit s = split_at(x.shape(), k.attrs.i("axis"), k.op.name.c_str());
    cpu::visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      softmax_rows<T>(x.data<T>(), k.out().data<T>(), s, kind);
    });
  };
}

std::vector<TensorMeta> infer_softmax(const InferCtx& c) {
  c.expect_float(0);
  normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(c.inputs[0].shape.size()), c.op.name.c_str());
  return {c.inputs[0]};
}

OpDef softmax_like(const std::string& name, const std::string& doc, double flops_per_element) {
  OpDef d;
  d.name = name;
  d.family = "softmax";
  d.doc = doc;
  d.input_names = {"x"};
  d.attrs = {axis_attr()};
  d.infer = infer_softmax;
  d.cost = cpu::elementwise_cost(flops_per_element);
  const InputSpec x2{{3, 5}}, x3{{2, 3, 4}}, x1{{6}};
  d.gradcheck = {gc({x2}, {}, "last axis"),
                 gc({x3}, {{"axis", int64_t{1}}}, "middle axis"),
                 gc({x3}, {{"axis", int64_t{0}}}, "leading axis"),
                 gc({x3}, {{"axis", int64_t{-2}}}, "negative axis"),
                 gc({x1}, {}, "one row")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_softmax_ops) {
  {
    // max, subtract, exp, sum, scale: about 5 FLOPs per element (exp counted as one).
    OpDef d = softmax_like("softmax", "s = exp(x - max) / Σ exp(x - max) along axis", 5);
    d.kernel(Device::cpu, "stable", softmax_kernel(SoftmaxKind::stable));
    d.kernel(Device::cpu, "naive", softmax_kernel(SoftmaxKind::naive));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      return {g.call("softmax_backward", {g.output(0), g.grad_output(0)}, {{"axis", g.attrs().i("axis")}})};
    };
    d.backward_note = "dx = s * (dy - Σ dy·s) along axis (one fused softmax_backward op)";
    registry.add(std::move(d));
  }
  {
    OpDef d;
    d.name = "softmax_backward";
    d.family = "softmax";
    d.doc = "dx = s * (dy - Σ dy·s) along axis, with s = softmax(x)";
    d.input_names = {"s", "dy"};
    d.min_inputs = d.max_inputs = 2;
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
        softmax_backward_rows<T>(s.data<T>(), dy.data<T>(), k.out().data<T>(), split);
      });
    });
    d.differentiable = false;
    d.checked_via = "softmax";
    d.cost = cpu::elementwise_cost(4);
    registry.add(std::move(d));
  }
  {
    OpDef d = softmax_like("log_softmax", "y = x - max - log Σ exp(x - max) along axis", 5);
    d.kernel(Device::cpu, "stable", softmax_kernel(SoftmaxKind::log));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val dy = g.grad_output(0);
      Val total = g.call("sum", {dy}, {{"axes", std::vector<int64_t>{g.attrs().i("axis")}}, {"keepdim", true}});
      return {dy - g.call("exp", {g.output(0)}) * total};
    };
    d.backward_note = "dx = dy - exp(y) * Σ dy along axis";
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
