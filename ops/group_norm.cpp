// group_norm and instance_norm (U-Nets', diffusion models' and style transfer's normalizations),
// with the fused backward op group_norm_backward.
//
// group_norm(x, num_groups, weight, bias, eps): x [N, C, S...] has C channels in G groups of
// Cg = C/G; each (image n, group g) is normalized over its Cg·S elements, a contiguous block of
// NCHW memory: x̂ = (x − μ_ng)·rstd_ng, rstd = 1/sqrt(σ² + eps) (σ² biased), then
// y = γ_c·x̂ + β_c per channel, as torch.nn.functional.group_norm. instance_norm is the case
// G = C (each channel of each image alone), and runs group_norm's kernels.
//
// Statistics are two-pass (mean first, then Σ (x − μ)², the accurate way lesson 9 shows). Groups
// run on the thread pool; dγ and dβ are summed per channel over the images in order, so the bits
// do not depend on the thread count.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/cpu_util.h"
#include "ops/geometry.h"

namespace opscope {
namespace {

using cpu::gc;
using cpu::kRowSumFloat32Rtol;
using cpu::with_float32_rtol;

// Mean and rstd of each group: stats[2·b] = μ, stats[2·b + 1] = rstd, b = n·G + g.
template <class T> void group_stats(const T* x, const GroupSplit& s, T eps, T* stats) {
  parallel_for(s.N * s.G, grain_for(3.0 * static_cast<double>(s.block())), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* p = x + b * s.block();
      T sum = 0;
      for (int64_t i = 0; i < s.block(); ++i) sum += p[i];
      const T mean = sum / static_cast<T>(s.block());
      T m2 = 0;
      for (int64_t i = 0; i < s.block(); ++i) m2 += (p[i] - mean) * (p[i] - mean);
      stats[2 * b] = mean;
      stats[2 * b + 1] = T(1) / std::sqrt(m2 / static_cast<T>(s.block()) + eps);
    }
  });
}

template <class T> void group_norm_forward(KernelCtx& k, const GroupSplit& s) {
  const DType dt = k.out().dtype();
  const Tensor x = cpu::as_dtype(k.in(0), dt);
  const Tensor w = k.inputs.size() > 1 ? cpu::as_dtype(k.in(1), dt) : Tensor();
  const Tensor b = k.inputs.size() > 2 ? cpu::as_dtype(k.in(2), dt) : Tensor();
  Tensor stats_t = k.workspace({s.N * s.G, 2}, dt);
  T* stats = stats_t.data<T>();
  const T* px = x.data<T>();
  group_stats(px, s, static_cast<T>(k.attrs.f("eps")), stats);
  const T *pw = w.defined() ? w.data<T>() : nullptr, *pb = b.defined() ? b.data<T>() : nullptr;
  T* py = k.out().data<T>();
  parallel_for(s.N * s.C, grain_for(2.0 * static_cast<double>(s.S)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {  // plane p = n·C + c
      const int64_t c = p % s.C, grp = (p / s.C) * s.G + c / s.Cg;
      const T mean = stats[2 * grp], rstd = stats[2 * grp + 1];
      const T scale = pw ? pw[c] * rstd : rstd, shift = (pb ? pb[c] : T(0)) - mean * scale;
      for (int64_t i = p * s.S; i < (p + 1) * s.S; ++i) py[i] = px[i] * scale + shift;
    }
  });
}

// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) over each group, g = dy·γ_c; dγ_c = Σ_{n, s} dy·x̂;
// dβ_c = Σ_{n, s} dy.
template <class T> void group_norm_backward(KernelCtx& k, const GroupSplit& s) {
  const DType dt = k.out(0).dtype();
  const Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
  const Tensor w = k.inputs.size() > 2 ? cpu::as_dtype(k.in(2), dt) : Tensor();
  Tensor stats_t = k.workspace({s.N * s.G, 2}, dt);
  T* stats = stats_t.data<T>();
  const T *px = x.data<T>(), *pd = dy.data<T>(), *pw = w.defined() ? w.data<T>() : nullptr;
  group_stats(px, s, static_cast<T>(k.attrs.f("eps")), stats);
  T* dx = k.out(0).data<T>();
  parallel_for(s.N * s.G, grain_for(6.0 * static_cast<double>(s.block())), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T mean = stats[2 * b], rstd = stats[2 * b + 1];
      const int64_t c0 = (b % s.G) * s.Cg, base = b * s.block();
      T sum_g = 0, sum_gx = 0;
      for (int64_t c = 0; c < s.Cg; ++c) {
        const T gamma = pw ? pw[c0 + c] : T(1);
        for (int64_t i = base + c * s.S; i < base + (c + 1) * s.S; ++i) {
          const T g = pd[i] * gamma;
          sum_g += g;
          sum_gx += g * (px[i] - mean) * rstd;
        }
      }
      const T inv = T(1) / static_cast<T>(s.block()), mean_g = sum_g * inv, mean_gx = sum_gx * inv;
      for (int64_t c = 0; c < s.Cg; ++c) {
        const T gamma = pw ? pw[c0 + c] : T(1);
        for (int64_t i = base + c * s.S; i < base + (c + 1) * s.S; ++i)
          dx[i] = rstd * (pd[i] * gamma - mean_g - (px[i] - mean) * rstd * mean_gx);
      }
    }
  });
  T *dw = k.out(1).data<T>(), *db = k.out(2).data<T>();
  parallel_for(s.C, grain_for(3.0 * static_cast<double>(s.N * s.S)), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      T sw = 0, sb = 0;
      for (int64_t n = 0; n < s.N; ++n) {
        const int64_t grp = n * s.G + c / s.Cg;
        const T mean = stats[2 * grp], rstd = stats[2 * grp + 1];
        for (int64_t i = (n * s.C + c) * s.S; i < (n * s.C + c + 1) * s.S; ++i) {
          sw += pd[i] * (px[i] - mean) * rstd;
          sb += pd[i];
        }
      }
      dw[c] = sw;
      db[c] = sb;
    }
  });
}

