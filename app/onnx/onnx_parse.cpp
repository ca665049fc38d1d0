// The protobuf side of reading a model (in libopscope_onnx_proto.so): a ModelProto parsed and
// validated into the plain OnnxModel of onnx_model.h.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "app/onnx/onnx_model.h"
#include "app/onnx/onnx_proto.h"
#include "app/onnx/onnx_schema.h"
#include "core/workspace.h"

namespace opscope::interop {

namespace {

constexpr int64_t kMaxIrVersion = 10;  // ONNX 1.16; 1.12 writes 8
constexpr size_t kMaxNodes = 1'000'000;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

OnnxValueInfo value_info(const onnx::ValueInfoProto& v, const std::string& file) {
  OnnxValueInfo out;
  out.name = v.name();
  const std::string what = file + ": graph value '" + v.name() + "'";
  if (!v.has_type() || !v.type().has_tensor_type())
    throw Unsupported(what + " is not a tensor (a sequence, map or optional)", "opscope models take and give tensors");
  const auto& tt = v.type().tensor_type();
  out.onnx_type = onnx_type_name(tt.elem_type());
  out.dtype = dtype_for_onnx(tt.elem_type(), what);
  out.has_shape = tt.has_shape();
  if (out.has_shape) {
    if (tt.shape().dim_size() > 16) throw Error(what + " has " + std::to_string(tt.shape().dim_size()) + " dimensions (at most 16)");
    for (const auto& d : tt.shape().dim()) {
      OnnxDim dim;
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) throw Error(what + " has a negative dimension " + std::to_string(d.dim_value()), "the file is damaged");
        dim.value = d.dim_value();
      } else if (d.has_dim_param()) {
        dim.param = d.dim_param();
      }
      out.dims.push_back(std::move(dim));
    }
  }
  return out;
}

OnnxAttribute attribute(const onnx::AttributeProto& a, const std::string& what) {
  OnnxAttribute out;
  out.name = a.name();
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::FLOAT: out.kind = OnnxAttribute::Kind::f; out.f = a.f(); break;
    case A::INT: out.kind = OnnxAttribute::Kind::i; out.i = a.i(); break;
    case A::STRING: out.kind = OnnxAttribute::Kind::s; out.s = a.s(); break;
    case A::TENSOR:
      out.kind = OnnxAttribute::Kind::t;
      out.t = tensor_from_proto(a.t(), what + " attribute '" + a.name() + "'", MemCategory::input);
      break;
    case A::FLOATS:
      out.kind = OnnxAttribute::Kind::floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      out.kind = OnnxAttribute::Kind::ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      out.kind = OnnxAttribute::Kind::strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case A::GRAPH:
    case A::GRAPHS: out.kind = OnnxAttribute::Kind::graph; break;  // If/Loop bodies: such ops are not mapped
    default: out.kind = OnnxAttribute::Kind::other; break;
  }
  return out;
}

