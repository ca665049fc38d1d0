// Tracing a user @op's body: the interpreter runs the def in static mode against placeholders
// of the call's shapes, recording into a graph of its own (not the user's). The graph is the
// op's kernel for every call with those shapes and attributes, and what the figure draws when
// the node is expanded. Also the hooks that keep a body honest while it is traced.
#include <algorithm>
#include <cstdio>
#include <set>

#include "app/lang/call_args.h"
#include "app/lang/interpreter.h"
#include "app/lang/user_op_state.h"

namespace opscope::lang {

namespace {

std::string trace_key(const std::vector<TensorMeta>& in, const Attrs& attrs) {
  std::string k;
  for (auto& m : in) k += shape_str(m.shape) + dtype_name(m.dtype) + device_name(m.device) + ";";
  for (auto& v : attrs.values()) {
    if (auto d = std::get_if<double>(&v)) {  // exact: beta=1.0 and beta=1.0000001 are two traces
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", *d);
      k += buf;
    } else {
      k += attr_value_str(v);
    }
    k += ";";
  }
  return k;
}

Value attr_value(const AttrValue& a) {
  struct V {
    Value operator()(int64_t x) const { return Value::Int(x); }
    Value operator()(double x) const { return Value::Real(x); }
    Value operator()(bool x) const { return Value::Bool(x); }
    Value operator()(const std::string& x) const { return Value::Str(x); }
    Value operator()(const std::vector<int64_t>& x) const {
      std::vector<Value> items;
      for (auto i : x) items.push_back(Value::Int(i));
      return Value::List(std::move(items));
    }
  };
  return std::visit(V{}, a);
}

[[noreturn]] void fail_at_def(const UserOp& u, const std::string& message, const std::string& hint = {}) {
  LangError e(message, u.pos.line, u.pos.col, hint);
  e.set_source(u.fn->source);
  throw e;
}

// Restores what a trace changes in the workspace, whatever way it ends.
struct TraceGuard {
  Workspace& ws;
  std::vector<UserOps::Frame>& stack;
  bool grad;
  Phase phase;
  TraceGuard(Workspace& w, std::vector<UserOps::Frame>& s, UserOp* op, Phase p)
      : ws(w), stack(s), grad(w.grad_enabled()), phase(w.phase()) {
    ws.set_grad_enabled(false);  // a body saves nothing for autograd: its backward is written by hand
    ws.set_phase(p);
    stack.push_back(UserOps::Frame{op, {}, {}, false});
  }
  ~TraceGuard() {
    stack.pop_back();
    ws.set_grad_enabled(grad);
    ws.set_phase(phase);
  }
};

// The outputs and saved tensors of one trace, fixed as the op's layout by its first trace.
UserOp::Layout layout_of(const std::vector<Value>& returned, const UserOps::Frame& frame,
                         const std::vector<Tensor>& placeholders) {
  UserOp::Layout L;
  L.known = true;
  L.returned = static_cast<int>(returned.size());
  int hidden = L.returned;
  for (size_t k = 0; k < frame.saved.size(); ++k) {
    const TensorImpl* t = frame.saved[k].impl();
    UserOp::Layout::Saved slot{UserOp::Layout::Saved::computed, -1};
    for (size_t i = 0; i < placeholders.size(); ++i)
      if (placeholders[i].impl() == t) slot = {UserOp::Layout::Saved::input, static_cast<int>(i)};
    for (size_t i = 0; i < returned.size() && slot.index < 0; ++i)  // a returned output is saved as itself, not twice
      if (returned[i].kind() == Value::tensor && returned[i].as_tensor().impl() == t)
        slot = {UserOp::Layout::Saved::output, static_cast<int>(i)};
    if (slot.index < 0) slot.index = hidden++;
    L.saved.push_back(slot);
    L.saved_names.push_back(frame.saved_names[k]);
  }
  for (size_t k = 0; k < returned.size(); ++k)
    if (returned[k].kind() == Value::tensor) L.grad_of.push_back(static_cast<int>(k));
  return L;
}

std::string saves_str(const UserOp::Layout& L) {
  std::string s;
  for (auto& n : L.saved_names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "nothing" : s;
}

// The first trace tells the OpDef what every call returns and saves.
void adopt_layout(UserOp& u, const UserOp::Layout& L) {
  u.layout = L;
  OpDef& d = *u.def;
  int hidden = 0;
  d.saves.clear();
  for (const auto& slot : L.saved) {
    d.saves.push_back({slot.kind == UserOp::Layout::Saved::input ? SavedRef::input : SavedRef::output, slot.index});
    hidden += slot.kind == UserOp::Layout::Saved::computed;
  }
  d.hidden_outputs = u.is_backward ? 0 : hidden;
  d.num_outputs = u.is_backward ? static_cast<int>(L.grad_of.size()) : L.returned + hidden;
  d.output_names.clear();
  for (int i = 0; i < L.returned; ++i)
    d.output_names.push_back(L.returned == 1 ? "output" : "output " + std::to_string(i));
  for (size_t k = 0; k < L.saved.size(); ++k)
    if (L.saved[k].kind == UserOp::Layout::Saved::computed) d.output_names.push_back(L.saved_names[k]);
}

}  // namespace

std::shared_ptr<const OpTrace> trace_op(UserOp& u, const std::vector<TensorMeta>& given, const Attrs& attrs) {
  std::vector<TensorMeta> in = given;
  const Device dev = op_device(in);
  for (auto& m : in) m.device = dev;  // 0-d constants follow the data, as in any call
  const std::string key = trace_key(in, attrs);
  if (auto it = u.traces.find(key); it != u.traces.end()) return it->second;
  if (!u.owner) throw Error(u.name + ": the session that defined this @op has ended", "define it again with @op");
  UserOps& ops = *u.owner;
  for (auto& f : ops.stack())
    if (f.op == &u)
      throw Error(u.name + " calls itself: an @op's body cannot call the op it defines",
                  "an @op runs as one kernel; compute its result with other operators");
  Interpreter& interp = ops.interp();
  Workspace& ws = interp.ws();
  auto trace = std::make_shared<OpTrace>();
  auto body = std::make_shared<NodeBody>();
  {
    RecordInto record(ws, body->graph);  // until the scope ends, ws.graph() is the body's
    Graph& graph = ws.graph();
    StaticModeGuard static_mode(ws, true);
    TraceGuard guard(ws, ops.stack(), &u, u.is_backward ? Phase::backward : Phase::forward);
    CallArgs args;
    args.pos = u.pos;
    std::vector<Tensor> placeholders;
    for (size_t i = 0; i < in.size(); ++i) {
      Tensor t = Tensor::symbolic(in[i].shape, in[i].dtype, in[i].device);
      t.set_name(u.tensor_params.at(i));
      const int v = ws.value_of(t);
      graph.value(v).placeholder = true;
      body->inputs.push_back(v);
      placeholders.push_back(t);
      args.positional.push_back(Value::Tensor_(t));
      args.positions.push_back(u.pos);
    }
    for (size_t j = 0; j < u.attr_params.size(); ++j)
      args.keyword.emplace_back(u.attr_params[j], attr_value(attrs.values().at(j)));
    Value result;
    const std::string scope = ws.scope().empty() ? u.fn->name : ws.scope() + "/" + u.fn->name;
    try {
      result = interp.call_value(Value::Of(u.fn), args);
    } catch (const LangError& e) {  // positioned in the body; the message says which call it was
      LangError again(u.name + "(" + traced_for(u, in, attrs) + "): " + e.what(), e.line(), e.col(), e.hint());
      again.set_source(e.source() ? e.source() : u.fn->source);
      throw again;
    } catch (const Error& e) {
      fail_at_def(u, u.name + "(" + traced_for(u, in, attrs) + "): " + e.what(), e.hint());
    }
    const UserOps::Frame& frame = ops.stack().back();
    std::vector<Value> returned =
        result.kind() == Value::tuple || result.kind() == Value::list ? *result.items() : std::vector<Value>{result};
    if (u.is_backward) {
      const auto fwd = u.forward.lock();
      const size_t want = fwd ? fwd->tensor_params.size() : returned.size();
      if (returned.size() != want)
        fail_at_def(u,
                    u.name + " returned " + std::to_string(returned.size()) + " gradient" +
                        (returned.size() == 1 ? "" : "s") + " but " + (fwd ? fwd->name : std::string("its op")) +
                        " has " + std::to_string(want) + " tensor input" + (want == 1 ? "" : "s") +
                        (fwd ? " (" +
                                   [&] {
                                     std::string s;
                                     for (auto& p : fwd->tensor_params) s += (s.empty() ? "" : ", ") + p;
                                     return s;
                                   }() +
                                   ")"
                             : std::string()),
                    "return one gradient per tensor input, in order, and None for an input that gets none");
    }
    for (size_t k = 0; k < returned.size(); ++k) {
      const Value& r = returned[k];
      if (r.kind() == Value::tensor) continue;
      if (u.is_backward && r.kind() == Value::none) continue;
      fail_at_def(u,
                  u.name + " returned " + (returned.size() > 1 ? "as its value " + std::to_string(k + 1) + " " : "") +
                      "a " + kind_name(r) + ", not a tensor",
                  r.kind() == Value::none ? "did its body forget to return?"
                                          : "an op returns tensors: wrap a number with tensor(...)");
    }
    if (u.is_backward &&
        std::none_of(returned.begin(), returned.end(), [](const Value& r) { return r.kind() == Value::tensor; }))
      fail_at_def(u, u.name + " returned no gradient at all", "return a gradient for at least one tensor input");
    const UserOp::Layout L = layout_of(returned, frame, placeholders);
    if (!u.layout.known) {
      // A statement that fails after this first trace leaves the op as it was before it.
      interp.on_undo([&u, def = *u.def] {
        u.layout = {};
        u.def->saves = def.saves;
        u.def->num_outputs = def.num_outputs;
        u.def->hidden_outputs = def.hidden_outputs;
        u.def->output_names = def.output_names;
      });
      adopt_layout(u, L);
    } else if (L.returned != u.layout.returned || L.saved != u.layout.saved || L.grad_of != u.layout.grad_of) {
      fail_at_def(u,
                  u.name + "(" + traced_for(u, in, attrs) + ") returns " + std::to_string(L.returned) + " and saves " +
                      saves_str(L) + ", but its first call returned " + std::to_string(u.layout.returned) +
                      " and saved " + saves_str(u.layout),
                  "an @op returns and saves the same tensors in every call (shapes may differ)");
    }
    for (auto& r : returned)
      if (r.kind() == Value::tensor) body->outputs.push_back(ws.value_of(r.as_tensor()));
    for (size_t k = 0; k < frame.saved.size(); ++k)
      if (L.saved[k].kind == UserOp::Layout::Saved::computed) body->outputs.push_back(ws.value_of(frame.saved[k]));
    // Scopes inside a body are the body's own (a def it calls), not where it was first traced.
    for (size_t i = 0; i < graph.num_nodes(); ++i) {
      std::string& sc = graph.node(static_cast<int>(i)).scope;
      if (sc.rfind(scope, 0) == 0) sc = sc.substr(std::min(sc.size(), scope.size() + 1));
    }
    // Unnamed results are named for the figure: "out" (or out0, out1...), a gradient "dx".
    const auto fwd = u.forward.lock();
    for (size_t k = 0; k < L.grad_of.size(); ++k) {
      const int v = body->outputs[k];
      if (!graph.value(v).name.empty() || graph.value(v).producer < 0) continue;
      const size_t slot = static_cast<size_t>(L.grad_of[k]);
      graph.name_value(v, u.is_backward && fwd   ? "d" + fwd->tensor_params.at(slot)
                          : returned.size() == 1 ? std::string("out")
                                                 : "out" + std::to_string(slot));
    }
    // The body's own constants stay with it (literals, factories); nothing else is held.
    for (size_t v = 0; v < graph.num_values(); ++v) {
      ValueInfo& vi = graph.value(static_cast<int>(v));
      if (vi.producer < 0 && !vi.placeholder && !vi.constant.defined())
        if (auto t = vi.tensor.lock(); t && t->storage) vi.constant = Tensor(t);
      vi.tensor.reset();
    }
  }
  for (int v : body->outputs) {
    TensorMeta m = body->graph.value(v).meta;
    m.device = dev;
    trace->outputs.push_back(m);
  }
  trace->cost = body_cost(*body);
  trace->body = std::move(body);
  u.traces[key] = trace;
  // Its constants are memory of the workspace: a failed statement takes the trace back too.
  interp.on_undo([&u, key] { u.traces.erase(key); });
  return trace;
}

// --- the hooks --------------------------------------------------------------------------------

void UserOps::check_builtin(const Builtin& b, Pos p) const {
  static const std::set<std::string> allowed = {"tensor", "zeros", "ones",  "full", "arange", "eye",
                                                "len",    "range", "float", "int",  "str",    "save"};
  if (allowed.count(b.name)) return;
  // A builtin named like an operator (log(x) is ln, log("loss", v) a metric) is that operator
  // on tensors: `opscope ops` lists it, so a body may use it.
  if (OpRegistry::instance().find(b.name)) return;
  const std::string op = stack_.back().op->name;
  std::string why = b.name == "randn" || b.name == "rand" || b.name == "seed"
                        ? "its body is traced once, so every call would get the same numbers"
                    : b.name == "print" ? "its body runs once, when it is traced, not at every call"
                    : b.name == "item" || b.name == "detach"
                        ? "its body is traced with shapes only, and nothing in it is differentiated"
                        : "its body is a kernel of operators, traced once per input shapes";
  in_.fail(p, b.name + "() cannot be called in the body of @op " + op + ": " + why,
           "a body uses operators, tensor factories (zeros, ones, full, arange, eye, tensor), len, range, float, int, "
           "str and save");
}

void UserOps::check_global(const std::string& name, const Value& v, Pos p) const {
  const bool holds_tensor =
      v.kind() == Value::tensor ||
      ((v.kind() == Value::list || v.kind() == Value::tuple) &&
       std::any_of(v.items()->begin(), v.items()->end(), [](const Value& x) { return x.kind() == Value::tensor; }));
  if (!holds_tensor) return;
  if (const auto* locals = in_.locals(); locals && locals->count(name)) return;
  const std::string op = stack_.back().op->name;
  in_.fail(p,
           "the body of @op " + op + " reads the global " + (v.kind() == Value::tensor ? "tensor" : "list of tensors") +
               " '" + name + "'",
           "an op sees only its inputs and attributes: pass " + name + " as a parameter of " + op);
}

void UserOps::name_local(const std::string& name, const Value& v) const {
  if (v.kind() != Value::tensor || !v.as_tensor().defined()) return;
  Graph& g = in_.ws().graph();
  const int id = v.as_tensor().impl()->value_id;
  if (id >= 0 && static_cast<size_t>(id) < g.num_values() && g.value(id).tensor.lock().get() == v.as_tensor().impl() &&
      g.value(id).name.empty())
    g.name_value(id, name);
}

bool UserOps::in_body_save(CallArgs& a) {
  if (!tracing()) return false;
  Frame& f = stack_.back();
  const std::string& op = f.op->name;
  if (!a.positional.empty() && a.positional[0].kind() == Value::string)
    in_.fail(a.pos, "the body of @op " + op + " cannot write files", "save(\"f.npy\", x) belongs outside the op");
  if (f.op->is_backward)
    in_.fail(a.pos, "save() in " + op + ": a backward saves nothing", "what it needs arrives as its parameters");
  if (f.save_called)
    in_.fail(a.pos, "save() is called twice in the body of " + op,
             "save every tensor backward needs in one call: save(x, s)");
  if (!a.keyword.empty()) in_.fail(a.pos, "save() takes tensors, not keywords");
  if (a.positional.empty()) in_.fail(a.pos, "save() needs the tensors to keep for backward", "e.g. save(x, s)");
  for (size_t i = 0; i < a.positional.size(); ++i) {
    const Value& v = a.positional[i];
    if (v.kind() != Value::tensor)
      in_.fail(a.positions[i], std::string("save() keeps tensors for backward, got a ") + kind_name(v),
               "attributes reach backward by themselves, as its parameters with defaults");
    for (auto& t : f.saved)
      if (t.impl() == v.as_tensor().impl()) in_.fail(a.positions[i], "save() got the same tensor twice");
    std::string name = "saved" + std::to_string(i);
    if (const auto* locals = in_.locals())
      for (auto& [n, local] : *locals)
        if (local.kind() == Value::tensor && local.as_tensor().impl() == v.as_tensor().impl()) name = n;
    f.saved.push_back(v.as_tensor());
    f.saved_names.push_back(name);
  }
  f.save_called = true;
  return true;
}

void install_user_op_builtins(std::map<std::string, Builtin>& table) {
  const Builtin npy = table.at("save");
  table["save"] = Builtin{"save", "save(path, x), or save(*tensors) in an @op's body",
                          "writes x to a NumPy .npy file; in an @op's body, keeps the tensors its backward receives",
                          [npy](Interpreter& in, CallArgs& a) {
                            if (in.user_ops().in_body_save(a)) return Value::None();
                            if (!a.positional.empty() && a.positional[0].kind() == Value::tensor)
                              in.fail(a.pos, "save(x, ...) keeps tensors for backward, and only in the body of an @op",
                                      "to write a .npy file: save(\"x.npy\", x)");
                            return npy.fn(in, a);
                          }};
}

}  // namespace opscope::lang
