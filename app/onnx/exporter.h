// Inside app/onnx: the exporter's state while it writes one model (names, nodes, constants),
// and the table of how each opscope op becomes ONNX nodes (export_ops.cpp).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/onnx/onnx_export.h"
#include "app/onnx/onnx_model.h"
#include "app/onnx/onnx_proto.h"

namespace opscope::interop {

using Ints = std::vector<int64_t>;

// The spatial sizes of a shape [N, C, ...] or weight [Cout, Cin/G, K...]: what follows its first two axes.
inline Ints spatial_dims(const Shape& s) { return Ints(s.begin() + 2, s.end()); }
// ONNX's pads [begin..., end...] of a padding that opscope applies at both ends of each axis.
inline Ints both_ends(const Ints& padding) {
  Ints pads = padding;
  pads.insert(pads.end(), padding.begin(), padding.end());
  return pads;
}

class Exporter;
// One opscope op as ONNX nodes: reads the node's inputs by name, writes its outputs' names.
using ExportFn = std::function<void(Exporter&, const Node&, const std::vector<std::string>& in,
                                    const std::vector<std::string>& out)>;
const std::map<std::string, ExportFn>& export_table();
// The layers' entries of the table (export_layers.cpp): conv_transpose1d/2d/3d, the norms, interpolate, indexing.
void add_layer_exports(std::map<std::string, ExportFn>& table);
// The table's operators and those with no ONNX form (proto_module.h's export_coverage).
ExportCoverage export_coverage();

class Exporter {
 public:
  explicit Exporter(Workspace& ws);

  const Graph& graph() const { return g_; }
  const TensorMeta& meta(int v) const { return g_.value(v).meta; }

  // A fresh value name (ONNX names are unique in a graph).
  std::string fresh(const std::string& base) {
    std::string name = base.empty() ? "v" : base;
    for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }
  std::string name_of(int v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    const ValueInfo& vi = g_.value(v);
    return names_[v] = fresh(vi.name.empty() ? "v" + std::to_string(v) : vi.name);
  }

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs) {
    onnx::NodeProto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(fresh(outs.empty() ? op : op + "/" + outs[0]));
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return *n;
  }
  // A new value computed by one node: its name.
  std::string temp(const std::string& op, const std::vector<std::string>& ins, const std::string& base) {
    std::string out = fresh(base);
    node(op, ins, {out});
    return out;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, double v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const Ints& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  // Constant nodes.
  std::string constant(const Tensor& t, const std::string& base = "const") {
    const std::string out = fresh(base);
    onnx::NodeProto& n = node("Constant", {}, {out});
    auto* a = n.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    tensor_to_proto(t, out, *a->mutable_t());
    return out;
  }
  std::string ints(const Ints& v, const std::string& base = "ints") {
    return constant(Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}, DType::i64,
                                                 MemCategory::temporary),
                    base);
  }
  std::string scalar(double v, DType dt, const std::string& base = "scalar") {
    return constant(Tensor::scalar(v, dt, MemCategory::temporary), base);
  }
  std::string full(const Shape& s, double v, DType dt, const std::string& base) {
    return constant(Tensor::full(s, v, dt, MemCategory::temporary), base);
  }
  // `name` converted to dtype `to` (itself when it already has it).
  std::string cast(const std::string& name, DType from, DType to) {
    if (from == to) return name;
    auto& n = node("Cast", {name}, {fresh(name + "_" + dtype_name(to))});
    attr(n, "to", int64_t{onnx_elem_type(to)});
    return n.output(0);
  }
  std::string to_bool(const std::string& name) {
    auto& n = node("Cast", {name}, {fresh(name + "_bool")});
    attr(n, "to", int64_t{onnx::TensorProto::BOOL});
    return n.output(0);
  }

  void refuse(const Node& n, const std::string& why) {
    refused_[n.id] = n.op->name + " (node #" + std::to_string(n.id) + why + ")";
  }

  // Graph inputs, initializers and constants for the leaves the exported nodes read.
  void leaf(int v);
  static void add_value_info(onnx::ValueInfoProto& vi, const std::string& name, const TensorMeta& m);
  ExportInfo run(const std::vector<int>& outputs, const std::string& path);

 private:
  const Graph& g_;
  onnx::ModelProto model_;
  onnx::GraphProto* graph_ = nullptr;
  std::unordered_map<int, std::string> names_;
  std::set<std::string> used_;
  std::map<int, std::string> refused_;  // by node id
  ExportInfo info_;
};

}  // namespace opscope::interop
