// Normalization: layer_norm and batch_norm (algorithms "welford", "two_pass", "naive"), with
// their fused backward ops layer_norm_backward and batch_norm_backward.
//
// Both normalize groups of elements to zero mean and unit variance: x̂ = (x - μ) / sqrt(σ² + eps),
// y = γ·x̂ + β. layer_norm's groups are the rows of x seen as [M, N] (N = the product of
// normalized_shape, the trailing sizes of x, as in torch.nn.functional.layer_norm); batch_norm's group for channel c is every x[n, c, s] of x seen as
// [N, C, S]: N contiguous chunks of S elements.
//
// The three ways to get μ and σ² are the lesson:
//   welford  : one pass, mean and M2 = Σ (x - mean)² updated per element (accurate, one read)
//   two_pass : mean first, then Σ (x - mean)² (accurate, two reads)
//   naive    : one pass of Σx and Σx², σ² = E[x²] - E[x]²; for data with mean 1e4 in float32,
//              E[x²] = 1e8 has a rounding step of 8, so a unit variance is lost (even negative).
// Welford here runs kLanes independent accumulators (element i goes to lane i mod kLanes, all
// lanes see the same count, so 1/count is one scalar per step and the loop vectorizes), merged
// at the end by Chan's formula; its serial form would be bound by a divide per element.
#include <Eigen/Dense>
#include <cmath>
#include <limits>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

enum class Algo { welford, two_pass, naive };

Algo algo_of(std::string_view name) {
  if (name == "two_pass") return Algo::two_pass;
  if (name == "naive") return Algo::naive;
  return Algo::welford;
}

template <class T>
using Col = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using ColMap = Eigen::Map<Col<T>>;
template <class T>
using ConstColMap = Eigen::Map<const Col<T>>;

// Count, mean and M2 = Σ (x - mean)² of a group of elements.
template <class T>
struct Moments {
  int64_t n = 0;
  T mean = 0, m2 = 0;
};

// Chan et al.: the moments of the union of two disjoint groups.
template <class T>
Moments<T> merge(const Moments<T>& a, const Moments<T>& b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  Moments<T> r;
  r.n = a.n + b.n;
  const T delta = b.mean - a.mean;
  const T fb = static_cast<T>(b.n) / static_cast<T>(r.n);
  r.mean = a.mean + delta * fb;
  r.m2 = a.m2 + b.m2 + delta * delta * static_cast<T>(a.n) * fb;
  return r;
}

constexpr int kLanes = 64;

// Welford over n contiguous elements: kLanes lanes in parallel, then the tail one at a time.
template <class T>
Moments<T> welford(const T* x, int64_t n) {
  using Lane = Eigen::Array<T, kLanes, 1>;
  const int64_t blocks = n / kLanes;
  Moments<T> r;
  if (blocks > 0) {
    Lane mean = Lane::Zero(), m2 = Lane::Zero();
    for (int64_t b = 0; b < blocks; ++b) {
      Eigen::Map<const Lane> v(x + b * kLanes);
      const T inv = static_cast<T>(1) / static_cast<T>(b + 1);
      const Lane d = v - mean;  // deviation from the old mean
      mean += d * inv;
      m2 += d * (v - mean);     // times the deviation from the new mean
    }
    // Merge the lanes pairwise (equal counts n: mean = (a + b)/2, M2 = M2a + M2b + δ²·n/2),
    // a tree of log2(kLanes) vector steps instead of kLanes dependent divides.
    T n_each = static_cast<T>(blocks);
    for (int width = kLanes / 2; width >= 1; width /= 2) {
      for (int l = 0; l < width; ++l) {
        const T delta = mean[l + width] - mean[l];
        m2[l] += m2[l + width] + delta * delta * (n_each * static_cast<T>(0.5));
        mean[l] = (mean[l] + mean[l + width]) * static_cast<T>(0.5);
      }
      n_each *= 2;
    }
    r = Moments<T>{blocks * kLanes, mean[0], m2[0]};
  }
  for (int64_t i = blocks * kLanes; i < n; ++i) {
    ++r.n;
    const T d = x[i] - r.mean;
    r.mean += d / static_cast<T>(r.n);
    r.m2 += d * (x[i] - r.mean);
  }
  return r;
}

