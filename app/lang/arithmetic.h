// The operators on values that are not tensors, as Python defines them: numbers (integers stay
// exact and fail on overflow), strings and lists (+, repetition), comparisons and `in`. The
// interpreter sends a tensor operand to the engine's ops instead.
#pragma once
#include "app/lang/ast.h"
#include "app/lang/value.h"

namespace opscope::lang {

class Interpreter;

// l OP r for + - * / // % ** @; fails at `p` (through `in`) when the operands do not support it.
Value binary_on_values(const Interpreter& in, Operator op, const Value& l, const Value& r, Pos p);
// l OP r for == != < <= > >= and `in`.
Value compare_values(const Interpreter& in, Operator op, const Value& l, const Value& r, Pos p);

}  // namespace opscope::lang
