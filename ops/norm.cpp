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
// The kernels are in ops/cpu/norm.cpp (built per instruction set); here rows (layer_norm) and
// channels (batch_norm) are spread over the thread pool. Each row or channel is computed the
// same way on any thread, and the parameter gradients are summed over fixed ranges of rows in
// order: the same bits for any thread count.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu_util.h"
#include "ops/geometry.h"

namespace opscope {
namespace {

using cpu::gc;
using cpu::kRowSumFloat32Rtol;
using cpu::with_float32_rtol;

using Algo = cpu::NormAlgo;

Algo algo_of(std::string_view name) {
  if (name == "two_pass") return Algo::two_pass;
  if (name == "naive") return Algo::naive;
  return Algo::welford;
}

template <class T> const T* data_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

AttrSpec eps_attr() {
  return make_attr("eps", AttrType::real, 1e-5, "added to the variance before the square root", 0.0);
}

// ---------------------------------------------------------------------------------------------
// layer_norm

// RowSplit and ChannelSplit: ops/geometry.h, shared with the CUDA kernels.

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
  const std::string hint =
      "normalized_shape lists the trailing sizes of x normalized together, as in PyTorch: "
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

template <class T> void layer_norm_forward(KernelCtx& k, Algo algo) {
  const Tensor& x = k.in(0);
  const RowSplit s = layer_split(x.shape(), normalized_ndim(k.attrs));
  const T eps = static_cast<T>(k.attrs.f("eps"));
  Tensor w = k.inputs.size() > 1 ? cpu::as_dtype(k.in(1), x.dtype()) : Tensor();
  Tensor b = k.inputs.size() > 2 ? cpu::as_dtype(k.in(2), x.dtype()) : Tensor();
  const T *px = x.data<T>(), *pw = data_or_null<T>(w), *pb = data_or_null<T>(b);
  T* py = k.out().data<T>();
  parallel_for(s.M, grain_for(8.0 * static_cast<double>(s.N)),
               [&](int64_t m0, int64_t m1) { cpu::kern<T>().layer_norm_rows(px, py, m0, m1, s.N, eps, pw, pb, algo); });
}

// dx = rstd·(g - mean(g) - x̂·mean(g·x̂)) with g = dy·γ; dγ = Σ_rows dy·x̂; dβ = Σ_rows dy. Each
// range of rows sums its own dγ, dβ (workspace); the ranges are then added in order.
template <class T> void layer_norm_backward_kernel(KernelCtx& k) {
  const DType dt = k.out(0).dtype();
  Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
  Tensor w = k.inputs.size() > 2 ? cpu::as_dtype(k.in(2), dt) : Tensor();
  const RowSplit s = layer_split(x.shape(), normalized_ndim(k.attrs));
  const T eps = static_cast<T>(k.attrs.f("eps"));
  // At most 64 ranges: the partial sums stay small whatever the rows.
  const int64_t grain = std::max(grain_for(14.0 * static_cast<double>(s.N)), (s.M + 63) / 64);
  const int64_t ranges = (s.M + grain - 1) / grain;
  Tensor partial = k.workspace({ranges, 3, s.N}, dt);  // per range: dγ, dβ, and g = dy·γ of one row
  T* pp = partial.data<T>();
  const T *px = x.data<T>(), *pd = dy.data<T>(), *pw = data_or_null<T>(w);
  T* pdx = k.out(0).data<T>();
  parallel_for(s.M, grain, [&](int64_t m0, int64_t m1) {
    T* mine = pp + (m0 / grain) * 3 * s.N;
    cpu::kern<T>().layer_norm_backward_rows(px, pd, pw, pdx, mine, mine + s.N, mine + 2 * s.N, m0, m1, s.N, eps);
  });
  T* dw = k.out(1).data<T>();
  T* db = k.out(2).data<T>();
  std::fill(dw, dw + s.N, T(0));
  std::fill(db, db + s.N, T(0));
  for (int64_t r = 0; r < ranges; ++r)
    for (int64_t i = 0; i < s.N; ++i) {
      dw[i] += pp[r * 3 * s.N + i];
      db[i] += pp[r * 3 * s.N + s.N + i];
    }
}

// ---------------------------------------------------------------------------------------------
// batch_norm: x [N, C, S...] with per-channel statistics over N and S.

template <class T> void batch_norm_forward(KernelCtx& k, Algo algo) {
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
  const T *px = x.data<T>(), *pw = data_or_null<T>(w), *pb = data_or_null<T>(b);
  T* py = k.out().data<T>();
  parallel_for(s.C, grain_for(6.0 * static_cast<double>(s.N * s.S)), [&](int64_t c0, int64_t c1) {
    cpu::kern<T>().batch_norm_channels(px, py, c0, c1, s.N, s.C, s.S, eps, training, momentum, rm, rv, pw, pb, algo);
  });
}

// Training: dx = γ·rstd·(dy - mean(dy) - x̂·mean(dy·x̂)) with batch statistics (two-pass);
// eval: dx = γ·rstd·dy with the running statistics. Both: dγ = Σ dy·x̂, dβ = Σ dy per channel.
template <class T> void batch_norm_backward_kernel(KernelCtx& k) {
  const DType dt = k.out(0).dtype();
  Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
  Tensor rm = cpu::as_dtype(k.in(2), dt), rv = cpu::as_dtype(k.in(3), dt);
  Tensor w = k.inputs.size() > 4 ? cpu::as_dtype(k.in(4), dt) : Tensor();
  const ChannelSplit s = channel_split(x.shape());
  const T eps = static_cast<T>(k.attrs.f("eps"));
  const bool training = k.attrs.b("training");
  const T *px = x.data<T>(), *pd = dy.data<T>(), *prm = rm.data<T>(), *prv = rv.data<T>(), *pw = data_or_null<T>(w);
  T *dx = k.out(0).data<T>(), *dw = k.out(1).data<T>(), *db = k.out(2).data<T>();
  parallel_for(s.C, grain_for(10.0 * static_cast<double>(s.N * s.S)), [&](int64_t c0, int64_t c1) {
    cpu::kern<T>().batch_norm_backward_channels(px, pd, prm, prv, pw, dx, dw, db, c0, c1, s.N, s.C, s.S, eps, training);
  });
}

// Checks x [N, C, ...] and the per-channel inputs from index `first` on (all [C]).
void check_batch_inputs(const InferCtx& c, size_t first, const std::vector<std::string>& names) {
  c.expect_float(0);
  c.expect_rank(0, 2);
  const Shape& xs = c.inputs[0].shape;
  for (size_t i = first; i < c.inputs.size(); ++i) {
    c.expect_float(i);
    if (c.inputs[i].shape != Shape{xs[1]})
      c.fail(names[i - first] + " has shape " + shape_str(c.inputs[i].shape) + " but x " + shape_str(xs) + " has " +
                 std::to_string(xs[1]) + " channels (axis 1), so it must be [" + std::to_string(xs[1]) + "]",
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

template <class F> KernelFn float_kernel(F f) {
  return [f](KernelCtx& k) {
    if (k.in(0).numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) { f(k, z); });
  };
}

const std::vector<std::string> kLayerNormAlgos = {"welford", "two_pass", "naive"};

OpDef layer_norm_def() {
  OpDef d = OpDef::declare("layer_norm", "norm",
                           "y = (x - μ) / sqrt(σ² + eps) · γ + β, μ and σ² (biased) over the trailing axes of sizes "
                           "normalized_shape (torch.nn.functional.layer_norm(x, normalized_shape, weight, bias, eps))",
                           {"x", "weight?", "bias?"});
  d.attrs = {normalized_shape_attr(), eps_attr()};
  d.infer = [](const InferCtx& c) {
    check_layer_inputs(c, 1);
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.default_algo = "welford";
  for (const auto& a : kLayerNormAlgos)
    d.kernel(Device::cpu, a,
             float_kernel([algo = algo_of(a)](KernelCtx& k, auto z) { layer_norm_forward<decltype(z)>(k, algo); }));
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
  d.gradcheck = with_float32_rtol({gc({x35, w5, w5}, {{"normalized_shape", V{5}}}, "weight and bias"),
                                   gc({x234, w34, w34}, {{"normalized_shape", V{3, 4}}}, "two normalized axes"),
                                   gc({x27, w7}, {{"normalized_shape", V{7}}, {"eps", 0.1}}, "weight only, large eps"),
                                   gc({x234}, {{"normalized_shape", V{4}}}, "no weight, no bias"),
                                   gc({InputSpec{{2, 3, 40}}, InputSpec{{40}}, InputSpec{{40}}},
                                      {{"normalized_shape", V{40}}}, "rows longer than the Welford lanes")},
                                  kRowSumFloat32Rtol);
  // The reference is the two-pass algorithm: "naive" is the cancelling E[x²] − E[x]² the lab shows failing.
  d.lab = {"ROWS COLS",
           {4096, 4096},
           1,
           [](const std::vector<int64_t>& s) {
             const int64_t cols = s.size() > 1 ? s[1] : s[0];
             return cpu::lab_case({{s[0], cols}}, {{"normalized_shape", V{cols}}});
           },
           "two_pass"};
  return d;
}

OpDef layer_norm_backward_def() {
  OpDef d = OpDef::declare("layer_norm_backward", "norm",
                           "dx = rstd·(g - mean(g) - x̂·mean(g·x̂)) with g = dy·γ; dγ = Σ_rows dy·x̂; dβ = Σ_rows dy",
                           {"x", "dy", "weight?"});
  d.attrs = {normalized_shape_attr(), eps_attr()};
  d.num_outputs = 3;
  d.infer = [](const InferCtx& c) {
    check_layer_inputs(c, 2);
    return cpu::norm_backward_outputs(c, c.attrs.ints("normalized_shape"));
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    cpu::norm_backward_or_zero(k, [&] {
      cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { layer_norm_backward_kernel<decltype(z)>(k); });
    });
  });
  d.differentiable = false;
  d.checked_via = "layer_norm";
  // Cases for the CUDA tests (gradchecked through layer_norm).
  d.gradcheck = with_float32_rtol(
      {gc({{{3, 5}}, {{3, 5}}, {{5}}}, {{"normalized_shape", std::vector<int64_t>{5}}}, "with weight"),
       gc({{{2, 3, 4}}, {{2, 3, 4}}}, {{"normalized_shape", std::vector<int64_t>{3, 4}}}, "two axes, no weight")},
      kRowSumFloat32Rtol);
  d.cost = norm_cost(14);
  return d;
}

OpDef batch_norm_def() {
  OpDef d =
      OpDef::declare("batch_norm", "norm",
                     "y = (x - μ_c) / sqrt(σ²_c + eps) · γ_c + β_c per channel c of x [N, C, ...]; training: batch "
                     "statistics, running = (1 - momentum)·running + momentum·batch (σ² unbiased) in place; "
                     "eval: running statistics",
                     {"x", "running_mean", "running_var", "weight?", "bias?"});
  d.attrs = {make_attr("training", AttrType::boolean, true, "use batch statistics and update the running ones"),
             make_attr("momentum", AttrType::real, 0.1, "weight of the batch statistics in the running update", 0.0,
                       1.0),
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
      c.fail("training needs more than one value per channel to estimate a variance, but x " + shape_str(xs) + " has " +
                 std::to_string(per_channel),
             "use a batch of 2 or more, or training=False");
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.stateful = true;  // the running statistics change in place: never merged, folded or recomputed
  // Strided inputs are accepted so that the running statistics reach the kernel as the
  // caller's own buffers (a contiguous copy would take the in-place update and lose it).
  d.accepts_strided = true;
  d.default_algo = "welford";
  for (const auto& a : kLayerNormAlgos)
    d.kernel(Device::cpu, a, float_kernel([algo = algo_of(a)](KernelCtx& k, auto z) {
               for (size_t i = 1; i <= 2; ++i)
                 if (!k.in(i).is_contiguous())
                   throw Error(
                       std::string("batch_norm: ") + (i == 1 ? "running_mean" : "running_var") +
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
    auto outs =
        g.call_multi("batch_norm_backward", ins, {{"training", g.attrs().b("training")}, {"eps", g.attrs().f("eps")}});
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
  d.gradcheck = with_float32_rtol({gc({x, rm, rv, c3, c3}, {}, "training, weight and bias"),
                                   gc({x, rm, rv, c3, c3}, {{"training", false}}, "eval: running statistics"),
                                   gc({InputSpec{{6, 3}}, rm, rv, c3}, {}, "2-d input, weight only"),
                                   gc({InputSpec{{2, 3, 37}}, rm, rv, c3, c3}, {{"momentum", 0.5}},
                                      "chunks longer than the Welford lanes")},
                                  kRowSumFloat32Rtol);
  return d;
}

OpDef batch_norm_backward_def() {
  OpDef d = OpDef::declare(
      "batch_norm_backward", "norm",
      "training: dx = γ·rstd·(dy - mean(dy) - x̂·mean(dy·x̂)); eval: dx = γ·rstd·dy; dγ = Σ dy·x̂; dβ = Σ dy "
      "(per channel)",
      {"x", "dy", "running_mean", "running_var", "weight?"});
  d.attrs = {make_attr("training", AttrType::boolean, true, "the forward used batch statistics"), eps_attr()};
  d.num_outputs = 3;
  d.infer = [](const InferCtx& c) {
    check_batch_inputs(c, 2, {"running_mean", "running_var", "weight"});
    return cpu::norm_backward_outputs(c, {c.inputs[0].shape[1]});
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    cpu::norm_backward_or_zero(k, [&] {
      cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { batch_norm_backward_kernel<decltype(z)>(k); });
    });
  });
  d.differentiable = false;
  d.checked_via = "batch_norm";
  // Cases for the CUDA tests (gradchecked through batch_norm).
  d.gradcheck =
      with_float32_rtol({gc({{{4, 3, 2, 2}}, {{4, 3, 2, 2}}, {{3}}, {{3}, Domain::positive}, {{3}}}, {}, "training"),
                         gc({{{4, 3, 2, 2}}, {{4, 3, 2, 2}}, {{3}}, {{3}, Domain::positive}}, {{"training", false}},
                            "eval, no weight")},
                        kRowSumFloat32Rtol);
  d.cost = norm_cost(14);
  return d;
}

OPSCOPE_REGISTER_OPS(register_norm_ops) {
  registry.add(layer_norm_def());
  registry.add(layer_norm_backward_def());
  registry.add(batch_norm_def());
  registry.add(batch_norm_backward_def());
}

}  // namespace
}  // namespace opscope
