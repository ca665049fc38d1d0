#include "core/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>

#include "core/error.h"
#include "core/random.h"
#include "core/workspace.h"

namespace opscope {

std::vector<int64_t> element_index(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t n = std::max<int64_t>(1, shape[d]);
    idx[d] = flat % n;
    flat /= n;
  }
  return idx;
}

std::string element_index_str(const Shape& shape, int64_t flat) { return shape_str(element_index(shape, flat)); }

std::string describe_mismatch(const std::string& input, const Shape& shape, int64_t flat, double analytic,
                              double numeric) {
  char buf[160];
  std::snprintf(buf, sizeof buf, ": analytic %.6g vs numeric %.6g (relative error %.3g)", analytic, numeric,
                std::fabs(analytic - numeric) / std::max(1e-12, std::fabs(numeric)));
  return "input " + input + " " + element_index_str(shape, flat) + buf;
}

namespace {

// A backward context that builds nothing, only shapes: it runs an op's backward formula to see
// which of the forward tensors it reads (the saved tensors a formula never reads are memory
// training holds for nothing).
class SavedReadCtx final : public GradCtx {
 public:
  SavedReadCtx(Workspace& ws, const Attrs& attrs, std::vector<TensorMeta> in, std::vector<TensorMeta> out,
               std::vector<bool> needs)
      : ws_(ws), attrs_(attrs), in_(std::move(in)), out_(std::move(out)), needs_(std::move(needs)) {}
  Val grad_output(size_t i) override { return fresh(out_.at(i)); }
  Val input(size_t i) override {
    read.insert({SavedRef::input, static_cast<int>(i)});
    return fresh(in_.at(i));
  }
  Val output(size_t i) override {
    read.insert({SavedRef::output, static_cast<int>(i)});
    return fresh(out_.at(i));
  }
  const Attrs& attrs() const override { return attrs_; }
  const TensorMeta& input_meta(size_t i) const override { return in_.at(i); }
  const TensorMeta& output_meta(size_t i) const override { return out_.at(i); }
  size_t num_inputs() const override { return in_.size(); }
  bool needs_grad(size_t i) const override { return needs_.at(i); }
  std::vector<Val> call_op(const OpDef& op, const std::vector<Val>& inputs, const AttrMap& attrs) override {
    std::vector<TensorMeta> metas;
    for (auto& v : inputs) metas.push_back(meta(v.id));
    std::vector<Val> outs;
    for (auto& m : ws_.infer(op, metas, op.resolve(attrs))) outs.push_back(fresh(m));
    return outs;
  }
  Val scalar(double, DType dtype) override { return fresh({{}, dtype, Device::cpu}); }
  const TensorMeta& meta(int id) const override { return metas_.at(static_cast<size_t>(id)); }

  std::set<std::pair<SavedRef::Kind, int>> read;

 private:
  Val fresh(const TensorMeta& m) {
    metas_.push_back(m);
    return {this, static_cast<int>(metas_.size()) - 1};
  }
  Workspace& ws_;
  Attrs attrs_;
  std::vector<TensorMeta> in_, out_, metas_;
  std::vector<bool> needs_;
};

// The saved tensors (present in this call) that `op`'s backward reads for these inputs.
std::set<std::pair<SavedRef::Kind, int>> saved_reads(Workspace& ws, const OpDef& op, const Attrs& attrs,
                                                     const std::vector<Tensor>& ins) {
  std::vector<TensorMeta> in;
  std::vector<bool> needs;
  for (auto& t : ins) {
    in.push_back({t.shape(), t.dtype(), t.device()});
    needs.push_back(t.requires_grad());
  }
  SavedReadCtx ctx(ws, attrs, in, ws.infer(op, in, attrs), needs);
  op.backward(ctx);
  return ctx.read;
}

}  // namespace

