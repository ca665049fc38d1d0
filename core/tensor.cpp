#include "core/tensor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/device.h"
#include "core/error.h"
#include "core/workspace.h"

namespace opscope {

Tensor Tensor::empty(const Shape& shape, DType dtype, MemCategory c, Device d) {
  int64_t n = shape_numel(shape);
  int64_t size = static_cast<int64_t>(dtype_size(dtype));
  if (n > INT64_MAX / size) throw Error("shape " + shape_str(shape) + " is too large");
  int64_t bytes = n * size;
  auto alloc = current_workspace().allocator(d);
  alloc->tracker().check_cap(bytes, shape, dtype);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(std::move(alloc), bytes, c);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, MemCategory c) { return full(shape, 0.0, dtype, c); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, MemCategory c, Device d) {
  Tensor t = empty(shape, dtype, c, d);
  t.fill(value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype, MemCategory c) { return full({}, value, dtype, c); }

int64_t Tensor::size(int64_t axis) const {
  if (dim() == 0) throw Error("size: a 0-d tensor has no axes", "its shape is []");
  return shape()[normalize_axis(axis, dim(), "size")];
}

bool Tensor::is_contiguous() const {
  for (int64_t d : impl_->shape)
    if (d == 0) return true;  // no elements: any strides will do
  int64_t expected = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}

namespace {
// Offset (elements) of a flat row-major index in a strided tensor.
int64_t strided_offset(const Shape& shape, const Strides& strides, int64_t flat) {
  int64_t off = 0;
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = shape[i];
    off += (flat % d) * strides[i];
    flat /= d;
  }
  return off;
}
}  // namespace

double Tensor::get(int64_t flat) const {
  int64_t off = strided_offset(shape(), strides(), flat);
  if (device() != Device::cpu) {  // one element across the bus: fine for printing, slow in a loop
    char buf[8];
    const size_t es = dtype_size(dtype());
    const char* base = static_cast<const char*>(impl_->storage->data());
    device_backend(device())->copy_bytes(buf, Device::cpu, base + (impl_->offset + off) * es, device(),
                                         static_cast<int64_t>(es));
    return visit_dtype(dtype(), [&](auto z) -> double {
      using T = decltype(z);
      T v;
      std::memcpy(&v, buf, sizeof v);
      return static_cast<double>(v);
    });
  }
  return visit_dtype(dtype(), [&](auto z) -> double {
    using T = decltype(z);
    return static_cast<double>(data<T>()[off]);
  });
}

double Tensor::item() const {
  if (numel() != 1)
    throw Error("item() needs a tensor with one element, got shape " + shape_str(shape()),
                "index it first (x[0]) or reduce it (x.sum())");
  return get(0);
}

std::vector<double> Tensor::to_vector() const {
  if (device() != Device::cpu) return to(Device::cpu).to_vector();
  std::vector<double> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = get(i);
  return v;
}

// --- views ------------------------------------------------------------------------------------

Tensor Tensor::view_reshape(const Shape& shape) const {
  if (shape_numel(shape) != numel())
    throw Error("reshape: cannot reshape " + shape_str(this->shape()) + " (" + std::to_string(numel()) +
                " elements) into " + shape_str(shape) + " (" + std::to_string(shape_numel(shape)) + " elements)");
  if (!is_contiguous()) throw Error("internal: view_reshape of non-contiguous tensor");
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->requires_grad = false;
  impl->grad.reset();
  impl->value_id = -1;
  impl->name.clear();
  return Tensor(std::move(impl));
}

namespace {
std::shared_ptr<TensorImpl> fresh_view(const TensorImpl& from) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = from.storage;
  impl->offset = from.offset;
  impl->dtype = from.dtype;
  return impl;
}
}  // namespace

Tensor Tensor::view_permute(const std::vector<int64_t>& dims) const {
  auto impl = fresh_view(*impl_);
  for (int64_t d : dims) {
    impl->shape.push_back(impl_->shape[d]);
    impl->strides.push_back(impl_->strides[d]);
  }
  return Tensor(std::move(impl));
}

Tensor Tensor::view_transpose(int64_t d0, int64_t d1) const {
  auto impl = fresh_view(*impl_);
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  std::swap(impl->shape[d0], impl->shape[d1]);
  std::swap(impl->strides[d0], impl->strides[d1]);
  return Tensor(std::move(impl));
}

Tensor Tensor::view_slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  auto impl = fresh_view(*impl_);
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  int64_t n = stop > start ? 1 + (stop - start - 1) / step : 0;
  impl->offset += start * impl_->strides[axis];
  impl->shape[axis] = n;
  if (n > 1) impl->strides[axis] *= step;  // a single element keeps its stride (no overflow)
  return Tensor(std::move(impl));
}

