#include "app/lang/expr_text.h"

namespace opscope::lang {

namespace {

bool needs_parens(const Expr& e) {
  return e.kind == Expr::binary || e.kind == Expr::compare || e.kind == Expr::logical || e.kind == Expr::unary ||
         e.kind == Expr::cond;
}

std::string operand(const Expr* e) {
  if (!e) return "";
  const std::string t = expr_text(*e);
  return needs_parens(*e) ? "(" + t + ")" : t;
}

std::string joined(const std::vector<ExprPtr>& items) {
  std::string s;
  for (auto& x : items) s += (s.empty() ? "" : ", ") + (x ? expr_text(*x) : std::string());
  return s;
}

}  // namespace

std::string expr_text(const Expr& e) {
  switch (e.kind) {
    case Expr::integer:
    case Expr::real: return e.text;
    case Expr::string: return "\"" + e.text + "\"";
    case Expr::boolean: return e.bool_value ? "True" : "False";
    case Expr::none: return "None";
    case Expr::name: return e.text;
    case Expr::list: return "[" + joined(e.items) + "]";
    case Expr::tuple: return "(" + joined(e.items) + (e.items.size() == 1 ? ",)" : ")");
    case Expr::unary:
      return e.op == Operator::not_ ? "not " + operand(e.items[0].get()) : name_of(e.op) + operand(e.items[0].get());
    case Expr::binary:
    case Expr::compare:
    case Expr::logical: return operand(e.items[0].get()) + " " + name_of(e.op) + " " + operand(e.items[1].get());
    case Expr::call: {
      std::string args;
      for (auto& a : e.args)
        args += (args.empty() ? "" : ", ") + (a.name.empty() ? "" : a.name + "=") + expr_text(*a.value);
      return operand(e.items[0].get()) + "(" + args + ")";
    }
    case Expr::attr: return operand(e.items[0].get()) + "." + e.text;
    case Expr::index: {
      std::string subs;
      for (size_t i = 1; i < e.items.size(); ++i) subs += (i > 1 ? ", " : "") + expr_text(*e.items[i]);
      return operand(e.items[0].get()) + "[" + subs + "]";
    }
    case Expr::dict: {  // items are k0, v0, k1, v1, ...
      std::string s;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2)
        s += (i ? ", " : "") + expr_text(*e.items[i]) + ": " + expr_text(*e.items[i + 1]);
      return "{" + s + "}";
    }
    case Expr::cond:  // a if c else b: items are a, c, b
      return operand(e.items[0].get()) + " if " + operand(e.items[1].get()) + " else " + operand(e.items[2].get());
    case Expr::slice: {
      std::string s = (e.items[0] ? expr_text(*e.items[0]) : "") + ":" + (e.items[1] ? expr_text(*e.items[1]) : "");
      if (e.items.size() > 2 && e.items[2]) s += ":" + expr_text(*e.items[2]);
      return s;
    }
  }
  return "?";
}

}  // namespace opscope::lang
