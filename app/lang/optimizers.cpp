// SGD, Adam and AdamW, with PyTorch's signatures: opt = Adam(parameters(model), lr=1e-3);
// opt.zero_grad(); backward(loss); opt.step(). A step calls the registered update op of each
// parameter that has a gradient (sgd_update, adam_update, adamw_update: nodes of phase
// `update` in the graph, inside an "Adam.step" scope) and they write the parameter and its
// state in place. State (momentum buffer; Adam's exp_avg, exp_avg_sq and step) is made at a
// parameter's first step, as PyTorch does, and counts as `optimizer state` memory.
#include <cmath>

#include "app/lang/call_args.h"
#include "app/lang/interpreter.h"
#include "app/lang/training.h"

namespace opscope::lang {

namespace {

class Optimizer final : public NativeObject {
 public:
  enum class Kind { sgd, adam, adamw };
  Kind kind;
  double lr = 1e-3, momentum = 0, weight_decay = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
  std::vector<Tensor> params;
  std::vector<std::vector<Tensor>> state;  // per parameter; empty until its first step

  explicit Optimizer(Kind k) : kind(k) {}

  std::string type_name() const override { return kind == Kind::sgd ? "SGD" : kind == Kind::adam ? "Adam" : "AdamW"; }
  std::string op_name() const {
    return kind == Kind::sgd ? "sgd_update" : kind == Kind::adam ? "adam_update" : "adamw_update";
  }
  std::vector<std::string> state_names() const {
    if (kind == Kind::sgd)
      return momentum > 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
    return {"exp_avg", "exp_avg_sq", "step"};
  }
  AttrMap attrs() const {
    if (kind == Kind::sgd)
      return {{"lr", lr}, {"momentum", momentum}, {"weight_decay", weight_decay}, {"nesterov", nesterov}};
    return {{"lr", lr}, {"beta1", beta1}, {"beta2", beta2}, {"eps", eps}, {"weight_decay", weight_decay}};
  }
  std::string settings() const {
    auto num = [](double v) { return attr_value_str(v); };
    std::string s = "lr=" + num(lr);
    if (kind == Kind::sgd) {
      if (momentum > 0) s += ", momentum=" + num(momentum) + (nesterov ? ", nesterov=True" : "");
    } else {
      s += ", betas=(" + num(beta1) + ", " + num(beta2) + "), eps=" + num(eps);
    }
    return s + ", weight_decay=" + num(weight_decay);
  }
  std::string repr() const override {
    return type_name() + "(" + std::to_string(params.size()) + (params.size() == 1 ? " parameter, " : " parameters, ") +
           settings() + ")";
  }
  std::vector<std::string> members() const override {
    std::vector<std::string> m = {"step", "zero_grad", "state", "params", "lr", "weight_decay"};
    if (kind == Kind::sgd) m.insert(m.end(), {"momentum", "nesterov"});
    else m.insert(m.end(), {"betas", "eps"});
    return m;
  }
  bool has_method(const std::string& n) const override { return n == "step" || n == "zero_grad" || n == "state"; }

  std::optional<Value> attr(Interpreter&, const std::string& n, Pos) override {
    if (n == "lr") return Value::Real(lr);
    if (n == "weight_decay") return Value::Real(weight_decay);
    if (n == "params") {
      std::vector<Value> v;
      for (auto& p : params) v.push_back(Value::Tensor_(p));
      return Value::List(std::move(v));
    }
    if (kind == Kind::sgd && n == "momentum") return Value::Real(momentum);
    if (kind == Kind::sgd && n == "nesterov") return Value::Bool(nesterov);
    if (kind != Kind::sgd && n == "betas") return Value::List({Value::Real(beta1), Value::Real(beta2)}, Value::tuple);
    if (kind != Kind::sgd && n == "eps") return Value::Real(eps);
    return std::nullopt;
  }

  // opt.lr = 0.01: a learning-rate schedule changes it between steps.
  bool set_attr(Interpreter& in, const std::string& n, const Value& v, Pos p) override {
    if (n != "lr")
      in.fail(p, "cannot set " + type_name() + "." + n,
              "only opt.lr can change between steps; make a new optimizer for the rest");
    if (!v.is_number() || v.number() < 0) in.fail(p, "lr must be a number >= 0", "opt.lr = 0.01");
    auto self = std::static_pointer_cast<Optimizer>(shared_from_this());
    in.on_undo([self, before = lr] { self->lr = before; });
    lr = v.number();
    return true;
  }

