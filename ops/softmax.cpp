// Softmax along one axis: softmax (algorithms "stable" and "naive"), its fused backward
// softmax_backward, and log_softmax.
//
// The axis splits x into [A, C, B]: A independent groups of C rows of B contiguous elements.
// The last axis (B = 1) is the fast path: each row of C elements is processed while it sits in
// cache, with Eigen's vectorized exp. Another axis works on whole rows of B elements at a time
// (vectorized over B), so no transposed copy is made either way.
#include <Eigen/Dense>
#include <cmath>
#include <limits>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

AttrSpec axis_attr() {
  return make_attr("axis", AttrType::integer, int64_t{-1}, "the axis whose entries sum to 1 (negative counts from the end)");
}

struct AxisSplit {
  int64_t A = 1, C = 1, B = 1;
};

// x of `shape` as [A, C, B] around `axis` (a 0-d tensor is one row of one element).
AxisSplit split_at(const Shape& shape, int64_t axis, const char* op) {
  AxisSplit s;
  if (shape.empty()) return s;
  const int64_t ax = normalize_axis(axis, static_cast<int64_t>(shape.size()), op);
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < ax) s.A *= shape[i];
    else if (i == ax) s.C = shape[i];
    else s.B *= shape[i];
  }
  return s;
}

template <class T>
using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;
template <class T>
using RowMap = Eigen::Map<RowArray<T>>;
template <class T>
using ConstRowMap = Eigen::Map<const RowArray<T>>;

// o = exp(v) for v <= 0, with 0 where the result would be subnormal: Eigen's exp never reaches
// 0 (it gives about 5e-309 for exp(-inf)), and a masked entry (-inf) must get exactly 0. The
// fix-up runs only for rows that need it (an Eigen select around exp does not vectorize).
template <class T, class Expr>
void assign_exp_flushed(Eigen::Map<RowArray<T>> o, const Expr& v) {
  static const T kLowest = std::log(std::numeric_limits<T>::min());  // -87.3 float, -708.4 double
  o = v.exp();
  if (v.minCoeff() < kLowest) o = (v < kLowest).select(static_cast<T>(0), o);
}

// Σ exp(x[i] - m) over one row, writing each term to out (when not null). Here x - m <= 0.
// Eigen's vectorized exp in general; float32 with AVX2+FMA has its own loop below, because
// the exp is what bounds softmax (Eigen's takes about twice as long as the memory traffic).
template <class T>
T exp_shifted_sum(const T* x, T m, T* out, int64_t n, const T* /*prefetch*/) {
  ConstRowMap<T> xr(x, n);
  if (!out) return (xr - m).exp().sum();  // terms below 1e-308 don't change a sum that is >= 1
  RowMap<T> o(out, n);
  assign_exp_flushed<T>(o, xr - m);
  return o.sum();
}

#if defined(__AVX2__) && defined(__FMA__)
// exp(v) = 2^k · exp(r) with k = round(v·log2 e) and r = v - k·ln 2 in [-ln2/2, ln2/2]; exp(r)
// by the Cephes degree-6 polynomial (about 4 ulp). v below -87.3 (where float32 would go
// subnormal) gives 0, so masked entries (-inf) give exactly 0; NaN stays NaN. The sum is
// accumulated in the same pass, and the next row is prefetched while this one computes.
template <>
float exp_shifted_sum<float>(const float* x, float m, float* out, int64_t n, const float* prefetch) {
  const __m256 vm = _mm256_set1_ps(m), lo = _mm256_set1_ps(-87.3f), log2e = _mm256_set1_ps(1.44269504088896341f);
  const __m256 ln2_hi = _mm256_set1_ps(0.693359375f), ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
  const __m256 p0 = _mm256_set1_ps(1.9875691500e-4f), p1 = _mm256_set1_ps(1.3981999507e-3f),
               p2 = _mm256_set1_ps(8.3334519073e-3f), p3 = _mm256_set1_ps(4.1665795894e-2f),
               p4 = _mm256_set1_ps(1.6666665459e-1f), p5 = _mm256_set1_ps(5.0000001201e-1f),
               one = _mm256_set1_ps(1.0f);
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (prefetch && (i & 15) == 0) _mm_prefetch(reinterpret_cast<const char*>(prefetch + i), _MM_HINT_T0);
    const __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    const __m256 underflow = _mm256_cmp_ps(v, lo, _CMP_LT_OQ);
    const __m256 vc = _mm256_max_ps(lo, v);  // NaN in v passes through (max returns its 2nd operand)
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(vc, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 r = _mm256_fnmadd_ps(k, ln2_lo, _mm256_fnmadd_ps(k, ln2_hi, vc));
    __m256 p = _mm256_fmadd_ps(p0, r, p1);
    p = _mm256_fmadd_ps(p, r, p2);
    p = _mm256_fmadd_ps(p, r, p3);
    p = _mm256_fmadd_ps(p, r, p4);
    p = _mm256_fmadd_ps(p, r, p5);
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, one));  // 1 + r + r²·P(r)
    const __m256i two_k = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    const __m256 e = _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(two_k)));
    if (out) _mm256_storeu_ps(out + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - m);
    if (out) out[i] = e;
    sum += e;
  }
  return sum;
}
#endif