// Kahn's algorithm over value names: each node after the nodes that produce what it reads.
// Reports a read of a value nothing provides, a value produced twice, and cycles.
std::vector<OnnxNode> topological_order(std::vector<OnnxNode> nodes, const std::set<std::string>& provided,
                                        const std::string& file) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (auto& o : nodes[i].outputs) {
      if (o.empty()) continue;
      if (provided.count(o))
        throw Error(file + ": node " + nodes[i].label() + " writes '" + o + "', which is already a graph input or initializer",
                    "every value in an ONNX graph has one producer");
      auto [it, fresh] = producer.emplace(o, i);
      if (!fresh)
        throw Error(file + ": value '" + o + "' is produced twice, by node " + nodes[it->second].label() + " and node " +
                        nodes[i].label(),
                    "every value in an ONNX graph has one producer");
    }
  std::vector<int> waiting(nodes.size(), 0);
  std::vector<std::vector<size_t>> readers(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (auto& in : nodes[i].inputs) {
      if (in.empty() || provided.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw Error(file + ": node " + nodes[i].label() + " reads '" + in +
                        "', which no node, graph input or initializer provides (a missing initializer?)",
                    "the file is incomplete: export it again");
      ++waiting[i];
      readers[it->second].push_back(i);
    }
  std::vector<size_t> ready, order;
  for (size_t i = nodes.size(); i-- > 0;)
    if (waiting[i] == 0) ready.push_back(i);
  // A stack, but seeded in reverse so that an already sorted file keeps its order.
  while (!ready.empty()) {
    const size_t i = ready.back();
    ready.pop_back();
    order.push_back(i);
    for (auto r = readers[i].rbegin(); r != readers[i].rend(); ++r)
      if (--waiting[*r] == 0) ready.push_back(*r);
  }
  if (order.size() != nodes.size()) {
    std::string stuck;
    int shown = 0;
    for (size_t i = 0; i < nodes.size() && shown < 4; ++i)
      if (waiting[i] > 0) {
        stuck += (stuck.empty() ? "" : ", ") + nodes[i].label();
        ++shown;
      }
    throw Error(file + ": the graph has a cycle: node " + stuck + " wait on each other's outputs",
                "an ONNX graph is acyclic; the file is damaged or was written by hand");
  }
  std::vector<OnnxNode> sorted;
  sorted.reserve(nodes.size());
  for (size_t i : order) sorted.push_back(std::move(nodes[i]));
  return sorted;
}

// A model of an opset older than kMinOpset reads as well when each of its operators is defined
// there as in kMinOpset (Not, GlobalAveragePool, Tanh... are unchanged since opset 1): "" then,
// else the nodes whose operator changed since (Relu-1's consumed_inputs, Add-1's broadcast).
// Without ONNX's schemas (the browser) every operator counts as changed.
std::string changed_since(const onnx::GraphProto& g, int64_t opset) {
  if (!have_onnx_schemas()) return "every operator (this version of opscope cannot tell which changed)";
  std::set<std::string> changed;
  for (const auto& n : g.node()) {
    if (!is_default_domain(n.domain())) continue;
    const int then = onnx_since_version(n.op_type(), static_cast<int>(opset));
    const int base = onnx_since_version(n.op_type(), static_cast<int>(kMinOpset));
    if (!then && !base) continue;  // not an ONNX operator: the importer names it with the unmapped ones
    if (!then || !base || then != base) changed.insert(n.op_type() + (n.name().empty() ? "" : " '" + n.name() + "'"));
  }
  std::string s;
  for (const auto& c : changed) s += (s.empty() ? "" : ", ") + c;
  return s;
}

OnnxModel from_proto(const onnx::ModelProto& m, const std::string& file) {
  OnnxModel out;
  out.path = file;
  if (!m.has_graph()) throw Error(file + ": not an ONNX model (no graph)", "is this an .onnx file?");
  out.ir_version = m.ir_version();
  if (out.ir_version <= 0) throw Error(file + ": not an ONNX model (no IR version)", "is this an .onnx file?");
  if (out.ir_version > kMaxIrVersion)
    throw Unsupported(file + ": ONNX IR version " + std::to_string(out.ir_version) + " is newer than opscope reads (up to " +
                      std::to_string(kMaxIrVersion) + ")");
  for (const auto& o : m.opset_import())
    if (is_default_domain(o.domain())) out.opset = o.version();
  if (out.opset == 0 && m.opset_import_size() == 0 && out.ir_version < 3) out.opset = 1;  // IR 1-2 had no opset list
  out.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  out.doc = m.doc_string();
  const auto& g = m.graph();
  out.graph_name = g.name();
  if (static_cast<size_t>(g.node_size()) > kMaxNodes)
    throw Error(file + ": " + std::to_string(g.node_size()) + " nodes is more than opscope opens (" + std::to_string(kMaxNodes) + ")");
  bool any_default_node = false;
  for (const auto& n : g.node()) any_default_node = any_default_node || is_default_domain(n.domain());
  const std::string changed = out.opset >= 1 && out.opset < kMinOpset ? changed_since(g, out.opset) : "";
  if (any_default_node && (out.opset < 1 || out.opset > kMaxOpset || !changed.empty()))
    throw Unsupported(file + ": " + (out.opset == 0 ? std::string("no opset for the default ONNX domain")
                                                    : "opset " + std::to_string(out.opset) + " is " +
                                                          (out.opset < kMinOpset ? "older" : "newer") + " than opscope reads") +
                          " (ai.onnx " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                          (changed.empty() ? ")" : "; older opsets only for operators unchanged since: here " + changed + " changed)"),
                      "convert it with onnx.version_converter.convert_version(model, 17)");

  // Initializers: check every size first, so a model too large for the cap allocates nothing.
  int64_t bytes = 0;
  for (const auto& t : g.initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) continue;  // tensor_from_proto explains
    double n = 1;
    for (int64_t d : t.dims()) n *= static_cast<double>(std::max<int64_t>(d, 0));
    const double element = t.data_type() == onnx::TensorProto::FLOAT ? 4 : 8;  // integers widen to int64
    bytes += static_cast<int64_t>(std::min(n * element, 9e18));
  }
  out.initializer_bytes = bytes;
  MemoryTracker& tracker = current_workspace().tracker();
  if (bytes > tracker.cap() - tracker.live_total())
    throw Error(file + ": its initializers need " + bytes_str(bytes) + " as opscope stores them, more than the memory cap leaves (" +
                    bytes_str(tracker.cap() - tracker.live_total()) + " of " + bytes_str(tracker.cap()) + ")",
                "raise the cap with :mem cap BYTES, or open a smaller model");
  std::set<std::string> provided;
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) throw Error(file + ": an initializer has no name", "the file is damaged");
    if (!provided.insert(t.name()).second) throw Error(file + ": initializer '" + t.name() + "' appears twice");
    OnnxInitializer init;
    init.name = t.name();
    init.onnx_type = onnx_type_name(t.data_type());
    init.value = tensor_from_proto(t, file + ": initializer '" + t.name() + "'", MemCategory::parameter);
    out.initializers.push_back(std::move(init));
  }
  if (g.sparse_initializer_size() > 0) throw Unsupported(file + ": sparse initializers are not read by opscope");
  for (const auto& v : g.input()) {
    if (provided.count(v.name())) continue;  // an initializer also listed as an input (older exporters)
    if (v.name().empty()) throw Error(file + ": a graph input has no name", "the file is damaged");
    out.inputs.push_back(value_info(v, file));
    provided.insert(v.name());
  }
  std::vector<OnnxNode> nodes;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    OnnxNode node;
    node.index = i;
    node.name = n.name();
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    if (node.op_type.empty()) throw Error(file + ": node #" + std::to_string(i) + " has no op type", "the file is damaged");
    for (const auto& a : n.attribute()) node.attributes.push_back(attribute(a, file + ": node " + node.label()));
    nodes.push_back(std::move(node));
  }
  out.nodes = topological_order(std::move(nodes), provided, file);
  std::set<std::string> values = provided;
  for (auto& n : out.nodes) values.insert(n.outputs.begin(), n.outputs.end());
  for (const auto& v : g.output()) {
    if (!values.count(v.name()))
      throw Error(file + ": graph output '" + v.name() + "' is produced by no node", "the file is incomplete: export it again");
    out.outputs.push_back(value_info(v, file));
  }
  if (out.outputs.empty()) throw Error(file + ": the graph has no outputs");
  return out;
}

}  // namespace

OnnxModel parse_onnx_bytes(const std::string& bytes, const std::string& name, int64_t memory_cap) {
  if (bytes.empty()) throw Error(name + ": the file is empty", "is this an .onnx file?");
  if (static_cast<int64_t>(bytes.size()) > memory_cap)
    throw Error(name + ": " + bytes_str(static_cast<int64_t>(bytes.size())) + " is more than the memory cap (" +
                bytes_str(memory_cap) + ")", "raise the cap with :mem cap BYTES, or open a smaller model");
  onnx::ModelProto proto;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(name + ": not an ONNX model, or a truncated one (its protobuf does not parse)",
                "an .onnx file is a protobuf ModelProto, as torch.onnx.export or onnx.save writes it");
  return from_proto(proto, name);
}

}  // namespace opscope::interop
