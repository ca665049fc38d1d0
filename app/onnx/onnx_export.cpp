#include "app/onnx/onnx_export.h"

#include <fstream>

#include "app/onnx/exporter.h"
#include "app/onnx/onnx_schema.h"

namespace opscope::interop {

Exporter::Exporter(Workspace& ws) : g_(ws.graph()) {
  model_.set_ir_version(8);
  model_.set_producer_name("opscope");
  model_.set_producer_version(OPSCOPE_EXPORT_VERSION);
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kExportOpset);
  graph_ = model_.mutable_graph();
  graph_->set_name("opscope");
}

// Graph inputs, initializers and constants for the leaves the exported nodes read.
void Exporter::leaf(int v) {
  if (names_.count(v)) return;
  const ValueInfo& vi = g_.value(v);
  Tensor value = vi.constant.defined() ? vi.constant : Tensor(vi.tensor.lock());
  if (value.defined() && value.is_symbolic()) value = Tensor();
  // Model state (parameters, an imported model's buffers) lives in parameter memory.
  const bool state =
      vi.kind == ValueKind::parameter || (value.defined() && value.storage().category() == MemCategory::parameter);
  // Fed by the caller: input("x", ...), a named tensor, or an unnamed one that is not a small
  // literal (the randn(...) of y = m(randn(...)), alive or not). Small literals are Constants.
  constexpr int64_t kLiteralElements = 64;
  if (vi.placeholder || (!state && (!vi.name.empty() || !value.defined() || value.numel() > kLiteralElements))) {
    if (vi.name.empty()) names_[v] = fresh("input_" + std::to_string(info_.inputs));
    add_value_info(*graph_->add_input(), name_of(v), vi.meta);
    ++info_.inputs;
    return;
  }
  if (!value.defined())
    throw Error("save_onnx: the parameter '" + name_of(v) + "' that the graph reads no longer exists",
                "keep the parameters the graph reads in variables until it is exported");
  const std::string name = name_of(v);
  if (state) {
    tensor_to_proto(value, name, *graph_->add_initializer());
    ++info_.initializers;
    return;
  }
  auto& n = node("Constant", {}, {name});  // a literal: known at import, never a parameter
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  tensor_to_proto(value, name, *a->mutable_t());
}

void Exporter::add_value_info(onnx::ValueInfoProto& vi, const std::string& name, const TensorMeta& m) {
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_elem_type(m.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : m.shape) shape->add_dim()->set_dim_value(d);
}

ExportInfo Exporter::run(const std::vector<int>& outputs, const std::string& path) {
  // The forward nodes the outputs depend on, in creation (topological) order.
  std::set<int> needed;
  std::vector<int> stack(outputs.begin(), outputs.end());
  std::set<int> seen_values;
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (!seen_values.insert(v).second) continue;
    const int p = g_.value(v).producer;
    if (p < 0) continue;
    const Node& n = g_.node(p);
    if (n.phase != Phase::forward)
      throw Error("save_onnx: '" + name_of(v) + "' is computed by the " + phase_name(n.phase) + " pass (#" +
                      std::to_string(p) + " " + n.op->name + ")",
                  "export the forward values: the model's outputs or its loss");
    if (needed.insert(p).second)
      for (int in : n.inputs) stack.push_back(in);
  }
  const auto& table = export_table();
  for (int id : needed) {
    const Node& n = g_.node(id);
    auto it = table.find(n.op->name);
    if (it == table.end()) refuse(n, "");
  }
  for (int id : needed) {  // std::set: ascending ids, the order the nodes were made in
    const Node& n = g_.node(id);
    auto it = table.find(n.op->name);
    if (it == table.end()) continue;
    std::vector<std::string> ins, outs;
    for (int v : n.inputs) {
      if (g_.value(v).producer < 0) leaf(v);
      ins.push_back(name_of(v));
    }
    for (int v : n.outputs) outs.push_back(name_of(v));
    it->second(*this, n, ins, outs);
  }
  if (!refused_.empty()) {
    std::string list;
    for (auto& [id, r] : refused_) list += (list.empty() ? "" : ", ") + r;
    throw Error(
        "save_onnx: no ONNX form for " + list,
        "export forward graphs of ops that ONNX has; run dropout and batch_norm with training=False to export them");
  }
  for (int v : outputs) {
    if (g_.value(v).producer < 0) leaf(v);
    add_value_info(*graph_->add_output(), name_of(v), meta(v));
  }
  info_.nodes = graph_->node_size();
  info_.opset = kExportOpset;
  try {
    check_onnx_model(model_);
  } catch (const std::exception& e) {
    throw Error(std::string("save_onnx: the ONNX checker refused the model opscope wrote: ") + e.what(),
                "this is a bug in opscope's exporter; please report it with the script");
  }
  std::ofstream f(path, std::ios::binary);
  if (!f || !model_.SerializeToOstream(&f)) throw Error("save_onnx: cannot write '" + path + "'");
  return info_;
}

ExportInfo save_onnx_values(Workspace& ws, const std::vector<int>& outputs, const std::string& path) {
  if (outputs.empty()) throw Error("save_onnx: nothing to export", "the graph has no forward nodes yet");
  WorkspaceScope scope(ws);
  Exporter e(ws);
  return e.run(outputs, path);
}

}  // namespace opscope::interop
