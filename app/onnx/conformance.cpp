#include "app/onnx/conformance.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>

#include "app/onnx/map_context.h"
#include "app/onnx/onnx_import.h"
#include "app/onnx/onnx_proto.h"
#include "app/onnx/onnx_schema.h"

namespace opscope::interop {

namespace fs = std::filesystem;

namespace {

// The group of multi-node tests that test no one operator (pytorch-converted, simple, ...).
const char* const kWholeGraphs = "(whole graphs)";

std::string squash(std::string s) {  // "Reduce_Mean" and "reducemean" alike
  std::string out;
  for (char c : s)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The operator a test tests: its one node's type, or for a multi-node (function-expanded) test
// the ONNX operator whose name starts the test's name longest ("test_layer_normalization_4d_
// expanded" tests LayerNormalization, "test_softmax_cross_entropy_mean_expanded" not Softmax
// but SoftmaxCrossEntropyLoss). "" when no operator's name fits ("test_nllloss_NC_expanded").
std::string tested_op(const std::vector<std::string>& node_types, const std::string& test_name) {
  if (node_types.empty()) return "";
  if (node_types.size() == 1) return node_types[0];
  static const std::vector<std::string> all_ops = onnx_operator_types();
  const std::string name = squash(test_name.rfind("test_", 0) == 0 ? test_name.substr(5) : test_name);
  std::string best;
  for (const std::string& op : all_ops) {
    const std::string t = squash(op);
    if (name.rfind(t, 0) == 0 && t.size() > squash(best).size()) best = op;
  }
  return best;
}

std::string tested_op(const OnnxModel& m, const std::string& test_name) {
  std::vector<std::string> types;
  for (const OnnxNode& n : m.nodes) types.push_back(n.qualified_type());
  return tested_op(types, test_name);
}

// The same for a model the importer refused to read (a float16 or string value, a sequence):
// its nodes' types straight from the protobuf, so the test is listed under its operator with
// the reason rather than lost among the unmapped ones. "" when not even that parses.
std::string tested_op_of_file(const fs::path& model_file, const std::string& test_name) {
  std::ifstream f(model_file, std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) return "";
  std::vector<std::string> types;
  for (const auto& n : m.graph().node())
    types.push_back(n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type());
  return tested_op(types, test_name);
}

onnx::TensorProto read_tensor_pb(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f)) throw Error(p.string() + ": not a TensorProto");
  return t;
}

// The output dtypes whose arithmetic opscope's int64 and floats reproduce.
bool comparable_type(int32_t t) {
  using T = onnx::TensorProto;
  return t == T::FLOAT || t == T::DOUBLE || t == T::INT64 || t == T::INT32 || t == T::BOOL;
}

std::string index_str(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t a = s.size(); a-- > 0;) {
    idx[a] = s[a] ? flat % s[a] : 0;
    flat = s[a] ? flat / s[a] : 0;
  }
  return attr_value_str(idx);
}

// "" when `actual` matches `expected`, else what differs first.
std::string compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.shape() != expected.shape())
    return "shape " + shape_str(actual.shape()) + ", expected " + shape_str(expected.shape());
  const bool exact = !is_floating(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.get(i), e = expected.get(i);
    const bool same =
        exact ? a == e : (std::isnan(a) && std::isnan(e)) || a == e || std::fabs(a - e) <= atol + rtol * std::fabs(e);
    if (!same) {
      std::ostringstream o;
      o.precision(9);
      o << "first difference at " << index_str(i, expected.shape()) << ": " << a << ", expected " << e
        << (exact ? "" : " (|diff| " + std::to_string(std::fabs(a - e)) + ")");
      return o.str();
    }
  }
  return "";
}

