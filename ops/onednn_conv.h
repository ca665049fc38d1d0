// conv2d's `onednn` algorithm, opscope's side: runs oneDNN's convolution primitives through
// libopscope_onednn.so (ops/onednn_loader.h), opened on the first call.
#pragma once
#include <string>

#include "core/op.h"
#include "ops/geometry.h"
#include "ops/onednn_loader.h"  // onednn_available, onednn_description

namespace opscope::cpu {

enum class OnednnPass { forward, backward_data, backward_weights };

// Runs one pass in float32 on contiguous NCHW / OIHW tensors: forward (a = x, b = w, bias =
// c or null, out = y), backward_data (a = dy, b = w, out = dx), backward_weights (a = x,
// b = dy, out = dw). The workspace (oneDNN's layouts and scratchpad) comes from k.workspace,
// so the memory tracker counts it. Throws a student error when the module is missing.
void onednn_conv(const KernelCtx& k, OnednnPass pass, const ConvGeom& g, const float* a, const float* b, const float* c,
                 float* out);

// Workspace bytes of one pass, when the module is already loaded (else 0: the cost model
// never loads it).
double onednn_workspace_bytes(OnednnPass pass, const ConvGeom& g, bool bias);

}  // namespace opscope::cpu
