#include "app/lang/arithmetic.h"

#include <cmath>
#include <string>
#include <vector>

#include "app/lang/interpreter.h"
#include "app/lang/parser.h"

namespace opscope::lang {

namespace {

// Integers (and bools) stay exact, with no trip through double; overflow is an error, not a wrap.
Value integer_binary(const Interpreter& in, Operator op, int64_t x, int64_t y, Pos p) {
  int64_t z = 0;
  auto overflow = [&] {
    in.fail(p, "integer overflow in " + std::to_string(x) + " " + name_of(op) + " " + std::to_string(y),
            "use floats (e.g. 2.0 ** 70) for very large numbers");
  };
  switch (op) {
    case Operator::add:
      if (__builtin_add_overflow(x, y, &z)) overflow();
      return Value::Int(z);
    case Operator::sub:
      if (__builtin_sub_overflow(x, y, &z)) overflow();
      return Value::Int(z);
    case Operator::mul:
      if (__builtin_mul_overflow(x, y, &z)) overflow();
      return Value::Int(z);
    case Operator::div:
      if (y == 0) in.fail(p, "division by zero");
      return Value::Real(static_cast<double>(x) / static_cast<double>(y));
    case Operator::floor_div:
    case Operator::mod: {
      if (y == 0) in.fail(p, "division by zero");
      if (y == -1) {  // INT64_MIN // -1 overflows; x % -1 is 0
        if (op == Operator::mod) return Value::Int(0);
        if (__builtin_sub_overflow(int64_t{0}, x, &z)) overflow();
        return Value::Int(z);
      }
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // Python floors; the remainder takes the divisor's sign
      return op == Operator::floor_div ? Value::Int(q) : Value::Int(x - q * y);
    }
    case Operator::pow:
      if (y < 0) return Value::Real(std::pow(static_cast<double>(x), static_cast<double>(y)));
      if (x == 0 || x == 1) return Value::Int(y == 0 ? 1 : x);
      if (x == -1) return Value::Int(y % 2 == 0 ? 1 : -1);
      z = 1;
      for (int64_t k = 0; k < y; ++k)  // |x| >= 2 overflows within 63 steps
        if (__builtin_mul_overflow(z, x, &z)) overflow();
      return Value::Int(z);
    default: in.fail(p, "operator '" + std::string(name_of(op)) + "' is not defined for numbers");
  }
}

Value real_binary(const Interpreter& in, Operator op, double a, double b, Pos p) {
  switch (op) {
    case Operator::add: return Value::Real(a + b);
    case Operator::sub: return Value::Real(a - b);
    case Operator::mul: return Value::Real(a * b);
    case Operator::pow: return Value::Real(std::pow(a, b));
    default: break;
  }
  if (b == 0) in.fail(p, "division by zero");
  const double q = std::floor(a / b);
  switch (op) {
    case Operator::div: return Value::Real(a / b);
    case Operator::floor_div: return Value::Real(q);
    case Operator::mod: return Value::Real(a - q * b);
    default: in.fail(p, "operator '" + std::string(name_of(op)) + "' is not defined for numbers");
  }
}

// "ab" * 3, [0] * 4.
Value repeated(const Interpreter& in, const Value& l, int64_t times, Pos p) {
  const size_t n = l.kind() == Value::list ? l.items()->size() : l.as_str().size();
  if (times < 0 || times * static_cast<int64_t>(n) > int64_t(kMaxLiteralItems)) in.fail(p, "repetition too large");
  if (l.kind() == Value::string) {
    std::string s;
    for (int64_t k = 0; k < times; ++k) s += l.as_str();
    return Value::Str(s);
  }
  std::vector<Value> all;
  for (int64_t k = 0; k < times; ++k) all.insert(all.end(), l.items()->begin(), l.items()->end());
  return Value::List(std::move(all));
}

}  // namespace

Value binary_on_values(const Interpreter& in, Operator op, const Value& l, const Value& r, Pos p) {
  if (l.is_number() && r.is_number() && l.kind() != Value::real && r.kind() != Value::real)
    return integer_binary(in, op, l.kind() == Value::integer ? l.as_int() : l.as_bool(),
                          r.kind() == Value::integer ? r.as_int() : r.as_bool(), p);
  if (l.is_number() && r.is_number()) return real_binary(in, op, l.number(), r.number(), p);  // at least one float
  if (op == Operator::add && l.kind() == Value::string && r.kind() == Value::string)
    return Value::Str(l.as_str() + r.as_str());
  if (op == Operator::add && l.kind() == r.kind() && l.is_sequence()) {
    std::vector<Value> all(*l.items());
    all.insert(all.end(), r.items()->begin(), r.items()->end());
    return Value::List(std::move(all), l.kind());
  }
  if (op == Operator::mul && (l.kind() == Value::list || l.kind() == Value::string) && r.kind() == Value::integer)
    return repeated(in, l, r.as_int(), p);
  in.fail(p, "unsupported operand types for " + std::string(name_of(op)) + ": " + kind_name(l) + " and " + kind_name(r),
          l.kind() == Value::none || r.kind() == Value::none ? "one side is None: did a function forget to return?"
                                                             : "");
}

Value compare_values(const Interpreter& in, Operator op, const Value& l, const Value& r, Pos p) {
  if (op == Operator::in) {
    if (r.kind() == Value::dict) return Value::Bool(r.as_dict()->find(l) != nullptr);
    if (r.kind() == Value::string && l.kind() == Value::string)
      return Value::Bool(r.as_str().find(l.as_str()) != std::string::npos);
    if (!r.is_sequence()) in.fail(p, "'in' needs a list, tuple, dict or string on its right");
    for (auto& x : *r.items())
      if (values_equal(l, x)) return Value::Bool(true);
    return Value::Bool(false);
  }
  if (op == Operator::eq) return Value::Bool(values_equal(l, r));
  if (op == Operator::ne) return Value::Bool(!values_equal(l, r));
  auto ordered = [op](const auto& a, const auto& b) {
    switch (op) {
      case Operator::lt: return a < b;
      case Operator::le: return a <= b;
      case Operator::gt: return a > b;
      default: return a >= b;
    }
  };
  if (l.is_number() && r.is_number()) return Value::Bool(ordered(l.number(), r.number()));
  if (l.kind() == Value::string && r.kind() == Value::string) return Value::Bool(ordered(l.as_str(), r.as_str()));
  in.fail(p, "cannot compare " + std::string(kind_name(l)) + " and " + kind_name(r) + " with " + name_of(op));
}

}  // namespace opscope::lang
