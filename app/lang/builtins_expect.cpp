// Builtins for an exercise's hidden checks: each names the failing element the way gradcheck
// does (which element, expected against got), so the feedback tells a student where to look.
// expect_gradcheck lives beside gradcheck in builtins_check.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/lang/interpreter.h"
#include "app/lang/user_op_state.h"
#include "app/lang/user_ops.h"
#include "core/gradcheck.h"

namespace opscope::lang {

namespace {

double number_keyword(Interpreter& in, CallArgs& a, const char* name, double def) {
  for (auto& [k, v] : a.keyword)
    if (k == name) {
      if (!v.is_number()) in.fail(a.pos, std::string(name) + " must be a number");
      return v.number();
    }
  return def;
}

std::string keyword_string(Interpreter& in, CallArgs& a, const char* name, const std::string& def) {
  for (auto& [k, v] : a.keyword)
    if (k == name) {
      if (v.kind() != Value::string) in.fail(a.pos, std::string(name) + " must be a string");
      return v.as_str();
    }
  return def;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// expect_close(got, expected, what="the result", rtol=1e-4, atol=1e-5): True, or an error naming
// the worst element, both values and how many elements differ.
Value expect_close(Interpreter& in, CallArgs& a) {
  for (auto& [k, _] : a.keyword)
    if (k != "what" && k != "rtol" && k != "atol") in.fail(a.pos, "expect_close() has no keyword argument '" + k + "'");
  if (a.positional.size() != 2)
    in.fail(a.pos, "expect_close() takes the value and what it should be", "expect_close(my_matmul(a, b), a @ b)");
  const std::string what = keyword_string(in, a, "what", "the result");
  const double rtol = number_keyword(in, a, "rtol", 1e-4), atol = number_keyword(in, a, "atol", 1e-5);
  if (a.positional[0].kind() != Value::tensor && !a.positional[0].is_number())
    in.fail(a.pos, what + " is a " + kind_name(a.positional[0]) + ", not a tensor");
  const Tensor got = in.to_tensor(a.positional[0], a.positions[0], DType::f64, false);
  const Tensor want = in.to_tensor(a.positional[1], a.positions[1], DType::f64, false);
  if (got.shape() != want.shape())
    in.fail(a.pos, what + " has shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape()));
  const auto u = got.to_vector(), v = want.to_vector();
  int64_t differ = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    const double err = std::fabs(u[i] - v[i]), allowed = atol + rtol * std::fabs(v[i]);
    if (err <= allowed) continue;  // NaN fails here too
    ++differ;
    const double excess = std::isnan(err) ? INFINITY : err - allowed;
    if (worst < 0 || excess > worst_excess) worst = static_cast<int64_t>(i), worst_excess = excess;
  }
  if (differ == 0) return Value::Bool(true);
  const size_t w = static_cast<size_t>(worst);
  std::string where = got.dim() == 0 ? what : what + " at " + element_index_str(got.shape(), worst);
  in.fail(a.pos,
          where + " is " + number_text(u[w]) + ", expected " + number_text(v[w]) + " (" + std::to_string(differ) +
              " of " + std::to_string(u.size()) + " elements differ)",
          "the largest difference is shown; tolerance " + number_text(atol) + " + " + number_text(rtol) +
              "·|expected|");
}

// saved_for_backward(f, *inputs, **attributes): what one call of f keeps for its backward, each
// as the name of the input it is ("a"), "output", or "computed [T, T]" for a tensor made inside.
Value saved_for_backward(Interpreter& in, CallArgs& a) {
  if (a.positional.size() < 2)
    in.fail(a.pos, "saved_for_backward() needs an operator and its inputs", "saved_for_backward(my_matmul, a, b)");
  const Value f = a.positional[0];
  if (f.kind() != Value::function && f.kind() != Value::op_ref && f.kind() != Value::builtin_fn)
    in.fail(a.positions[0], "saved_for_backward()'s first argument must be an operator or a function");
  Workspace& ws = in.ws();
  StaticModeGuard dynamic(ws, false);
  const Graph::Mark mark = ws.graph().mark();
  CallArgs call;
  call.pos = a.pos;
  call.keyword = a.keyword;
  std::vector<int> input_values;
  std::vector<std::string> names;
  for (size_t i = 1; i < a.positional.size(); ++i) {
    const Tensor given = in.to_tensor(a.positional[i], a.positions[i]);
    Tensor t = Tensor::zeros(given.shape(), given.dtype(), MemCategory::input);
    t.copy_from(given);
    t.set_requires_grad(true);  // an op saves only what a backward will need
    input_values.push_back(ws.value_of(t));
    const size_t k = i - 1;
    names.push_back(f.kind() == Value::op_ref && k < f.as_op().input_names.size()       ? f.as_op().input_names[k]
                    : f.kind() == Value::function && k < f.as_function()->params.size() ? f.as_function()->params[k]
                                                                                        : "input " + std::to_string(i));
    call.positional.push_back(Value::Tensor_(t));
    call.positions.push_back(a.positions[i]);
  }
  const Value y = in.call_value(f, call);
  std::vector<int> outputs;
  for (const Value& v : y.kind() == Value::tuple || y.kind() == Value::list ? *y.items() : std::vector<Value>{y})
    if (v.kind() == Value::tensor) outputs.push_back(ws.value_of(v.as_tensor()));
  std::vector<Value> out;
  const Graph& g = ws.graph();
  for (const Node& n : g.nodes()) {
    if (n.id < static_cast<int>(mark.nodes)) continue;
    for (const SavedTensor& st : n.saved) {
      std::string name;
      for (size_t k = 0; k < input_values.size() && name.empty(); ++k)
        if (st.value_id == input_values[k]) name = names[k];
      for (size_t k = 0; k < outputs.size() && name.empty(); ++k)
        if (st.value_id == outputs[k]) name = outputs.size() == 1 ? "output" : "output " + std::to_string(k);
      if (name.empty()) name = "computed " + shape_str(g.value(st.value_id).meta.shape);
      out.push_back(Value::Str(name));
    }
  }
  ws.graph().rollback(mark);  // the check's call is not the student's program
  // A set, in a fixed order: save(b, a) is as right as save(a, b).
  std::sort(out.begin(), out.end(), [](const Value& x, const Value& y) { return x.as_str() < y.as_str(); });
  return Value::List(std::move(out));
}

// expect_own_backward(f): True when f is an @op of the student's with a backward of their own;
// else an error saying who did the work (autograd, a built-in).
Value expect_own_backward(Interpreter& in, CallArgs& a) {
  if (a.positional.size() != 1 || !a.keyword.empty())
    in.fail(a.pos, "expect_own_backward() takes one operator", "expect_own_backward(my_matmul)");
  const Value& f = a.positional[0];
  const char* how =
      "write it as `@op def NAME(...)` that calls save(...), and its backward as `@NAME.backward def ...`";
  if (f.kind() == Value::function)
    in.fail(a.pos,
            f.as_function()->name +
                " is a plain def, so autograd differentiated it for you: the backward you are to write never ran",
            std::string(how));
  if (f.kind() != Value::op_ref)
    in.fail(a.pos, "this exercise needs an @op of yours, got a " + std::string(kind_name(f)), how);
  const UserOp* mine = in.user_ops().find_own(f.as_op().name);
  if (!mine) in.fail(a.pos, f.as_op().name + " is a built-in operator, not yours: its backward is the engine's", how);
  if (!mine->backward)
    in.fail(a.pos,
            "@op " + f.as_op().name + " has no @" + f.as_op().name +
                ".backward of yours: the engine differentiated its body",
            "add `@" + f.as_op().name + ".backward def ...` returning one gradient per input");
  return Value::Bool(true);
}

// op_calls(f, *inputs, op="matmul"): the input shapes of every call of `op` that one call of f
// makes, in order ([[M, K], [K, N]] for a product), counted as they run (a product whose result
// is thrown away counts too).
Value op_calls(Interpreter& in, CallArgs& a) {
  std::string op = "matmul";
  CallArgs call;
  for (auto& [k, v] : a.keyword) {
    if (k != "op" || v.kind() != Value::string)
      in.fail(a.pos, "op_calls() takes op=\"NAME\" only", "op_calls(blocked_matmul, A, B, 32, op=\"matmul\")");
    op = v.as_str();
  }
  if (a.positional.empty())
    in.fail(a.pos, "op_calls() needs a function and its arguments", "op_calls(blocked_matmul, A, B, 32)");
  call.pos = a.pos;
  call.positional.assign(a.positional.begin() + 1, a.positional.end());
  call.positions.assign(a.positions.begin() + 1, a.positions.end());
  std::vector<Value> seen;
  Interpreter::OpCallHook before;  // the hook this one wraps, put back when the call returns
  before = in.set_op_call_hook([&](const OpDef& d, const std::vector<Tensor>& inputs) {
    if (before) before(d, inputs);
    if (d.name != op) return;
    std::vector<Value> shapes;
    for (const Tensor& t : inputs) {
      std::vector<Value> dims;
      for (int64_t n : t.shape()) dims.push_back(Value::Int(n));
      shapes.push_back(Value::List(std::move(dims)));
    }
    seen.push_back(Value::List(std::move(shapes)));
  });
  struct Restore {
    Interpreter& in;
    Interpreter::OpCallHook o;
    ~Restore() { in.set_op_call_hook(std::move(o)); }
  } restore{in, before};
  in.call_value(a.positional[0], call);
  return Value::List(std::move(seen));
}

}  // namespace

void install_expect_builtins(std::map<std::string, Builtin>& B) {
  B["expect_close"] = Builtin{
      "expect_close", "expect_close(got, expected, what=\"the result\", rtol=1e-4, atol=1e-5)",
      "True when got is expected within tolerance; else an error naming the worst element: where, got, expected, "
      "how many differ (an exercise's checks use it)",
      expect_close};
  B["saved_for_backward"] =
      Builtin{"saved_for_backward", "saved_for_backward(f, *inputs, **attributes)",
              "what one call of f keeps for backward: input names (\"a\"), \"output\", or \"computed [shape]\", "
              "sorted (the order of save()'s arguments does not matter)",
              saved_for_backward};
  B["expect_own_backward"] =
      Builtin{"expect_own_backward", "expect_own_backward(f)",
              "True when f is an @op of yours with its own @f.backward; else an error saying that autograd "
              "or a built-in did the work (an exercise's checks use it)",
              expect_own_backward};
  B["op_calls"] =
      Builtin{"op_calls", "op_calls(f, *args, op=\"matmul\")",
              "calls f(*args) and returns the input shapes of every call of op it made, in order", op_calls};
}

}  // namespace opscope::lang
