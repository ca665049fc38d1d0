// An expression written back as the user would write it ("sum(z)", "x @ w + b"), so an error
// can name what the student wrote rather than a placeholder.
#pragma once
#include <string>

#include "app/lang/ast.h"

namespace opscope::lang {

std::string expr_text(const Expr& e);

}  // namespace opscope::lang
