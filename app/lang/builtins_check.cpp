// Builtins for checking claims: allclose, all_finite and gradcheck. Lessons assert with them
// (`assert allclose(A.grad, dC @ B.T)`), and a student can gradcheck a function of their own.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "app/lang/interpreter.h"
#include "core/device.h"
#include "core/gradcheck.h"
#include "core/timing.h"

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
Tensor projection(const Shape& shape, int64_t n, size_t output = 0) {
  std::vector<double> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    r[static_cast<size_t>(i)] = std::cos(0.7 * static_cast<double>(i) + 0.3 + 1.1 * static_cast<double>(output));
  return Tensor::from_vector(r, shape, DType::f64, MemCategory::temporary);
}

// gradcheck(f, *inputs, **attributes): L = Σ_k sum(f(inputs)_k · r_k) differentiated by the
// engine's backward (the op's own, for an @op: its hand-written one) against central
// differences, every input element, in float64. Runs in dynamic mode and leaves the graph and
// the memory timeline as they were.
// The element with the largest |analytic - numeric| of one check.
struct WorstElement {
  std::string input;
  Shape shape;
  int64_t flat = -1;
  double analytic = 0, numeric = 0;
};

double check_gradients(Interpreter& in, CallArgs& a, WorstElement* worst_element = nullptr) {
  if (a.positional.size() < 2)
    in.fail(a.pos, "gradcheck() needs a function and at least one input", "e.g. gradcheck(swish, randn(3))");
  const Value f = a.positional[0];
  if (f.kind() != Value::function && f.kind() != Value::builtin_fn && f.kind() != Value::op_ref)
    in.fail(a.positions[0], "gradcheck()'s first argument must be a function or an operator");
  const double eps = number_keyword(in, a, "eps", 1e-6), atol = number_keyword(in, a, "atol", 1e-5),
               rtol = number_keyword(in, a, "rtol", 1e-3);
  std::vector<std::pair<std::string, Value>>
      attributes;  // every other keyword goes to f: gradcheck(swish, x, beta=2.0)
  for (auto& kw : a.keyword)
    if (kw.first != "eps" && kw.first != "atol" && kw.first != "rtol") attributes.push_back(kw);
  std::vector<std::vector<double>> points;
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  int64_t total = 0;
  for (size_t i = 1; i < a.positional.size(); ++i) {
    Tensor t = tensor_arg(in, a, i, "gradcheck");
    points.push_back(t.to_vector());
    shapes.push_back(t.shape());
    total += t.numel();
    const size_t k = i - 1;
    names.push_back(f.kind() == Value::op_ref && k < f.as_op().input_names.size()       ? f.as_op().input_names[k]
                    : f.kind() == Value::function && k < f.as_function()->params.size() ? f.as_function()->params[k]
                                                                                        : "input " + std::to_string(i));
  }
  if (total > 2000)
    in.fail(a.pos, "gradcheck() of " + std::to_string(total) + " input elements would take long",
            "use small inputs (up to 2000 elements)");
  Workspace& ws = in.ws();
  StaticModeGuard dynamic(ws, false);  // a numerical check needs values
  const Graph::Mark mark = ws.graph().mark();
  const size_t timeline = ws.tracker().timeline().size();
  // L for the given points; leaves require grad when `grad` is set.
  auto evaluate = [&](const std::vector<std::vector<double>>& at, bool grad, std::vector<Tensor>* leaves) {
    CallArgs call;
    call.pos = a.pos;
    call.keyword = attributes;
    for (size_t i = 0; i < at.size(); ++i) {
      Tensor t = Tensor::from_vector(at[i], shapes[i], DType::f64, MemCategory::input);
      if (grad) t.set_requires_grad(true);
      if (leaves) leaves->push_back(t);
      call.positional.push_back(Value::Tensor_(t));
      call.positions.push_back(a.pos);
    }
    const Value y = in.call_value(f, call);
    std::vector<Value> outs = y.kind() == Value::tuple || y.kind() == Value::list ? *y.items() : std::vector<Value>{y};
    Tensor loss;
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].kind() != Value::tensor)
        in.fail(a.pos, "gradcheck(): the function returned a " + std::string(kind_name(outs[k])) + ", not a tensor");
      Tensor yt = outs[k].as_tensor().dtype() == DType::f64
                      ? outs[k].as_tensor()
                      : ws.call("cast", {outs[k].as_tensor()}, {{"dtype", std::string("float64")}});
      Tensor term = ws.call("sum", {ws.call("mul", {yt, projection(yt.shape(), yt.numel(), k)})});
      loss = loss.defined() ? ws.call("add", {loss, term}) : term;
    }
    return loss;
  };
  std::vector<Tensor> leaves;
  Tensor loss = evaluate(points, true, &leaves);
  if (!loss.requires_grad())
    in.fail(a.pos, "gradcheck(): the function's output does not depend on its inputs through the graph");
  ws.backward(loss);
  double worst = 0, worst_failing = -1;
  std::string report;
  NoGradGuard no_grad;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<double> analytic =
        leaves[i].grad().defined() ? leaves[i].grad().to_vector() : std::vector<double>(points[i].size(), 0.0);
    for (size_t j = 0; j < points[i].size(); ++j) {
      auto at = points;
      at[i][j] += eps;
      const double up = evaluate(at, false, nullptr).item();
      at[i][j] -= 2 * eps;
      const double down = evaluate(at, false, nullptr).item();
      const double numeric = (up - down) / (2 * eps), err = std::fabs(analytic[j] - numeric);
      if (err >= worst && worst_element)
        *worst_element = {names[i], shapes[i], static_cast<int64_t>(j), analytic[j], numeric};
      worst = std::max(worst, err);
      if (err > atol + rtol * std::fabs(numeric) && err > worst_failing) {
        worst_failing = err;
        report = describe_mismatch("'" + names[i] + "'", shapes[i], static_cast<int64_t>(j), analytic[j], numeric);
      }
    }
  }
  ws.graph().rollback(mark);  // the check's own nodes and steps are not the student's program
  ws.tracker().truncate_timeline(timeline);
  if (worst_failing >= 0 && !worst_element) {
    const std::string fname = f.kind() == Value::op_ref     ? f.as_op().name
                              : f.kind() == Value::function ? f.as_function()->name
                                                            : f.as_builtin().name;
    char tol[96];
    std::snprintf(tol, sizeof tol, " (largest error %.3g, tolerance %g + %g·|numeric|)", worst, atol, rtol);
    in.out() << "gradcheck(" << fname << ") failed: " << report << tol << "\n";
  }
  return worst;
}

}  // namespace

