// `@op` and `@NAME.backward`: the definitions, their checks at definition time, their OpDefs
// and the session's ownership of them in the global registry. Tracing a body (what a call
// runs) is in user_op_trace.cpp.
#include "app/lang/user_ops.h"

#include <algorithm>
#include <set>

#include "app/lang/call_args.h"
#include "app/lang/interpreter.h"
#include "app/lang/user_op_state.h"

namespace opscope::lang {

namespace {

// Which session owns each @op name in the (global) registry.
std::map<std::string, const UserOps*>& owners() {
  static std::map<std::string, const UserOps*> m;
  return m;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// --- reading the source of a definition -------------------------------------------------------

template <class F> void each_expr(const Expr& e, F& f) {
  f(e);
  for (auto& x : e.items)
    if (x) each_expr(*x, f);
  for (auto& a : e.args)
    if (a.value) each_expr(*a.value, f);
}

// Every statement (nested blocks too) and every expression in `b`.
template <class S, class F> void each_stmt(const Block& b, S& on_stmt, F& on_expr) {
  for (auto& s : b) {
    on_stmt(*s);
    for (auto& t : s->targets) each_expr(*t, on_expr);
    if (s->value) each_expr(*s->value, on_expr);
    if (s->message) each_expr(*s->message, on_expr);
    each_stmt(s->body, on_stmt, on_expr);
    each_stmt(s->orelse, on_stmt, on_expr);
  }
}

struct SourceFacts {
  std::vector<const Expr*> save_calls;
  std::vector<int> return_arity;  // per return statement
  std::set<std::string> assigned;  // names assigned in the body (params not included)
  std::vector<const Expr*> reads;  // every name read
};

void collect_targets(const Expr& t, std::set<std::string>& out) {
  if (t.kind == Expr::name) out.insert(t.text);
  for (auto& x : t.items)
    if (x && (t.kind == Expr::tuple || t.kind == Expr::list)) collect_targets(*x, out);
}

SourceFacts read_source(const Block& body) {
  SourceFacts f;
  auto on_stmt = [&](const Stmt& s) {
    if (s.kind == Stmt::ret)
      f.return_arity.push_back(!s.value                       ? 0
                               : s.value->kind == Expr::tuple ? static_cast<int>(s.value->items.size())
                                                              : 1);
    if (s.kind == Stmt::assign || s.kind == Stmt::aug_assign)
      for (auto& t : s.targets) collect_targets(*t, f.assigned);
    if (s.kind == Stmt::for_) f.assigned.insert(s.text);
  };
  auto on_expr = [&](const Expr& e) {
    if (e.kind == Expr::name) f.reads.push_back(&e);
    if (e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "save")
      f.save_calls.push_back(&e);
  };
  each_stmt(body, on_stmt, on_expr);
  return f;
}

// The docstring: a string literal as the body's first statement.
std::string docstring(const Block& body) {
  if (body.empty() || body[0]->kind != Stmt::expr || !body[0]->value || body[0]->value->kind != Expr::string) return {};
  std::string d = body[0]->value->text;
  const size_t a = d.find_first_not_of(" \t\n"), b = d.find_last_not_of(" \t\n");
  return a == std::string::npos ? std::string() : d.substr(a, b - a + 1);
}

AttrSpec attr_from_default(Interpreter& in, const std::string& op, const Param& p, const Value& v) {
  switch (v.kind()) {
    case Value::integer: return make_attr(p.name, AttrType::integer, v.as_int(), "");
    case Value::real: return make_attr(p.name, AttrType::real, v.as_real(), "");
    case Value::boolean: return make_attr(p.name, AttrType::boolean, v.as_bool(), "");
    case Value::string: return make_attr(p.name, AttrType::string, v.as_str(), "");
    case Value::list:
    case Value::tuple: {
      std::vector<int64_t> ints;
      for (auto& x : *v.items()) {
        if (x.kind() != Value::integer)
          in.fail(p.pos, "@op " + op + ": attribute '" + p.name + "' has a list default with a " + kind_name(x),
                  "a list attribute holds integers, e.g. axes=[0, 1]");
        ints.push_back(x.as_int());
      }
      return make_attr(p.name, AttrType::int_list, ints, "");
    }
    default:
      in.fail(p.pos,
              "@op " + op + ": the default of '" + p.name + "' is a " + kind_name(v) +
                  "; a parameter with a default is an attribute",
              "attributes are int, float, bool, str or a list of ints; tensor inputs have no default");
  }
}

std::string where_of(const Interpreter& in, Pos p) {
  const auto& src = in.source();
  return (src ? src->filename : std::string("<input>")) + ":" + std::to_string(p.line);
}

// How to add the missing backward, written for this op (shown in the error).
std::string how_to_add_backward(const UserOp& u) {
  std::vector<std::string> params;
  const int outs = u.layout.known ? u.layout.returned : std::max(1, u.static_returns);
  for (int i = 0; i < outs; ++i) params.push_back(outs == 1 ? "dy" : "dy" + std::to_string(i));
  const std::vector<std::string>& saved = u.layout.known ? u.layout.saved_names : u.static_saves;
  params.insert(params.end(), saved.begin(), saved.end());
  for (size_t i = 0; i < u.attr_params.size(); ++i) {
    const AttrValue& d = u.def->attrs[i].default_value;
    std::string text = attr_value_str(d);
    if (std::holds_alternative<double>(d) && text.find_first_of(".e") == std::string::npos) text += ".0";  // beta=1.0
    params.push_back(u.attr_params[i] + "=" + text);
  }
  std::vector<std::string> grads;
  for (auto& t : u.tensor_params) grads.push_back("d" + t);
  return "add one below it:\n    @" + u.name + ".backward\n    def " + u.name + "_backward(" + join(params) +
         "):\n        return " + join(grads) + "   # one gradient per tensor input (None for none)";
}

std::vector<Val> call_hand_written_backward(const std::shared_ptr<UserOp>& u, GradCtx& ctx) {
  const std::shared_ptr<UserOp> bw = u->backward;
  if (!bw)
    throw Error(u->name + " is an @op without a backward, so no gradient can flow through it", how_to_add_backward(*u));
  check_backward_arity(*u, *bw);
  std::vector<Val> ins;
  for (int i = 0; i < u->layout.returned; ++i) ins.push_back(ctx.grad_output(static_cast<size_t>(i)));
  for (const auto& slot : u->layout.saved)
    ins.push_back(slot.kind == UserOp::Layout::Saved::input ? ctx.input(static_cast<size_t>(slot.index))
                                                            : ctx.output(static_cast<size_t>(slot.index)));
  AttrMap attrs;
  for (auto& a : bw->def->attrs) attrs.emplace_back(a.name, ctx.attrs().get(a.name));
  const std::vector<Val> outs = ctx.call_op(*bw->def, ins, attrs);
  std::vector<Val> grads(ctx.num_inputs());
  for (size_t k = 0; k < outs.size() && k < bw->layout.grad_of.size(); ++k) {
    const size_t i = static_cast<size_t>(bw->layout.grad_of[k]);
    const TensorMeta& want = ctx.input_meta(i);
    const std::string input = "'" + u->tensor_params[i] + "'";
    if (outs[k].shape() != want.shape)
      throw Error(bw->name + " returned a gradient of shape " + shape_str(outs[k].shape()) + " for " + input + " of " +
                      u->name + ", which has shape " + shape_str(want.shape),
                  "a gradient has the shape of its input; reduce a broadcast one, e.g. sum_to(d, shape=" +
                      shape_str(want.shape) + ")");
    if (outs[k].dtype() != want.dtype)
      throw Error(bw->name + " returned a " + dtype_name(outs[k].dtype()) + " gradient for " + input + " of " +
                      u->name + ", which is " + dtype_name(want.dtype),
                  "compute the gradient in the input's dtype (cast(d, dtype=\"" + std::string(dtype_name(want.dtype)) +
                      "\"))");
    grads[i] = outs[k];
  }
  return grads;
}

// The OpDef of a user op (forward or backward): its kernel runs the traced body on any device.
OpDef make_def(const std::shared_ptr<UserOp>& u, std::string doc, std::vector<AttrSpec> attrs) {
  OpDef d = OpDef::declare(u->name, "custom", std::move(doc), u->tensor_params);
  d.attrs = std::move(attrs);
  d.num_outputs = std::max(1, u->static_returns);
  d.origin = u->origin;
  d.accepts_strided = true;  // each op of the body makes its own inputs dense where it must
  d.infer = [u](const InferCtx& c) { return trace_op(*u, c.inputs, c.attrs)->outputs; };
  d.body = [u](const std::vector<TensorMeta>& in, const Attrs& a) { return trace_op(*u, in, a)->body; };
  const KernelFn kernel = [u](KernelCtx& k) {
    std::shared_ptr<const NodeBody> keep;
    const NodeBody* body = k.body;
    if (!body) {  // a node made without its body (constant folding of a copied node): trace it
      std::vector<TensorMeta> in;
      for (auto& t : k.inputs) in.push_back({t.shape(), t.dtype(), t.device()});
      keep = trace_op(*u, in, k.attrs)->body;
      body = keep.get();
    }
    run_body(*body, k);
  };
  for (int dev = 0; dev < kNumDevices; ++dev) d.kernel(static_cast<Device>(dev), "body", kernel);
  d.cost = [u](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>&, const Attrs& a, std::string_view) {
    try {
      return trace_op(*u, in, a)->cost;
    } catch (const std::exception&) {
      return Cost{};  // its session ended before this shape was traced: nothing to count
    }
  };
  if (u->is_backward) {
    d.differentiable = false;  // no second derivatives of a hand-written backward
    d.checked_via = u->forward.lock() ? u->forward.lock()->name : "";
  } else {
    d.backward = [u](GradCtx& ctx) { return call_hand_written_backward(u, ctx); };
    d.backward_note = "none yet: an @op needs a hand-written one (@" + u->name + ".backward)";
  }
  return d;
}

}  // namespace

std::string traced_for(const UserOp& u, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (s.empty() ? "" : ", ") + (i < u.tensor_params.size() ? u.tensor_params[i] : "input") + " " +
         shape_str(inputs[i].shape) + " " + dtype_name(inputs[i].dtype);
  const std::string a = attrs.str(true);
  return a.empty() ? s : s + ", " + a;
}

void check_backward_arity(const UserOp& fwd, const UserOp& bwd) {
  if (!fwd.layout.known) return;
  const size_t saved = fwd.layout.saved.size(), want = static_cast<size_t>(fwd.layout.returned) + saved;
  if (bwd.tensor_params.size() == want) return;
  throw Error(bwd.name + " takes " + std::to_string(bwd.tensor_params.size()) + " tensors (" + join(bwd.tensor_params) +
                  ") but " + fwd.name + " hands its backward " + std::to_string(want) + ": " +
                  std::to_string(fwd.layout.returned) + " output gradient" + (fwd.layout.returned == 1 ? "" : "s") +
                  ", then the " + std::to_string(saved) + " tensor" + (saved == 1 ? "" : "s") + " it saves" +
                  (saved ? " (" + join(fwd.layout.saved_names) + ")" : ""),
              bwd.tensor_params.size() > want
                  ? "a backward reads only what its forward saves: add it to save(...) in " + fwd.name
                  : "each saved tensor is there for backward: take it as a parameter, or do not save it");
}

// ---------------------------------------------------------------------------------------------

UserOps::UserOps(Interpreter& in) : in_(in) {}

UserOps::~UserOps() {
  clear();
  for (auto& u : all_) {  // their closures live on in old nodes (which hold their bodies): no more traces
    u->owner = nullptr;
    u->traces.clear();
  }
}

void UserOps::clear() {
  for (auto& [name, u] : ops_) {
    if (OpRegistry::instance().find(name) == u->def) OpRegistry::instance().remove(name);
    if (auto it = owners().find(name); it != owners().end() && it->second == this) owners().erase(it);
  }
  ops_.clear();
}

const UserOp* UserOps::find_own(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::string UserOps::describe(const OpDef& op) const {
  const UserOp* u = nullptr;
  for (auto& x : all_)
    if (x->def == &op) u = x.get();
  if (!u) return {};
  std::string s;
  if (u->is_backward) s += "  the hand-written backward of " + u->forward.lock()->name + "\n";
  if (!u->is_backward) {
    if (u->layout.known) {
      std::vector<std::string> saved;
      for (size_t k = 0; k < u->layout.saved_names.size(); ++k)
        saved.push_back(u->layout.saved_names[k] + (u->layout.saved[k].kind == UserOp::Layout::Saved::input
                                                        ? " (an input: stays an input)"
                                                    : u->layout.saved[k].kind == UserOp::Layout::Saved::output
                                                        ? " (an output: saved as itself)"
                                                        : " (computed: saved for backward)"));
      s += "  save(): " + (saved.empty() ? std::string("nothing") : join(saved)) + "\n";
    } else if (u->static_saves_known) {
      s += "  save(): " + (u->static_saves.empty() ? std::string("nothing") : join(u->static_saves)) + "\n";
    }
    s += u->backward ? "  backward source: " + u->backward->name + " at " + u->backward->where + "\n"
                     : "  no backward yet; " + how_to_add_backward(*u) + "\n";
  }
  if (!u->traces.empty()) {
    const NodeBody& b = *u->traces.rbegin()->second->body;
    std::vector<std::string> ops;
    for (const Node& n : b.graph.nodes()) ops.push_back(n.op->name);
    s += "  body (" + std::to_string(u->traces.size()) + " input shape" + (u->traces.size() == 1 ? "" : "s") +
         " traced): " + join(ops, " → ") + "; its cost is the sum of these ops' costs\n";
  }
  return s;
}

bool UserOps::define(const Stmt& s, const std::shared_ptr<Function>& f) {
  bool forward = false;
  std::string target;
  for (auto& d : s.decorators) {
    if (d == "op") forward = true;
    else if (d.size() > 9 && d.ends_with(".backward")) target = d.substr(0, d.size() - 9);
    else if (d.find('.') != std::string::npos)
      in_.fail(s.pos, "unknown decorator '@" + d + "'", "an @op's backward is written @NAME.backward");
  }
  if (!forward && target.empty()) return false;
  if (s.decorators.size() > 1)
    in_.fail(s.pos, "@" + s.decorators[0] + " cannot be combined with other decorators",
             "put @op (or @NAME.backward) alone above the def");
  if (tracing() || in_.locals())
    in_.fail(s.pos, "an @op is defined at the top level of a program, not inside a function",
             "move the @op definition out of the def");
  if (forward) define_forward(s, f);
  else define_backward(s, f, target);
  return true;
}

void UserOps::define_forward(const Stmt& s, const std::shared_ptr<Function>& f) {
  auto u = std::make_shared<UserOp>();
  u->name = f->name;
  u->fn = f;
  u->pos = s.pos;
  u->where = where_of(in_, s.pos);
  u->origin = "@op at " + u->where;
  u->owner = this;
  std::vector<AttrSpec> attrs;
  for (size_t i = 0; i < s.params.size(); ++i) {
    const Param& p = s.params[i];
    if (p.name == "algo")
      in_.fail(p.pos, "'algo' is the algorithm keyword of every op call; an @op cannot take it as a parameter");
    if (!f->defaults[i]) u->tensor_params.push_back(p.name);
    else {
      attrs.push_back(attr_from_default(in_, u->name, p, *f->defaults[i]));
      u->attr_params.push_back(p.name);
    }
  }
  if (u->tensor_params.empty())
    in_.fail(s.pos, "@op " + u->name + " has no tensor input",
             "its inputs are the parameters without a default: def " + u->name + "(x, beta=1.0)");
  const SourceFacts facts = read_source(s.body);
  if (facts.save_calls.size() == 1) {
    u->static_saves_known = true;
    for (auto& a : facts.save_calls[0]->args)
      if (a.name.empty() && a.value->kind == Expr::name) u->static_saves.push_back(a.value->text);
      else u->static_saves_known = false;
  } else {
    u->static_saves_known = facts.save_calls.empty();
  }
  if (!facts.return_arity.empty() && std::all_of(facts.return_arity.begin(), facts.return_arity.end(),
                                                 [&](int n) { return n == facts.return_arity[0]; }))
    u->static_returns = facts.return_arity[0];
  if (u->static_returns == 0 || facts.return_arity.empty())
    in_.fail(s.pos, "@op " + u->name + " returns nothing", "return its output tensor(s): return x * s");
  std::string doc = docstring(s.body);
  install(u,
          make_def(u,
                   doc.empty() ? "a user-defined operator (a docstring as its first line would say what it computes)"
                               : doc,
                   std::move(attrs)),
          s.pos);
  Value v = Value::Of(*u->def);
  in_.assign(u->name, v);
}

void UserOps::define_backward(const Stmt& s, const std::shared_ptr<Function>& f, const std::string& target) {
  // What @target.backward decorates: an @op of this session without a backward.
  const Value* tv = in_.lookup(target);
  const OpDef* def = tv && tv->kind() == Value::op_ref ? &tv->as_op()
                     : !tv                             ? OpRegistry::instance().find(target)
                                                       : nullptr;
  if (!def) {
    if (tv && tv->kind() == Value::function)
      in_.fail(s.pos, "'" + target + "' is a def, not an @op: only an @op has a hand-written backward",
               "put @op on the line above def " + target + "(...)");
    if (tv) in_.fail(s.pos, "@" + target + ".backward: '" + target + "' is a " + kind_name(*tv) + ", not an @op");
    std::string near = closest_name(target, in_.all_names());
    in_.fail(s.pos, "@" + target + ".backward: there is no op '" + target + "'",
             near.empty() ? "define it first with @op" : "did you mean '" + near + "'?");
  }
  std::shared_ptr<UserOp> fwd;
  for (auto& u : all_)
    if (u->def == def) fwd = u;
  if (!fwd) {
    if (def->builtin())
      in_.fail(s.pos,
               "'" + target + "' is a built-in operator: its backward is part of opscope (:doc " + target +
                   " shows it)",
               "to write your own, define an @op under another name: @op def my_" + target + "(...)");
    in_.fail(s.pos, "'" + target + "' comes from " + def->origin + ", not from an @op of this session");
  }
  if (fwd->is_backward) in_.fail(s.pos, "'" + target + "' is itself the backward of " + fwd->forward.lock()->name);
  if (fwd->backward)
    in_.fail(s.pos,
             target + " already has a backward (" + fwd->backward->name + ", defined at " + fwd->backward->where + ")",
             "to change it, define " + target + " again with @op (that drops its backward), then write the new one");
  auto u = std::make_shared<UserOp>();
  u->name = f->name;
  u->fn = f;
  u->pos = s.pos;
  u->where = where_of(in_, s.pos);
  u->origin = "@" + target + ".backward at " + u->where;
  u->owner = this;
  u->is_backward = true;
  u->forward = fwd;
  std::vector<AttrSpec> attrs;
  for (size_t i = 0; i < s.params.size(); ++i) {
    const Param& p = s.params[i];
    if (!f->defaults[i]) {
      u->tensor_params.push_back(p.name);
      continue;
    }
    const auto it = std::find(fwd->attr_params.begin(), fwd->attr_params.end(), p.name);
    if (it == fwd->attr_params.end())
      in_.fail(p.pos, u->name + "'s attribute '" + p.name + "' is not an attribute of " + target,
               fwd->attr_params.empty() ? target + " has no attributes"
                                        : "the attributes of " + target + ": " + join(fwd->attr_params));
    AttrSpec a = fwd->def->attrs[static_cast<size_t>(it - fwd->attr_params.begin())];
    attrs.push_back(std::move(a));
    u->attr_params.push_back(p.name);
  }
  // What the forward hands over, when its source says: output gradients, then saved tensors.
  const int outs = fwd->layout.known ? fwd->layout.returned : fwd->static_returns;
  const bool saves_known = fwd->layout.known || fwd->static_saves_known;
  const std::vector<std::string>& saved = fwd->layout.known ? fwd->layout.saved_names : fwd->static_saves;
  if (outs > 0 && saves_known && u->tensor_params.size() != static_cast<size_t>(outs) + saved.size()) {
    UserOp shown = *fwd;  // the same message as at first use
    shown.layout.known = true;
    shown.layout.returned = outs;
    shown.layout.saved_names = saved;
    shown.layout.saved.assign(saved.size(), {UserOp::Layout::Saved::computed, -1});
    try {
      check_backward_arity(shown, *u);
    } catch (const Error& e) {
      in_.fail(s.pos, e.what(), e.hint());
    }
  }
  const SourceFacts facts = read_source(s.body);
  if (outs > 0)  // a saved tensor the backward never reads costs memory for nothing
    for (size_t k = static_cast<size_t>(outs); k < u->tensor_params.size(); ++k) {
      const std::string& name = u->tensor_params[k];
      const bool read =
          std::any_of(facts.reads.begin(), facts.reads.end(), [&](const Expr* e) { return e->text == name; });
      if (!read)
        in_.fail(s.params[k].pos, target + " saves '" + name + "' for its backward, but " + u->name + " never reads it",
                 "save only what backward needs: a saved tensor holds its memory until backward has run");
    }
  // A variable of the forward's body that the backward reads without receiving it.
  const SourceFacts fwd_facts = read_source(*fwd->fn->body);
  std::set<std::string> forward_locals = fwd_facts.assigned;
  forward_locals.insert(fwd->tensor_params.begin(), fwd->tensor_params.end());
  for (const Expr* e : facts.reads) {
    const bool own =
        std::find(f->params.begin(), f->params.end(), e->text) != f->params.end() || facts.assigned.count(e->text);
    if (own || !forward_locals.count(e->text) || in_.globals().count(e->text)) continue;
    in_.fail(e->pos,
             u->name + " reads '" + e->text + "', a variable of " + target +
                 "'s body that its backward does not receive",
             "save it in " + target + " (save(..., " + e->text +
                 ")) and take it as a parameter after the output gradients");
  }
  std::string doc = docstring(s.body);
  install(u, make_def(u, doc.empty() ? "the hand-written backward of " + target : doc, std::move(attrs)), s.pos);
  fwd->backward = u;
  const std::string note_before = fwd->def->backward_note;
  fwd->def->backward_note = "written by hand: " + u->name + " (" + u->where + "), one node in the backward pass";
  in_.on_undo([fwd, note_before] {
    fwd->backward.reset();
    fwd->def->backward_note = note_before;
  });
  Value v = Value::Of(*u->def);
  in_.assign(u->name, v);
}

void UserOps::install(const std::shared_ptr<UserOp>& u, OpDef def, Pos p) {
  OpRegistry& reg = OpRegistry::instance();
  const std::string name = u->name;
  const OpDef* existing = reg.find(name);
  std::shared_ptr<UserOp> previous;
  if (in_.builtins().count(name))
    in_.fail(p, "'" + name + "' is a builtin function of the language; " + u->origin + " cannot take its name",
             "give your op another name, e.g. my_" + name);
  if (existing) {
    auto own = ops_.find(name);
    if (own == ops_.end() || own->second->def != existing) {
      if (existing->builtin())
        in_.fail(p,
                 "'" + name + "' is a built-in operator (" + existing->family + "); " + u->origin +
                     " cannot replace it",
                 "give your op another name, e.g. my_" + name);
      if (auto o = owners().find(name); o != owners().end() && o->second != this)
        in_.fail(p, "'" + name + "' is already an @op of another session (" + existing->origin + ")",
                 "an operator name means one operator in the whole program: choose another name");
      in_.fail(p, "'" + name + "' is an operator from " + existing->origin + "; " + u->origin + " cannot replace it",
               "give your op another name");
    }
    previous = own->second;
  }
  // A redefined forward drops its old backward, which differentiated the old body.
  if (previous && previous->backward && find_own(previous->backward->name) == previous->backward.get())
    uninstall(previous->backward->name);
  OpDef& registered = existing ? reg.replace(std::move(def)) : reg.add(std::move(def));
  u->def = &registered;
  ops_[name] = u;
  all_.push_back(u);
  owners()[name] = this;
  in_.on_undo([this, name, previous, existing] {
    if (previous) {
      OpRegistry::instance().reinstate(existing);
      ops_[name] = previous;
    } else {
      OpRegistry::instance().remove(name);
      ops_.erase(name);
      owners().erase(name);
    }
  });
}

void UserOps::uninstall(const std::string& name) {
  auto it = ops_.find(name);
  if (it == ops_.end()) return;
  std::shared_ptr<UserOp> u = it->second;
  OpRegistry::instance().remove(name);
  ops_.erase(it);
  owners().erase(name);
  in_.on_undo([this, u] {
    OpRegistry::instance().reinstate(u->def);
    ops_[u->name] = u;
    owners()[u->name] = this;
  });
}

}  // namespace opscope::lang
