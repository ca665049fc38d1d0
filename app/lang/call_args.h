// Argument checking shared by the builtin functions: keywords, counts, tensors, dtypes. Each
// failure points at the call with a message for a student.
#pragma once
#include <functional>
#include <initializer_list>
#include <map>
#include <string>

#include "app/lang/value.h"

namespace opscope::lang {

class Interpreter;

const Value* keyword(CallArgs& a, const char* name);
// Rejects keywords other than `allowed`, naming the valid ones.
void check_keywords(Interpreter& in, CallArgs& a, const std::string& fn, std::initializer_list<const char*> allowed);
DType dtype_arg(Interpreter& in, CallArgs& a, DType def);
Tensor finish(Interpreter& in, CallArgs& a, Tensor t);  // applies requires_grad=
void need_args(Interpreter& in, CallArgs& a, const std::string& fn, size_t lo, size_t hi);
const Tensor& tensor_arg(Interpreter& in, CallArgs& a, size_t i, const std::string& fn);

// The language's table of builtin functions, filled by one install function per group
// (factories, autograd, files, ...): B.add("zeros", "zeros(*shape)", "a tensor of zeros", fn).
class BuiltinTable {
 public:
  explicit BuiltinTable(std::map<std::string, Builtin>& table) : table_(table) {}
  void add(std::string name, std::string signature, std::string doc, std::function<Value(Interpreter&, CallArgs&)> fn) {
    table_[name] = Builtin{name, std::move(signature), std::move(doc), std::move(fn)};
  }

 private:
  std::map<std::string, Builtin>& table_;
};

}  // namespace opscope::lang
