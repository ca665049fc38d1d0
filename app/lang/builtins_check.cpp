// Builtins for checking claims: allclose, all_finite and gradcheck. Lessons assert with them
// (`assert allclose(A.grad, dC @ B.T)`), and a student can gradcheck a function of their own.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "app/lang/interpreter.h"
#include "core/device.h"

namespace opscope::lang {

namespace {

const Value* keyword_arg(CallArgs& a, const char* name) {
  for (auto& [k, v] : a.keyword)
    if (k == name) return &v;
  return nullptr;
}

double number_keyword(Interpreter& in, CallArgs& a, const char* name, double def) {
  const Value* v = keyword_arg(a, name);
  if (!v) return def;
  if (!v->is_number()) in.fail(a.pos, std::string(name) + " must be a number");
  return v->number();
}

void only_keywords(Interpreter& in, CallArgs& a, const std::string& fn, std::initializer_list<const char*> allowed) {
  for (auto& [k, _] : a.keyword) {
    bool ok = false;
    for (const char* n : allowed) ok = ok || k == n;
    if (!ok) in.fail(a.pos, fn + "() has no keyword argument '" + k + "'");
  }
}

Tensor tensor_arg(Interpreter& in, CallArgs& a, size_t i, const std::string& fn) {
  if (i >= a.positional.size()) in.fail(a.pos, fn + "() needs " + std::to_string(i + 1) + " arguments");
  return in.to_tensor(a.positional[i], a.positions[i], DType::f64, false);
}

// A fixed, uneven projection: gradcheck differentiates sum(f(x) * r), so every output element
// counts with its own weight (a plain sum would hide errors that cancel).
Tensor projection(const Shape& shape, int64_t n) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = std::cos(0.7 * static_cast<double>(i) + 0.3);
  return Tensor::from_vector(r, shape, DType::f64, MemCategory::temporary);
}

}  // namespace

