// Values of the script language: None, bool, int, float, str, list, tuple, dict, tensor,
// user functions, builtins, operators, bound methods, user classes and their instances, and
// builtin objects (optimizers, batch iterators).
#pragma once
#include <functional>
#include <memory>
#include <optional>
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
class NativeObject;

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
  Pos pos;  // of the call
};

struct Builtin {
  std::string name;
  std::string signature;  // "zeros(*shape, dtype=\"float32\")"
  std::string doc;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

// What a value holds by reference, as Python does: dicts, classes, instances, builtin objects.
struct Object : std::enable_shared_from_this<Object> {
  virtual ~Object() = default;
};

struct Value {
  enum Kind {
    none,
    boolean,
    integer,
    real,
    string,
    list,
    tuple,
    tensor,
    function,
    builtin_fn,
    op_ref,
    method,
    dict,
    class_,
    instance,
    object
  };
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
  std::shared_ptr<Object> obj;  // dict, class_, instance, object; a method's receiver when not a tensor or list

  static Value None() { return {}; }
  static Value Bool(bool v) {
    Value x;
    x.kind = boolean;
    x.b = v;
    return x;
  }
  static Value Int(int64_t v) {
    Value x;
    x.kind = integer;
    x.i = v;
    return x;
  }
  static Value Real(double v) {
    Value x;
    x.kind = real;
    x.f = v;
    return x;
  }
  static Value Str(std::string v) {
    Value x;
    x.kind = string;
    x.s = std::move(v);
    return x;
  }
  static Value Tensor_(Tensor v) {
    Value x;
    x.kind = tensor;
    x.t = std::move(v);
    return x;
  }
  static Value List(std::vector<Value> v, Kind k = list) {
    Value x;
    x.kind = k;
    x.items = std::make_shared<std::vector<Value>>(std::move(v));
    return x;
  }
  bool is_number() const { return kind == integer || kind == real || kind == boolean; }
  double number() const { return kind == real ? f : kind == integer ? static_cast<double>(i) : b ? 1.0 : 0.0; }
};

// {key: value} in insertion order, as Python's dict. Keys are str, int, float, bool, None or
// tuples of those (compared as values); a handful of entries, so lookups scan.
struct Dict final : Object {
  std::vector<std::pair<Value, Value>> entries;
  Value* find(const Value& key);
};

// A user class: its methods and class attributes, in the order the body defines them.
struct ClassDef final : Object {
  std::string name;
  std::vector<std::pair<std::string, Value>> members;
  const Value* find(const std::string& name) const;
};

// An instance of a user class: attributes in the order they were first set (parameters(model)
// visits them in that order, as PyTorch's registration order).
struct Instance final : Object {
  std::shared_ptr<ClassDef> cls;
  std::vector<std::pair<std::string, Value>> attrs;
  Value* find(const std::string& name);
};

// A builtin object written in C++ (an optimizer, a batch iterator): attributes, methods, and
// optionally a length and items so that `for x in obj` works.
class NativeObject : public Object {
 public:
  virtual std::string type_name() const = 0;
  virtual std::string repr() const { return "<" + type_name() + ">"; }
  virtual std::vector<std::string> members() const = 0;  // attributes and methods (completion, suggestions)
  virtual bool has_method(const std::string& name) const = 0;
  // A non-method attribute, or nullopt when there is none by that name.
  virtual std::optional<Value> attr(Interpreter&, const std::string&, Pos) { return std::nullopt; }
  // Sets an attribute; false when it cannot be set.
  virtual bool set_attr(Interpreter&, const std::string&, const Value&, Pos) { return false; }
  virtual Value call(Interpreter& in, const std::string& method, CallArgs& args) = 0;
  // obj[a, b]: the subscripts' values (a kernel's launch configuration), or nullopt when it cannot be indexed.
  virtual std::optional<Value> subscript(Interpreter&, std::vector<Value>& /*subs*/, Pos) { return std::nullopt; }
  virtual int64_t length() const { return -1; }  // >= 0: iterable, with this many items
  virtual Value item(Interpreter& in, int64_t i, Pos p);
  virtual bool shows_progress() const { return false; }  // a for loop over it reports progress (batches)
};

const char* kind_name(const Value& v);  // "int", "tensor", ...
std::string repr(const Value& v);  // as the REPL echoes it
std::string str(const Value& v);  // as print() shows it
bool values_equal(const Value& a, const Value& b);

}  // namespace opscope::lang
