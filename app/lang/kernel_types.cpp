// The @kernel compiler's types (kernel_compiler.h): each variable's type inferred from its
// assignments, the names it can read and each variable's register slot.
#include <string>

#include "app/lang/interpreter.h"
#include "app/lang/kernel_compiler.h"

namespace opscope::lang::kernel::compiler {

void Compiler::set_type(const std::string& name, Ty t, Pos p) {
  if (arrays_.count(name))
    fail(p, "'" + name + "' is an array: it cannot be assigned", "write to an element: " + name + "[i] = ...");
  auto it = types_.find(name);
  if (it == types_.end()) {
    types_[name] = t;
    changed_ = true;
  } else if (it->second == Ty::i && t == Ty::f) {
    it->second = Ty::f;
    changed_ = true;
  }
}

void Compiler::infer_block(const Block& b) {
  for (const StmtPtr& s : b) infer_stmt(*s);
}

void Compiler::infer_stmt(const Stmt& s) {
  switch (s.kind) {
    case Stmt::assign:
      for (const ExprPtr& t : s.targets)
        if (t->kind == Expr::name) {
          if (is_shared_call(*s.value)) {  // declared now: the types of its reads are known
            declare_shared(t->text, *s.value);
            continue;
          }
          set_type(t->text, type_of(*s.value), t->pos);
        }
      break;
    case Stmt::aug_assign:
      if (s.targets[0]->kind == Expr::name) {
        const Ty rhs = type_of(*s.value);
        const Ty cur = types_.count(s.targets[0]->text) ? types_[s.targets[0]->text] : Ty::i;
        set_type(s.targets[0]->text, (s.op == Operator::div || rhs == Ty::f || cur == Ty::f) ? Ty::f : Ty::i, s.pos);
      }
      break;
    case Stmt::for_:
      if (s.targets.size() == 1 && s.targets[0]->kind == Expr::name) set_type(s.targets[0]->text, Ty::i, s.pos);
      infer_block(s.body);
      break;
    case Stmt::if_:
    case Stmt::while_:
      infer_block(s.body);
      infer_block(s.orelse);
      break;
    default: break;
  }
}

bool Compiler::is_shared_call(const Expr& e) const {
  return e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "shared";
}

// The type an expression will have (names not yet typed count as int).
Ty Compiler::type_of(const Expr& e) {
  switch (e.kind) {
    case Expr::integer:
    case Expr::boolean: return Ty::i;
    case Expr::real: return Ty::f;
    case Expr::name: {
      if (auto it = types_.find(e.text); it != types_.end()) return it->second;
      if (const Value* v = global_number(e.text)) return v->kind() == Value::real ? Ty::f : Ty::i;
      return Ty::i;
    }
    case Expr::attr: return Ty::i;
    case Expr::index: {
      if (e.items[0]->kind == Expr::name)
        if (const Array* a = array_named(e.items[0]->text)) return is_floating(a->dtype) ? Ty::f : Ty::i;
      return Ty::i;
    }
    case Expr::unary: return e.op == Operator::not_ ? Ty::i : type_of(*e.items[0]);
    case Expr::binary: {
      if (e.op == Operator::div) return Ty::f;
      const Ty a = type_of(*e.items[0]), b = type_of(*e.items[1]);
      return a == Ty::f || b == Ty::f ? Ty::f : Ty::i;
    }
    case Expr::compare:
    case Expr::logical: return Ty::i;
    case Expr::cond: {
      const Ty a = type_of(*e.items[0]), b = type_of(*e.items[2]);
      return a == Ty::f || b == Ty::f ? Ty::f : Ty::i;
    }
    case Expr::call: {
      if (e.items[0]->kind != Expr::name) return Ty::i;
      const std::string& n = e.items[0]->text;
      if (n == "int" || n == "len") return Ty::i;
      if (n == "float" || n == "sqrt" || n == "exp" || n == "log" || n == "tanh" || n == "sin" || n == "cos" ||
          n == "rsqrt" || n == "floor" || n == "ceil")
        return Ty::f;
      if (n == "min" || n == "max") {
        Ty t = Ty::i;
        for (const Arg& a : e.args) t = type_of(*a.value) == Ty::f ? Ty::f : t;
        return t;
      }
      if (n == "abs" || n.rfind("shfl", 0) == 0) return e.args.empty() ? Ty::i : type_of(*e.args[0].value);
      if (n == "atomic_add" && !e.args.empty() && e.args[0].value->kind == Expr::name)
        if (const Array* a = array_named(e.args[0].value->text)) return is_floating(a->dtype) ? Ty::f : Ty::i;
      return Ty::i;
    }
    default: return Ty::i;
  }
}

const Value* Compiler::global_number(const std::string& name) const {
  const Value* v = in_.lookup(name);
  return v && (v->kind() == Value::integer || v->kind() == Value::real || v->kind() == Value::boolean) ? v : nullptr;
}

const Array* Compiler::array_named(const std::string& name) const {
  auto it = arrays_.find(name);
  return it == arrays_.end() ? nullptr : it->second;
}

std::pair<Ty, int> Compiler::slot_of(const std::string& name, Ty ty) {
  auto it = slots_.find(name);
  if (it != slots_.end()) return it->second;
  const int s = ty == Ty::f ? prog_.float_slots++ : prog_.int_slots++;
  return slots_[name] = {ty, s};
}

}  // namespace opscope::lang::kernel::compiler