void install_check_builtins(std::map<std::string, Builtin>& B) {
  auto add = [&](std::string name, std::string sig, std::string doc, std::function<Value(Interpreter&, CallArgs&)> fn) {
    B[name] = Builtin{name, std::move(sig), std::move(doc), std::move(fn)};
  };

  add("allclose", "allclose(a, b, rtol=1e-5, atol=1e-6)",
      "True when |a - b| <= atol + rtol * |b| everywhere (same shape)", [](Interpreter& in, CallArgs& a) {
        only_keywords(in, a, "allclose", {"rtol", "atol"});
        if (a.positional.size() != 2) in.fail(a.pos, "allclose() takes two tensors");
        Tensor x = tensor_arg(in, a, 0, "allclose"), y = tensor_arg(in, a, 1, "allclose");
        if (x.shape() != y.shape())
          in.fail(a.pos, "allclose() of shapes " + shape_str(x.shape()) + " and " + shape_str(y.shape()),
                  "compare tensors of one shape");
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

  add("node_count", "node_count(phase=None, op=None)",
      "nodes in the graph now (phase: \"forward\", \"backward\" or \"update\"; op: only that operator's, e.g. "
      "\"matmul\")",
      [](Interpreter& in, CallArgs& a) {
        only_keywords(in, a, "node_count", {"op"});
        const Value* op = keyword_arg(a, "op");
        if (op && op->kind() != Value::string)
          in.fail(a.pos, "node_count()'s op is an operator's name, e.g. op=\"matmul\"");
        if (a.positional.size() > 1) in.fail(a.pos, "node_count() takes at most one argument");
        std::string phase =
            a.positional.empty() || a.positional[0].kind() != Value::string ? "" : a.positional[0].as_str();
        if (!a.positional.empty() && a.positional[0].kind() == Value::string && phase != "forward" &&
            phase != "backward" && phase != "update")
          in.fail(a.positions[0],
                  "node_count()'s phase is \"forward\", \"backward\" or \"update\" (an optimizer's steps)");
        int64_t n = 0;
        for (const Node& node : in.ws().graph().nodes())
          if ((phase.empty() || phase == phase_name(node.phase)) && (!op || (node.op && node.op->name == op->as_str())))
            ++n;
        return Value::Int(n);
      });

  // Lessons run their GPU cells only where a device is (CI and most laptops have none).
  add("cuda_available", "cuda_available()",
      "True when this build has CUDA and a GPU is present (then x.to(\"cuda\") works)",
      [](Interpreter& in, CallArgs& a) {
        if (!a.positional.empty() || !a.keyword.empty()) in.fail(a.pos, "cuda_available() takes no arguments");
        return Value::Bool(device_available(Device::cuda));
      });
  // As torch.cuda.is_initialized(): the runtime starts at the first use of the device, so a
  // script that never asks costs no CUDA start-up.
  add("cuda_initialized", "cuda_initialized()",
      "True once this process has started the CUDA runtime (the first use of the device starts it)",
      [](Interpreter& in, CallArgs& a) {
        if (!a.positional.empty() || !a.keyword.empty()) in.fail(a.pos, "cuda_initialized() takes no arguments");
        return Value::Bool(device_initialized(Device::cuda));
      });

  // Python's time.perf_counter: what timeit cannot time (a training step with its backward
  // pass and updates) is timed as the difference of two calls.
  add("perf_counter", "perf_counter()",
      "seconds on a monotonic clock: the difference of two calls times what ran between them",
      [](Interpreter& in, CallArgs& a) {
        if (!a.positional.empty() || !a.keyword.empty()) in.fail(a.pos, "perf_counter() takes no arguments");
        return Value::Real(std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
      });

  // The median of several runs, after one warm-up run (first touches of memory are page
  // faults, not the kernel). Runs outside the graph: timing leaves no nodes behind.
  add("timeit", "timeit(f, *args, repeats=5, **kwargs)",
      "median seconds of f(*args, **kwargs) over repeats runs (after a warm-up run; where the clock is coarse, "
      "as a browser's, each repeat is the average of a batch of runs)",
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
          CallArgs c;
          // (Where the clock is coarse, a repeat is the average of a batch of calls.)
          const double s = seconds_per_run([&] { c = call; }, [&] { in.call_value(a.positional[0], c); });
          if (i > 0) times.push_back(s);
        }
        in.ws().graph().rollback(mark);
        std::sort(times.begin(), times.end());
        return Value::Real(times[times.size() / 2]);
      });

  add("gradcheck", "gradcheck(f, *inputs, eps=1e-6, atol=1e-5, rtol=1e-3, **attributes)",
      "the largest |analytic - numeric| gradient error of f at the inputs (float64, central differences); "
      "past the tolerance it prints the worst element: which input, where, both values",
      [](Interpreter& in, CallArgs& a) { return Value::Real(check_gradients(in, a)); });
  // For an exercise's checks: the worst element as the feedback a student reads.
  add("expect_gradcheck", "expect_gradcheck(f, *inputs, eps=1e-6, atol=1e-5, rtol=1e-3, **attributes)",
      "True when f's backward agrees with central differences; else an error naming the input, the element and both "
      "values",
      [](Interpreter& in, CallArgs& a) {
        WorstElement w;
        check_gradients(in, a, &w);
        const double atol = number_keyword(in, a, "atol", 1e-5), rtol = number_keyword(in, a, "rtol", 1e-3);
        const double err = std::fabs(w.analytic - w.numeric);
        if (w.flat < 0 || err <= atol + rtol * std::fabs(w.numeric)) return Value::Bool(true);
        const Value& f = a.positional[0];
        const std::string fname = f.kind() == Value::op_ref     ? f.as_op().name
                                  : f.kind() == Value::function ? f.as_function()->name
                                                                : f.as_builtin().name;
        char values[160];
        std::snprintf(values, sizeof values,
                      ": the backward gives %.6g, central differences give %.6g (relative error %.3g)", w.analytic,
                      w.numeric, err / std::max(1e-12, std::fabs(w.numeric)));
        in.fail(a.pos,
                "the gradient of " + fname + " for its input '" + w.input + "' is wrong at " +
                    element_index_str(w.shape, w.flat) + values,
                "gradcheck_report(" + fname + ", ...) shows the same element in the REPL");
      });
  add("gradcheck_report", "gradcheck_report(f, *inputs, eps=1e-6, **attributes)",
      "gradcheck's worst element as (input, index, analytic, numeric, relative error), for checks to assert on",
      [](Interpreter& in, CallArgs& a) {
        WorstElement w;
        check_gradients(in, a, &w);
        std::vector<Value> index;
        for (auto i : element_index(w.shape, std::max<int64_t>(0, w.flat))) index.push_back(Value::Int(i));
        const double rel = std::fabs(w.analytic - w.numeric) / std::max(1e-12, std::fabs(w.numeric));
        return Value::List({Value::Str(w.input), Value::List(std::move(index)), Value::Real(w.analytic),
                            Value::Real(w.numeric), Value::Real(rel)},
                           Value::tuple);
      });
}

}  // namespace opscope::lang
