// Losses: cross_entropy (softmax + negative log-likelihood, fused and computed stably via
// log-sum-exp), its backward cross_entropy_backward, and mse_loss. Shape letters: N samples,
// C classes.
#include <Eigen/Dense>
#include <cmath>

#include "ops/cpu_util.h"
#include "ops/index_check.h"

namespace opscope {
namespace {

using cpu::gc;

AttrSpec reduction_attr() {
  return make_attr("reduction", AttrType::string, std::string("mean"),
                   "how per-sample losses combine: mean over samples, or their sum", {}, {}, {"mean", "sum"});
}

template <class T> using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;

// The class index of sample i, checked against C (a bad target would read out of bounds).
int64_t checked_target(const int64_t* targets, int64_t i, int64_t C, const std::string& op) {
  const int64_t t = targets[i];
  if (t < 0 || t >= C) throw target_out_of_range(op, t, i, C);
  return t;
}

// logits [N, C] float, targets [N] int64.
void check_logits_targets(const InferCtx& c) {
  c.expect_float(0);
  c.expect_rank(0, 2, 2);
  c.expect_dtype(1, DType::i64);
  c.expect_rank(1, 1, 1);
  const Shape &ls = c.inputs[0].shape, &ts = c.inputs[1].shape;
  if (ts[0] != ls[0])
    c.fail("logits have shape " + shape_str(ls) + " (N = " + std::to_string(ls[0]) +
               " samples) but targets have shape " + shape_str(ts) +
               "; targets need one class index per sample, shape [N]",
           "logits are [N, C] scores, targets [N] class indices");
}

OpDef loss_op(const std::string& name, const std::string& doc, std::vector<std::string> inputs) {
  OpDef d = OpDef::declare(name, "loss", doc, std::move(inputs));
  d.attrs = {reduction_attr()};
  return d;
}

OpDef cross_entropy_def() {
  OpDef d = loss_op("cross_entropy", "L = mean_i (logsumexp(logits_i) - logits_i[target_i])  (sum when reduction=sum)",
                    {"logits", "targets"});
  d.infer = [](const InferCtx& c) {
    check_logits_targets(c);
    return std::vector<TensorMeta>{{{}, c.inputs[0].dtype, c.inputs[0].device}};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const Tensor &logits = k.in(0), &targets = k.in(1);
    const int64_t N = logits.size(0), C = logits.size(1);
    const int64_t* t = targets.data<int64_t>();
    cpu::visit_float(logits.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      double total = 0;  // accumulated in double: N terms of similar size
      for (int64_t i = 0; i < N; ++i) {
        const int64_t ti = checked_target(t, i, C, k.op.name);
        Eigen::Map<const RowArray<T>> row(logits.data<T>() + i * C, C);
        const T m = row.maxCoeff();
        const T lse = m + std::log((row - m).exp().sum());  // never exponentiates anything > 0
        total += static_cast<double>(lse - row[ti]);
      }
      if (k.attrs.s("reduction") == "mean") total /= static_cast<double>(N);  // N = 0 gives NaN, as PyTorch
      k.out().data<T>()[0] = static_cast<T>(total);
    });
  });
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("cross_entropy_backward", {g.input(0), g.input(1), g.grad_output(0)},
                   {{"reduction", g.attrs().s("reduction")}}),
            Val{}};
  };
  d.backward_note = "dlogits = (softmax(logits) - onehot(targets)) * dL  (/ N for mean); targets get none";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.flops = 4 * cpu::meta_numel(in[0]);  // max, subtract, exp, sum
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  const InputSpec targets{{4}, Domain::index, 5, false};
  d.gradcheck = {gc({{{4, 5}}, targets}, {}, "mean"),
                 gc({{{4, 5}}, targets}, {{"reduction", std::string("sum")}}, "sum"),
                 gc({{{1, 3}}, {{1}, Domain::index, 3, false}}, {}, "one sample"),
                 gc({{{6, 2}}, {{6}, Domain::index, 2, false}}, {{"reduction", std::string("sum")}}, "two classes")};
  return d;
}