// Mean and biased variance of the group made of `chunks` runs of `len` contiguous elements,
// `stride` elements apart (layer_norm: one chunk; batch_norm: N chunks of S).
template <class T>
void group_stats(const T* x, int64_t chunks, int64_t len, int64_t stride, Algo algo, T& mean, T& var) {
  const int64_t count = chunks * len;
  const T inv_count = static_cast<T>(1) / static_cast<T>(count);
  switch (algo) {
    case Algo::welford: {
      Moments<T> m;
      for (int64_t c = 0; c < chunks; ++c) m = merge(m, welford(x + c * stride, len));
      mean = m.mean;
      var = m.m2 * inv_count;
      return;
    }
    case Algo::two_pass: {
      T s = 0;
      for (int64_t c = 0; c < chunks; ++c) s += ConstColMap<T>(x + c * stride, len).sum();
      mean = s * inv_count;
      T ss = 0;
      for (int64_t c = 0; c < chunks; ++c) ss += (ConstColMap<T>(x + c * stride, len) - mean).square().sum();
      var = ss * inv_count;
      return;
    }
    case Algo::naive: {
      T s = 0, ss = 0;  // accumulated in T on purpose: this is the cancellation being shown
      for (int64_t c = 0; c < chunks; ++c) {
        ConstColMap<T> v(x + c * stride, len);
        s += v.sum();
        ss += v.square().sum();
      }
      mean = s * inv_count;
      var = ss * inv_count - mean * mean;  // may come out negative: no clamp, the failure is visible
      return;
    }
  }
}

// y = (x - mean)·rstd·γ + β over n contiguous elements (γ, β: per element, per group, or none).
template <class T>
void normalize_run(const T* x, T* y, int64_t n, T mean, T rstd, const T* w, const T* b) {
  ConstColMap<T> xr(x, n);
  ColMap<T> yr(y, n);
  if (w && b) yr = (xr - mean) * rstd * ConstColMap<T>(w, n) + ConstColMap<T>(b, n);
  else if (w) yr = (xr - mean) * rstd * ConstColMap<T>(w, n);
  else if (b) yr = (xr - mean) * rstd + ConstColMap<T>(b, n);
  else yr = (xr - mean) * rstd;
}

AttrSpec eps_attr() {
  return make_attr("eps", AttrType::real, 1e-5, "added to the variance before the square root", 0.0);
}

// ---------------------------------------------------------------------------------------------
// layer_norm

struct RowSplit {
  int64_t M = 1, N = 1;  // M rows of N normalized elements
};

RowSplit layer_split(const Shape& s, int64_t k) {
  RowSplit r;
  const int64_t rank = static_cast<int64_t>(s.size());
  for (int64_t i = 0; i < rank; ++i) (i < rank - k ? r.M : r.N) *= s[i];
  return r;
}

Shape normalized_shape(const Shape& s, int64_t k) { return Shape(s.end() - k, s.end()); }

// How many trailing axes are normalized: the length of the attribute normalized_shape.
int64_t normalized_ndim(const Attrs& a) { return static_cast<int64_t>(a.ints("normalized_shape").size()); }

// Checks x (input 0) against normalized_shape (its trailing sizes) and the optional weight and
// bias from input `first_param` on (both of shape normalized_shape).
void check_layer_inputs(const InferCtx& c, size_t first_param) {
  c.expect_float(0);
  const Shape& xs = c.inputs[0].shape;
  const Shape ns = c.attrs.ints("normalized_shape");
  const int64_t k = static_cast<int64_t>(ns.size());
  const std::string hint = "normalized_shape lists the trailing sizes of x normalized together, as in PyTorch: "
                           "layer_norm(x, x.shape[-1:]) for the last axis";
  if (k == 0) c.fail("normalized_shape is empty: at least one axis must be normalized", hint);
  if (k > static_cast<int64_t>(xs.size()) || normalized_shape(xs, k) != ns)
    c.fail("normalized_shape=" + shape_str(ns) + " but x " + shape_str(xs) +
               (k > static_cast<int64_t>(xs.size()) ? " has only " + std::to_string(xs.size()) + " axes"
                                                     : " ends in " + shape_str(normalized_shape(xs, k))),
           hint);
  static const char* names[] = {"weight", "bias"};
  for (size_t i = first_param; i < c.inputs.size() && i < first_param + 2; ++i) {
    c.expect_float(i);
    if (c.inputs[i].shape != ns)
      c.fail(std::string(names[i - first_param]) + " has shape " + shape_str(c.inputs[i].shape) +
                 " but normalized_shape is " + shape_str(ns),
             "weight and bias have the shape normalized_shape (one value per normalized element)");
  }
}

