// An ONNX model read into plain C++: the graph's inputs and outputs, its initializers as
// tensors and its nodes (op type, inputs, outputs, attributes), validated and in topological
// order. No protobuf type appears here, so the language and the GUI include it without the
// ONNX headers. The file is untrusted: every size is checked before anything is allocated.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace opscope::interop {

// The ONNX opsets whose default-domain operators the importer reads (ai.onnx 6 … 20; 6 is
// the opset of PyTorch's 2017 exports, before NumPy broadcasting), and older opsets whose
// operators in the model are defined there as in opset 6.
constexpr int64_t kMinOpset = 6, kMaxOpset = 20;
constexpr int64_t kExportOpset = 17;  // what export writes (libonnx 1.12's newest)

// A node or model the importer cannot map (an op type, an attribute value, a dtype): the
// conformance runner lists these as "skipped" with the message as the reason.
class Unsupported : public Error {
 public:
  using Error::Error;
};

// One dimension of a graph input: a size, or a symbolic name ("batch") or nothing (unknown).
struct OnnxDim {
  int64_t value = -1;  // >= 0 when fixed in the file
  std::string param;  // dim_param, when symbolic
  bool fixed() const { return value >= 0; }
};

struct OnnxValueInfo {
  std::string name;
  DType dtype = DType::f32;  // opscope's dtype for the ONNX element type
  std::string onnx_type;  // "float", "int32", "bool", ...
  bool has_shape = false;
  std::vector<OnnxDim> dims;
};

struct OnnxAttribute {
  enum class Kind { f, i, s, t, floats, ints, strings, graph, other };
  std::string name;
  Kind kind = Kind::other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};
const char* attribute_kind_name(OnnxAttribute::Kind k);

struct OnnxNode {
  int index = 0;  // position in the file
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;  // "" = an optional input or output left out
  std::vector<OnnxAttribute> attributes;
  const OnnxAttribute* attribute(std::string_view name) const;
  // "Conv 'conv1'" (the op type, and the name when it has one) for messages.
  std::string label() const;
  // The op type as the importer's table knows it: "Conv", or "com.microsoft.Gelu".
  std::string qualified_type() const;
};

struct OnnxInitializer {
  std::string name;
  std::string onnx_type;
  Tensor value;  // allocated as MemCategory::parameter
};

struct OnnxModel {
  std::string path;  // named in every error
  int64_t ir_version = 0, opset = 0;
  std::string producer, graph_name, doc;
  std::vector<OnnxValueInfo> inputs;  // graph inputs without an initializer: what the caller feeds
  std::vector<OnnxValueInfo> outputs;
  std::vector<OnnxInitializer> initializers;
  std::vector<OnnxNode> nodes;  // topological order (each node after what it reads)
  int64_t file_bytes = 0, initializer_bytes = 0;
};

// Reads and validates an ONNX file: size against `memory_cap` before reading, protobuf parse,
// IR version and opsets, every initializer's dims and data, node inputs that nothing provides
// (a missing initializer), values produced twice, cycles. Errors name the file and the node.
OnnxModel read_onnx_file(const std::string& path, int64_t memory_cap);
// The same from bytes in memory (`name` stands for the file in messages): fuzzing, tests.
OnnxModel parse_onnx_bytes(const std::string& bytes, const std::string& name, int64_t memory_cap);
// The same from a stream of `size` bytes, read as it is parsed: the weights are held once, never
// the whole file beside them (read_onnx_file reads this way).
OnnxModel parse_onnx_stream(std::istream& in, int64_t size, const std::string& name, int64_t memory_cap);

// ONNX's element type numbers (TensorProto.DataType, fixed by the ONNX spec), so that code
// outside the protobuf module can name them; onnx_tensor.cpp checks them against libonnx's.
enum OnnxElemType : int32_t {
  kOnnxUndefined = 0,
  kOnnxFloat = 1,
  kOnnxUint8 = 2,
  kOnnxInt8 = 3,
  kOnnxUint16 = 4,
  kOnnxInt16 = 5,
  kOnnxInt32 = 6,
  kOnnxInt64 = 7,
  kOnnxString = 8,
  kOnnxBool = 9,
  kOnnxFloat16 = 10,
  kOnnxDouble = 11,
  kOnnxUint32 = 12,
  kOnnxUint64 = 13,
  kOnnxComplex64 = 14,
  kOnnxComplex128 = 15,
  kOnnxBfloat16 = 16
};

// ONNX TensorProto element type number -> name ("float", "int64", ...).
const char* onnx_type_name(int32_t elem_type);
// The ONNX element type of an opscope dtype (FLOAT, DOUBLE, INT64).
int32_t onnx_elem_type(DType dtype);
// opscope's dtype for an ONNX element type (as the reader converts tensors); Unsupported for
// float16, strings, complex numbers ...
DType dtype_for_onnx(int32_t elem_type, const std::string& what);

}  // namespace opscope::interop
