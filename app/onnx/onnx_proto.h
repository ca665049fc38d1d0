// Inside the protobuf module only (libopscope_onnx_proto.so, see proto_module.h): the protobuf
// classes of libonnx-dev and the conversions between ONNX's TensorProto and opscope's tensors.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "app/onnx/onnx_model.h"
#include "core/memory.h"
#include "core/tensor.h"

namespace opscope::interop {

// A TensorProto as an opscope tensor: float32, float64 and int64 as they are; bool and the
// narrower integers (int8 … uint32) widened to int64; anything else is Unsupported. `what`
// names the tensor in errors ("model.onnx: initializer 'fc.weight'"). Dims and the data's
// length are checked before the tensor is allocated (and the allocation is checked against
// the memory cap by the allocator).
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what, MemCategory category);
// A contiguous CPU copy of `t` written as raw little-endian data.
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& out);

}  // namespace opscope::interop
