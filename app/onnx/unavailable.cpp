// opscope built without ONNX (libonnx-dev or libprotobuf-dev missing): every entry point of
// app/onnx exists and says so, so the language, the command line and the GUI link and explain.
#include "app/onnx/conformance.h"
#include "app/onnx/onnx_export.h"
#include "app/onnx/onnx_import.h"

namespace opscope::interop {

namespace {
[[noreturn]] void no_onnx() {
  throw Error("this opscope was built without ONNX",
              "install libonnx-dev and libprotobuf-dev (tools/setup.sh) and rebuild");
}
}  // namespace

OnnxModel read_onnx_file(const std::string&, int64_t) { no_onnx(); }
OnnxModel parse_onnx_bytes(const std::string&, const std::string&, int64_t) { no_onnx(); }
OnnxModel parse_onnx_stream(std::istream&, int64_t, const std::string&, int64_t) { no_onnx(); }
const char* onnx_type_name(int32_t) { return "?"; }
const OnnxAttribute* OnnxNode::attribute(std::string_view) const { return nullptr; }
std::string OnnxNode::label() const { return op_type; }
std::string OnnxNode::qualified_type() const { return op_type; }
std::pair<std::string, Shape> parse_shape_option(const std::string&) { no_onnx(); }
std::vector<std::string> mapped_op_types() { return {}; }
std::shared_ptr<ImportedModel> ImportedModel::load(const std::string&, const ImportOptions&) { no_onnx(); }
std::shared_ptr<ImportedModel> ImportedModel::from_model(OnnxModel, const ImportOptions&) { no_onnx(); }
std::string ImportedModel::name() const { return {}; }
const Tensor& ImportedModel::param(const std::string&) const { no_onnx(); }
int64_t ImportedModel::parameter_count() const { return 0; }
std::vector<Tensor> ImportedModel::apply(Workspace&, const std::vector<Tensor>&, int*) const { no_onnx(); }
ImportedModel::Traced ImportedModel::trace(Workspace&) const { no_onnx(); }
std::string ImportedModel::summary() const { return {}; }
std::string ImportedModel::ties_note() const { return {}; }
ExportInfo save_onnx(Workspace&, const std::vector<Tensor>&, const std::string&) { no_onnx(); }
ExportInfo save_onnx_values(Workspace&, const std::vector<int>&, const std::string&) { no_onnx(); }
std::vector<int> forward_sinks(const Graph&) { return {}; }
int ConformanceReport::count(ConformanceTest::Status) const { return 0; }
ConformanceReport run_conformance(const std::vector<std::string>&, const ConformanceOptions&, std::ostream&) {
  no_onnx();
}
std::string conformance_table(const ConformanceReport&, bool) { return {}; }

}  // namespace opscope::interop