  Value call(Interpreter& in, const std::string& m, CallArgs& a) override {
    if (m == "step") {
      check_keywords(in, a, "step", {});
      need_args(in, a, "step", 0, 0);
      step(in, a.pos);
      return Value::None();
    }
    if (m == "zero_grad") {
      check_keywords(in, a, "zero_grad", {"set_to_none"});
      need_args(in, a, "zero_grad", 0, 0);
      const Value* stn = keyword(a, "set_to_none");
      zero_grad(in, !stn || in.truthy(*stn, a.pos));
      return Value::None();
    }
    // state(w): this parameter's state as a dict (empty before its first step).
    need_args(in, a, "state", 1, 1);
    const Tensor& w = tensor_arg(in, a, 0, "state");
    const size_t i = index_of(w);
    if (i == params.size())
      in.fail(a.positions[0], "'" + (w.name().empty() ? std::string("this tensor") : w.name()) +
                                  "' is not one of the " + type_name() + "'s parameters");
    auto d = std::make_shared<Dict>();
    const auto names = state_names();
    for (size_t k = 0; k < state[i].size() && k < names.size(); ++k)
      d->entries.emplace_back(Value::Str(names[k]), Value::Tensor_(state[i][k]));
    Value out = Value::Of(d);
    return out;
  }

  size_t index_of(const Tensor& w) const {
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].impl() == w.impl()) return i;
    return params.size();
  }

  // The state of parameter i, made now (zeros) if this is its first step.
  const std::vector<Tensor>& ensure_state(Interpreter& in, size_t i) {
    if (!state[i].empty() || state_names().empty()) return state[i];
    const Tensor& w = params[i];
    const std::string base = w.name().empty() ? "param" + std::to_string(i) : w.name();
    for (const std::string& n : state_names()) {
      Tensor t = n == "step" ? Tensor::full({}, 0.0, DType::f32, MemCategory::optimizer_state, w.device())
                             : Tensor::full(w.shape(), 0.0, w.dtype(), MemCategory::optimizer_state, w.device());
      t.set_name(base + "." + n);
      state[i].push_back(t);
    }
    auto self = std::static_pointer_cast<Optimizer>(shared_from_this());
    in.on_undo([self, i] { self->state[i].clear(); });
    return state[i];
  }

  // A failed or interrupted statement puts parameters and state back as they were before its
  // first step: one copy of each, made once per statement (a loop of steps copies once).
  void save_for_undo(Interpreter& in) {
    if (saved_in_ == in.statement_serial()) return;
    saved_in_ = in.statement_serial();
    std::vector<std::pair<Tensor, Tensor>> copies;  // (tensor, its values now)
    for (size_t i = 0; i < params.size(); ++i) {
      copies.push_back({params[i], params[i].clone(MemCategory::temporary)});
      for (auto& s : state[i]) copies.push_back({s, s.clone(MemCategory::temporary)});
    }
    auto self = std::static_pointer_cast<Optimizer>(shared_from_this());
    in.on_undo([self, copies = std::move(copies)]() mutable {
      for (auto& [t, before] : copies) t.copy_from(before);
      self->saved_in_ = 0;
    });
  }

