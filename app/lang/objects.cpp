// Values held by reference in the language: user classes and their instances (a model is an
// instance; calling it runs __call__ or forward), dicts, and builtin objects written in C++
// (optimizers, batch iterators). Their attributes and bound methods, and the attributes of
// tensors and lists (x.shape, x.relu, lst.append).
#include <algorithm>

#include "app/lang/interpreter.h"

namespace opscope::lang {

namespace {

Value bound(const std::shared_ptr<Object>& receiver, const std::string& name, std::shared_ptr<Function> fn = nullptr) {
  return Value::Of(Method{name, receiver, std::move(fn)});
}

// "a batches", "an Adam": the article for a type's name.
std::string a_or_an(const std::string& name) {
  return (!name.empty() && std::string("AEIOUaeiou").find(name[0]) != std::string::npos ? "an " : "a ") + name;
}

std::string joined(const std::vector<std::string>& names) {
  std::string all;
  for (auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return all;
}

// The names a class body binds, in its order (the body runs in a frame, which is a sorted map).
std::vector<std::string> names_bound(const Block& body) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  std::function<void(const Expr&)> targets = [&](const Expr& t) {
    if (t.kind == Expr::name) add(t.text);
    if (t.kind == Expr::tuple || t.kind == Expr::list)
      for (auto& i : t.items) targets(*i);
  };
  for (auto& st : body) {
    if (st->kind == Stmt::def) add(st->text);
    if (st->kind == Stmt::assign)
      for (auto& t : st->targets) targets(*t);
  }
  return out;
}

const char* const kDictMethods[] = {"items", "keys", "values", "get"};

}  // namespace

void Interpreter::exec_class(const Stmt& s) {
  auto cls = std::make_shared<ClassDef>();
  cls->name = s.text;
  frames_.emplace_back();  // the body's names land in a frame of their own
  try {
    exec_block(s.body);
  } catch (...) {
    frames_.pop_back();
    throw;
  }
  std::map<std::string, Value> names = std::move(frames_.back());
  frames_.pop_back();
  for (const std::string& n : names_bound(s.body)) {
    Value& v = names[n];
    if (v.kind() == Value::function) {
      const Stmt* def = nullptr;
      for (auto& st : s.body)
        if (st->kind == Stmt::def && st->text == n) def = st.get();
      if (v.as_function()->params.empty())
        fail(def ? def->pos : s.pos,
             "the method '" + n + "' of class " + cls->name + " needs self as its first parameter",
             "def " + n + "(self, ...):");
      v.as_function()->name = cls->name + "." + n;  // errors and the graph's scope say Net.forward
    }
    cls->members.emplace_back(n, v);
  }
  Value v = Value::Of(cls);
  assign(s.text, v);
}

Value Interpreter::instantiate(const std::shared_ptr<ClassDef>& cls, CallArgs& args) {
  auto inst = std::make_shared<Instance>();
  inst->cls = cls;
  Value self = Value::Of(inst);
  const Value* init = cls->find("__init__");
  if (init && init->kind() == Value::function) {
    CallArgs a = args;
    a.positional.insert(a.positional.begin(), self);
    a.positions.insert(a.positions.begin(), args.pos);
    Value r = call_function(*init->as_function(), a);
    if (r.kind() != Value::none) fail(args.pos, cls->name + ".__init__() should return None, got " + kind_name(r));
  } else if (!args.positional.empty() || !args.keyword.empty()) {
    fail(args.pos, cls->name + "() takes no arguments",
         "define def __init__(self, ...): in class " + cls->name + " to take them");
  }
  return self;
}

// model(x): its __call__ if it has one, else its forward (as a PyTorch module).
Value Interpreter::call_instance(const Value& obj, CallArgs& args) {
  const auto& inst = *obj.as_instance();
  for (const char* m : {"__call__", "forward"})
    if (const Value* f = inst.cls->find(m); f && f->kind() == Value::function)
      return call_bound(bound(obj.as_object(), m, f->as_function()).as_method(), args);
  fail(args.pos, "'" + inst.cls->name + "' object cannot be called",
       "define def forward(self, x): (or __call__) in class " + inst.cls->name);
}

Value Interpreter::call_object(const Value& obj, CallArgs& args) {
  const auto& o = *obj.as_native();
  if (!o.has_method("__call__"))
    fail(args.pos, a_or_an(o.type_name()) + " cannot be called", "its attributes and methods: " + joined(o.members()));
  return call_bound(bound(obj.as_object(), "__call__").as_method(), args);
}

Value Interpreter::get_member(const Value& obj, const std::string& name, Pos p) {
  switch (obj.kind()) {
    case Value::dict:
      for (const char* m : kDictMethods)
        if (name == m) return bound(obj.as_object(), name);
      fail(p, "a dict has no attribute '" + name + "'",
           "index it with d[key]; its methods: .items(), .keys(), .values(), .get(key, default)");
    case Value::class_: {
      const auto& cls = *obj.as_class();
      if (const Value* v = cls.find(name)) return *v;
      fail(p, "class " + cls.name + " has no attribute '" + name + "'");
    }
    case Value::instance: {
      auto& inst = *obj.as_instance();
      if (Value* v = inst.find(name)) return *v;
      if (const Value* v = inst.cls->find(name))
        return v->kind() == Value::function ? bound(obj.as_object(), name, v->as_function()) : *v;
      std::vector<std::string> names;
      for (auto& [n, _] : inst.attrs) names.push_back(n);
      for (auto& [n, _] : inst.cls->members) names.push_back(n);
      const std::string near = closest_name(name, names);
      fail(p, "'" + inst.cls->name + "' object has no attribute '" + name + "'",
           !near.empty()   ? "did you mean '" + near + "'?"
           : names.empty() ? "set attributes in __init__: self." + name + " = ..."
                           : "its attributes and methods: " + joined(names));
    }
    case Value::object: {
      auto& o = *obj.as_native();
      if (auto v = o.attr(*this, name, p)) return *v;
      if (o.has_method(name)) return bound(obj.as_object(), name);
      const std::string near = closest_name(name, o.members());
      fail(p, a_or_an(o.type_name()) + " has no attribute '" + name + "'",
           near.empty() ? "its attributes and methods: " + joined(o.members()) : "did you mean '" + near + "'?");
    }
    default: fail(p, std::string("a ") + kind_name(obj) + " has no attribute '" + name + "'");
  }
}

Value Interpreter::call_bound(const Method& m, CallArgs& args) {
  if (m.fn) {  // a method of a user class: self first
    const Value self = Value::Of(std::static_pointer_cast<Instance>(*m.object()));
    CallArgs a = args;
    a.positional.insert(a.positional.begin(), self);
    a.positions.insert(a.positions.begin(), args.pos);
    return call_function(*m.fn, a);
  }
  if (auto d = std::dynamic_pointer_cast<Dict>(*m.object())) return dict_method(*d, m.name, args);
  auto o = std::static_pointer_cast<NativeObject>(*m.object());
  try {
    return o->call(*this, m.name, args);
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    fail(args.pos, o->type_name() + "." + m.name + "(): " + e.what(), e.hint());
  }
}

Value Interpreter::dict_method(Dict& d, const std::string& name, CallArgs& args) {
  const size_t n = args.positional.size();
  if (!args.keyword.empty()) fail(args.pos, "dict." + name + "() takes no keyword arguments");
  if (name == "get") {
    if (n < 1 || n > 2) fail(args.pos, "get() takes a key and an optional default: d.get(key, default)");
    if (const Value* v = d.find(args.positional[0])) return *v;
    return n == 2 ? args.positional[1] : Value::None();
  }
  if (n != 0) fail(args.pos, "dict." + name + "() takes no arguments");
  std::vector<Value> out;
  for (auto& [k, v] : d.entries) {
    if (name == "keys") out.push_back(k);
    else if (name == "values") out.push_back(v);
    else out.push_back(Value::List({k, v}, Value::tuple));
  }
  return Value::List(std::move(out));
}

// ---------------------------------------------------------------------------------------------
// Attributes: a tensor's (shape, grad, its methods), a list's append, and the members above

Value Interpreter::get_attr(const Value& obj, const std::string& name, Pos p) {
  if (obj.kind() == Value::tensor) {
    const Tensor& t = obj.as_tensor();
    if (name == "shape") {
      std::vector<Value> dims;
      for (auto d : t.shape()) dims.push_back(Value::Int(d));
      return Value::List(std::move(dims));
    }
    if (name == "grad") return t.grad().defined() ? Value::Tensor_(t.grad()) : Value::None();
    if (name == "dtype") return Value::Str(dtype_name(t.dtype()));
    if (name == "device") return Value::Str(device_name(t.device()));
    if (name == "requires_grad") return Value::Bool(t.requires_grad());
    if (name == "ndim") return Value::Int(t.dim());
    if (name == "T") {
      if (t.dim() < 2) return obj;
      return tensor_op("transpose", {t}, p, {{"dim0", int64_t{-2}}, {"dim1", int64_t{-1}}});
    }
    if (name == "name") return Value::Str(t.name());
    if (!is_tensor_method(name)) {
      std::vector<std::string> names = tensor_member_names();
      std::string near = closest_name(name, names);
      fail(p, "a tensor has no attribute or method '" + name + "'",
           near.empty() ? "attributes: shape, grad, dtype, device, requires_grad, T; every operator is also a method"
                        : "did you mean '" + near + "'?");
    }
    return Value::Of(Method{name, t, nullptr});
  }
  if (obj.kind() == Value::dict || obj.kind() == Value::class_ || obj.kind() == Value::instance ||
      obj.kind() == Value::object)
    return get_member(obj, name, p);
  if ((obj.kind() == Value::list || obj.kind() == Value::tuple) && name == "append" && obj.kind() == Value::list) {
    return Value::Of(Method{"append", obj.items(), nullptr});
  }
  fail(p, std::string("a ") + kind_name(obj) + " has no attribute '" + name + "'",
       obj.kind() == Value::none ? "the value is None" : "");
}

void Interpreter::set_attr(const Value& obj, const std::string& name, const Value& v, Pos p) {
  if (obj.kind() == Value::tensor && name == "requires_grad") {
    try {
      Tensor t = obj.as_tensor();
      std::weak_ptr<TensorImpl> weak = t.impl_ptr();
      on_undo(t.impl(), StatementUndo::requires_grad, t.impl_ptr(), [weak, old = t.requires_grad()] {
        if (auto impl = weak.lock()) impl->requires_grad = old;
      });
      t.set_requires_grad(truthy(v, p));
    } catch (const Error& e) {
      fail(p, e.what(), e.hint());
    }
    return;
  }
  if (obj.kind() == Value::tensor && name == "grad" && v.kind() == Value::none) {
    Tensor t = obj.as_tensor();
    rollback_.undo().keep_grad(t.impl_ptr());
    t.set_grad(Tensor());
    return;
  }
  if (obj.kind() == Value::instance) {
    auto inst = obj.as_instance();
    Value stored = v;
    // self.w = param(...): the tensor is named after the attribute (as variables name theirs).
    if (stored.kind() == Value::tensor && stored.as_tensor().defined() && stored.as_tensor().name().empty())
      stored.as_tensor().set_name(name);
    if (Value* old = inst->find(name)) {
      on_undo([inst, name, before = *old] { *inst->find(name) = before; });
      *old = std::move(stored);
    } else {
      on_undo([inst] { inst->attrs.pop_back(); });
      inst->attrs.emplace_back(name, std::move(stored));
    }
    return;
  }
  if (obj.kind() == Value::object) {
    auto& o = *obj.as_native();
    if (o.set_attr(*this, name, v, p)) return;
    fail(p, "cannot set attribute '" + name + "' of " + o.type_name(), "its attributes can be read, not set");
  }
  fail(p, "cannot set attribute '" + name + "' of a " + kind_name(obj),
       obj.kind() == Value::tensor ? "only x.requires_grad = True/False and x.grad = None can be set" : "");
}

}  // namespace opscope::lang