OpDef cross_entropy_backward_def() {
  OpDef d =
      loss_op("cross_entropy_backward", "dlogits = (softmax(logits) - onehot(targets)) * dL  (/ N when reduction=mean)",
              {"logits", "targets", "dL"});
  d.infer = [](const InferCtx& c) {
    check_logits_targets(c);
    if (shape_numel(c.inputs[2].shape) != 1)
      c.fail("dL must hold one element (the gradient of the scalar loss), got shape " + shape_str(c.inputs[2].shape));
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const Tensor &logits = k.in(0), &targets = k.in(1);
    const int64_t N = logits.size(0), C = logits.size(1);
    const int64_t* t = targets.data<int64_t>();
    const double dl = k.in(2).item();
    const double scale = k.attrs.s("reduction") == "mean" ? dl / static_cast<double>(N) : dl;
    cpu::visit_float(logits.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t i = 0; i < N; ++i) {
        const int64_t ti = checked_target(t, i, C, k.op.name);
        Eigen::Map<const RowArray<T>> row(logits.data<T>() + i * C, C);
        Eigen::Map<RowArray<T>> o(k.out().data<T>() + i * C, C);
        const T m = row.maxCoeff();
        o = (row - m).exp();
        o *= static_cast<T>(scale) / o.sum();
        o[ti] -= static_cast<T>(scale);
      }
    });
  });
  d.differentiable = false;
  d.checked_via = "cross_entropy";
  // Cases for the CUDA tests (gradchecked through cross_entropy).
  d.gradcheck = {gc({{{4, 5}}, {{4}, Domain::index, 5}, {{}}}),
                 gc({{{4, 5}}, {{4}, Domain::index, 5}, {{}}}, {{"reduction", std::string("sum")}}, "sum")};
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.flops = 5 * cpu::meta_numel(in[0]);
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]) + cpu::meta_bytes(in[2]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  return d;
}

OpDef mse_loss_def() {
  OpDef d = loss_op("mse_loss", "L = mean((pred - target)²)  (sum when reduction=sum)", {"pred", "target"});
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    if (c.inputs[0].shape != c.inputs[1].shape)
      c.fail("pred has shape " + shape_str(c.inputs[0].shape) + " but target has shape " +
                 shape_str(c.inputs[1].shape) + "; they must be equal",
             "broadcasting here is almost always a bug (e.g. [N, 1] against [N] gives an [N, N] loss); "
             "reshape one of them so the shapes match");
    TensorMeta m{{}, promote(c.inputs[0].dtype, c.inputs[1].dtype), c.inputs[0].device};
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const DType dt = k.out().dtype();
    Tensor pred = cpu::as_dtype(k.in(0), dt), target = cpu::as_dtype(k.in(1), dt);
    const int64_t n = pred.numel();
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      const T *p = pred.data<T>(), *q = target.data<T>();
      // Eight running sums (in double), added at the end: one sum would be a chain of
      // dependent adds, eight fill a SIMD register. The order depends only on n.
      constexpr int64_t kLanes = 8;
      double lanes[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) {
          const double e = static_cast<double>(p[i + j]) - static_cast<double>(q[i + j]);
          lanes[j] += e * e;
        }
      for (int64_t j = 0; i < n; ++i, ++j) {
        const double e = static_cast<double>(p[i]) - static_cast<double>(q[i]);
        lanes[j] += e * e;
      }
      double total = 0;
      for (double l : lanes) total += l;
      if (k.attrs.s("reduction") == "mean") total /= static_cast<double>(n);
      k.out().data<T>()[0] = static_cast<T>(total);
    });
  });
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const double n = static_cast<double>(shape_numel(g.input_meta(0).shape));
    const double k = g.attrs().s("reduction") == "mean" ? 2.0 / n : 2.0;
    Val d = (g.input(0) - g.input(1)) * (g.grad_output(0) * k);
    return {g.needs_grad(0) ? d : Val{}, g.needs_grad(1) ? -d : Val{}};
  };
  d.backward_note = "dpred = 2 (pred - target) dL / n, dtarget = -dpred  (no / n when reduction=sum)";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.flops = 3 * cpu::meta_numel(in[0]);  // subtract, square, add
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  d.gradcheck = {gc({{{3, 4}}, {{3, 4}}}, {}, "mean, both inputs"),
                 gc({{{3, 4}}, {{3, 4}}}, {{"reduction", std::string("sum")}}, "sum"),
                 gc({{{5}}, {{5}, Domain::any, 0, false}}, {}, "target without gradient")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_loss_ops) {
  registry.add(cross_entropy_def());
  registry.add(cross_entropy_backward_def());
  registry.add(mse_loss_def());
}

}  // namespace
}  // namespace opscope