AttrSpec normalized_shape_attr() {
  return make_attr("normalized_shape", AttrType::int_list, std::vector<int64_t>{},
                   "the trailing sizes of x normalized together (x.shape[-k:]), as in PyTorch", 1.0, {}, {}, true);
}

template <class T>
void layer_norm_forward(KernelCtx& k, Algo algo) {
  const Tensor& x = k.in(0);
  const RowSplit s = layer_split(x.shape(), normalized_ndim(k.attrs));
  const T eps = static_cast<T>(k.attrs.f("eps"));
  Tensor w = k.inputs.size() > 1 ? cpu::as_dtype(k.in(1), x.dtype()) : Tensor();
  Tensor b = k.inputs.size() > 2 ? cpu::as_dtype(k.in(2), x.dtype()) : Tensor();
  const T* px = x.data<T>();
  T* py = k.out().data<T>();
  for (int64_t m = 0; m < s.M; ++m) {
    T mean = 0, var = 0;
    group_stats<T>(px + m * s.N, 1, s.N, s.N, algo, mean, var);
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    normalize_run<T>(px + m * s.N, py + m * s.N, s.N, mean, rstd, w.defined() ? w.data<T>() : nullptr,
                     b.defined() ? b.data<T>() : nullptr);
  }
}

// dx = rstd·(g - mean(g) - x̂·mean(g·x̂)) with g = dy·γ; dγ = Σ_rows dy·x̂; dβ = Σ_rows dy.
template <class T>
void layer_norm_backward_kernel(KernelCtx& k) {
  const DType dt = k.out(0).dtype();
  Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
  Tensor w = k.inputs.size() > 2 ? cpu::as_dtype(k.in(2), dt) : Tensor();
  const RowSplit s = layer_split(x.shape(), normalized_ndim(k.attrs));
  const T eps = static_cast<T>(k.attrs.f("eps"));
  ColMap<T> dw(k.out(1).data<T>(), s.N), db(k.out(2).data<T>(), s.N);
  dw.setZero();
  db.setZero();
  Tensor gbuf = k.workspace({s.N}, dt);  // g = dy·γ for one row
  ColMap<T> g(gbuf.data<T>(), s.N);
  const T inv_n = static_cast<T>(1) / static_cast<T>(s.N);
  for (int64_t m = 0; m < s.M; ++m) {
    const T* px = x.data<T>() + m * s.N;
    ConstColMap<T> xr(px, s.N), dr(dy.data<T>() + m * s.N, s.N);
    T mean = 0, var = 0;
    group_stats<T>(px, 1, s.N, s.N, Algo::two_pass, mean, var);
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    auto xhat = (xr - mean) * rstd;
    if (w.defined()) g = dr * ConstColMap<T>(w.data<T>(), s.N);
    else g = dr;
    const T mean_g = g.sum() * inv_n, mean_gx = (g * xhat).sum() * inv_n;
    ColMap<T>(k.out(0).data<T>() + m * s.N, s.N) = rstd * (g - mean_g - xhat * mean_gx);
    dw += dr * xhat;
    db += dr;
  }
}

// ---------------------------------------------------------------------------------------------
// batch_norm: x [N, C, S...] with per-channel statistics over N and S.

struct ChannelSplit {
  int64_t N = 1, C = 1, S = 1;
};

ChannelSplit channel_split(const Shape& s) {
  ChannelSplit r;
  r.N = s[0];
  r.C = s[1];
  for (size_t i = 2; i < s.size(); ++i) r.S *= s[i];
  return r;
}