std::string node_description(const OnnxModel& m) {
  std::string s;
  for (const OnnxNode& n : m.nodes) {
    if (!s.empty()) s += "; ";
    if (m.nodes.size() > 4 && s.size() > 300) {
      s += "... " + std::to_string(m.nodes.size()) + " nodes";
      break;
    }
    s += n.label();
    std::string attrs;
    for (const OnnxAttribute& a : n.attributes) {
      std::string v;
      switch (a.kind) {
        case OnnxAttribute::Kind::i: v = std::to_string(a.i); break;
        case OnnxAttribute::Kind::f: v = std::to_string(a.f); break;
        case OnnxAttribute::Kind::s: v = "\"" + a.s + "\""; break;
        case OnnxAttribute::Kind::ints: v = attr_value_str(a.ints); break;
        case OnnxAttribute::Kind::t: v = "tensor " + shape_str(a.t.shape()); break;
        default: v = attribute_kind_name(a.kind);
      }
      attrs += (attrs.empty() ? "" : ", ") + a.name + "=" + v;
    }
    if (!attrs.empty()) s += " (" + attrs + ")";
  }
  return s;
}

// The message of an import error without the file and node it names (the test names them);
// for a model using unmapped operators, just which ones.
std::string reason_of(const std::string& message) {
  if (const size_t at = message.find("that opscope does not map: "); at != std::string::npos) {
    std::string types, list = message.substr(at + 27);
    for (size_t start = 0; start < list.size();) {
      const size_t end = std::min(list.find(" (", start), list.find("; ", start));
      types += (types.empty() ? "" : ", ") + list.substr(start, end - start);
      const size_t next = list.find("; ", start);
      if (next == std::string::npos) break;
      start = next + 2;
    }
    return "uses " + types + ", which opscope does not map";
  }
  // A value's dtype or kind, without which value ("graph value 'like' has dtype float16, ...").
  if (const size_t at = message.find(" has dtype "); at != std::string::npos) return message.substr(at + 5);
  if (message.find(" is not a tensor (") != std::string::npos)
    return "a sequence, map or optional value (opscope's values are tensors)";
  if (const size_t node = message.find(": node "); node != std::string::npos)
    if (const size_t end = message.find(": ", node + 7); end != std::string::npos) return message.substr(end + 2);
  const size_t colon = message.find(".onnx: ");
  return colon == std::string::npos ? message : message.substr(colon + 7);
}

void run_one(const fs::path& dir, const OnnxModel& parsed, ConformanceTest& t, const ConformanceOptions& o) {
  std::vector<fs::path> sets;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    t.status = ConformanceTest::skipped;
    t.detail = "no test data sets";
    return;
  }
  for (const fs::path& set : sets) {
    Workspace ws;
    WorkspaceScope scope(ws);
    std::vector<Tensor> inputs, expected;
    std::vector<std::string> input_names;
    for (int k = 0; fs::exists(set / ("input_" + std::to_string(k) + ".pb")); ++k) {
      const auto p = read_tensor_pb(set / ("input_" + std::to_string(k) + ".pb"));
      inputs.push_back(tensor_from_proto(p, "input " + std::to_string(k), MemCategory::input));
      input_names.push_back(p.name());
    }
    for (int k = 0; fs::exists(set / ("output_" + std::to_string(k) + ".pb")); ++k) {
      const auto p = read_tensor_pb(set / ("output_" + std::to_string(k) + ".pb"));
      if (!comparable_type(p.data_type()))
        throw Unsupported(
            "narrow integer outputs (int8 … uint64): opscope computes integers in int64, without their wrap-around");
      expected.push_back(tensor_from_proto(p, "output " + std::to_string(k), MemCategory::input));
    }
    // The data sets give the graph inputs in order (some tests feed fewer: optional inputs).
    // Integer and 0-d inputs (shapes, axes, pads, ratios, bounds) and the float roi and scales
    // of Resize and Upsample are bound as constants, as an exporter writes them; the others are fed.
    std::set<std::string> scales;
    for (const OnnxNode& n : parsed.nodes)
      if (n.qualified_type() == "Resize" || n.qualified_type() == "Upsample")
        for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) scales.insert(n.inputs[i]);
    OnnxModel model = parsed;
    if (inputs.size() > model.inputs.size()) throw Error("more inputs in the data set than the model has");
    model.inputs.resize(inputs.size());
    ImportOptions opt;
    std::vector<Tensor> fed;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (inputs[k].dtype() != model.inputs[k].dtype)
        inputs[k] = inputs[k].cast(model.inputs[k].dtype, MemCategory::input);
      if (inputs[k].dtype() == DType::i64 || inputs[k].dim() == 0 || scales.count(model.inputs[k].name)) {
        opt.constants[model.inputs[k].name] = inputs[k];
      } else {
        opt.shapes[model.inputs[k].name] = inputs[k].shape();
        fed.push_back(inputs[k]);
      }
    }
    auto imported = ImportedModel::from_model(std::move(model), opt);
    NoGradGuard no_grad;
    const std::vector<Tensor> actual = imported->apply(ws, fed);
    if (actual.size() < expected.size())
      throw Error("the model gave " + std::to_string(actual.size()) + " outputs, the test expects " +
                  std::to_string(expected.size()));
    for (size_t k = 0; k < expected.size(); ++k) {
      const std::string diff = compare(actual[k], expected[k], o.rtol, o.atol);
      if (!diff.empty()) {
        t.status = ConformanceTest::failed;
        t.detail = set.filename().string() + " output " + std::to_string(k) + ": " + diff;
        return;
      }
    }
  }
}

