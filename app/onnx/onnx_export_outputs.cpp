// The graph values an export writes, found without protobuf: the forward sinks (the GUI's and
// the command line's default), and save_onnx's tensors as values. The writing itself is in the
// protobuf module (onnx_export.cpp).
#include <set>

#include "app/onnx/onnx_export.h"
#include "core/error.h"

namespace opscope::interop {

std::vector<int> forward_sinks(const Graph& g) {
  std::set<int> read;
  for (const Node& n : g.nodes())
    if (n.phase == Phase::forward) read.insert(n.inputs.begin(), n.inputs.end());
  std::vector<int> sinks;
  for (const Node& n : g.nodes())
    if (n.phase == Phase::forward)
      for (int v : n.outputs)
        if (!read.count(v)) sinks.push_back(v);
  return sinks;
}

ExportInfo save_onnx(Workspace& ws, const std::vector<Tensor>& outputs, const std::string& path) {
  std::vector<int> values;
  for (const Tensor& t : outputs) {
    const int v = t.impl()->value_id;
    if (v < 0 || static_cast<size_t>(v) >= ws.graph().num_values() ||
        ws.graph().value(v).tensor.lock().get() != t.impl())
      throw Error("save_onnx: '" + (t.name().empty() ? std::string("this tensor") : t.name()) + "' is not in the graph",
                  "export a tensor computed by ops (y = f(x)), not a tensor made directly");
    values.push_back(v);
  }
  return save_onnx_values(ws, values, path);
}

}  // namespace opscope::interop