template <class T>
void batch_norm_forward(KernelCtx& k, Algo algo) {
  const Tensor& x = k.in(0);
  const ChannelSplit s = channel_split(x.shape());
  const T eps = static_cast<T>(k.attrs.f("eps"));
  const bool training = k.attrs.b("training");
  const T momentum = static_cast<T>(k.attrs.f("momentum"));
  // The running statistics are updated in place (they are buffers, not values of the graph).
  T* rm = k.in(1).data<T>();
  T* rv = k.in(2).data<T>();
  Tensor w = k.inputs.size() > 3 ? cpu::as_dtype(k.in(3), x.dtype()) : Tensor();
  Tensor b = k.inputs.size() > 4 ? cpu::as_dtype(k.in(4), x.dtype()) : Tensor();
  const T* px = x.data<T>();
  T* py = k.out().data<T>();
  const int64_t count = s.N * s.S;
  for (int64_t c = 0; c < s.C; ++c) {
    T mean = 0, var = 0;
    if (training) {
      group_stats<T>(px + c * s.S, s.N, s.S, s.C * s.S, algo, mean, var);
      const T unbiased = var * static_cast<T>(count) / static_cast<T>(count - 1);
      rm[c] = (1 - momentum) * rm[c] + momentum * mean;
      rv[c] = (1 - momentum) * rv[c] + momentum * unbiased;
    } else {
      mean = rm[c];
      var = rv[c];
    }
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    const T scale = rstd * (w.defined() ? w.data<T>()[c] : static_cast<T>(1));
    const T shift = (b.defined() ? b.data<T>()[c] : static_cast<T>(0)) - mean * scale;
    for (int64_t n = 0; n < s.N; ++n) {
      const int64_t off = (n * s.C + c) * s.S;
      ColMap<T>(py + off, s.S) = ConstColMap<T>(px + off, s.S) * scale + shift;
    }
  }
}

// Training: dx = γ·rstd·(dy - mean(dy) - x̂·mean(dy·x̂)) with batch statistics (two-pass);
// eval: dx = γ·rstd·dy with the running statistics. Both: dγ = Σ dy·x̂, dβ = Σ dy per channel.
template <class T>
void batch_norm_backward_kernel(KernelCtx& k) {
  const DType dt = k.out(0).dtype();
  Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
  Tensor rm = cpu::as_dtype(k.in(2), dt), rv = cpu::as_dtype(k.in(3), dt);
  Tensor w = k.inputs.size() > 4 ? cpu::as_dtype(k.in(4), dt) : Tensor();
  const ChannelSplit s = channel_split(x.shape());
  const T eps = static_cast<T>(k.attrs.f("eps"));
  const bool training = k.attrs.b("training");
  const T* px = x.data<T>();
  const T* pd = dy.data<T>();
  T* dx = k.out(0).data<T>();
  T* dw = k.out(1).data<T>();
  T* db = k.out(2).data<T>();
  const T inv_count = static_cast<T>(1) / static_cast<T>(s.N * s.S);
  for (int64_t c = 0; c < s.C; ++c) {
    T mean = 0, var = 0;
    if (training) group_stats<T>(px + c * s.S, s.N, s.S, s.C * s.S, Algo::two_pass, mean, var);
    else mean = rm.data<T>()[c], var = rv.data<T>()[c];
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    const T gamma = w.defined() ? w.data<T>()[c] : static_cast<T>(1);
    T sum_dy = 0, sum_dyx = 0;
    for (int64_t n = 0; n < s.N; ++n) {
      const int64_t off = (n * s.C + c) * s.S;
      ConstColMap<T> xr(px + off, s.S), dr(pd + off, s.S);
      sum_dy += dr.sum();
      sum_dyx += (dr * ((xr - mean) * rstd)).sum();
    }
    db[c] = sum_dy;
    dw[c] = sum_dyx;
    const T mdy = training ? sum_dy * inv_count : 0, mdyx = training ? sum_dyx * inv_count : 0;
    for (int64_t n = 0; n < s.N; ++n) {
      const int64_t off = (n * s.C + c) * s.S;
      ConstColMap<T> xr(px + off, s.S), dr(pd + off, s.S);
      ColMap<T>(dx + off, s.S) = (gamma * rstd) * (dr - mdy - (xr - mean) * rstd * mdyx);
    }
  }
}

