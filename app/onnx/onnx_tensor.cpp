#include <cstring>
#include <limits>

#include "app/onnx/onnx_proto.h"

namespace opscope::interop {

using onnx::TensorProto;

// The numbers code outside this module uses (onnx_model.h) are libonnx's.
static_assert(int{kOnnxFloat} == int{TensorProto::FLOAT});
static_assert(int{kOnnxUint8} == int{TensorProto::UINT8});
static_assert(int{kOnnxInt8} == int{TensorProto::INT8});
static_assert(int{kOnnxUint16} == int{TensorProto::UINT16});
static_assert(int{kOnnxInt16} == int{TensorProto::INT16});
static_assert(int{kOnnxInt32} == int{TensorProto::INT32});
static_assert(int{kOnnxInt64} == int{TensorProto::INT64});
static_assert(int{kOnnxString} == int{TensorProto::STRING});
static_assert(int{kOnnxBool} == int{TensorProto::BOOL});
static_assert(int{kOnnxFloat16} == int{TensorProto::FLOAT16});
static_assert(int{kOnnxDouble} == int{TensorProto::DOUBLE});
static_assert(int{kOnnxUint32} == int{TensorProto::UINT32});
static_assert(int{kOnnxUint64} == int{TensorProto::UINT64});
static_assert(int{kOnnxComplex64} == int{TensorProto::COMPLEX64});
static_assert(int{kOnnxComplex128} == int{TensorProto::COMPLEX128});
static_assert(int{kOnnxBfloat16} == int{TensorProto::BFLOAT16});
static_assert(int{kOnnxUndefined} == int{TensorProto::UNDEFINED});

namespace {

// Bytes per element of raw_data for the element types tensor_from_proto reads.
int64_t raw_element_size(int32_t t) {
  switch (t) {
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8: return 1;
    case TensorProto::INT16:
    case TensorProto::UINT16: return 2;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32: return 4;
    default: return 8;  // DOUBLE, INT64, UINT64
  }
}

// Element i of little-endian raw data of ONNX type t, as the destination type D.
template <class D> D raw_element(const char* p, int32_t t, int64_t i) {
  auto load = [&](auto z) {
    decltype(z) v;
    std::memcpy(&v, p + i * static_cast<int64_t>(sizeof v), sizeof v);
    return v;
  };
  switch (t) {
    case TensorProto::FLOAT: return static_cast<D>(load(float{}));
    case TensorProto::DOUBLE: return static_cast<D>(load(double{}));
    case TensorProto::INT64: return static_cast<D>(load(int64_t{}));
    case TensorProto::INT32: return static_cast<D>(load(int32_t{}));
    case TensorProto::INT16: return static_cast<D>(load(int16_t{}));
    case TensorProto::INT8: return static_cast<D>(load(int8_t{}));
    case TensorProto::UINT8: return static_cast<D>(load(uint8_t{}));
    case TensorProto::BOOL: return static_cast<D>(load(uint8_t{}) != 0);
    case TensorProto::UINT16: return static_cast<D>(load(uint16_t{}));
    case TensorProto::UINT32: return static_cast<D>(load(uint32_t{}));
    default: return static_cast<D>(load(uint64_t{}));  // UINT64, range-checked by the caller
  }
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& p, const std::string& what, MemCategory category) {
  if (p.data_location() == TensorProto::EXTERNAL)
    throw Unsupported(what + " keeps its data in an external file",
                      "opscope reads models whose weights are inside the .onnx file (onnx.save_model(..., "
                      "save_as_external_data=False))");
  if (p.has_segment()) throw Unsupported(what + " is split into segments, which opscope does not read");
  const int32_t t = p.data_type();
  const DType dtype = dtype_for_onnx(t, what);
  Shape shape;
  for (int64_t d : p.dims()) {
    if (d < 0) throw Error(what + " has a negative dimension (" + std::to_string(d) + ")", "the file is damaged");
    shape.push_back(d);
  }
  if (shape.size() > 16) throw Error(what + " has " + std::to_string(shape.size()) + " dimensions (at most 16)");
  int64_t n = 0;
  try {
    n = shape_numel(shape);
  } catch (const Error&) {
    throw Error(what + " has dims " + shape_str(shape) + " whose product overflows", "the file is damaged");
  }
  // Where the values are, and that there are exactly n of them.
  const bool raw = p.has_raw_data();
  int64_t available = 0;
  if (raw) {
    const int64_t es = raw_element_size(t);
    if (static_cast<int64_t>(p.raw_data().size()) % es != 0 || static_cast<int64_t>(p.raw_data().size()) / es != n)
      throw Error(what + " declares " + std::to_string(n) + " elements of " + onnx_type_name(t) + " but holds " +
                      std::to_string(p.raw_data().size()) + " bytes",
                  "the file is truncated or damaged");
    available = n;
  } else if (t == TensorProto::FLOAT) {
    available = p.float_data_size();
  } else if (t == TensorProto::DOUBLE) {
    available = p.double_data_size();
  } else if (t == TensorProto::INT64) {
    available = p.int64_data_size();
  } else if (t == TensorProto::UINT32 || t == TensorProto::UINT64) {
    available = p.uint64_data_size();
  } else {
    available = p.int32_data_size();
  }
  if (available != n)
    throw Error(what + " declares " + std::to_string(n) + " elements of " + onnx_type_name(t) + " but holds " +
                    std::to_string(available),
                "the file is truncated or damaged");
  Tensor out;
  try {
    out = Tensor::empty(shape, dtype, category);
  } catch (const Error& e) {
    throw Error(what + " " + shape_str(shape) + ": " + e.what(), e.hint());
  }
  // Raw data already in opscope's type (float32, float64, int64; little-endian, as ONNX writes
  // it and as the element-wise path reads it): one copy, not a conversion per element.
  const bool same_type = (t == TensorProto::FLOAT && dtype == DType::f32) ||
                         (t == TensorProto::DOUBLE && dtype == DType::f64) ||
                         (t == TensorProto::INT64 && dtype == DType::i64);
  if (raw && same_type) {
    if (n > 0) std::memcpy(out.raw_data(), p.raw_data().data(), static_cast<size_t>(out.nbytes()));
    return out;
  }
  visit_dtype(dtype, [&](auto z) {
    using D = decltype(z);
    D* o = out.data<D>();
    for (int64_t i = 0; i < n; ++i) {
      if (t == TensorProto::UINT64) {
        const uint64_t v = raw ? raw_element<uint64_t>(p.raw_data().data(), t, i) : p.uint64_data(static_cast<int>(i));
        if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          throw Unsupported(what + " holds the uint64 value " + std::to_string(v) + ", beyond int64");
        o[i] = static_cast<D>(v);
      } else if (raw) {
        o[i] = raw_element<D>(p.raw_data().data(), t, i);
      } else if (t == TensorProto::FLOAT) {
        o[i] = static_cast<D>(p.float_data(static_cast<int>(i)));
      } else if (t == TensorProto::DOUBLE) {
        o[i] = static_cast<D>(p.double_data(static_cast<int>(i)));
      } else if (t == TensorProto::INT64) {
        o[i] = static_cast<D>(p.int64_data(static_cast<int>(i)));
      } else if (t == TensorProto::UINT32) {
        o[i] = static_cast<D>(p.uint64_data(static_cast<int>(i)));
      } else if (t == TensorProto::BOOL) {
        o[i] = static_cast<D>(p.int32_data(static_cast<int>(i)) != 0);
      } else {
        o[i] = static_cast<D>(p.int32_data(static_cast<int>(i)));
      }
    }
  });
  return out;
}

void tensor_to_proto(const Tensor& t, const std::string& name, TensorProto& out) {
  Tensor c = t.device() == Device::cpu ? t.contiguous() : t.to(Device::cpu, MemCategory::temporary);
  out.set_name(name);
  out.set_data_type(onnx_elem_type(t.dtype()));
  for (int64_t d : t.shape()) out.add_dims(d);
  out.set_raw_data(std::string(static_cast<const char*>(c.raw_data()), static_cast<size_t>(c.nbytes())));
}

}  // namespace opscope::interop
