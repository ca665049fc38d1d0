// The protobuf side of reading a model (in libopscope_onnx_proto.so): a ModelProto parsed and
// validated into the plain OnnxModel of onnx_model.h.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include "app/onnx/onnx_model.h"
#include "app/onnx/onnx_proto.h"
#include "app/onnx/onnx_schema.h"
#include "core/interrupt.h"
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
    if (tt.shape().dim_size() > 16)
      throw Error(what + " has " + std::to_string(tt.shape().dim_size()) + " dimensions (at most 16)");
    for (const auto& d : tt.shape().dim()) {
      OnnxDim dim;
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          throw Error(what + " has a negative dimension " + std::to_string(d.dim_value()), "the file is damaged");
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
    case A::FLOAT:
      out.kind = OnnxAttribute::Kind::f;
      out.f = a.f();
      break;
    case A::INT:
      out.kind = OnnxAttribute::Kind::i;
      out.i = a.i();
      break;
    case A::STRING:
      out.kind = OnnxAttribute::Kind::s;
      out.s = a.s();
      break;
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
        throw Error(file + ": node " + nodes[i].label() + " writes '" + o +
                        "', which is already a graph input or initializer",
                    "every value in an ONNX graph has one producer");
      auto [it, fresh] = producer.emplace(o, i);
      if (!fresh)
        throw Error(file + ": value '" + o + "' is produced twice, by node " + nodes[it->second].label() +
                        " and node " + nodes[i].label(),
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

// The graph's initializers, read one at a time as the stream reaches them: each is converted
// to its tensor and its protobuf copy dropped, so reading a model holds its weights once (plus
// the largest one in flight), not the file, the parsed protobuf and the tensors (3x the file).
struct Initializers {
  std::string file;
  int64_t budget = 0;  // what the memory cap leaves
  int64_t stored_bytes = 0;  // as opscope stores them (integers widen to int64)
  std::vector<OnnxInitializer> values;
  std::set<std::string> names;
  bool over_budget = false;  // past the cap: nothing more is converted, the sizes still add up

  void check_name(const onnx::TensorProto& t) {
    interrupt::check();  // a big model: the window draws (and Interrupt answers) between tensors
    if (t.name().empty()) throw Error(file + ": an initializer has no name", "the file is damaged");
    if (!names.insert(t.name()).second) throw Error(file + ": initializer '" + t.name() + "' appears twice");
  }

  // An initializer read as a TensorProto: counted, and converted while under the cap.
  void take(const onnx::TensorProto& t) {
    check_name(t);
    if (t.data_location() != onnx::TensorProto::EXTERNAL) {  // (tensor_from_proto explains those)
      double n = 1;
      for (int64_t d : t.dims()) n *= static_cast<double>(std::max<int64_t>(d, 0));
      const double element = t.data_type() == onnx::TensorProto::FLOAT ? 4 : 8;
      stored_bytes += static_cast<int64_t>(std::min(n * element, 9e18));
      stored_bytes = std::min<int64_t>(stored_bytes, static_cast<int64_t>(9e18));
    }
    if (stored_bytes > budget && !over_budget) {
      over_budget = true;
      values.clear();  // given back now; the error comes once every size is known
    }
    if (over_budget) return;
    OnnxInitializer init;
    init.name = t.name();
    init.onnx_type = onnx_type_name(t.data_type());
    init.value = tensor_from_proto(t, file + ": initializer '" + t.name() + "'", MemCategory::parameter);
    values.push_back(std::move(init));
  }

  // The tensor `size` bytes of raw data go straight into, when the fields before them (`head`:
  // dims and type) say what they hold and opscope keeps that type as it is (float32, float64,
  // int64); counted against the cap. Undefined: read them the general way, or `skip` them
  // (past the cap: take() then counts the initializer and reports it).
  Tensor direct_tensor(const onnx::TensorProto& head, int64_t size, bool* skip) {
    *skip = over_budget;
    const int32_t t = head.data_type();
    if (over_budget ||
        (t != onnx::TensorProto::FLOAT && t != onnx::TensorProto::DOUBLE && t != onnx::TensorProto::INT64) ||
        head.dims_size() > 16)
      return {};
    const int64_t element = t == onnx::TensorProto::FLOAT ? 4 : 8;
    int64_t n = 1;
    for (int64_t d : head.dims()) {
      if (d < 0 || (d > 0 && n > std::numeric_limits<int64_t>::max() / element / d)) return {};
      n *= d;
    }
    if (n * element != size) return {};  // tensor_from_proto says what is wrong
    if (stored_bytes + n * element > budget) {
      *skip = true;
      return {};
    }
    stored_bytes += n * element;
    const DType dtype = t == onnx::TensorProto::FLOAT    ? DType::f32
                        : t == onnx::TensorProto::DOUBLE ? DType::f64
                                                         : DType::i64;
    return Tensor::empty(Shape(head.dims().begin(), head.dims().end()), dtype, MemCategory::parameter);
  }

  // An initializer whose data was read into `value` (direct_tensor): the rest of it checked.
  void take_direct(const onnx::TensorProto& t, const onnx::TensorProto& head, Tensor value) {
    check_name(t);
    const std::string what = file + ": initializer '" + t.name() + "'";
    if (t.data_type() != head.data_type() || t.dims_size() != head.dims_size() ||
        !std::equal(t.dims().begin(), t.dims().end(), head.dims().begin()))
      throw Error(what + " gives its dims or type again after its data", "the file is damaged");
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.has_segment())
      tensor_from_proto(t, what, MemCategory::parameter);  // says why opscope does not read it
    values.push_back({t.name(), onnx_type_name(t.data_type()), std::move(value)});
  }

  void check_budget() const {
    if (over_budget)
      throw Error(file + ": its initializers need " + bytes_str(stored_bytes) +
                      " as opscope stores them, more than the memory cap leaves (" + bytes_str(budget) + " of " +
                      bytes_str(current_workspace().tracker().cap()) + ")",
                  "raise the cap with :mem cap BYTES, or open a smaller model");
  }
};

namespace pbio = google::protobuf::io;
using google::protobuf::internal::WireFormatLite;

bool length_delimited(uint32_t tag, int field) {
  return WireFormatLite::GetTagFieldNumber(tag) == field &&
         WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}

// An initializer from the stream. Its raw data goes straight into its tensor when the dims and
// type before it say what it holds (as exporters write a TensorProto: dims, type, name, data), so
// the weights are copied once, from the file's buffer; any other layout is read as a TensorProto
// and converted. False: the bytes are not a protobuf.
bool read_initializer(pbio::CodedInputStream& in, Initializers& inits) {
  int length = 0;
  if (!in.ReadVarintSizeAsInt(&length)) return false;
  const auto limit = in.PushLimit(length);
  std::string head, rest, raw;  // head: the dims and type fields; rest: every field but the data
  onnx::TensorProto before;  // what head says once the data comes
  Tensor direct;
  bool has_raw = false;
  while (const uint32_t tag = in.ReadTag()) {
    if (length_delimited(tag, onnx::TensorProto::kRawDataFieldNumber)) {
      int size = 0;
      if (!in.ReadVarintSizeAsInt(&size) || !before.ParseFromString(head)) return false;
      bool skip = false;
      direct = inits.direct_tensor(before, size, &skip);
      if (direct.defined()) {
        // In pieces of 1 MiB, the window drawing between them (GPT-2's embedding is 147 MiB).
        char* to = static_cast<char*>(direct.raw_data());
        for (int done = 0; done < size;) {
          const int piece = std::min(size - done, 1 << 20);
          if (!in.ReadRaw(to + done, piece)) return false;
          done += piece;
          interrupt::check();
        }
      } else if (skip) {
        if (!in.Skip(size)) return false;
      } else {
        if (!in.ReadString(&raw, size)) return false;
        has_raw = true;
      }
      continue;
    }
    std::string field;
    {
      pbio::StringOutputStream sink(&field);
      pbio::CodedOutputStream out(&sink);
      if (!WireFormatLite::SkipField(&in, tag, &out)) return false;
    }
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    if (number == onnx::TensorProto::kDimsFieldNumber || number == onnx::TensorProto::kDataTypeFieldNumber)
      head += field;
    rest += field;
  }
  if (!in.ConsumedEntireMessage()) return false;
  in.PopLimit(limit);
  onnx::TensorProto t;
  if (!t.ParseFromString(rest)) return false;
  if (direct.defined()) {
    inits.take_direct(t, before, std::move(direct));
  } else {
    if (has_raw) t.set_raw_data(std::move(raw));
    inits.take(t);
  }
  return true;
}

// A GraphProto's fields up to the stream's limit: initializers into `inits`, every other field
// copied as it is to `rest`. False: the bytes are not a protobuf.
bool read_graph(pbio::CodedInputStream& in, std::string& rest, Initializers& inits) {
  pbio::StringOutputStream sink(&rest);
  pbio::CodedOutputStream out(&sink);
  while (const uint32_t tag = in.ReadTag()) {
    if (length_delimited(tag, onnx::GraphProto::kInitializerFieldNumber)) {
      if (!read_initializer(in, inits)) return false;
    } else if (!WireFormatLite::SkipField(&in, tag, &out)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

// A ModelProto from a stream: the model without its graph's initializers in `model`, those in
// `inits`. False: the bytes are not a protobuf (or are cut short).
bool read_model(pbio::ZeroCopyInputStream& stream, onnx::ModelProto& model, Initializers& inits) {
  std::string rest, graph;
  bool has_graph = false;
  {
    pbio::CodedInputStream in(&stream);
    pbio::StringOutputStream sink(&rest);
    pbio::CodedOutputStream out(&sink);
    while (const uint32_t tag = in.ReadTag()) {
      if (length_delimited(tag, onnx::ModelProto::kGraphFieldNumber)) {
        int length = 0;
        if (!in.ReadVarintSizeAsInt(&length)) return false;
        const auto limit = in.PushLimit(length);
        if (!read_graph(in, graph, inits)) return false;
        in.PopLimit(limit);
        has_graph = true;
      } else if (!WireFormatLite::SkipField(&in, tag, &out)) {
        return false;
      }
    }
    if (!in.ConsumedEntireMessage()) return false;
  }
  if (!model.ParseFromString(rest)) return false;
  return !has_graph || model.mutable_graph()->ParseFromString(graph);
}

OnnxModel from_proto(const onnx::ModelProto& m, const std::string& file, Initializers inits) {
  OnnxModel out;
  out.path = file;
  if (!m.has_graph()) throw Error(file + ": not an ONNX model (no graph)", "is this an .onnx file?");
  out.ir_version = m.ir_version();
  if (out.ir_version <= 0) throw Error(file + ": not an ONNX model (no IR version)", "is this an .onnx file?");
  if (out.ir_version > kMaxIrVersion)
    throw Unsupported(file + ": ONNX IR version " + std::to_string(out.ir_version) +
                      " is newer than opscope reads (up to " + std::to_string(kMaxIrVersion) + ")");
  for (const auto& o : m.opset_import())
    if (is_default_domain(o.domain())) out.opset = o.version();
  if (out.opset == 0 && m.opset_import_size() == 0 && out.ir_version < 3) out.opset = 1;  // IR 1-2 had no opset list
  out.producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  out.doc = m.doc_string();
  const auto& g = m.graph();
  out.graph_name = g.name();
  if (static_cast<size_t>(g.node_size()) > kMaxNodes)
    throw Error(file + ": " + std::to_string(g.node_size()) + " nodes is more than opscope opens (" +
                std::to_string(kMaxNodes) + ")");
  bool any_default_node = false;
  for (const auto& n : g.node()) any_default_node = any_default_node || is_default_domain(n.domain());
  const std::string changed = out.opset >= 1 && out.opset < kMinOpset ? changed_since(g, out.opset) : "";
  if (any_default_node && (out.opset < 1 || out.opset > kMaxOpset || !changed.empty()))
    throw Unsupported(file + ": " +
                          (out.opset == 0 ? std::string("no opset for the default ONNX domain")
                                          : "opset " + std::to_string(out.opset) + " is " +
                                                (out.opset < kMinOpset ? "older" : "newer") + " than opscope reads") +
                          " (ai.onnx " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                          (changed.empty()
                               ? ")"
                               : "; older opsets only for operators unchanged since: here " + changed + " changed)"),
                      "convert it with onnx.version_converter.convert_version(model, 17)");

  inits.check_budget();
  out.initializer_bytes = inits.stored_bytes;
  out.initializers = std::move(inits.values);
  std::set<std::string> provided = std::move(inits.names);
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
    if (node.op_type.empty())
      throw Error(file + ": node #" + std::to_string(i) + " has no op type", "the file is damaged");
    for (const auto& a : n.attribute()) node.attributes.push_back(attribute(a, file + ": node " + node.label()));
    nodes.push_back(std::move(node));
  }
  out.nodes = topological_order(std::move(nodes), provided, file);
  std::set<std::string> values = provided;
  for (auto& n : out.nodes) values.insert(n.outputs.begin(), n.outputs.end());
  for (const auto& v : g.output()) {
    if (!values.count(v.name()))
      throw Error(file + ": graph output '" + v.name() + "' is produced by no node",
                  "the file is incomplete: export it again");
    out.outputs.push_back(value_info(v, file));
  }
  if (out.outputs.empty()) throw Error(file + ": the graph has no outputs");
  return out;
}

void check_size(int64_t size, const std::string& name, int64_t memory_cap) {
  if (size == 0) throw Error(name + ": the file is empty", "is this an .onnx file?");
  if (size > memory_cap)
    throw Error(name + ": " + bytes_str(size) + " is more than the memory cap (" + bytes_str(memory_cap) + ")",
                "raise the cap with :mem cap BYTES, or open a smaller model");
  if (size > INT32_MAX) throw Error(name + ": " + bytes_str(size) + " is more than an ONNX protobuf may hold (2 GiB)");
}

OnnxModel parse_stream(pbio::ZeroCopyInputStream& stream, const std::string& name) {
  const MemoryTracker& tracker = current_workspace().tracker();
  Initializers inits;
  inits.file = name;
  inits.budget = tracker.cap() - tracker.live_total();
  onnx::ModelProto proto;
  if (!read_model(stream, proto, inits))
    throw Error(name + ": not an ONNX model, or a truncated one (its protobuf does not parse)",
                "an .onnx file is a protobuf ModelProto, as torch.onnx.export or onnx.save writes it");
  return from_proto(proto, name, std::move(inits));
}

}  // namespace

OnnxModel parse_onnx_bytes(const std::string& bytes, const std::string& name, int64_t memory_cap) {
  check_size(static_cast<int64_t>(bytes.size()), name, memory_cap);
  pbio::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  return parse_stream(stream, name);
}

OnnxModel parse_onnx_stream(std::istream& in, int64_t size, const std::string& name, int64_t memory_cap) {
  check_size(size, name, memory_cap);
  pbio::IstreamInputStream stream(&in, 1 << 20);
  return parse_stream(stream, name);
}

}  // namespace opscope::interop