// Checks x [N, C, ...] and the per-channel inputs from index `first` on (all [C]).
void check_batch_inputs(const InferCtx& c, size_t first, const std::vector<std::string>& names) {
  c.expect_float(0);
  c.expect_rank(0, 2);
  const Shape& xs = c.inputs[0].shape;
  for (size_t i = first; i < c.inputs.size(); ++i) {
    c.expect_float(i);
    if (c.inputs[i].shape != Shape{xs[1]})
      c.fail(names[i - first] + " has shape " + shape_str(c.inputs[i].shape) + " but x " + shape_str(xs) +
                 " has " + std::to_string(xs[1]) + " channels (axis 1), so it must be [" + std::to_string(xs[1]) +
                 "]",
             "batch_norm's per-channel tensors have one entry per channel of x (layout [N, C, ...])");
  }
}

CostFn norm_cost(double flops_per_element) {
  return [flops_per_element](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&,
                             std::string_view algo) {
    Cost c;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    if (algo == "two_pass") c.bytes_read += cpu::meta_bytes(in[0]);  // x read once more (from cache when it fits)
    for (auto& m : out) c.bytes_written += cpu::meta_bytes(m);
    c.flops = flops_per_element * cpu::meta_numel(in[0]);
    c.multiplications = 3 * cpu::meta_numel(in[0]);
    return c;
  };
}

template <class F>
KernelFn float_kernel(F f) {
  return [f](KernelCtx& k) {
    if (k.in(0).numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) { f(k, z); });
  };
}

