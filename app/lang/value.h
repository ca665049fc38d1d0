// Values of the script language: None, bool, int, float, str, list, tuple, dict, tensor,
// user functions, builtins, operators, bound methods, user classes and their instances, and
// builtin objects (optimizers, batch iterators).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "app/lang/ast.h"
#include "app/lang/error.h"
#include "app/lang/file_policy.h"
#include "core/op.h"
#include "core/tensor.h"

namespace opscope::lang {

class Interpreter;
class Value;
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

struct Dict;
struct ClassDef;
struct Instance;

// The items of a list or tuple, shared as Python shares them (`b = a; b.append(1)` changes a).
using Items = std::shared_ptr<std::vector<Value>>;
struct ListValue {
  Items items;
};
struct TupleValue {
  Items items;
};
// A bound method: x.relu (a tensor's), lst.append (a list's), model.forward / opt.step (an
// object's). `fn` is the user function a class defines for it (null for the others).
struct Method {
  std::string name;
  std::variant<Tensor, Items, std::shared_ptr<Object>> receiver;
  std::shared_ptr<Function> fn;
  const Tensor* tensor() const { return std::get_if<Tensor>(&receiver); }
  const Items* list() const { return std::get_if<Items>(&receiver); }
  const std::shared_ptr<Object>* object() const { return std::get_if<std::shared_ptr<Object>>(&receiver); }
};

// A value of the language: one alternative per kind, in Kind's order. The accessors check the
// kind and throw an Error naming both kinds on a mismatch (a bug in C++ code: a script gets the
// caller's own positioned error first).
class Value {
 public:
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
  using Data = std::variant<std::monostate, bool, int64_t, double, std::string, ListValue, TupleValue, Tensor,
                            std::shared_ptr<Function>, const Builtin*, const OpDef*, Method, std::shared_ptr<Dict>,
                            std::shared_ptr<ClassDef>, std::shared_ptr<Instance>, std::shared_ptr<NativeObject>>;

  Value() = default;
  Kind kind() const { return static_cast<Kind>(data_.index()); }

  static Value None() { return {}; }
  static Value Bool(bool v) { return Value(Data(std::in_place_type<bool>, v)); }
  static Value Int(int64_t v) { return Value(Data(std::in_place_type<int64_t>, v)); }
  static Value Real(double v) { return Value(Data(std::in_place_type<double>, v)); }
  static Value Str(std::string v) { return Value(Data(std::in_place_type<std::string>, std::move(v))); }
  static Value Tensor_(Tensor v) { return Value(Data(std::in_place_type<Tensor>, std::move(v))); }
  static Value List(std::vector<Value> v, Kind k = list);  // k: list or tuple
  static Value Of(std::shared_ptr<Function> f) { return Value(Data(std::move(f))); }
  static Value Of(const Builtin& b) { return Value(Data(std::in_place_type<const Builtin*>, &b)); }
  static Value Of(const OpDef& op) { return Value(Data(std::in_place_type<const OpDef*>, &op)); }
  static Value Of(Method m) { return Value(Data(std::move(m))); }
  static Value Of(std::shared_ptr<Dict> d) { return Value(Data(std::move(d))); }
  static Value Of(std::shared_ptr<ClassDef> c) { return Value(Data(std::move(c))); }
  static Value Of(std::shared_ptr<Instance> i) { return Value(Data(std::move(i))); }
  static Value Of(std::shared_ptr<NativeObject> o) { return Value(Data(std::move(o))); }

  bool as_bool() const { return get<bool>(boolean); }
  int64_t as_int() const { return get<int64_t>(integer); }
  double as_real() const { return get<double>(real); }
  const std::string& as_str() const { return get<std::string>(string); }
  const Tensor& as_tensor() const { return get<Tensor>(tensor); }
  Tensor& as_tensor() { return const_cast<Tensor&>(get<Tensor>(tensor)); }
  const Items& items() const;  // a list's or a tuple's
  const std::shared_ptr<Function>& as_function() const { return get<std::shared_ptr<Function>>(function); }
  const Builtin& as_builtin() const { return *get<const Builtin*>(builtin_fn); }
  const OpDef& as_op() const { return *get<const OpDef*>(op_ref); }
  const Method& as_method() const { return get<Method>(method); }
  const std::shared_ptr<Dict>& as_dict() const { return get<std::shared_ptr<Dict>>(dict); }
  const std::shared_ptr<ClassDef>& as_class() const { return get<std::shared_ptr<ClassDef>>(class_); }
  const std::shared_ptr<Instance>& as_instance() const { return get<std::shared_ptr<Instance>>(instance); }
  const std::shared_ptr<NativeObject>& as_native() const { return get<std::shared_ptr<NativeObject>>(object); }
  // What a dict, class, instance or builtin object refers to (null for other kinds): the
  // receiver of its bound methods, and its identity.
  std::shared_ptr<Object> as_object() const;

  bool is_number() const { return kind() == integer || kind() == real || kind() == boolean; }
  bool is_sequence() const { return kind() == list || kind() == tuple; }
  double number() const;  // an int, float or bool as a double

 private:
  explicit Value(Data d) : data_(std::move(d)) {}
  template <typename T> const T& get(Kind k) const {
    if (const T* v = std::get_if<T>(&data_)) return *v;
    wrong_kind(k);
  }
  [[noreturn]] void wrong_kind(Kind wanted) const;
  Data data_;
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

const char* kind_name(Value::Kind k);  // "int", "tensor", ...
inline const char* kind_name(const Value& v) { return kind_name(v.kind()); }
std::string repr(const Value& v);  // as the REPL echoes it
std::string str(const Value& v);  // as print() shows it
bool values_equal(const Value& a, const Value& b);

}  // namespace opscope::lang