Tensor Tensor::view_expand(const Shape& shape) const {
  auto impl = fresh_view(*impl_);
  impl->shape = shape;
  impl->strides.assign(shape.size(), 0);
  size_t off = shape.size() - dim();
  for (size_t i = 0; i < static_cast<size_t>(dim()); ++i)
    impl->strides[i + off] = impl_->shape[i] == 1 ? 0 : impl_->strides[i];
  return Tensor(std::move(impl));
}

// --- copies -----------------------------------------------------------------------------------

void Tensor::copy_from(const Tensor& src) {
  if (src.shape() != shape()) throw Error("internal: copy_from shape mismatch");
  const int64_t n = numel();
  if (n == 0) return;
  if (device() != Device::cpu || src.device() != Device::cpu) {
    if (device() == src.device()) {
      device_backend(device())->copy_strided(*this, src);
      return;
    }
    copy_from(src.to(device(), MemCategory::temporary));  // across the bus once, then convert there
    return;
  }
  if (src.dtype() == dtype() && src.is_contiguous() && is_contiguous()) {
    std::memcpy(raw_data(), src.raw_data(), static_cast<size_t>(nbytes()));
    return;
  }
  visit_dtype(dtype(), [&](auto zd) {
    using D = decltype(zd);
    visit_dtype(src.dtype(), [&](auto zs) {
      using S = decltype(zs);
      D* out = data<D>();
      const S* in = src.data<S>();
      // Walk both tensors with an index counter; the inner dimension is a tight loop.
      const int64_t rank = dim();
      if (rank == 0) {
        out[0] = static_cast<D>(in[0]);
        return;
      }
      std::vector<int64_t> idx(rank, 0);
      const int64_t inner = shape()[rank - 1];
      const int64_t ds = strides()[rank - 1], ss = src.strides()[rank - 1];
      int64_t done = 0;
      while (done < n) {
        int64_t od = 0, os = 0;
        for (int64_t i = 0; i < rank - 1; ++i) {
          od += idx[i] * strides()[i];
          os += idx[i] * src.strides()[i];
        }
        // Rows adjacent in both (a slice, a permuted view with its last axis in place) are a
        // tight loop the compiler vectorises (a memmove for one dtype); others go by strides.
        if (ds == 1 && ss == 1)
          for (int64_t j = 0; j < inner; ++j) out[od + j] = static_cast<D>(in[os + j]);
        else
          for (int64_t j = 0; j < inner; ++j) out[od + j * ds] = static_cast<D>(in[os + j * ss]);
        done += inner;
        for (int64_t i = rank - 2; i >= 0; --i) {
          if (++idx[i] < shape()[i]) break;
          idx[i] = 0;
        }
      }
    });
  });
}

Tensor Tensor::to(Device d) const {
  MemCategory c = storage().category();
  if (c == MemCategory::saved) c = MemCategory::activation;
  return to(d, c);
}

Tensor Tensor::to(Device d, MemCategory c) const {
  if (device() == d) return *this;
  Tensor src = contiguous(MemCategory::temporary);  // dense on its own device first
  Tensor dst = empty(shape(), dtype(), c, d);
  if (numel() > 0) {
    DeviceBackend* b = device_backend(d == Device::cpu ? device() : d);
    b->copy_bytes(dst.raw_data(), d, src.raw_data(), device(), nbytes());
  }
  current_workspace().tracker().on_copy(device(), d, nbytes());
  return dst;
}

Tensor Tensor::contiguous(MemCategory c) const {
  if (is_contiguous()) return *this;
  return clone(c);
}

Tensor Tensor::clone(MemCategory c) const {
  Tensor t = empty(shape(), dtype(), c, device());
  t.copy_from(*this);
  return t;
}

Tensor Tensor::cast(DType dt, MemCategory c) const {
  Tensor t = empty(shape(), dt, c, device());
  t.copy_from(*this);
  return t;
}

void Tensor::fill(double value) {
  if (device() != Device::cpu) {
    if (numel() > 0) device_backend(device())->fill(*this, value);
    return;
  }
  visit_dtype(dtype(), [&](auto z) {
    using T = decltype(z);
    T v = static_cast<T>(value);
    T* p = data<T>();
    const int64_t n = numel(), rank = dim();
    if (is_contiguous() || rank == 0) {
      std::fill(p, p + n, v);
      return;
    }
    // Row by row (the last axis), as copy_from walks: a slice's rows are filled whole.
    const int64_t inner = shape()[rank - 1], step = strides()[rank - 1];
    std::vector<int64_t> idx(rank, 0);
    for (int64_t done = 0; done < n; done += inner) {
      int64_t off = 0;
      for (int64_t i = 0; i < rank - 1; ++i) off += idx[i] * strides()[i];
      if (step == 1) std::fill(p + off, p + off + inner, v);
      else
        for (int64_t j = 0; j < inner; ++j) p[off + j * step] = v;
      for (int64_t i = rank - 2; i >= 0; --i) {
        if (++idx[i] < shape()[i]) break;
        idx[i] = 0;
      }
    }
  });
}