  void step(Interpreter& in, Pos p) {
    Workspace& ws = in.ws();
    if (ws.static_mode())
      in.fail(p, type_name() + ".step() runs in dynamic mode; in static mode the updates are part of the program",
              "compile(loss, optimizer=opt) builds the training step with its updates; run(loss, x=...) runs it");
    save_for_undo(in);
    const OpDef& op = OpRegistry::instance().get(op_name());
    const Attrs resolved = op.resolve(attrs());
    struct UpdatePhase {  // the nodes are of phase `update`, in the scope "Adam.step"
      Workspace& ws;
      Phase before;
      UpdatePhase(Workspace& w, const std::string& scope) : ws(w), before(w.phase()) {
        ws.set_phase(Phase::update);
        ws.push_scope(scope);
      }
      ~UpdatePhase() {
        ws.pop_scope();
        ws.set_phase(before);
      }
    } phase(ws, type_name() + ".step");
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor g = params[i].grad();
      if (!g.defined()) continue;  // no gradient reached it: PyTorch skips it too
      if (g.name().empty())
        g.set_name("d" + (params[i].name().empty() ? "param" + std::to_string(i) : params[i].name()));
      std::vector<Tensor> ins = {params[i], g};
      for (auto& s : ensure_state(in, i)) ins.push_back(s);
      ws.call_multi(op, ins, resolved);
    }
  }

  // The gradients as the statement's first zero_grad found them come back if it fails. Once per
  // statement: a loop of steps must not keep every step's gradients alive.
  void zero_grad(Interpreter& in, bool set_to_none) {
    if (grads_saved_in_ != in.statement_serial()) {
      grads_saved_in_ = in.statement_serial();
      std::vector<std::pair<std::shared_ptr<TensorImpl>, Tensor>> grads;  // (parameter, a copy of its .grad)
      for (auto& w : params)
        if (w.grad().defined()) grads.push_back({w.impl_ptr(), w.grad().clone(MemCategory::temporary)});
      auto self = std::static_pointer_cast<Optimizer>(shared_from_this());
      in.on_undo([self, grads = std::move(grads)] {
        for (auto& w : self->params) w.set_grad(Tensor());
        for (auto& [impl, g] : grads) impl->grad = g.impl_ptr();
        self->grads_saved_in_ = 0;
      });
    }
    for (auto& w : params) {
      if (!w.grad().defined()) continue;
      if (set_to_none) w.set_grad(Tensor());
      else w.grad().fill(0);
    }
  }

  std::optional<ParamUpdate> update_of(Interpreter& in, const Tensor& w) {
    const size_t i = index_of(w);
    if (i == params.size()) return std::nullopt;
    return ParamUpdate{op_name(), attrs(), ensure_state(in, i)};
  }

 private:
  uint64_t saved_in_ = 0;  // the statement whose start the undo copy holds
  uint64_t grads_saved_in_ = 0;  // the statement whose first zero_grad saved the gradients
};

// The arguments of a constructor: positional in PyTorch's order, or by keyword.
struct Args {
  Interpreter& in;
  CallArgs& a;
  const std::string fn;
  const Value* get(size_t i, const char* name) const {
    const Value* k = keyword(a, name);
    if (i < a.positional.size()) {
      if (k) in.fail(a.pos, fn + "() got '" + name + "' twice (by position and by name)");
      return &a.positional[i];
    }
    return k;
  }
  double number(size_t i, const char* name, double def, double lo, bool lo_open = false) const {
    const Value* v = get(i, name);
    if (!v || v->kind() == Value::none) return def;
    if (!v->is_number()) in.fail(a.pos, fn + "(): " + name + " must be a number, got " + kind_name(*v));
    const double x = v->number();
    if (x < lo || (lo_open && x == lo) || std::isnan(x))
      in.fail(a.pos, fn + "(): invalid " + name + " " + attr_value_str(x) + " (it must be " + (lo_open ? "> " : ">= ") +
                         attr_value_str(lo) + ")");
    return x;
  }
};

std::vector<Tensor> parameter_list(Interpreter& in, CallArgs& a, const std::string& fn) {
  if (a.positional.empty()) in.fail(a.pos, fn + "() needs the parameters first", fn + "(parameters(model), lr=0.01)");
  const Value& v = a.positional[0];
  if (v.kind() == Value::instance)
    in.fail(a.positions[0], fn + "() takes a list of parameters, not the model itself",
            fn + "(parameters(model), ...)");
  if (v.kind() != Value::list && v.kind() != Value::tuple)
    in.fail(a.positions[0], fn + "() takes a list of parameters, got " + kind_name(v), fn + "([w, b], lr=0.01)");
  std::vector<Tensor> out;
  for (const Value& x : *v.items()) {
    if (x.kind() != Value::tensor) in.fail(a.positions[0], fn + "(): the parameter list holds a " + kind_name(x));
    const Tensor& t = x.as_tensor();
    const std::string name = t.name().empty() ? "a tensor" : "'" + t.name() + "'";
    if (!t.requires_grad() || t.impl()->from_op)
      in.fail(a.positions[0], fn + "(): " + name + " is not a parameter", "make it one with param(...)");
    if (!is_floating(t.dtype()) || t.is_symbolic() || !t.is_contiguous())
      in.fail(a.positions[0],
              fn + "(): " + name + " cannot be updated in place (it must be a dense floating-point tensor)");
    for (auto& o : out)
      if (o.impl() == t.impl()) in.fail(a.positions[0], fn + "(): " + name + " appears twice in the parameter list");
    out.push_back(t);
  }
  if (out.empty())
    in.fail(a.positions[0], fn + "() got an empty parameter list", "does the model have param(...) attributes?");
  return out;
}

