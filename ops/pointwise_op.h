// What the kernels of both devices need to run pointwise ops (Eigen-free: the CUDA kernels
// include it): a call's formula numbers, and the instructions of a fused_elementwise chain
// ("mul i0 i1;gelu/0 r0", core/op.h's contract), each naming a pointwise op whose formula
// (ops/pointwise.h) it runs.
#pragma once
#include <string>
#include <vector>

#include "core/op.h"
#include "ops/pointwise.h"

namespace opscope {

// A call's formula numbers (OpDef::pointwise.params) as the kernels take them.
pointwise::Params pointwise_params(const OpDef& op, const Attrs& attrs);

struct FusedInstruction {
  pointwise::Formula formula;
  pointwise::Params params;
  int arity = 1;
  char kind[2] = {'i', 'i'};  // 'i': the fused node's input `index`; 'r': instruction `index`'s result
  int index[2] = {0, 0};
};

// Throws an Error naming the instruction that is not a fusible pointwise op, has the wrong
// number of operands or parameters, or reads an input or result that does not exist.
std::vector<FusedInstruction> parse_fused_chain(const std::string& chain, size_t num_inputs);

}  // namespace opscope
