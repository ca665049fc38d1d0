// The ONNX protobuf module, libopscope_onnx_proto.so: the code that touches libonnx and
// libprotobuf (parsing a ModelProto, writing one, reading the conformance tests' .pb tensors).
// opscope opens it with dlopen on the first ONNX call instead of linking it: loading libprotobuf
// and libonnx cost 2–6 ms of every start-up (README, Speed), and most sessions never read a model.
//
// Unlike the oneDNN module, this one is made of opscope's own code: it is built from the same
// sources with the same flags, hidden like an extension (its functions never interpose on the
// executable's), and its calls into the engine bind to the executable, which exports opscope's
// symbols (cmake/extension_exports.txt). The table below is what the executable calls; the
// module is refused unless it was built against the same engine (the extension ABI id) and the
// same table (kOnnxModuleInterface).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "app/onnx/conformance.h"
#include "app/onnx/onnx_export.h"
#include "app/onnx/onnx_model.h"
#include "core/module_file.h"

namespace opscope::interop {

// Bumped whenever the table, or a struct that crosses it (onnx_model.h, onnx_export.h,
// conformance.h), changes.
constexpr int kOnnxModuleInterface = 3;

struct OnnxProtoModule : ModuleTableHead {
  OnnxModel (*parse_onnx_bytes)(const std::string& bytes, const std::string& name, int64_t memory_cap) = nullptr;
  OnnxModel (*parse_onnx_stream)(std::istream& in, int64_t size, const std::string& name, int64_t memory_cap) = nullptr;
  ExportInfo (*save_onnx_values)(Workspace& ws, const std::vector<int>& outputs, const std::string& path) = nullptr;
  ConformanceReport (*run_conformance)(const std::vector<std::string>& dirs, const ConformanceOptions& options,
                                       std::ostream& log) = nullptr;
  ExportCoverage (*export_coverage)() = nullptr;
};

// What the module exports (extern "C", so dlsym finds it by this name).
#define OPSCOPE_ONNX_MODULE_ENTRY "opscope_onnx_proto_module"

// The executable's side (proto_module.cpp): the module, opened on the first call. Throws an
// Error naming what is missing (the file, a symbol, another build's module) with a hint.
const OnnxProtoModule& onnx_proto_module();

}  // namespace opscope::interop