Value make(std::shared_ptr<Optimizer> o) {
  o->state.resize(o->params.size());
  Value v = Value::Of(std::move(o));
  return v;
}

}  // namespace

void use_optimizer(Interpreter& in, const Value& opt, Pos p, CompileOptions& out) {
  auto o = opt.kind() == Value::object ? std::dynamic_pointer_cast<Optimizer>(opt.as_native()) : nullptr;
  if (!o)
    in.fail(p, std::string("compile(): optimizer= takes an optimizer, got ") + kind_name(opt),
            "optimizer=Adam(params, lr=1e-3)");
  out.update = [&in, o](const Tensor& w) { return o->update_of(in, w); };
  out.update_name = o->type_name() + ", " + o->settings();
}

void install_optimizer_builtins(std::map<std::string, Builtin>& table) {
  BuiltinTable B(table);
  B.add("SGD", "SGD(params, lr, momentum=0, weight_decay=0, nesterov=False)",
        "stochastic gradient descent: opt.step() updates each parameter in place (sgd_update nodes)",
        [](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, "SGD", {"lr", "momentum", "weight_decay", "nesterov"});
          need_args(in, a, "SGD", 1, 5);
          auto o = std::make_shared<Optimizer>(Optimizer::Kind::sgd);
          o->params = parameter_list(in, a, "SGD");
          Args args{in, a, "SGD"};
          if (!args.get(1, "lr")) in.fail(a.pos, "SGD() needs a learning rate", "SGD(params, lr=0.1)");
          o->lr = args.number(1, "lr", 0, 0);
          o->momentum = args.number(2, "momentum", 0, 0);
          o->weight_decay = args.number(3, "weight_decay", 0, 0);
          if (const Value* n = args.get(4, "nesterov")) o->nesterov = in.truthy(*n, a.pos);
          if (o->nesterov && o->momentum == 0)
            in.fail(a.pos, "SGD(): Nesterov momentum needs a momentum above 0", "momentum=0.9, nesterov=True");
          return make(o);
        });
  for (const bool decoupled : {false, true}) {
    const std::string name = decoupled ? "AdamW" : "Adam";
    B.add(name,
          name + "(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=" + (decoupled ? "1e-2" : "0") + ")",
          decoupled
              ? "Adam with decoupled weight decay: its state (exp_avg, exp_avg_sq, step) is optimizer-state memory"
              : "Adam: running means of g and g² per parameter (optimizer-state memory: twice the parameters)",
          [name, decoupled](Interpreter& in, CallArgs& a) {
            check_keywords(in, a, name, {"lr", "betas", "eps", "weight_decay"});
            need_args(in, a, name, 1, 5);
            auto o = std::make_shared<Optimizer>(decoupled ? Optimizer::Kind::adamw : Optimizer::Kind::adam);
            o->params = parameter_list(in, a, name);
            Args args{in, a, name};
            o->lr = args.number(1, "lr", 1e-3, 0);
            if (const Value* b = args.get(2, "betas"); b && b->kind() != Value::none) {
              if ((b->kind() != Value::list && b->kind() != Value::tuple) || b->items()->size() != 2 ||
                  !(*b->items())[0].is_number() || !(*b->items())[1].is_number())
                in.fail(a.pos, name + "(): betas must be a pair of numbers", "betas=(0.9, 0.999)");
              o->beta1 = (*b->items())[0].number();
              o->beta2 = (*b->items())[1].number();
              for (double beta : {o->beta1, o->beta2})
                if (!(beta >= 0 && beta < 1))
                  in.fail(a.pos, name + "(): invalid beta " + attr_value_str(beta) + " (each must be in [0, 1))");
            }
            o->eps = args.number(3, "eps", 1e-8, 0);
            o->weight_decay = args.number(4, "weight_decay", decoupled ? 1e-2 : 0, 0);
            return make(o);
          });
  }
}

}  // namespace opscope::lang
