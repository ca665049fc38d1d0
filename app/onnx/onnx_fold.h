// Patterns that PyTorch's exporter spells out in several ONNX nodes, folded back into the one
// opscope op they are before the model is lowered, so the graph shows the layer the student
// wrote: GroupNorm (before opset 18 exported as Reshape → InstanceNormalization with unit scale
// and zero bias over the groups → Reshape → Mul(weight) → Add(bias)) becomes one node of the
// domain ai.opscope that maps to group_norm.
#pragma once
#include "app/onnx/onnx_model.h"

namespace opscope::interop {

inline constexpr const char* kOpscopeDomain = "ai.opscope";
inline constexpr const char* kFoldedGroupNorm = "ai.opscope.GroupNorm";  // its qualified type

// Rewrites the model's nodes; returns how many patterns were folded.
int fold_pytorch_patterns(OnnxModel& model);

}  // namespace opscope::interop