enum class SoftmaxKind { stable, naive, log };

// out = softmax(x) (stable: exp(x - max) / Σ exp(x - max); naive: exp(x) / Σ exp(x), which
// overflows for x around 89 in float32 and 710 in float64) or log_softmax(x) = x - max - log Σ exp(x - max).
template <class T>
void softmax_rows(const T* x, T* out, const AxisSplit& s, SoftmaxKind kind) {
  const int64_t C = s.C, B = s.B;
  if (B == 1) {
    // Per row: one pass for the max (from memory), one for exp and its sum, one to scale (in cache).
    // A NaN anywhere in a row makes its sum NaN, so the fast max (which may skip NaN) is enough.
    for (int64_t a = 0; a < s.A; ++a) {
      ConstRowMap<T> xr(x + a * C, C);
      RowMap<T> o(out + a * C, C);
      const T* next = a + 1 < s.A ? x + (a + 1) * C : nullptr;
      switch (kind) {
        case SoftmaxKind::stable: {
          const T m = xr.maxCoeff();
          o *= static_cast<T>(1) / exp_shifted_sum<T>(x + a * C, m, out + a * C, C, next);
          break;
        }
        case SoftmaxKind::naive:
          o = xr.exp();
          o /= o.sum();  // inf / inf = nan once exp overflows
          break;
        case SoftmaxKind::log: {
          const T m = xr.maxCoeff();
          o = xr - (m + std::log(exp_shifted_sum<T>(x + a * C, m, nullptr, C, next)));
          break;
        }
      }
    }
    return;
  }
  RowArray<T> m(B), sum(B);
  for (int64_t a = 0; a < s.A; ++a) {
    const T* xa = x + a * C * B;
    T* oa = out + a * C * B;
    auto xrow = [&](int64_t c) { return ConstRowMap<T>(xa + c * B, B); };
    auto orow = [&](int64_t c) { return RowMap<T>(oa + c * B, B); };
    if (kind == SoftmaxKind::naive) {
      m.setZero();
    } else {
      m.setConstant(-std::numeric_limits<T>::infinity());
      for (int64_t c = 0; c < C; ++c) m = m.max(xrow(c));
    }
    sum.setZero();
    for (int64_t c = 0; c < C; ++c) {
      assign_exp_flushed<T>(orow(c), xrow(c) - m);
      sum += orow(c);
    }
    if (kind == SoftmaxKind::log) {
      m += sum.log();
      for (int64_t c = 0; c < C; ++c) orow(c) = xrow(c) - m;
    } else {
      for (int64_t c = 0; c < C; ++c) orow(c) /= sum;
    }
  }
}

// dx = s * (dy - Σ dy·s) along the axis, in one pass per row.
template <class T>
void softmax_backward_rows(const T* sm, const T* dy, T* dx, const AxisSplit& s) {
  const int64_t C = s.C, B = s.B;
  if (B == 1) {
    for (int64_t a = 0; a < s.A; ++a) {
      ConstRowMap<T> sr(sm + a * C, C), dr(dy + a * C, C);
      RowMap<T> o(dx + a * C, C);
      const T dot = (sr * dr).sum();
      o = sr * (dr - dot);
    }
    return;
  }
  RowArray<T> dot(B);
  for (int64_t a = 0; a < s.A; ++a) {
    const int64_t base = a * C * B;
    dot.setZero();
    for (int64_t c = 0; c < C; ++c) dot += ConstRowMap<T>(sm + base + c * B, B) * ConstRowMap<T>(dy + base + c * B, B);
    for (int64_t c = 0; c < C; ++c) {
      ConstRowMap<T> sr(sm + base + c * B, B), dr(dy + base + c * B, B);
      RowMap<T>(dx + base + c * B, B) = sr * (dr - dot);
    }
  }
}