OPSCOPE_REGISTER_OPS(register_norm_ops) {
  const std::vector<std::string> kAlgos = {"welford", "two_pass", "naive"};
  {
    OpDef d = OpDef::declare("layer_norm", "norm",
                             "y = (x - μ) / sqrt(σ² + eps) · γ + β, μ and σ² (biased) over the trailing axes of sizes "
                             "normalized_shape (torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps))",
                             {"x", "weight?", "bias?"});
    d.attrs = {normalized_shape_attr(), eps_attr()};
    d.infer = [](const InferCtx& c) {
      check_layer_inputs(c, 1);
      return std::vector<TensorMeta>{c.inputs[0]};
    };
    for (const auto& a : kAlgos)
      d.kernel(Device::cpu, a, float_kernel([algo = algo_of(a)](KernelCtx& k, auto z) {
        layer_norm_forward<decltype(z)>(k, algo);
      }));
    // Saves x and weight. NOTE: core/workspace.cpp indexes inputs[s.index] for every saved
    // ref, so calling without weight while x requires grad needs core to skip absent inputs.
    d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      const size_t n = g.num_inputs();
      std::vector<Val> ins = {g.input(0), g.grad_output(0)};
      if (n > 1) ins.push_back(g.input(1));
      auto outs = g.call_multi("layer_norm_backward", ins,
                               {{"normalized_shape", g.attrs().ints("normalized_shape")}, {"eps", g.attrs().f("eps")}});
      std::vector<Val> r = {g.needs_grad(0) ? outs[0] : Val{}};
      if (n > 1) r.push_back(g.needs_grad(1) ? outs[1] : Val{});
      if (n > 2) r.push_back(g.needs_grad(2) ? outs[2] : Val{});
      return r;
    };
    d.backward_note =
        "x̂ = (x - μ)·rstd, g = dy·γ: dx = rstd·(g - mean(g) - x̂·mean(g·x̂)), dγ = Σ_rows dy·x̂, dβ = Σ_rows dy "
        "(one fused layer_norm_backward op; μ and rstd recomputed from x)";
    d.cost = norm_cost(8);
    const InputSpec x35{{3, 5}}, w5{{5}}, x234{{2, 3, 4}}, w34{{3, 4}}, x27{{2, 7}}, w7{{7}};
    using V = std::vector<int64_t>;
    d.gradcheck = {gc({x35, w5, w5}, {{"normalized_shape", V{5}}}, "weight and bias"),
                   gc({x234, w34, w34}, {{"normalized_shape", V{3, 4}}}, "two normalized axes"),
                   gc({x27, w7}, {{"normalized_shape", V{7}}, {"eps", 0.1}}, "weight only, large eps"),
                   gc({x234}, {{"normalized_shape", V{4}}}, "no weight, no bias"),
                   gc({InputSpec{{2, 3, 40}}, InputSpec{{40}}, InputSpec{{40}}}, {{"normalized_shape", V{40}}},
                      "rows longer than the Welford lanes")};
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("layer_norm_backward", "norm",
                             "dx = rstd·(g - mean(g) - x̂·mean(g·x̂)) with g = dy·γ; dγ = Σ_rows dy·x̂; dβ = Σ_rows dy",
                             {"x", "dy", "weight?"});
    d.attrs = {normalized_shape_attr(), eps_attr()};
    d.num_outputs = 3;
    d.infer = [](const InferCtx& c) {
      check_layer_inputs(c, 2);
      c.expect_float(1);
      if (c.inputs[1].shape != c.inputs[0].shape)
        c.fail("dy has shape " + shape_str(c.inputs[1].shape) + " but x has shape " + shape_str(c.inputs[0].shape) +
               "; they must be equal");
      TensorMeta dx = c.inputs[0];
      for (size_t i = 1; i < c.inputs.size(); ++i) dx.dtype = promote(dx.dtype, c.inputs[i].dtype);
      TensorMeta p = dx;
      p.shape = c.attrs.ints("normalized_shape");
      return std::vector<TensorMeta>{dx, p, p};
    };
    d.kernel(Device::cpu, "default", [](KernelCtx& k) {
      if (k.in(0).numel() == 0) {
        k.out(1).fill(0);
        k.out(2).fill(0);
        return;
      }
      cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { layer_norm_backward_kernel<decltype(z)>(k); });
    });
    d.differentiable = false;
    d.checked_via = "layer_norm";
    d.cost = norm_cost(14);
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("batch_norm", "norm",
                             "y = (x - μ_c) / sqrt(σ²_c + eps) · γ_c + β_c per channel c of x [N, C, ...]; training: batch "
                             "statistics, running = (1 - momentum)·running + momentum·batch (σ² unbiased) in place; "
                             "eval: running statistics",
                             {"x", "running_mean", "running_var", "weight?", "bias?"});
    d.attrs = {make_attr("training", AttrType::boolean, true, "use batch statistics and update the running ones"),
               make_attr("momentum", AttrType::real, 0.1, "weight of the batch statistics in the running update", 0.0, 1.0),
               eps_attr()};
    d.infer = [](const InferCtx& c) {
      check_batch_inputs(c, 1, {"running_mean", "running_var", "weight", "bias"});
      for (size_t i = 1; i <= 2; ++i)
        if (c.inputs[i].dtype != c.inputs[0].dtype)
          c.fail(std::string(i == 1 ? "running_mean" : "running_var") + " is " + dtype_name(c.inputs[i].dtype) +
                     " but x is " + dtype_name(c.inputs[0].dtype),
                 "the running statistics are updated in place, so they must have x's dtype");
      const Shape& xs = c.inputs[0].shape;
      const int64_t per_channel = shape_numel(xs) / std::max<int64_t>(1, xs[1]);
      if (c.attrs.b("training") && per_channel <= 1 && shape_numel(xs) > 0)
        c.fail("training needs more than one value per channel to estimate a variance, but x " + shape_str(xs) +
                   " has " + std::to_string(per_channel),
               "use a batch of 2 or more, or training=False");
      return std::vector<TensorMeta>{c.inputs[0]};
    };
    // Strided inputs are accepted so that the running statistics reach the kernel as the
    // caller's own buffers (a contiguous copy would take the in-place update and lose it).
    d.accepts_strided = true;
    for (const auto& a : kAlgos)
      d.kernel(Device::cpu, a, float_kernel([algo = algo_of(a)](KernelCtx& k, auto z) {
        for (size_t i = 1; i <= 2; ++i)
          if (!k.in(i).is_contiguous())
            throw Error(std::string("batch_norm: ") + (i == 1 ? "running_mean" : "running_var") +
                            " must be a contiguous tensor: it is updated in place",
                        "make the running statistics with zeros(C) and ones(C), not as a slice of another tensor");
        std::vector<Tensor> dense = k.inputs;
        for (size_t i = 0; i < dense.size(); ++i)
          if (i != 1 && i != 2) dense[i] = dense[i].contiguous();
        KernelCtx kd{k.op, dense, k.attrs, k.out_meta, k.outputs, k.ws, k.out_category};
        batch_norm_forward<decltype(z)>(kd, algo);
      }));
    // weight is input 3 (see the note at layer_norm about absent optional inputs).
    d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}, {SavedRef::input, 2}, {SavedRef::input, 3}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      const size_t n = g.num_inputs();
      std::vector<Val> ins = {g.input(0), g.grad_output(0), g.input(1), g.input(2)};
      if (n > 3) ins.push_back(g.input(3));
      auto outs = g.call_multi("batch_norm_backward", ins,
                               {{"training", g.attrs().b("training")}, {"eps", g.attrs().f("eps")}});
      std::vector<Val> r = {g.needs_grad(0) ? outs[0] : Val{}, Val{}, Val{}};
      if (n > 3) r.push_back(g.needs_grad(3) ? outs[1] : Val{});
      if (n > 4) r.push_back(g.needs_grad(4) ? outs[2] : Val{});
      return r;
    };
    d.backward_note =
        "training: dx = γ·rstd·(dy - mean(dy) - x̂·mean(dy·x̂)) per channel; eval: dx = γ·rstd·dy; dγ = Σ dy·x̂, "
        "dβ = Σ dy; running_mean/var get none (one fused batch_norm_backward op)";
    d.cost = norm_cost(8);
    const InputSpec x{{4, 3, 2, 2}}, c3{{3}}, rv{{3}, Domain::positive, 0, false}, rm{{3}, Domain::any, 0, false};
    d.gradcheck = {gc({x, rm, rv, c3, c3}, {}, "training, weight and bias"),
                   gc({x, rm, rv, c3, c3}, {{"training", false}}, "eval: running statistics"),
                   gc({InputSpec{{6, 3}}, rm, rv, c3}, {}, "2-d input, weight only"),
                   gc({InputSpec{{2, 3, 37}}, rm, rv, c3, c3}, {{"momentum", 0.5}}, "chunks longer than the Welford lanes")};
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("batch_norm_backward", "norm",
                             "training: dx = γ·rstd·(dy - mean(dy) - x̂·mean(dy·x̂)); eval: dx = γ·rstd·dy; dγ = Σ dy·x̂; dβ = Σ dy "
                             "(per channel)",
                             {"x", "dy", "running_mean", "running_var", "weight?"});
    d.attrs = {make_attr("training", AttrType::boolean, true, "the forward used batch statistics"), eps_attr()};
    d.num_outputs = 3;
    d.infer = [](const InferCtx& c) {
      c.expect_float(1);
      if (c.inputs[1].shape != c.inputs[0].shape)
        c.fail("dy has shape " + shape_str(c.inputs[1].shape) + " but x has shape " + shape_str(c.inputs[0].shape) +
               "; they must be equal");
      check_batch_inputs(c, 2, {"running_mean", "running_var", "weight"});
      TensorMeta dx = c.inputs[0];
      for (size_t i = 1; i < c.inputs.size(); ++i) dx.dtype = promote(dx.dtype, c.inputs[i].dtype);
      TensorMeta p = dx;
      p.shape = {dx.shape[1]};
      return std::vector<TensorMeta>{dx, p, p};
    };
    d.kernel(Device::cpu, "default", [](KernelCtx& k) {
      if (k.in(0).numel() == 0) {
        k.out(1).fill(0);
        k.out(2).fill(0);
        return;
      }
      cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { batch_norm_backward_kernel<decltype(z)>(k); });
    });
    d.differentiable = false;
    d.checked_via = "batch_norm";
    d.cost = norm_cost(14);
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