void collect(const fs::path& p, std::vector<fs::path>& out) {
  if (fs::exists(p / "model.onnx")) {
    out.push_back(p);
    return;
  }
  if (!fs::is_directory(p))
    throw Error("'" + p.string() + "' is neither a test folder (with model.onnx) nor a folder of them");
  std::vector<fs::path> subs;
  for (auto& e : fs::directory_iterator(p))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) subs.push_back(e.path());
  std::sort(subs.begin(), subs.end());
  out.insert(out.end(), subs.begin(), subs.end());
}

}  // namespace

ConformanceReport run_conformance(const std::vector<std::string>& dirs, const ConformanceOptions& o,
                                  std::ostream& log) {
  std::vector<fs::path> tests;
  for (auto& d : dirs) collect(d, tests);
  ConformanceReport r;
  std::set<std::string> unmapped;
  for (const fs::path& dir : tests) {
    ConformanceTest t;
    t.name = dir.filename().string();
    OnnxModel model;
    try {
      Workspace ws;  // the model's initializers are counted there and freed with it
      WorkspaceScope scope(ws);
      model = read_onnx_file((dir / "model.onnx").string(), ws.tracker().cap());
      t.op_type = tested_op(model, t.name);
      if (t.op_type.empty()) t.op_type = kWholeGraphs;  // a model test: run whole if opscope maps its ops
      if (t.op_type != kWholeGraphs && !mapper_table().count(t.op_type)) {
        ++r.unmapped;
        unmapped.insert(t.op_type);
        continue;
      }
      if (!o.only_ops.empty() && std::find(o.only_ops.begin(), o.only_ops.end(), t.op_type) == o.only_ops.end())
        continue;
      run_one(dir, model, t, o);
    } catch (const Unsupported& e) {
      if (t.op_type.empty()) t.op_type = tested_op_of_file(dir / "model.onnx", t.name);  // refused while reading
      if (t.op_type.empty()) t.op_type = kWholeGraphs;
      if (t.op_type != kWholeGraphs && !mapper_table().count(t.op_type)) {
        ++r.unmapped;
        unmapped.insert(t.op_type);
        continue;
      }
      if (!o.only_ops.empty() && std::find(o.only_ops.begin(), o.only_ops.end(), t.op_type) == o.only_ops.end())
        continue;
      t.status = ConformanceTest::skipped;
      t.detail = reason_of(e.what());
    } catch (const Error& e) {
      t.status = ConformanceTest::failed;
      t.detail = e.what();
    } catch (const std::exception& e) {
      t.status = ConformanceTest::failed;
      t.detail = std::string("internal error: ") + e.what();
    }
    if (t.status == ConformanceTest::failed)
      log << "FAILED " << t.name << " [" << t.op_type << "]: " << t.detail << "\n    nodes: " << node_description(model)
          << "\n";
    else if (o.verbose)
      log << (t.status == ConformanceTest::passed ? "passed  " : "skipped ") << t.name
          << (t.detail.empty() ? "" : ": " + t.detail) << "\n";
    r.tests.push_back(std::move(t));
  }
  r.unmapped_types.assign(unmapped.begin(), unmapped.end());
  return r;
}

}  // namespace opscope::interop
