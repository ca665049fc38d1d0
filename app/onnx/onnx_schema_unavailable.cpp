// onnx_schema.h where only protobuf is built (the browser): no operator schemas, no checker.
#include "app/onnx/onnx_schema.h"

namespace opscope::interop {

bool have_onnx_schemas() { return false; }
int onnx_since_version(const std::string&, int) { return -1; }
std::vector<std::string> onnx_operator_types() { return {}; }
void check_onnx_model(const onnx::ModelProto&) {}

}  // namespace opscope::interop
