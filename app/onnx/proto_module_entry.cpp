// The one symbol libopscope_onnx_proto.so exports: its table (proto_module.h).
#include "app/onnx/exporter.h"  // export_coverage
#include "app/onnx/proto_module.h"
#include "opscope_abi.h"

extern "C" __attribute__((visibility("default"))) const opscope::interop::OnnxProtoModule* opscope_onnx_proto_module() {
  using namespace opscope::interop;
  static const OnnxProtoModule table{{kOnnxModuleInterface, OPSCOPE_ABI_ID},
                                     &parse_onnx_bytes,
                                     &parse_onnx_stream,
                                     &save_onnx_values,
                                     &run_conformance,
                                     &export_coverage};
  return &table;
}
