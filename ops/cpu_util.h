// Helpers shared by the CPU kernels and op declarations of ops/*.cpp.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/op.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace opscope::cpu {

// Contiguous data seen as an Eigen array (vectorized elementwise expressions).
template <class T> using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T> using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Calls f(T{}) for float32/float64; int64 is an error naming the op.
template <class F> void visit_float(DType dt, const std::string& op, F&& f) {
  if (dt == DType::f32) f(float{});
  else if (dt == DType::f64) f(double{});
  else throw Error(op + ": expected a floating-point tensor, got int64");
}

// Strides of `t` broadcast to `shape` (0 where t is broadcast).
inline Strides broadcast_strides(const Tensor& t, const Shape& shape) {
  Strides s(shape.size(), 0);
  const size_t off = shape.size() - t.shape().size();
  for (size_t i = 0; i < t.shape().size(); ++i) s[i + off] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return s;
}

// Element offsets of every matrix in a batch: the batch index walked row-major, each axis
// stepping by its stride (0 for a broadcast axis).
inline std::vector<int64_t> batch_offsets(const Shape& batch, const Strides& strides) {
  const int64_t nb = static_cast<int64_t>(batch.size()), count = shape_numel(batch);
  std::vector<int64_t> offsets(static_cast<size_t>(count)), idx(batch.size(), 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t off = 0;
    for (int64_t i = 0; i < nb; ++i) off += idx[i] * strides[i];
    offsets[b] = off;
    for (int64_t i = nb - 1; i >= 0; --i) {
      if (++idx[i] < batch[i]) break;
      idx[i] = 0;
    }
  }
  return offsets;
}