Tensor& Tensor::set_requires_grad(bool r) {
  if (r && !is_floating(dtype()))
    throw Error("only floating-point tensors can require gradients (got " + std::string(dtype_name(dtype())) + ")");
  impl_->requires_grad = r;
  if (r && impl_->storage) storage().mark_parameter();
  return *this;
}

Tensor& Tensor::set_name(std::string n) {
  impl_->name = std::move(n);
  if (impl_->value_id >= 0) current_workspace().graph().name_value(impl_->value_id, impl_->name);
  return *this;
}

// --- printing ---------------------------------------------------------------------------------

namespace {
struct Formatter {
  bool is_int = false, sci = false;
  int decimals = 4;
  int width = 1;
  std::string format(double v) const {
    char buf[64];
    if (v == 0) v = 0;  // -0.0 prints as 0
    if (is_int) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else if (std::isnan(v)) std::snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(v)) std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
    else if (sci) std::snprintf(buf, sizeof buf, "%.*e", decimals, v);
    else std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
  }
};

void print_rec(const Tensor& t, std::vector<int64_t>& idx, size_t axis, bool trunc, const Formatter& f,
               std::string& out, int indent) {
  const Shape& s = t.shape();
  auto flat = [&] {
    int64_t fl = 0;
    for (size_t i = 0; i < s.size(); ++i) fl = fl * s[i] + idx[i];
    return fl;
  };
  out += "[";
  int64_t n = s[axis];
  bool cut = trunc && n > 6;
  for (int64_t i = 0; i < n; ++i) {
    if (cut && i == 3) {
      out += axis + 1 == s.size() ? "..., " : "...,\n" + std::string(indent + 1, ' ');
      i = n - 3;
    }
    idx[axis] = i;
    if (axis + 1 == s.size()) {
      std::string v = f.format(t.get(flat()));
      out += std::string(std::max<int>(0, f.width - static_cast<int>(v.size())), ' ') + v;
      if (i + 1 < n) out += ", ";
    } else {
      print_rec(t, idx, axis + 1, trunc, f, out, indent + 1);
      if (i + 1 < n) out += "," + std::string(s.size() - axis - 1, '\n') + std::string(indent + 1, ' ');
    }
  }
  out += "]";
}
}  // namespace

Tensor Tensor::symbolic(const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  impl->symbolic_device = device;
  return Tensor(impl);
}

void Tensor::throw_symbolic() const {
  throw Error("'" + (impl_->name.empty() ? std::string("this tensor") : impl_->name) + "' is symbolic (static mode): " +
                  shape_str(impl_->shape) + " " + dtype_name(impl_->dtype) + ", no values until the program runs",
              "run(y, x=...) computes values; :mode dynamic runs every statement at once");
}

std::string Tensor::to_string(int64_t max_elements) const {
  if (!defined()) return "None";
  if (is_symbolic())
    return "<symbolic " + std::string(dtype_name(dtype())) + shape_str(shape()) +
           (name().empty() ? std::string() : " " + name()) + ": run it to see values>";
  if (device() != Device::cpu) {  // printed from a host copy, marked with its device
    std::string s = to(Device::cpu, MemCategory::temporary).to_string(max_elements);
    s.insert(s.size() - 1, std::string(", device=") + device_name(device()));
    if (requires_grad()) s.insert(s.size() - 1, ", requires_grad=True");
    return s;
  }
  const int64_t n = numel();
  const bool trunc = n > max_elements;
  Formatter f;
  f.is_int = dtype() == DType::i64;
  double maxabs = 0, minabs = INFINITY;
  bool all_int = true;
  for (int64_t i = 0; i < n; i += (trunc ? std::max<int64_t>(1, n / 4096) : 1)) {
    double v = get(i);
    if (!std::isfinite(v)) continue;
    maxabs = std::max(maxabs, std::fabs(v));
    if (v != 0) minabs = std::min(minabs, std::fabs(v));
    if (v != std::floor(v)) all_int = false;
  }
  if (!f.is_int) {
    if (maxabs >= 1e6 || (minabs < 1e-4 && minabs != INFINITY)) f.sci = true;
    else if (all_int) f.decimals = 1;
  }
  std::vector<int64_t> idx(dim(), 0);
  // Width: widest printed value, so columns line up.
  for (int64_t i = 0; i < n; i += (trunc ? std::max<int64_t>(1, n / 4096) : 1))
    f.width = std::max<int>(f.width, static_cast<int>(f.format(get(i)).size()));
  std::string body;
  if (dim() == 0) body = f.format(get(0));
  else print_rec(*this, idx, 0, trunc, f, body, 7);
  std::string out = "tensor(" + body;
  out += ", shape=" + shape_str(shape()) + ", dtype=" + dtype_name(dtype());
  if (requires_grad()) out += ", requires_grad=True";
  return out + ")";
}

}  // namespace opscope
