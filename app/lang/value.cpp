#include "app/lang/value.h"

#include <cmath>
#include <cstdio>

namespace opscope::lang {

const char* kind_name(Value::Kind k) {
  switch (k) {
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

Value Value::List(std::vector<Value> v, Kind k) {
  auto items = std::make_shared<std::vector<Value>>(std::move(v));
  if (k == tuple) return Value(Data(TupleValue{std::move(items)}));
  return Value(Data(ListValue{std::move(items)}));
}

const Items& Value::items() const {
  if (auto* l = std::get_if<ListValue>(&data_)) return l->items;
  return get<TupleValue>(tuple).items;
}

std::shared_ptr<Object> Value::as_object() const {
  switch (kind()) {
    case dict: return as_dict();
    case class_: return as_class();
    case instance: return as_instance();
    case object: return as_native();
    default: return nullptr;
  }
}

double Value::number() const {
  switch (kind()) {
    case real: return as_real();
    case integer: return static_cast<double>(as_int());
    case boolean: return as_bool() ? 1.0 : 0.0;
    default: wrong_kind(real);
  }
}

void Value::wrong_kind(Kind wanted) const {
  // A bug in the C++ side, not in the script: still an Error, so the statement fails and is
  // rolled back at its position instead of taking the session down.
  throw Error(std::string("internal error: the value is ") + kind_name(*this) + ", not " + kind_name(wanted),
              "please report it with the statement that caused it");
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

std::string join(const Value& v) {
  const std::vector<Value>& items = *v.items();
  std::string s = v.kind() == Value::list ? "[" : "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + repr(items[i]);
  if (v.kind() == Value::tuple && items.size() == 1) s += ",";
  return s + (v.kind() == Value::list ? "]" : ")");
}
}  // namespace

std::string repr(const Value& v) {
  switch (v.kind()) {
    case Value::none: return "None";
    case Value::boolean: return v.as_bool() ? "True" : "False";
    case Value::integer: return std::to_string(v.as_int());
    case Value::real: return real_str(v.as_real());
    case Value::string: return "'" + v.as_str() + "'";
    case Value::list:
    case Value::tuple: return join(v);
    case Value::tensor: return v.as_tensor().to_string();
    case Value::function: return "<function " + v.as_function()->name + ">";
    case Value::builtin_fn: return "<builtin " + v.as_builtin().name + ">";
    case Value::op_ref: return "<operator " + v.as_op().name + ": " + v.as_op().doc + ">";
    case Value::method: return "<method " + v.as_method().name + ">";
    case Value::dict: {
      const Dict& d = *v.as_dict();
      std::string s = "{";
      for (size_t i = 0; i < d.entries.size(); ++i)
        s += (i ? ", " : "") + repr(d.entries[i].first) + ": " + repr(d.entries[i].second);
      return s + "}";
    }
    case Value::class_: return "<class " + v.as_class()->name + ">";
    case Value::instance: return "<" + v.as_instance()->cls->name + " object>";
    case Value::object: return v.as_native()->repr();
  }
  return "?";
}

std::string str(const Value& v) { return v.kind() == Value::string ? v.as_str() : repr(v); }

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.number() == b.number();
  // [2, 3] == (2, 3) is convenient for shapes.
  if (a.kind() != b.kind() && !(a.is_sequence() && b.is_sequence())) return false;
  switch (a.kind()) {
    case Value::none: return true;
    case Value::string: return a.as_str() == b.as_str();
    case Value::list:
    case Value::tuple: {
      const std::vector<Value>&x = *a.items(), &y = *b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!values_equal(x[i], y[i])) return false;
      return true;
    }
    case Value::tensor: return a.as_tensor().impl() == b.as_tensor().impl();
    case Value::function: return a.as_function() == b.as_function();
    case Value::builtin_fn: return &a.as_builtin() == &b.as_builtin();
    case Value::op_ref: return &a.as_op() == &b.as_op();
    case Value::dict: {
      if (a.as_dict() == b.as_dict()) return true;
      Dict &x = *a.as_dict(), &y = *b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (auto& [k, v] : x.entries) {
        const Value* w = y.find(k);
        if (!w || !values_equal(v, *w)) return false;
      }
      return true;
    }
    case Value::class_:
    case Value::instance:
    case Value::object: return a.as_object() == b.as_object();
    default: return false;
  }
}

}  // namespace opscope::lang
