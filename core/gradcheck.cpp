#include "core/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "core/error.h"
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

std::string describe_mismatch(const std::string& input, const Shape& shape, int64_t flat, double analytic, double numeric) {
  char buf[160];
  std::snprintf(buf, sizeof buf, ": analytic %.6g vs numeric %.6g (relative error %.3g)", analytic, numeric,
                std::fabs(analytic - numeric) / std::max(1e-12, std::fabs(numeric)));
  return "input " + input + " " + element_index_str(shape, flat) + buf;
}

std::vector<Tensor> make_gradcheck_inputs(const GradcheckCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Tensor> ins;
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    const InputSpec& s = c.inputs[k];
    const bool integer = s.domain == Domain::index || s.domain == Domain::mask;
    Tensor t = Tensor::empty(s.shape, integer ? DType::i64 : DType::f64, MemCategory::input);
    const int64_t n = t.numel();
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t i = 0; i < n; ++i) {
      switch (s.domain) {
        case Domain::any: t.data<double>()[i] = u(rng); break;
        case Domain::positive: t.data<double>()[i] = 1.25 + 0.75 * u(rng); break;
        case Domain::away_zero: {
          double m = 0.6 + 0.4 * u(rng);
          t.data<double>()[i] = u(rng) < 0 ? -m : m;
          break;
        }
        case Domain::distinct: {  // offset per input, so two inputs never tie either
          const double step = 2.0 / static_cast<double>(std::max<int64_t>(1, n));
          t.data<double>()[i] = -1.0 + step * (static_cast<double>(perm[i]) + 0.3 * static_cast<double>(k + 1) / 4.0);
          break;
        }
        case Domain::index: t.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, s.index_max))); break;
        case Domain::mask: t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 2); break;
      }
    }
    ins.push_back(t);
  }
  return ins;
}

GradcheckResult gradcheck_case(const OpDef& op, const GradcheckCase& c, const std::string& algo, size_t case_index,
                               uint64_t seed) {
  Workspace ws;  // private: nothing of the student's workspace is touched
  WorkspaceScope scope(ws);
  GradcheckResult r;
  r.op = op.name;
  r.algo = algo;
  r.note = c.note;
  r.case_index = case_index;
  try {
    Attrs attrs = op.resolve(c.attrs);
    std::vector<Tensor> ins = make_gradcheck_inputs(c, seed);
    for (size_t i = 0; i < ins.size(); ++i)
      if (c.inputs[i].differentiable && is_floating(ins[i].dtype())) ins[i].set_requires_grad(true);

    auto outs = ws.call_multi(op, ins, attrs, algo);
    if (outs.size() != 1) throw Error("gradcheck supports single-output ops");
    // Weights r make L = sum(r * y) sensitive to every output element.
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Tensor weights = Tensor::empty(outs[0].shape(), DType::f64, MemCategory::input);
    for (int64_t i = 0; i < weights.numel(); ++i) weights.data<double>()[i] = u(rng);
    ws.backward(outs[0], weights);

    auto loss = [&]() {
      NoGradGuard ng;
      Tensor y = ws.call_multi(op, ins, attrs, algo)[0].contiguous();
      ws.reset_graph();
      double acc = 0;
      for (int64_t i = 0; i < y.numel(); ++i) acc += y.get(i) * weights.data<double>()[i];
      return acc;
    };
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
      double* x = ins[k].data<double>();
      for (int64_t i = 0; i < ins[k].numel(); ++i) {
        const double saved = x[i];
        x[i] = saved + eps;
        const double fp = loss();
        x[i] = saved - eps;
        const double fm = loss();
        x[i] = saved;
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

std::vector<GradcheckResult> gradcheck_op(const OpDef& op, uint64_t seed) {
  std::vector<GradcheckResult> out;
  for (const auto& algo : op.algorithms) {
    if (!op.find_kernel(Device::cpu, algo)) continue;
    for (size_t i = 0; i < op.gradcheck.size(); ++i) out.push_back(gradcheck_case(op, op.gradcheck[i], algo, i, seed + i));
  }
  return out;
}

}  // namespace opscope
