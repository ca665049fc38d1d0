// Values of the script language: None, bool, int, float, str, list, tuple, tensor,
// user functions, builtins, operators and bound tensor methods.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/lang/ast.h"
#include "app/lang/error.h"
#include "app/lang/file_policy.h"
#include "core/op.h"
#include "core/tensor.h"

namespace opscope::lang {

class Interpreter;
struct Value;

struct Function {  // a user `def`
  std::string name;
  std::vector<std::string> params;
  std::vector<std::shared_ptr<Value>> defaults;  // null where none
  const Block* body = nullptr;
  std::shared_ptr<Block> owner;  // keeps the parsed program alive
  std::shared_ptr<const SourceText> source;
  std::vector<std::string> decorators;
  // The file policy it was defined under (a lesson's): it runs under it wherever it is called.
  std::shared_ptr<const FilePolicy> file_policy;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  std::vector<Pos> positions;  // of positional args (for errors)
  Pos pos;                     // of the call
};

struct Builtin {
  std::string name;
  std::string signature;  // "zeros(*shape, dtype=\"float32\")"
  std::string doc;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

struct Value {
  enum Kind { none, boolean, integer, real, string, list, tuple, tensor, function, builtin_fn, op_ref, method };
  Kind kind = none;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // string; method name
  std::shared_ptr<std::vector<Value>> items;
  Tensor t;  // tensor; method receiver
  std::shared_ptr<Function> fn;
  const Builtin* builtin = nullptr;
  const OpDef* op = nullptr;

  static Value None() { return {}; }
  static Value Bool(bool v) { Value x; x.kind = boolean; x.b = v; return x; }
  static Value Int(int64_t v) { Value x; x.kind = integer; x.i = v; return x; }
  static Value Real(double v) { Value x; x.kind = real; x.f = v; return x; }
  static Value Str(std::string v) { Value x; x.kind = string; x.s = std::move(v); return x; }
  static Value Tensor_(Tensor v) { Value x; x.kind = tensor; x.t = std::move(v); return x; }
  static Value List(std::vector<Value> v, Kind k = list) {
    Value x;
    x.kind = k;
    x.items = std::make_shared<std::vector<Value>>(std::move(v));
    return x;
  }
  bool is_number() const { return kind == integer || kind == real || kind == boolean; }
  double number() const { return kind == real ? f : kind == integer ? static_cast<double>(i) : b ? 1.0 : 0.0; }
};

const char* kind_name(const Value& v);  // "int", "tensor", ...
std::string repr(const Value& v);       // as the REPL echoes it
std::string str(const Value& v);        // as print() shows it
bool values_equal(const Value& a, const Value& b);

}  // namespace opscope::lang