void install_check_builtins(std::map<std::string, Builtin>& B) {
  auto add = [&](std::string name, std::string sig, std::string doc, std::function<Value(Interpreter&, CallArgs&)> fn) {
    B[name] = Builtin{name, std::move(sig), std::move(doc), std::move(fn)};
  };

  add("allclose", "allclose(a, b, rtol=1e-5, atol=1e-6)", "True when |a - b| <= atol + rtol * |b| everywhere (same shape)",
      [](Interpreter& in, CallArgs& a) {
        only_keywords(in, a, "allclose", {"rtol", "atol"});
        if (a.positional.size() != 2) in.fail(a.pos, "allclose() takes two tensors");
        Tensor x = tensor_arg(in, a, 0, "allclose"), y = tensor_arg(in, a, 1, "allclose");
        if (x.shape() != y.shape())
          in.fail(a.pos, "allclose() of shapes " + shape_str(x.shape()) + " and " + shape_str(y.shape()), "compare tensors of one shape");
        const double rtol = number_keyword(in, a, "rtol", 1e-5), atol = number_keyword(in, a, "atol", 1e-6);
        const auto u = x.to_vector(), v = y.to_vector();
        for (size_t i = 0; i < u.size(); ++i)
          if (!(std::fabs(u[i] - v[i]) <= atol + rtol * std::fabs(v[i]))) return Value::Bool(false);
        return Value::Bool(true);
      });

  add("all_finite", "all_finite(x)", "True when x holds no NaN and no Inf", [](Interpreter& in, CallArgs& a) {
    only_keywords(in, a, "all_finite", {});
    if (a.positional.size() != 1) in.fail(a.pos, "all_finite() takes one tensor");
    for (double v : tensor_arg(in, a, 0, "all_finite").to_vector())
      if (!std::isfinite(v)) return Value::Bool(false);
    return Value::Bool(true);
  });

  add("node_count", "node_count(phase=None)", "nodes in the graph now (phase: \"forward\", \"backward\" or \"update\")",
      [](Interpreter& in, CallArgs& a) {
    only_keywords(in, a, "node_count", {});
    if (a.positional.size() > 1) in.fail(a.pos, "node_count() takes at most one argument");
    std::string phase = a.positional.empty() || a.positional[0].kind == Value::none ? "" : a.positional[0].s;
    if (!a.positional.empty() && a.positional[0].kind == Value::string && phase != "forward" && phase != "backward" &&
        phase != "update")
      in.fail(a.positions[0], "node_count()'s phase is \"forward\", \"backward\" or \"update\" (an optimizer's steps)");
    int64_t n = 0;
    for (const Node& node : in.ws().graph().nodes())
      if (phase.empty() || phase == phase_name(node.phase)) ++n;
    return Value::Int(n);
  });

  // Lessons run their GPU cells only where a device is (CI and most laptops have none).
  add("cuda_available", "cuda_available()", "True when this build has CUDA and a GPU is present (then x.to(\"cuda\") works)",
      [](Interpreter& in, CallArgs& a) {
        if (!a.positional.empty() || !a.keyword.empty()) in.fail(a.pos, "cuda_available() takes no arguments");
        return Value::Bool(device_available(Device::cuda));
      });

  // The median of several runs, after one warm-up run (first touches of memory are page
  // faults, not the kernel). Runs outside the graph: timing leaves no nodes behind.
  add("timeit", "timeit(f, *args, repeats=5, **kwargs)", "median seconds of f(*args, **kwargs) over repeats runs (after a warm-up run)",
      [](Interpreter& in, CallArgs& a) {
        if (a.positional.empty()) in.fail(a.pos, "timeit() needs a function", "e.g. timeit(relu, x)");
        const int repeats = static_cast<int>(number_keyword(in, a, "repeats", 5));
        if (repeats < 1 || repeats > 1000) in.fail(a.pos, "timeit()'s repeats is 1 to 1000");
        CallArgs call;
        call.pos = a.pos;
        call.positional.assign(a.positional.begin() + 1, a.positional.end());
        call.positions.assign(a.positions.begin() + 1, a.positions.end());
        for (auto& kw : a.keyword)  // every keyword but repeats goes to f: timeit(run, y, x=xb)
          if (kw.first != "repeats") call.keyword.push_back(kw);
        NoGradGuard no_grad;
        const Graph::Mark mark = in.ws().graph().mark();
        std::vector<double> times;
        for (int i = 0; i <= repeats; ++i) {
          CallArgs c = call;
          const auto t0 = std::chrono::steady_clock::now();
          in.call_value(a.positional[0], c);
          const auto t1 = std::chrono::steady_clock::now();
          if (i > 0) times.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        in.ws().graph().rollback(mark);
        std::sort(times.begin(), times.end());
        return Value::Real(times[times.size() / 2]);
      });

  add("gradcheck", "gradcheck(f, *inputs, eps=1e-6)",
      "the largest |analytic - numeric| gradient error of f at the inputs (float64, central differences)",
      [](Interpreter& in, CallArgs& a) {
        only_keywords(in, a, "gradcheck", {"eps"});
        if (a.positional.size() < 2) in.fail(a.pos, "gradcheck() needs a function and at least one input", "e.g. gradcheck(swish, randn(3))");
        const Value f = a.positional[0];
        if (f.kind != Value::function && f.kind != Value::builtin_fn && f.kind != Value::op_ref)
          in.fail(a.positions[0], "gradcheck()'s first argument must be a function");
        const double eps = number_keyword(in, a, "eps", 1e-6);
        std::vector<std::vector<double>> points;
        std::vector<Shape> shapes;
        int64_t total = 0;
        for (size_t i = 1; i < a.positional.size(); ++i) {
          Tensor t = tensor_arg(in, a, i, "gradcheck");
          points.push_back(t.to_vector());
          shapes.push_back(t.shape());
          total += t.numel();
        }
        if (total > 2000) in.fail(a.pos, "gradcheck() of " + std::to_string(total) + " input elements would take long", "use small inputs (up to 2000 elements)");
        Workspace& ws = in.ws();
        // sum(f(inputs) * r) for the given points; leaves require grad when `grad` is set.
        auto evaluate = [&](const std::vector<std::vector<double>>& at, bool grad, std::vector<Tensor>* leaves) {
          CallArgs call;
          call.pos = a.pos;
          for (size_t i = 0; i < at.size(); ++i) {
            Tensor t = Tensor::from_vector(at[i], shapes[i], DType::f64, MemCategory::input);
            if (grad) t.set_requires_grad(true);
            if (leaves) leaves->push_back(t);
            call.positional.push_back(Value::Tensor_(t));
            call.positions.push_back(a.pos);
          }
          Value y = in.call_value(f, call);
          if (y.kind != Value::tensor) in.fail(a.pos, "gradcheck(): the function returned a " + std::string(kind_name(y)) + ", not a tensor");
          Tensor yt = y.t.dtype() == DType::f64 ? y.t : ws.call("cast", {y.t}, {{"dtype", std::string("float64")}});
          return ws.call("sum", {ws.call("mul", {yt, projection(yt.shape(), yt.numel())})});
        };
        std::vector<Tensor> leaves;
        Tensor loss = evaluate(points, true, &leaves);
        if (!loss.requires_grad()) in.fail(a.pos, "gradcheck(): the function's output does not depend on its inputs through the graph");
        ws.backward(loss);
        double worst = 0;
        NoGradGuard no_grad;
        for (size_t i = 0; i < points.size(); ++i) {
          std::vector<double> analytic = leaves[i].grad().defined() ? leaves[i].grad().to_vector() : std::vector<double>(points[i].size(), 0.0);
          for (size_t j = 0; j < points[i].size(); ++j) {
            auto at = points;
            at[i][j] += eps;
            const double up = evaluate(at, false, nullptr).item();
            at[i][j] -= 2 * eps;
            const double down = evaluate(at, false, nullptr).item();
            worst = std::max(worst, std::fabs(analytic[j] - (up - down) / (2 * eps)));
          }
        }
        return Value::Real(worst);
      });
}

}  // namespace opscope::lang
