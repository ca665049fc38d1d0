// The one symbol libopscope_onnx_proto.so exports: its table (proto_module.h).
#include "app/onnx/proto_module.h"
#include "opscope_abi.h"

extern "C" __attribute__((visibility("default"))) const opscope::interop::OnnxProtoModule* opscope_onnx_proto_module() {
  using namespace opscope::interop;
  static const OnnxProtoModule table = [] {
    OnnxProtoModule t;
    t.interface = kOnnxModuleInterface;
    t.abi_id = OPSCOPE_ABI_ID;
    t.parse_onnx_bytes = &parse_onnx_bytes;
    t.save_onnx_values = &save_onnx_values;
    t.run_conformance = &run_conformance;
    return t;
  }();
  return &table;
}