// The number of groups a call uses: num_groups, or C for instance_norm.
int64_t groups_of(const OpDef& op, const Attrs& a, const Shape& x) {
  return op.find_attr("num_groups") ? a.i("num_groups") : x.size() > 1 ? x[1] : 1;
}

// x [N, C, ...] with C a multiple of the groups; weight and bias (from input `first` on) [C].
void check_group_inputs(const InferCtx& c, size_t first, size_t last) {
  c.expect_float(0);
  const Shape& xs = c.inputs[0].shape;
  if (xs.size() < 2)
    c.fail("x must be [N, C, ...] (batch, channels, then any spatial axes), got " + shape_str(xs),
           "a single image needs its batch axis: x.reshape(1, C, H, W)");
  const int64_t G = groups_of(c.op, c.attrs, xs);
  if (G < 1 || xs[1] % G != 0)
    c.fail("x has " + std::to_string(xs[1]) + " channels, which num_groups=" + std::to_string(G) +
               " does not divide (x " + shape_str(xs) + ")",
           "each group holds C/num_groups whole channels: choose num_groups among the divisors of " +
               std::to_string(xs[1]));
  static const char* names[] = {"weight", "bias"};
  for (size_t i = first; i < c.inputs.size() && i <= last; ++i) {
    c.expect_float(i);
    if (c.inputs[i].shape != Shape{xs[1]})
      c.fail(std::string(names[i - first]) + " has shape " + shape_str(c.inputs[i].shape) + " but x " + shape_str(xs) +
                 " has " + std::to_string(xs[1]) + " channels",
             "weight and bias hold one value per channel: [" + std::to_string(xs[1]) + "]");
  }
}

GroupSplit split_of(const KernelCtx& k, const Shape& x) { return group_split(x, groups_of(k.op, k.attrs, x)); }

KernelFn forward_kernel() {
  return [](KernelCtx& k) {
    if (k.out().numel() == 0) return;
    const GroupSplit s = split_of(k, k.in(0).shape());
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) { group_norm_forward<decltype(z)>(k, s); });
  };
}

Cost group_norm_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&,
                     std::string_view) {
  Cost c;
  for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
  c.bytes_read += cpu::meta_bytes(in[0]);  // the second pass over x for σ²
  for (auto& m : out) c.bytes_written += cpu::meta_bytes(m);
  c.flops = 7 * cpu::meta_numel(in[0]);
  c.multiplications = 3 * cpu::meta_numel(in[0]);
  return c;
}

// The backward of both ops: one group_norm_backward node (x, dy, weight?) -> dx, dγ, dβ.
std::vector<Val> group_norm_grads(GradCtx& g, int64_t groups) {
  const size_t n = g.num_inputs();
  std::vector<Val> ins = {g.input(0), g.grad_output(0)};
  if (n > 1) ins.push_back(g.input(1));
  auto outs = g.call_multi("group_norm_backward", ins, {{"num_groups", groups}, {"eps", g.attrs().f("eps")}});
  std::vector<Val> r = {g.needs_grad(0) ? outs[0] : Val{}};
  if (n > 1) r.push_back(g.needs_grad(1) ? outs[1] : Val{});
  if (n > 2) r.push_back(g.needs_grad(2) ? outs[2] : Val{});
  return r;
}

AttrSpec eps_attr() {
  return make_attr("eps", AttrType::real, 1e-5, "added to the variance before the square root", 0.0);
}
AttrSpec groups_attr() {
  return make_attr("num_groups", AttrType::integer, int64_t{1},
                   "G: the channels split into G groups of C/G, each normalized alone", 1.0, {}, {}, true);
}

const char* const kBackwardNote =
    "x̂ = (x − μ)·rstd per group, g = dy·γ: dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) over the group, dγ_c = Σ dy·x̂, "
    "dβ_c = Σ dy over images and positions (one fused group_norm_backward op; μ and rstd recomputed from x)";