GradcheckResult gradcheck_case(const OpDef& op, const GradcheckCase& c, const std::string& algo, size_t case_index,
                               uint64_t seed, Device device) {
  Workspace ws;  // private: nothing of the student's workspace is touched
  WorkspaceScope scope(ws);
  GradcheckResult r;
  r.op = op.name;
  r.algo = algo;
  r.note = c.note;
  r.case_index = case_index;
  try {
    Attrs attrs = op.resolve(c.attrs);
    // On another device the inputs are copies there; the differences perturb the host copies
    // and copy the perturbed input over for each evaluation.
    const std::vector<Tensor> host = make_case_inputs(c, seed);
    std::vector<Tensor> ins;
    for (const Tensor& t : host) ins.push_back(device == Device::cpu ? t : t.to(device));
    for (size_t i = 0; i < ins.size(); ++i)
      if (c.inputs[i].differentiable && is_floating(ins[i].dtype())) ins[i].set_requires_grad(true);

    auto outs = ws.call_multi(op, ins, attrs, algo);
    // The outputs a gradient flows from: the floating-point ones the caller gets (topk's values,
    // not its int64 indices; not an @op's hidden outputs).
    std::vector<size_t> differentiable;
    for (size_t o = 0; o + static_cast<size_t>(op.hidden_outputs) < outs.size(); ++o)
      if (is_floating(outs[o].dtype())) differentiable.push_back(o);
    if (differentiable.empty()) throw Error("gradcheck: the op has no floating-point output");
    // Weights r_o make L = Σ_o sum(r_o * y_o) sensitive to every output element; one backward
    // per output adds its part to the inputs' .grad.
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<Tensor> weights;
    for (size_t o : differentiable) {
      Tensor w = Tensor::empty(outs[o].shape(), DType::f64, MemCategory::input);
      for (int64_t i = 0; i < w.numel(); ++i) w.data<double>()[i] = u(rng);
      weights.push_back(w);
    }
    for (size_t j = 0; j < differentiable.size(); ++j)
      ws.backward(outs[differentiable[j]], weights[j], /*retain_graph=*/j + 1 < differentiable.size());

    std::vector<Tensor> evaluated = ins;  // what loss() runs on (on cpu: ins itself, perturbed in place)
    auto loss = [&]() {
      NoGradGuard ng;
      const std::vector<Tensor> ys = ws.call_multi(op, evaluated, attrs, algo);
      ws.reset_graph();
      double acc = 0;
      for (size_t j = 0; j < differentiable.size(); ++j) {
        const Tensor y = device == Device::cpu
                             ? ys[differentiable[j]].contiguous()
                             : ys[differentiable[j]].to(Device::cpu, MemCategory::temporary).contiguous();
        for (int64_t i = 0; i < y.numel(); ++i) acc += y.get(i) * weights[j].data<double>()[i];
      }
      return acc;
    };
    if (device == Device::cpu)
      for (auto& [kind, index] : saved_reads(ws, op, attrs, ins)) r.saved_read.push_back({kind, index});
    const double eps = 1e-6;
    r.passed = true;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!ins[k].requires_grad()) continue;
      Tensor g = ins[k].grad();
      if (!g.defined()) {
        r.passed = false;
        r.message = "no gradient reached input " + std::to_string(k);
        return r;
      }
      if (device != Device::cpu) g = g.to(Device::cpu, MemCategory::temporary);
      double* x = host[k].data<double>();
      auto refresh = [&] {
        if (device != Device::cpu) evaluated[k] = host[k].to(device);
      };
      for (int64_t i = 0; i < ins[k].numel(); ++i) {
        const double saved = x[i];
        x[i] = saved + eps;
        refresh();
        const double fp = loss();
        x[i] = saved - eps;
        refresh();
        const double fm = loss();
        x[i] = saved;
        refresh();
        const double numeric = (fp - fm) / (2 * eps);
        const double analytic = g.get(i);
        const double err = std::fabs(analytic - numeric);
        r.max_abs_error = std::max(r.max_abs_error, err);
        r.max_rel_error = std::max(r.max_rel_error, err / std::max(1e-12, std::fabs(numeric)));
        ++r.elements_checked;
        if (err > c.atol + c.rtol * std::fabs(numeric) && r.passed) {
          r.passed = false;
          const std::string name = k < op.input_names.size() ? op.input_names[k] : std::to_string(k);
          r.message = describe_mismatch("'" + name + "'", ins[k].shape(), i, analytic, numeric);
        }
      }
    }
  } catch (const std::exception& e) {
    r.passed = false;
    r.message = e.what();
  }
  return r;
}

std::vector<GradcheckResult> gradcheck_op(const OpDef& op, uint64_t seed, Device device) {
  std::vector<GradcheckResult> out;
  for (const auto& algo : op.algorithms) {
    if (!op.find_kernel(device, algo)) continue;
    if (std::find(op.float32_only.begin(), op.float32_only.end(), algo) != op.float32_only.end()) continue;
    for (size_t i = 0; i < op.gradcheck.size(); ++i)
      out.push_back(gradcheck_case(op, op.gradcheck[i], algo, i, seed + i, device));
  }
  if (device != Device::cpu) return out;  // what the op saves is the same on every device: checked on cpu
  // Every tensor the op saves is read by its backward in some case: else training holds it for nothing.
  for (const SavedRef& s : op.saves) {
    bool read = false, present = false;
    for (size_t i = 0; i < out.size(); ++i) {
      const GradcheckCase& c = op.gradcheck[out[i].case_index];
      present = present || s.kind == SavedRef::output || static_cast<size_t>(s.index) < c.inputs.size();
      for (auto& r : out[i].saved_read) read = read || (r.kind == s.kind && r.index == s.index);
    }
    if (read || !present || out.empty()) continue;
    const std::string what = s.kind == SavedRef::input
                                 ? "input " + op.input_names.at(std::min<size_t>(s.index, op.input_names.size() - 1))
                                 : "output " + std::to_string(s.index);
    out[0].passed = false;
    out[0].message = "saves " + what + " for backward, but its backward never reads it";
  }
  return out;
}

}  // namespace opscope
