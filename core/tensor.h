// Tensor: a strided view (shape, strides, offset) of a Storage, with autograd metadata.
// Copying a Tensor copies a handle; views share storage without copying data.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"
#include "core/shape.h"

namespace opscope {

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::f32;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  int value_id = -1;  // the graph value this tensor is (-1: not yet in the graph)
  bool from_op = false;  // produced by an op (not a leaf the user made)
  std::string name;  // the user's variable name, when known
  Device symbolic_device = Device::cpu;  // static mode: a tensor with a shape and no storage yet
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- factories (memory from the current workspace's allocator) ---
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, MemCategory c = MemCategory::temporary,
                      Device d = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, MemCategory c = MemCategory::input);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, MemCategory c = MemCategory::input,
                     Device d = Device::cpu);
  static Tensor scalar(double value, DType dtype = DType::f32, MemCategory c = MemCategory::input);
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, DType dtype = dtype_of<T>(),
                            MemCategory c = MemCategory::input);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  const Shape& shape() const { return impl_->shape; }
  const Strides& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  int64_t dim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t size(int64_t axis) const;
  int64_t numel() const { return shape_numel(impl_->shape); }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage ? impl_->storage->device() : impl_->symbolic_device; }
  // Static mode's tensors: shape, dtype and graph value, but no data until the program runs.
  bool is_symbolic() const { return impl_ && !impl_->storage; }
  static Tensor symbolic(const Shape& shape, DType dtype, Device device = Device::cpu);
  int64_t nbytes() const { return numel() * static_cast<int64_t>(dtype_size(dtype())); }
  Storage& storage() const { return *impl_->storage; }
  bool is_contiguous() const;

  void* raw_data() const {
    if (!impl_->storage) throw_symbolic();
    return static_cast<char*>(impl_->storage->data()) + impl_->offset * static_cast<int64_t>(dtype_size(dtype()));
  }
  template <class T> T* data() const { return static_cast<T*>(raw_data()); }

  // Element at a flat (row-major) index, following strides, as double. For tests and printing
  // (a device tensor copies the element to the host).
  double get(int64_t flat_index) const;
  double item() const;  // the single element of a one-element tensor
  std::vector<double> to_vector() const;

  // --- raw views and copies: no graph nodes (ops use these inside kernels) ---
  Tensor view_reshape(const Shape& shape) const;  // needs contiguous data
  Tensor view_permute(const std::vector<int64_t>& dims) const;
  Tensor view_transpose(int64_t d0, int64_t d1) const;
  Tensor view_slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const;
  Tensor view_expand(const Shape& shape) const;  // broadcast with zero strides
  Tensor contiguous(MemCategory c = MemCategory::temporary) const;  // self if already contiguous
  Tensor clone(MemCategory c = MemCategory::temporary) const;
  Tensor cast(DType dtype, MemCategory c = MemCategory::temporary) const;
  void copy_from(const Tensor& src);  // same shape; any strides, any dtypes, any devices
  // A contiguous copy on device `d` (self if already there); the tracker counts the copy.
  // Keeps the storage's category unless `c` is given.
  Tensor to(Device d) const;
  Tensor to(Device d, MemCategory c) const;
  void fill(double value);

  // --- autograd metadata ---
  bool requires_grad() const { return impl_->requires_grad; }
  Tensor& set_requires_grad(bool r);
  Tensor grad() const { return Tensor(impl_->grad); }
  void set_grad(const Tensor& g) { impl_->grad = g.impl_; }
  const std::string& name() const { return impl_->name; }
  Tensor& set_name(std::string n);

  // NumPy-like text; tensors above `max_elements` are truncated with "...".
  std::string to_string(int64_t max_elements = 1000) const;

 private:
  [[noreturn]] void throw_symbolic() const;
  std::shared_ptr<TensorImpl> impl_;
};

// Calls f(T{}) with T the C++ type of `dtype`.
template <class F> decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    default: return f(int64_t{});
  }
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, DType dtype, MemCategory c) {
  Tensor t = empty(shape, dtype, c);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw std::invalid_argument("from_vector: size does not match shape");
  visit_dtype(dtype, [&](auto z) {
    using D = decltype(z);
    D* p = t.data<D>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<D>(values[i]);
  });
  return t;
}

}  // namespace opscope