// out[i] = f(a[i], b[i]) with NumPy broadcasting; out contiguous with the broadcast shape.
template <class T, class R, class F> void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  R* o = out.data<R>();
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const bool ca = a.is_contiguous() && a.shape() == out.shape();
  const bool cb = b.is_contiguous() && b.shape() == out.shape();
  // Elements are independent: chunks over threads give the same bits for any thread count.
  const int64_t grain = grain_for(1.0);
  if (ca && cb) {
    parallel_for(n, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o[i] = f(pa[i], pb[i]);
    });
    return;
  }
  if (ca && b.numel() == 1) {
    const T s = pb[0];
    parallel_for(n, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o[i] = f(pa[i], s);
    });
    return;
  }
  if (cb && a.numel() == 1) {
    const T s = pa[0];
    parallel_for(n, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) o[i] = f(s, pb[i]);
    });
    return;
  }
  const Shape& shape = out.shape();
  const Strides sa = broadcast_strides(a, shape), sb = broadcast_strides(b, shape);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t inner = shape[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  // Rows of the last axis over threads; each chunk finds its first row's offsets.
  parallel_for(n / inner, grain_for(static_cast<double>(inner)), [&](int64_t r0, int64_t r1) {
    Dims idx(static_cast<size_t>(rank), 0);
    for (int64_t d = rank - 2, rest = r0; d >= 0; --d) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      int64_t oa = 0, ob = 0;
      for (int64_t d = 0; d < rank - 1; ++d) {
        oa += idx[d] * sa[d];
        ob += idx[d] * sb[d];
      }
      R* orow = o + r * inner;
      for (int64_t j = 0; j < inner; ++j) orow[j] = f(pa[oa + j * ia], pb[ob + j * ib]);
      for (int64_t d = rank - 2; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

// The input as dtype `dt` (a temporary copy only when it differs).
inline Tensor as_dtype(const Tensor& t, DType dt) { return t.dtype() == dt ? t : t.cast(dt); }

// --- shape inference helpers -------------------------------------------------------------------
inline std::vector<TensorMeta> same_as_input0(const InferCtx& c) { return {c.inputs[0]}; }
inline std::vector<TensorMeta> float_like_input0(const InferCtx& c) {
  c.expect_float(0);
  return {c.inputs[0]};
}

// A norm's backward (inputs x, dy, ...): dy must have x's shape; outputs dx like x (its dtype
// promoted over every input) and d(weight), d(bias) of `param_shape`. The op checks its own
// inputs first.
inline std::vector<TensorMeta> norm_backward_outputs(const InferCtx& c, Shape param_shape) {
  c.expect_float(1);
  if (c.inputs[1].shape != c.inputs[0].shape)
    c.fail("dy has shape " + shape_str(c.inputs[1].shape) + " but x has shape " + shape_str(c.inputs[0].shape) +
           "; they must be equal");
  TensorMeta dx = c.inputs[0];
  for (size_t i = 1; i < c.inputs.size(); ++i) dx.dtype = promote(dx.dtype, c.inputs[i].dtype);
  TensorMeta p = dx;
  p.shape = std::move(param_shape);
  return {dx, p, p};
}
// ... and its kernel: an empty x has zero parameter gradients (nothing to sum), else `run`.
template <class F> void norm_backward_or_zero(KernelCtx& k, F&& run) {
  if (k.in(0).numel() == 0) {
    k.out(1).fill(0);
    k.out(2).fill(0);
    return;
  }
  run();
}

// --- cost helpers ------------------------------------------------------------------------------
inline double meta_bytes(const TensorMeta& m) {
  double n = 1;
  for (auto d : m.shape) n *= static_cast<double>(d);
  return n * static_cast<double>(dtype_size(m.dtype));
}
inline double meta_numel(const TensorMeta& m) {
  double n = 1;
  for (auto d : m.shape) n *= static_cast<double>(d);
  return n;
}
// FLOPs = flops_per_element * output elements; bytes = all inputs read, all outputs written.
inline CostFn elementwise_cost(double flops_per_element) {
  return [flops_per_element](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&,
                             std::string_view) {
    Cost c;
    for (auto& m : in) c.bytes_read += meta_bytes(m);
    for (auto& m : out) {
      c.bytes_written += meta_bytes(m);
      c.flops += flops_per_element * meta_numel(m);
    }
    return c;
  };
}

// Common gradcheck case builders.
inline GradcheckCase gc(std::vector<InputSpec> inputs, AttrMap attrs = {}, std::string note = {}) {
  GradcheckCase c;
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  c.note = std::move(note);
  return c;
}

// The op's cases with a looser float32 tolerance on a device (GradcheckCase::float32_rtol).
// Kernels that sum whole rows in float32 in another order than the CPU (the norms' statistics,
// attention's softmax and products) are held to 1e-4.
constexpr double kRowSumFloat32Rtol = 1e-4;
inline std::vector<GradcheckCase> with_float32_rtol(std::vector<GradcheckCase> cases, double rtol) {
  for (auto& c : cases) c.float32_rtol = rtol;
  return cases;
}

// The kernel lab's case: inputs of these shapes (normal values), these attributes.
inline GradcheckCase lab_case(const std::vector<Shape>& shapes, AttrMap attrs = {}) {
  std::vector<InputSpec> inputs;
  for (auto& s : shapes) inputs.push_back({s, Domain::normal});
  return gc(std::move(inputs), std::move(attrs));
}
// The size at `i`, or `fallback` when the student gave fewer.
inline int64_t size_or(const std::vector<int64_t>& s, size_t i, int64_t fallback) {
  return i < s.size() ? s[i] : fallback;
}

// "ROWS COLS": one matrix x of ROWS×COLS (square when COLS is left out), 4096×4096 by default.
inline LabSizes lab_rows_cols(AttrMap attrs = {}, std::string reference_algo = {}) {
  return {"ROWS COLS",
          {4096, 4096},
          1,
          [attrs](const std::vector<int64_t>& s) {
            return lab_case({{s[0], size_or(s, 1, s[0])}}, attrs);
          },
          std::move(reference_algo)};
}

}  // namespace opscope::cpu
