// Recursive-descent parser: tokens -> statements. Throws LangError with the position.
#pragma once
#include <string>

#include "app/lang/ast.h"

namespace opscope::lang {

constexpr int kMaxNesting = 100;  // expression and block nesting
constexpr size_t kMaxLiteralItems = 1 << 20;  // elements in one list literal

Block parse_program(const std::string& source);

}  // namespace opscope::lang