KernelFn softmax_kernel(SoftmaxKind kind) {
  return [kind](KernelCtx& k) {
    const Tensor& x = k.in(0);
    if (x.numel() == 0) return;
    const AxisSplit s = split_at(x.shape(), k.attrs.i("axis"), k.op.name.c_str());
    cpu::visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      softmax_rows<T>(x.data<T>(), k.out().data<T>(), s, kind);
    });
  };
}

std::vector<TensorMeta> infer_softmax(const InferCtx& c) {
  c.expect_float(0);
  normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(c.inputs[0].shape.size()), c.op.name.c_str());
  return {c.inputs[0]};
}

OpDef softmax_like(const std::string& name, const std::string& doc, double flops_per_element) {
  OpDef d = OpDef::declare(name, "softmax", doc, {"x"});
  d.attrs = {axis_attr()};
  d.infer = infer_softmax;
  d.cost = cpu::elementwise_cost(flops_per_element);
  const InputSpec x2{{3, 5}}, x3{{2, 3, 4}}, x1{{6}};
  d.gradcheck = {gc({x2}, {}, "last axis"),
                 gc({x3}, {{"axis", int64_t{1}}}, "middle axis"),
                 gc({x3}, {{"axis", int64_t{0}}}, "leading axis"),
                 gc({x3}, {{"axis", int64_t{-2}}}, "negative axis"),
                 gc({x1}, {}, "one row")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_softmax_ops) {
  {
    // max, subtract, exp, sum, scale: about 5 FLOPs per element (exp counted as one).
    OpDef d = softmax_like("softmax", "s = exp(x - max) / Σ exp(x - max) along axis", 5);
    d.kernel(Device::cpu, "stable", softmax_kernel(SoftmaxKind::stable));
    d.kernel(Device::cpu, "naive", softmax_kernel(SoftmaxKind::naive));
    d.default_algo = "stable";
    d.anomaly_hint = "the naive softmax overflows for large inputs; use algo=\"stable\"";
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      return {g.call("softmax_backward", {g.output(0), g.grad_output(0)}, {{"axis", g.attrs().i("axis")}})};
    };
    d.backward_note = "dx = s * (dy - Σ dy·s) along axis (one fused softmax_backward op)";
    d.lab = cpu::lab_rows_cols();
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("softmax_backward", "softmax", "dx = s * (dy - Σ dy·s) along axis, with s = softmax(x)", {"s", "dy"});
    d.attrs = {axis_attr()};
    d.infer = [](const InferCtx& c) {
      c.expect_float(0);
      c.expect_float(1);
      if (c.inputs[0].shape != c.inputs[1].shape)
        c.fail("s has shape " + shape_str(c.inputs[0].shape) + " but dy has shape " + shape_str(c.inputs[1].shape) +
               "; they must be equal");
      normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(c.inputs[0].shape.size()), c.op.name.c_str());
      TensorMeta m = c.inputs[0];
      m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
      return std::vector<TensorMeta>{m};
    };
    d.kernel(Device::cpu, "default", [](KernelCtx& k) {
      const DType dt = k.out().dtype();
      Tensor s = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
      if (s.numel() == 0) return;
      const AxisSplit split = split_at(s.shape(), k.attrs.i("axis"), "softmax_backward");
      cpu::visit_float(dt, k.op.name, [&](auto z) {
        using T = decltype(z);
        softmax_backward_rows<T>(s.data<T>(), dy.data<T>(), k.out().data<T>(), split);
      });
    });
    d.differentiable = false;
    d.checked_via = "softmax";
    // Cases for the CUDA tests (gradchecked through softmax): s is a softmax output, positive.
    d.gradcheck = {gc({{{3, 5}, Domain::positive}, {{3, 5}}}), gc({{{4, 3, 2}, Domain::positive}, {{4, 3, 2}}}, {{"axis", int64_t{1}}}, "columns")};
    d.cost = cpu::elementwise_cost(4);
    registry.add(std::move(d));
  }
  {
    OpDef d = softmax_like("log_softmax", "y = x - max - log Σ exp(x - max) along axis", 5);
    d.kernel(Device::cpu, "stable", softmax_kernel(SoftmaxKind::log));
    d.saves = {{SavedRef::output, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val dy = g.grad_output(0);
      Val total = g.call("sum", {dy}, {{"axes", std::vector<int64_t>{g.attrs().i("axis")}}, {"keepdim", true}});
      return {dy - g.call("exp", {g.output(0)}) * total};
    };
    d.backward_note = "dx = dy - exp(y) * Σ dy along axis";
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
