// The executable's side of the ONNX protobuf module (proto_module.h): found and opened on the
// first ONNX call, and the entry points that live in it forwarded to its table.
#include "app/onnx/proto_module.h"

#include <mutex>

#include "core/module_file.h"
#include "opscope_abi.h"

namespace opscope::interop {

namespace {

constexpr const char* kModuleName = "libopscope_onnx_proto.so";
constexpr const char* kEnvVar = "OPSCOPE_ONNX_MODULE";  // names another copy of it

}  // namespace

const OnnxProtoModule& onnx_proto_module() {
  static std::mutex mutex;
  static const OnnxProtoModule* module = nullptr;
  static bool tried = false;
  static std::string why;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried)
    module = open_module_table<OnnxProtoModule>(kModuleName, kEnvVar, OPSCOPE_ONNX_BUILT_MODULE,
                                                OPSCOPE_ONNX_MODULE_ENTRY, kOnnxModuleInterface, OPSCOPE_ABI_ID, why);
  tried = true;
  if (!module) throw Error("ONNX is not available: " + why, module_hint(kModuleName, kEnvVar));
  return *module;
}

OnnxModel parse_onnx_bytes(const std::string& bytes, const std::string& name, int64_t memory_cap) {
  return onnx_proto_module().parse_onnx_bytes(bytes, name, memory_cap);
}

OnnxModel parse_onnx_stream(std::istream& in, int64_t size, const std::string& name, int64_t memory_cap) {
  return onnx_proto_module().parse_onnx_stream(in, size, name, memory_cap);
}

ExportInfo save_onnx_values(Workspace& ws, const std::vector<int>& outputs, const std::string& path) {
  return onnx_proto_module().save_onnx_values(ws, outputs, path);
}

ConformanceReport run_conformance(const std::vector<std::string>& dirs, const ConformanceOptions& options,
                                  std::ostream& log) {
  return onnx_proto_module().run_conformance(dirs, options, log);
}

}  // namespace opscope::interop
