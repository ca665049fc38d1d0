// ONNX export: the forward graph that computes some tensors of a workspace — a static
// program's symbolic graph or a dynamic graph's tape — written as an ONNX model (opset 17).
// Parameters become initializers (with their values), placeholders and named input tensors
// graph inputs, small constants Constant nodes; each opscope op becomes the ONNX operators it
// means. The model is checked with ONNX's own checker before it is written.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/workspace.h"

namespace opscope::interop {

struct ExportInfo {
  int nodes = 0, initializers = 0, inputs = 0;
  int64_t opset = 0;
};

// Writes the forward nodes that `outputs` depend on. Ops without an ONNX form (and training-
// mode dropout or batch_norm, which have no deterministic one) are one error naming them all.
ExportInfo save_onnx(Workspace& ws, const std::vector<Tensor>& outputs, const std::string& path);
// The same for graph values (value ids of ws.graph()): what `opscope export --onnx` writes.
ExportInfo save_onnx_values(Workspace& ws, const std::vector<int>& outputs, const std::string& path);
// The values of ws's forward graph that no forward node reads (a script's results).
std::vector<int> forward_sinks(const Graph& g);

// Which operators save_onnx can write (export_ops.cpp): those of its export table, and those
// with no ONNX form, each with the reason. A test checks that every registered operator is one
// or the other (tests/test_onnx_export.cpp).
struct ExportCoverage {
  std::vector<std::string> exported;
  std::vector<std::pair<std::string, std::string>> without_form;  // operator, why it has no ONNX form
};

}  // namespace opscope::interop
