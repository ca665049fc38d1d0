// Argument checking shared by the builtin functions: keywords, counts, tensors, dtypes. Each
// failure points at the call with a message for a student.
#pragma once
#include <initializer_list>
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

}  // namespace opscope::lang
