// What the ONNX module asks of ONNX's own operator schemas and checker (libonnx). Two builds:
// onnx_schema_libonnx.cpp (the desktop, Debian's libonnx) and onnx_schema_unavailable.cpp
// (the browser, where only protobuf is built: libonnx's source is not to be had here), which
// answers "unknown" and lets the callers say what they then cannot do.
#pragma once
#include <string>
#include <vector>

#include "app/onnx/onnx_proto.h"

namespace opscope::interop {

// False when this build has no operator schemas (the browser).
bool have_onnx_schemas();
// The opset in which the definition of `op_type` (default domain) that holds at `opset` was
// introduced; 0 when ONNX has no such operator there; -1 when this build cannot tell.
int onnx_since_version(const std::string& op_type, int opset);
// Every operator type of the default domain (empty when this build cannot tell).
std::vector<std::string> onnx_operator_types();
// ONNX's checker over a model opscope wrote; throws std::exception with its message. Does
// nothing where the checker is not built (the desktop's tests check every exported model).
void check_onnx_model(const onnx::ModelProto& model);

}  // namespace opscope::interop