OpDef group_norm_def() {
  OpDef d = OpDef::declare("group_norm", "norm",
                           "y = (x − μ) / sqrt(σ² + eps)·γ_c + β_c, μ and σ² (biased) over each group of C/num_groups "
                           "channels of each image (torch.nn.functional.group_norm(x, num_groups, weight, bias, eps))",
                           {"x", "weight?", "bias?"});
  d.attrs = {groups_attr(), eps_attr()};
  d.infer = [](const InferCtx& c) {
    check_group_inputs(c, 1, 2);
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "two_pass", forward_kernel());
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return group_norm_grads(g, g.attrs().i("num_groups")); };
  d.backward_note = kBackwardNote;
  d.cost = group_norm_cost;
  const InputSpec x{{2, 6, 3, 2}}, c6{{6}};
  d.gradcheck =
      with_float32_rtol({gc({x, c6, c6}, {{"num_groups", int64_t{3}}}, "3 groups of 2 channels, weight and bias"),
                         gc({x}, {{"num_groups", int64_t{2}}}, "no weight, no bias"),
                         gc({InputSpec{{3, 4, 5}}, InputSpec{{4}}}, {{"num_groups", int64_t{1}}, {"eps", 0.1}},
                            "1 group (layer norm over C, L), weight only"),
                         gc({InputSpec{{2, 4}}, InputSpec{{4}}, InputSpec{{4}}}, {{"num_groups", int64_t{2}}},
                            "no spatial axes")},
                        kRowSumFloat32Rtol);
  d.lab = {"N C H W G",
           {8, 64, 32, 32, 8},
           4,
           [](const std::vector<int64_t>& s) {
             return cpu::lab_case({{s[0], s[1], s[2], s[3]}, {s[1]}, {s[1]}}, {{"num_groups", cpu::size_or(s, 4, 8)}});
           },
           {}};
  return d;
}

OpDef instance_norm_def() {
  OpDef d = OpDef::declare("instance_norm", "norm",
                           "y = (x − μ) / sqrt(σ² + eps)·γ_c + β_c, μ and σ² over each channel of each image alone: "
                           "group_norm with one group per channel (InstanceNorm2d without running statistics)",
                           {"x", "weight?", "bias?"});
  d.attrs = {eps_attr()};
  d.infer = [](const InferCtx& c) {
    check_group_inputs(c, 1, 2);
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "two_pass", forward_kernel());
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return group_norm_grads(g, g.input_meta(0).shape[1]); };
  d.backward_note = std::string("group_norm_backward with num_groups = C: ") + kBackwardNote;
  d.cost = group_norm_cost;
  d.gradcheck = with_float32_rtol({gc({InputSpec{{2, 3, 4, 3}}, InputSpec{{3}}, InputSpec{{3}}}, {}, "weight and bias"),
                                   gc({InputSpec{{2, 2, 5}}}, {{"eps", 0.01}}, "1-D, no weight")},
                                  kRowSumFloat32Rtol);
  return d;
}

OpDef group_norm_backward_def() {
  OpDef d =
      OpDef::declare("group_norm_backward", "norm",
                     "dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) per group with g = dy·γ_c; dγ_c = Σ dy·x̂; dβ_c = Σ dy",
                     {"x", "dy", "weight?"});
  d.attrs = {groups_attr(), eps_attr()};
  d.num_outputs = 3;
  d.infer = [](const InferCtx& c) {
    check_group_inputs(c, 2, 2);
    return cpu::norm_backward_outputs(c, {c.inputs[0].shape[1]});
  };
  d.kernel(Device::cpu, "two_pass", [](KernelCtx& k) {
    cpu::norm_backward_or_zero(k, [&] {
      const GroupSplit s = split_of(k, k.in(0).shape());
      cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { group_norm_backward<decltype(z)>(k, s); });
    });
  });
  d.differentiable = false;
  d.checked_via = "group_norm";
  // Cases for the CUDA tests (gradchecked through group_norm and instance_norm).
  d.gradcheck =
      with_float32_rtol({gc({{{2, 6, 3, 2}}, {{2, 6, 3, 2}}, {{6}}}, {{"num_groups", int64_t{3}}}, "with weight"),
                         gc({{{2, 4, 5}}, {{2, 4, 5}}}, {{"num_groups", int64_t{4}}}, "instance norm, no weight")},
                        kRowSumFloat32Rtol);
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
              std::string_view algo) {
    Cost c = group_norm_cost(in, out, a, algo);
    c.flops *= 2;
    return c;
  };
  return d;
}

OPSCOPE_REGISTER_OPS(register_group_norm_ops) {
  registry.add(group_norm_def());
  registry.add(instance_norm_def());
  registry.add(group_norm_backward_def());
}

}  // namespace
}  // namespace opscope
