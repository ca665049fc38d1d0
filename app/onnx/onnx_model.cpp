// The parts of a model's description that need no protobuf (names, element types) and reading
// the file; its bytes are parsed in the protobuf module (onnx_parse.cpp, opened on first use).
#include "app/onnx/onnx_model.h"

#include <filesystem>
#include <fstream>

#include "core/shape.h"

namespace opscope::interop {

const char* attribute_kind_name(OnnxAttribute::Kind k) {
  switch (k) {
    case OnnxAttribute::Kind::f: return "float";
    case OnnxAttribute::Kind::i: return "int";
    case OnnxAttribute::Kind::s: return "string";
    case OnnxAttribute::Kind::t: return "tensor";
    case OnnxAttribute::Kind::floats: return "floats";
    case OnnxAttribute::Kind::ints: return "ints";
    case OnnxAttribute::Kind::strings: return "strings";
    case OnnxAttribute::Kind::graph: return "graph";
    case OnnxAttribute::Kind::other: return "other";
  }
  return "?";
}

const OnnxAttribute* OnnxNode::attribute(std::string_view n) const {
  for (auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string OnnxNode::label() const {
  return name.empty() ? op_type + " #" + std::to_string(index) : op_type + " '" + name + "'";
}

std::string OnnxNode::qualified_type() const {
  return domain.empty() || domain == "ai.onnx" ? op_type : domain + "." + op_type;
}

const char* onnx_type_name(int32_t t) {
  switch (t) {
    case kOnnxFloat: return "float";
    case kOnnxUint8: return "uint8";
    case kOnnxInt8: return "int8";
    case kOnnxUint16: return "uint16";
    case kOnnxInt16: return "int16";
    case kOnnxInt32: return "int32";
    case kOnnxInt64: return "int64";
    case kOnnxString: return "string";
    case kOnnxBool: return "bool";
    case kOnnxFloat16: return "float16";
    case kOnnxDouble: return "double";
    case kOnnxUint32: return "uint32";
    case kOnnxUint64: return "uint64";
    case kOnnxComplex64: return "complex64";
    case kOnnxComplex128: return "complex128";
    case kOnnxBfloat16: return "bfloat16";
    default: return "an unknown element type";
  }
}

DType dtype_for_onnx(int32_t t, const std::string& what) {
  switch (t) {
    case kOnnxFloat: return DType::f32;
    case kOnnxDouble: return DType::f64;
    case kOnnxInt64:
    case kOnnxInt32:
    case kOnnxInt16:
    case kOnnxInt8:
    case kOnnxUint8:
    case kOnnxUint16:
    case kOnnxUint32:
    case kOnnxUint64:
    case kOnnxBool: return DType::i64;
    default:
      throw Unsupported(what + " has dtype " + onnx_type_name(t) + ", which opscope lacks",
                        "opscope computes in float32, float64 and int64 (bool and narrower integers become int64)");
  }
}

int32_t onnx_elem_type(DType d) {
  switch (d) {
    case DType::f32: return kOnnxFloat;
    case DType::f64: return kOnnxDouble;
    case DType::i64: return kOnnxInt64;
  }
  return kOnnxUndefined;
}

OnnxModel read_onnx_file(const std::string& path, int64_t memory_cap) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": is a folder, not an .onnx file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error("cannot open '" + path + "': " + ec.message());
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  OnnxModel m = parse_onnx_stream(f, static_cast<int64_t>(size), path, memory_cap);
  if (f.bad()) throw Error("cannot read '" + path + "'");
  m.file_bytes = static_cast<int64_t>(size);
  return m;
}

}  // namespace opscope::interop
