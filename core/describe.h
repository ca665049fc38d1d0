// Human-readable descriptions of operators (for :doc, `opscope ops` and the inspector).
#pragma once
#include <string>

#include "core/op.h"

namespace opscope {

std::string op_signature(const OpDef& op);  // "matmul(a, b, *, algo=\"eigen\")"
std::string describe_op(const OpDef& op);  // several lines: doc, attributes, saves, backward, algorithms

}  // namespace opscope
