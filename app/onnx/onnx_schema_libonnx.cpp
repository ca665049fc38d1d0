// onnx_schema.h with Debian's libonnx: its operator schema registry and checker.
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include "app/onnx/onnx_schema.h"

namespace opscope::interop {

bool have_onnx_schemas() { return true; }

int onnx_since_version(const std::string& op_type, int opset) {
  const auto* schema = onnx::OpSchemaRegistry::Schema(op_type, opset, "");
  return schema ? schema->since_version() : 0;
}

std::vector<std::string> onnx_operator_types() {
  std::vector<std::string> names;
  for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas())
    if (s.domain().empty()) names.push_back(s.Name());
  return names;
}

void check_onnx_model(const onnx::ModelProto& model) { onnx::checker::check_model(model); }

}  // namespace opscope::interop
