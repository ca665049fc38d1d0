#include "app/lang/value.h"

#include <cmath>
#include <cstdio>

namespace opscope::lang {

const char* kind_name(const Value& v) {
  switch (v.kind) {
    case Value::none: return "None";
    case Value::boolean: return "bool";
    case Value::integer: return "int";
    case Value::real: return "float";
    case Value::string: return "str";
    case Value::list: return "list";
    case Value::tuple: return "tuple";
    case Value::tensor: return "tensor";
    case Value::function: return "function";
    case Value::builtin_fn: return "builtin";
    case Value::op_ref: return "operator";
    case Value::method: return "method";
    case Value::dict: return "dict";
    case Value::class_: return "class";
    case Value::instance: return "object";
    case Value::object: return "object";
  }
  return "?";
}

Value* Dict::find(const Value& key) {
  for (auto& [k, v] : entries)
    if (values_equal(k, key)) return &v;  // 1, 1.0 and True are one key, as in Python
  return nullptr;
}

const Value* ClassDef::find(const std::string& n) const {
  for (auto& [k, v] : members)
    if (k == n) return &v;
  return nullptr;
}

Value* Instance::find(const std::string& n) {
  for (auto& [k, v] : attrs)
    if (k == n) return &v;
  return nullptr;
}

Value NativeObject::item(Interpreter&, int64_t, Pos) { return Value::None(); }

namespace {
std::string real_str(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", f);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 2.0, not 2
  return s;
}

std::string join(const Value& v, bool quote_strings) {
  std::string s = v.kind == Value::list ? "[" : "(";
  for (size_t i = 0; i < v.items->size(); ++i) {
    if (i) s += ", ";
    s += quote_strings ? repr((*v.items)[i]) : repr((*v.items)[i]);
  }
  if (v.kind == Value::tuple && v.items->size() == 1) s += ",";
  return s + (v.kind == Value::list ? "]" : ")");
}
}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::none: return "None";
    case Value::boolean: return v.b ? "True" : "False";
    case Value::integer: return std::to_string(v.i);
    case Value::real: return real_str(v.f);
    case Value::string: return "'" + v.s + "'";
    case Value::list:
    case Value::tuple: return join(v, true);
    case Value::tensor: return v.t.to_string();
    case Value::function: return "<function " + v.fn->name + ">";
    case Value::builtin_fn: return "<builtin " + v.builtin->name + ">";
    case Value::op_ref: return "<operator " + v.op->name + ": " + v.op->doc + ">";
    case Value::method: return "<method " + v.s + ">";
    case Value::dict: {
      const auto& d = static_cast<const Dict&>(*v.obj);
      std::string s = "{";
      for (size_t i = 0; i < d.entries.size(); ++i)
        s += (i ? ", " : "") + repr(d.entries[i].first) + ": " + repr(d.entries[i].second);
      return s + "}";
    }
    case Value::class_: return "<class " + static_cast<const ClassDef&>(*v.obj).name + ">";
    case Value::instance: return "<" + static_cast<const Instance&>(*v.obj).cls->name + " object>";
    case Value::object: return static_cast<const NativeObject&>(*v.obj).repr();
  }
  return "?";
}

std::string str(const Value& v) { return v.kind == Value::string ? v.s : repr(v); }

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.number() == b.number();
  if (a.kind != b.kind) {
    // [2, 3] == (2, 3) is convenient for shapes.
    if ((a.kind == Value::list || a.kind == Value::tuple) && (b.kind == Value::list || b.kind == Value::tuple)) {
    } else {
      return false;
    }
  }
  switch (a.kind) {
    case Value::none: return true;
    case Value::string: return a.s == b.s;
    case Value::list:
    case Value::tuple:
      if (a.items->size() != b.items->size()) return false;
      for (size_t i = 0; i < a.items->size(); ++i)
        if (!values_equal((*a.items)[i], (*b.items)[i])) return false;
      return true;
    case Value::tensor: return a.t.impl() == b.t.impl();
    case Value::function: return a.fn == b.fn;
    case Value::builtin_fn: return a.builtin == b.builtin;
    case Value::op_ref: return a.op == b.op;
    case Value::dict: {
      if (a.obj == b.obj) return true;
      auto& x = static_cast<Dict&>(*a.obj);
      auto& y = static_cast<Dict&>(*b.obj);
      if (x.entries.size() != y.entries.size()) return false;
      for (auto& [k, v] : x.entries) {
        const Value* w = y.find(k);
        if (!w || !values_equal(v, *w)) return false;
      }
      return true;
    }
    case Value::class_:
    case Value::instance:
    case Value::object: return a.obj == b.obj;
    default: return false;
  }
}

}  // namespace opscope::lang
