// Pooling over the spatial axes of x [N, C, L], [N, C, H, W] or [N, C, D, H, W]: max_poolNd,
// avg_poolNd and adaptive_avg_poolNd for N = 1, 2, 3, each with a dedicated backward op
// (max_poolNd_backward recomputes the argmax from x instead of saving an index tensor; the
// average pools spread dy evenly). One family, declared once per rank.
//
// Output size of the fixed-window pools: OH = (H + 2·PH - KH) / SH + 1 (floor; with ceil_mode the
// ceiling, a last partial window kept while it starts in the input or its left padding), likewise
// D and W; kernel_size, stride and padding are an int or one value per spatial axis, and
// ceil_mode and (for the average) count_include_pad mean what they mean in PyTorch. Each N·C
// volume is pooled independently.
//
// Two algorithms each: "vectorized" (the default for 1-D and 2-D: ops/cpu/pool.cpp, built per
// instruction set, SIMD over a row of windows for the common 2×2 stride-2 window, planes spread
// over threads; a 1-D pool is a 2-D one of height 1) and "direct" (the loop over each window,
// any rank, the reference the other is checked against; the vectorized kernels take the plain
// windows only: ceil_mode's partial windows and averages that skip the padding run it too).
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

// `average`: avg_pool's attributes (count_include_pad too).
std::vector<AttrSpec> window_attrs(int axes, bool average) {
  std::vector<AttrSpec> a = {
      make_axes_attr("kernel_size", 2, "window size: K along every axis, or one per spatial axis", axes, 1.0),
      make_axes_attr("stride", 0, "step between windows: n or one per spatial axis; 0 means = kernel_size", axes, 0.0),
      make_axes_attr("padding", 0, "implicit border on each side: n or one per spatial axis", axes, 0.0),
      make_attr(
          "ceil_mode", AttrType::boolean, false,
          "True: round the number of windows up (a last partial window, if it starts inside x or its left padding)")};
  if (average)
    a.push_back(
        make_attr("count_include_pad", AttrType::boolean, true,
                  "True: divide by the window's size in the padded input; False: by the elements of x it covers"));
  return a;
}

// The spatial axes of a pool call (one per entry of kernel_size) and its op names.
size_t pool_axes(const Attrs& a) { return a.ints("kernel_size").size(); }
std::string ranked(const std::string& stem, size_t axes) { return stem + std::to_string(axes) + "d"; }

// [N, C, OD, OH, OW] with only the spatial axes of the call's rank.
Shape pooled_shape(const PoolWindow& w, size_t axes) {
  const Shape full = {w.OD, w.OH, w.OW};
  Shape y = {w.N, w.C};
  y.insert(y.end(), full.end() - static_cast<long>(axes), full.end());
  return y;
}

// The window (ops/geometry.h, shared with the CUDA kernels); `average`: an avg_pool's.
using Window = PoolWindow;
Window window_of(const Shape& x, const Attrs& a, bool average) { return pool_window(x, a, average); }

// What the average of flat output position o of a volume divides by.
int64_t divisor_at(const Window& w, int64_t o) {
  return window_divisor(w, o / (w.OH * w.OW), (o / w.OW) % w.OH, o % w.OW);
}

cpu::PoolGeom geom_of(const Window& w) { return {w.KH, w.KW, w.SH, w.SW, w.PH, w.PW, w.H, w.W, w.OH, w.OW}; }

// Runs `planes(p0, p1)` over the N·C planes on the thread pool (planes are independent).
template <class F>
void over_planes(const Window& w, double ops_per_plane, F planes) {  // (the vectorized kernels' planes are 2-D)
  parallel_for(w.N * w.C, grain_for(ops_per_plane), planes);
}

// The vectorized kernels: forward (x -> y) and backward (x, dy -> dx; avg needs no x). Windows
// that are not plain (ceil_mode, count_include_pad=False with padding) run `direct`.
KernelFn vectorized_pool(bool max, KernelFn direct) {
  return [max, direct](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs, !max);
    if (!w.plain()) return direct(k);
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const auto planes = max ? cpu::kern<T>().max_pool_planes : cpu::kern<T>().avg_pool_planes;
      const T* x = k.in(0).data<T>();
      T* y = k.out().data<T>();
      over_planes(w, static_cast<double>(w.H * w.W), [&](int64_t p0, int64_t p1) { planes(x, y, p0, p1, geom_of(w)); });
    });
  };
}

KernelFn vectorized_max_pool_backward(KernelFn direct) {
  return [direct](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs, false);
    if (!w.plain()) return direct(k);
    const DType dt = k.out().dtype();
    Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
    if (k.out().numel() == 0) return;
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      const T *px = x.data<T>(), *pd = dy.data<T>();
      T* dx = k.out().data<T>();
      over_planes(w, 2.0 * static_cast<double>(w.H * w.W), [&](int64_t p0, int64_t p1) {
        cpu::kern<T>().max_pool_backward_planes(px, pd, dx, p0, p1, geom_of(w));
      });
    });
  };
}

KernelFn vectorized_avg_pool_backward(KernelFn direct) {
  return [direct](KernelCtx& k) {
    const Window w = window_of(k.attrs.ints("shape"), k.attrs, true);
    if (!w.plain()) return direct(k);
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* dy = k.in(0).data<T>();
      T* dx = k.out().data<T>();
      over_planes(w, static_cast<double>(w.H * w.W),
                  [&](int64_t p0, int64_t p1) { cpu::kern<T>().avg_pool_backward_planes(dy, dx, p0, p1, geom_of(w)); });
    });
  };
}

// x's rank must be the call's: 2 + its spatial axes; the hint names the op of x's rank.
void check_rank(const InferCtx& c, const Shape& x, const std::string& stem, size_t axes) {
  if (x.size() == axes + 2) return;
  c.fail("expected x of rank " + std::to_string(axes + 2) + " " + spatial_layout(axes) + ", got " + shape_str(x),
         (x.size() >= 3 && x.size() <= 5
              ? "for a " + spatial_layout(x.size() - 2) + " input use " + ranked(stem, x.size() - 2)
              : ranked(stem, axes) + " pools " + spatial_layout(axes)) +
             (x.size() + 1 == axes + 2 ? "; for one unbatched example add a batch axis with reshape" : ""));
}

// A per-axis attribute as a student wrote it: n when every axis has n, else (a, b[, c]).
std::string axes_str(const std::vector<int64_t>& v) {
  if (std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == v[0]; })) return std::to_string(v[0]);
  std::string r = "(";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + ")";
}

// A window's extent: "8×1".
std::string window_str(const std::vector<int64_t>& k) {
  std::string r;
  for (size_t i = 0; i < k.size(); ++i) r += (i ? "×" : "") + std::to_string(k[i]);
  return r;
}

// Shape checks shared by the pools and their backward ops (x is the forward input's shape).
Window check_window(const InferCtx& c, const Shape& x, const std::string& stem) {
  check_rank(c, x, stem, pool_axes(c.attrs));
  const Window w = window_of(x, c.attrs, stem == "avg_pool");
  const auto &k = c.attrs.ints("kernel_size"), &pad = c.attrs.ints("padding");
  const bool empty = std::any_of(x.begin() + 2, x.end(), [](int64_t v) { return v == 0; });
  if (empty && x[0] * x[1] > 0)
    c.fail("x " + shape_str(x) + " has an empty plane: there is nothing to pool",
           "every spatial axis must be at least 1 (padding alone cannot fill a window)");
  for (size_t i = 0; i < k.size(); ++i) {
    if (2 * pad[i] > k[i])
      c.fail("padding=" + axes_str(pad) + " is more than half of kernel_size=" + axes_str(k),
             "padding must be at most kernel_size / 2 along each axis (a window must overlap the input)");
    if (x[2 + i] + 2 * pad[i] < k[i])
      c.fail("the " + window_str(k) + " window does not fit in x " + shape_str(x) + " with padding=" + axes_str(pad),
             "need size + 2·padding >= kernel_size along every spatial axis");
  }
  return w;
}

std::function<std::vector<TensorMeta>(const InferCtx&)> infer_pool(const std::string& stem) {
  return [stem](const InferCtx& c) {
    c.expect_float(0);
    const Window w = check_window(c, c.inputs[0].shape, stem);
    TensorMeta m = c.inputs[0];
    m.shape = pooled_shape(w, pool_axes(c.attrs));
    return std::vector<TensorMeta>{m};
  };
}

// Calls f(o, i) for every output position o of one volume (flat) and every input position i
// (flat) of its window clipped to the input. `start(o)` runs first for each window.
template <class Start, class F> void for_each_window(const Window& w, Start start, F f) {
  int64_t o = 0;
  for (int64_t od = 0; od < w.OD; ++od) {
    int64_t d0, d1;
    window_depths(w, od, d0, d1);
    for (int64_t oh = 0; oh < w.OH; ++oh) {
      int64_t h0, h1;
      window_rows(w, oh, h0, h1);
      for (int64_t ow = 0; ow < w.OW; ++ow, ++o) {
        int64_t w0, w1;
        window_cols(w, ow, w0, w1);
        start(o);
        for (int64_t d = d0; d < d1; ++d)
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t x = w0; x < w1; ++x) f(o, (d * w.H + h) * w.W + x);
      }
    }
  }
}

// Adaptive windows: start = floor(i·H / OH), end = ceil((i + 1)·H / OH).
inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// The adaptive geometry of x [N, C, (D,) (H,) W] → [N, C, (OD,) (OH,) OW]: sizes right-aligned
// (1 on the axes the rank lacks).
struct AdaptiveGeom {
  int64_t P = 1, D = 1, H = 1, W = 1, OD = 1, OH = 1, OW = 1;
};
AdaptiveGeom adaptive_geom(const Shape& x, const Shape& y) {
  AdaptiveGeom g;
  g.P = x[0] * x[1];
  right_aligned(std::vector<int64_t>(x.begin() + 2, x.end()), 1, g.D, g.H, g.W);
  right_aligned(std::vector<int64_t>(y.begin() + 2, y.end()), 1, g.OD, g.OH, g.OW);
  return g;
}

// Calls f(o, i, count) for every output o of one volume and every input i of its window
// (count: the window's size).
template <class F> void for_each_adaptive_window(const AdaptiveGeom& g, F f) {
  for (int64_t od = 0; od < g.OD; ++od) {
    const int64_t d0 = adaptive_start(od, g.D, g.OD), d1 = adaptive_end(od, g.D, g.OD);
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = adaptive_start(oh, g.H, g.OH), h1 = adaptive_end(oh, g.H, g.OH);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t w0 = adaptive_start(ow, g.W, g.OW), w1 = adaptive_end(ow, g.W, g.OW);
        const int64_t o = (od * g.OH + oh) * g.OW + ow, count = (d1 - d0) * (h1 - h0) * (w1 - w0);
        for (int64_t d = d0; d < d1; ++d)
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t x = w0; x < w1; ++x) f(o, (d * g.H + h) * g.W + x, count);
      }
    }
  }
}

// FLOPs: one add or compare per window element per output (the backward ops: per dy element).
CostFn pool_cost(bool backward, bool adaptive) {
  return [backward, adaptive](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
                              std::string_view) {
    Cost c;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    for (auto& m : out) c.bytes_written += cpu::meta_bytes(m);
    const TensorMeta& big = backward ? out[0] : in[0];
    const TensorMeta& small = backward ? in.back() : out[0];
    double window = 1;
    if (adaptive) window = cpu::meta_numel(big) / std::max(1.0, cpu::meta_numel(small));
    else
      for (int64_t k : a.ints("kernel_size")) window *= static_cast<double>(k);
    c.flops = window * cpu::meta_numel(small);
    return c;
  };
}

Shape shape_attr_of(const Attrs& a) { return a.ints("shape"); }

// The gradcheck cases and which algorithms a rank gets.
struct PoolRank {
  size_t axes;
  std::vector<GradcheckCase> max_cases, max_backward_cases, avg_cases, avg_backward_cases, adaptive_cases,
      adaptive_backward_cases;
  bool vectorized() const { return axes <= 2; }  // ops/cpu/pool.cpp pools planes
};

// The default algorithm: vectorized where it runs, else direct. `vectorized(direct)` makes the
// vectorized kernel, which hands the windows it does not take to `direct`.
void set_algorithms(OpDef& d, const PoolRank& rank, KernelFn (*vectorized)(KernelFn), KernelFn direct) {
  if (rank.vectorized()) d.kernel(Device::cpu, "vectorized", vectorized(direct));
  d.kernel(Device::cpu, "direct", std::move(direct));
  d.default_algo = rank.vectorized() ? "vectorized" : "direct";
}

OpDef max_pool_op(const PoolRank& rank) {
  const std::string name = ranked("max_pool", rank.axes);
  OpDef d = OpDef::declare(name, "pool",
                           rank.axes == 2
                               ? "y[n, c, i, j] = max over the KH×KW window at (i·SH - PH, j·SW - PW) of x "
                                 "(padding counts as -inf)"
                               : "y[n, c, o] = max over the window at o·stride − padding of x, along each of the " +
                                     std::to_string(rank.axes) + " spatial axes (padding counts as -inf)",
                           {"x"});
  d.attrs = window_attrs(static_cast<int>(rank.axes), false);
  d.infer = infer_pool("max_pool");
  set_algorithms(
      d, rank, [](KernelFn direct) { return vectorized_pool(true, std::move(direct)); },
      [](KernelCtx& k) {
        const Window w = window_of(k.in(0).shape(), k.attrs, false);
        if (k.out().numel() == 0) return;
        cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
          using T = decltype(z);
          for (int64_t p = 0; p < w.N * w.C; ++p) {
            const T* volume = k.in(0).data<T>() + p * w.in_volume();
            T* o = k.out().data<T>() + p * w.out_volume();
            for (int64_t od = 0; od < w.OD; ++od)
              for (int64_t oh = 0; oh < w.OH; ++oh)
                for (int64_t ow = 0; ow < w.OW; ++ow) *o++ = volume[window_argmax(volume, w, od, oh, ow)];
          }
        });
      });
  d.saves = {{SavedRef::input, 0}};
  d.backward = [name](GradCtx& g) -> std::vector<Val> {
    return {g.call(name + "_backward", {g.input(0), g.grad_output(0)}, g.attrs().to_map())};
  };
  d.backward_note = "dx[argmax of each window] += dy (ties: the first in row-major order); " + name +
                    "_backward recomputes the argmax from x";
  d.cost = pool_cost(false, false);
  d.gradcheck = rank.max_cases;
  return d;
}

OpDef max_pool_backward_op(const PoolRank& rank) {
  const std::string forward = ranked("max_pool", rank.axes);
  OpDef d = OpDef::declare(forward + "_backward", "pool", "dx[argmax of each window of x] += dy", {"x", "dy"});
  d.attrs = window_attrs(static_cast<int>(rank.axes), false);
  d.infer = [forward](const InferCtx& c) {
    c.expect_float(0);
    c.expect_float(1);
    const Window w = check_window(c, c.inputs[0].shape, "max_pool");
    const Shape expect = pooled_shape(w, pool_axes(c.attrs));
    if (c.inputs[1].shape != expect)
      c.fail("dy has shape " + shape_str(c.inputs[1].shape) + " but " + forward + " of x " +
             shape_str(c.inputs[0].shape) + " gives " + shape_str(expect));
    TensorMeta m = c.inputs[0];
    m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
    return std::vector<TensorMeta>{m};
  };
  set_algorithms(d, rank, vectorized_max_pool_backward, [](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs, false);
    const DType dt = k.out().dtype();
    Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
    k.out().fill(0);
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t p = 0; p < w.N * w.C; ++p) {
        const T* volume = x.data<T>() + p * w.in_volume();
        const T* g = dy.data<T>() + p * w.out_volume();
        T* dx = k.out().data<T>() + p * w.in_volume();
        for (int64_t od = 0; od < w.OD; ++od)
          for (int64_t oh = 0; oh < w.OH; ++oh)
            for (int64_t ow = 0; ow < w.OW; ++ow) dx[window_argmax(volume, w, od, oh, ow)] += *g++;
      }
    });
  });
  d.differentiable = false;
  d.checked_via = forward;
  d.gradcheck = rank.max_backward_cases;  // for the CUDA tests (gradchecked through the pool)
  d.cost = pool_cost(true, false);
  return d;
}

OpDef avg_pool_op(const PoolRank& rank) {
  const std::string name = ranked("avg_pool", rank.axes);
  OpDef d = OpDef::declare(name, "pool",
                           rank.axes == 2
                               ? "y[n, c, i, j] = (1/(KH·KW))·Σ over the KH×KW window of x (padding counts as "
                                 "zeros unless count_include_pad=False)"
                               : "y[n, c, o] = (1/window size)·Σ over the window at o·stride − padding of x, along "
                                 "each of the " +
                                     std::to_string(rank.axes) +
                                     " spatial axes (padding counts as zeros unless count_include_pad=False)",
                           {"x"});
  d.attrs = window_attrs(static_cast<int>(rank.axes), true);
  d.infer = infer_pool("avg_pool");
  set_algorithms(
      d, rank, [](KernelFn direct) { return vectorized_pool(false, std::move(direct)); },
      [](KernelCtx& k) {
        const Window w = window_of(k.in(0).shape(), k.attrs, true);
        if (k.out().numel() == 0) return;
        cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
          using T = decltype(z);
          for (int64_t p = 0; p < w.N * w.C; ++p) {
            const T* volume = k.in(0).data<T>() + p * w.in_volume();
            T* o = k.out().data<T>() + p * w.out_volume();
            for_each_window(
                w, [&](int64_t at) { o[at] = 0; }, [&](int64_t at, int64_t i) { o[at] += volume[i]; });
            // (× 1/divisor, not ÷: bit for bit what the vectorized kernels give for the plain windows)
            for (int64_t i = 0; i < w.out_volume(); ++i) o[i] *= static_cast<T>(1) / static_cast<T>(divisor_at(w, i));
          }
        });
      });
  d.backward = [name](GradCtx& g) -> std::vector<Val> {
    AttrMap a = g.attrs().to_map();
    a.push_back({"shape", g.input_meta(0).shape});
    return {g.call(name + "_backward", {g.grad_output(0)}, a)};
  };
  d.backward_note = "dx[each element of a window] += dy / (what the window divides by) (" + name + "_backward)";
  d.cost = pool_cost(false, false);
  d.gradcheck = rank.avg_cases;
  return d;
}

OpDef avg_pool_backward_op(const PoolRank& rank) {
  const std::string forward = ranked("avg_pool", rank.axes);
  OpDef d = OpDef::declare(forward + "_backward", "pool",
                           "dx[each element of each window] += dy / (what it divides by)", {"dy"});
  d.attrs = window_attrs(static_cast<int>(rank.axes), true);
  d.attrs.push_back(
      make_attr("shape", AttrType::int_list, std::vector<int64_t>{}, "shape of the forward input x", {}, {}, {}, true));
  d.infer = [forward](const InferCtx& c) {
    c.expect_float(0);
    const Shape xs = shape_attr_of(c.attrs);
    const Window w = check_window(c, xs, "avg_pool");
    const Shape expect = pooled_shape(w, pool_axes(c.attrs));
    if (c.inputs[0].shape != expect)
      c.fail("dy has shape " + shape_str(c.inputs[0].shape) + " but " + forward + " of x " + shape_str(xs) + " gives " +
             shape_str(expect));
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  set_algorithms(d, rank, vectorized_avg_pool_backward, [](KernelCtx& k) {
    const Window w = window_of(k.attrs.ints("shape"), k.attrs, true);
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t p = 0; p < w.N * w.C; ++p) {
        const T* g = k.in(0).data<T>() + p * w.out_volume();
        T* dx = k.out().data<T>() + p * w.in_volume();
        T v = 0;
        for_each_window(
            w, [&](int64_t at) { v = g[at] * (static_cast<T>(1) / static_cast<T>(divisor_at(w, at))); },
            [&](int64_t, int64_t i) { dx[i] += v; });
      }
    });
  });
  d.differentiable = false;
  d.checked_via = forward;
  d.gradcheck = rank.avg_backward_cases;  // for the CUDA tests (gradchecked through the pool)
  d.cost = pool_cost(true, false);
  return d;
}

OpDef adaptive_avg_pool_op(const PoolRank& rank) {
  const size_t axes = rank.axes;
  const std::string name = ranked("adaptive_avg_pool", axes);
  OpDef d =
      OpDef::declare(name, "pool",
                     axes == 2 ? "y[n, c, i, j] = mean of x[n, c, floor(i·H/OH) : ceil((i+1)·H/OH), floor(j·W/OW) : "
                                 "ceil((j+1)·W/OW)]"
                               : "y[n, c, o] = mean of x[n, c, floor(o·L/OL) : ceil((o+1)·L/OL)] along each of the " +
                                     std::to_string(axes) + " spatial axes (L its size, OL the output's)",
                     {"x"});
  const std::string sizes = axes == 1 ? "[OL]" : axes == 2 ? "[OH, OW]" : "[OD, OH, OW]";
  d.attrs = {make_attr("output_size", AttrType::int_list, std::vector<int64_t>{}, sizes, {}, {}, {}, true)};
  d.infer = [axes, sizes](const InferCtx& c) {
    c.expect_float(0);
    const Shape& xs = c.inputs[0].shape;
    const auto& os = c.attrs.ints("output_size");
    if (os.size() != axes || std::any_of(os.begin(), os.end(), [](int64_t v) { return v < 1; }))
      c.fail("output_size must be " + std::to_string(axes) + " positive size" + (axes > 1 ? "s " : " ") + sizes +
             ", got " + attr_value_str(os));
    check_rank(c, xs, "adaptive_avg_pool", axes);
    if (std::any_of(xs.begin() + 2, xs.end(), [](int64_t v) { return v == 0; }) && xs[0] * xs[1] > 0)
      c.fail("x " + shape_str(xs) + " has an empty plane: there is nothing to average",
             "every spatial axis must be at least 1");
    TensorMeta m = c.inputs[0];
    m.shape = {xs[0], xs[1]};
    m.shape.insert(m.shape.end(), os.begin(), os.end());
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const AdaptiveGeom g = adaptive_geom(k.in(0).shape(), k.out().shape());
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const int64_t in = g.D * g.H * g.W, out = g.OD * g.OH * g.OW;
      for (int64_t p = 0; p < g.P; ++p) {
        const T* volume = k.in(0).data<T>() + p * in;
        T* o = k.out().data<T>() + p * out;
        std::fill(o, o + out, T(0));
        for_each_adaptive_window(g, [&](int64_t at, int64_t i, int64_t count) {
          o[at] += volume[i] / static_cast<T>(count);
        });
      }
    });
  });
  d.backward = [name](GradCtx& g) -> std::vector<Val> {
    return {g.call(name + "_backward", {g.grad_output(0)}, {{"shape", g.input_meta(0).shape}})};
  };
  d.backward_note = "dx[each element of a window] += dy / (window size) (" + name + "_backward)";
  d.cost = pool_cost(false, true);
  d.gradcheck = rank.adaptive_cases;
  return d;
}

OpDef adaptive_avg_pool_backward_op(const PoolRank& rank) {
  const size_t axes = rank.axes;
  const std::string forward = ranked("adaptive_avg_pool", axes);
  OpDef d = OpDef::declare(forward + "_backward", "pool", "dx[each element of a window] += dy / (window size)", {"dy"});
  d.attrs = {
      make_attr("shape", AttrType::int_list, std::vector<int64_t>{}, "shape of the forward input x", {}, {}, {}, true)};
  d.infer = [axes](const InferCtx& c) {
    c.expect_float(0);
    const Shape xs = shape_attr_of(c.attrs);
    const Shape& dy = c.inputs[0].shape;
    if (xs.size() != axes + 2 || dy.size() != axes + 2 || dy[0] != xs[0] || dy[1] != xs[1])
      c.fail("dy " + shape_str(dy) + " and x " + shape_str(xs) + " must both be " + spatial_layout(axes) +
             " with the same N, C");
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const AdaptiveGeom g = adaptive_geom(k.out().shape(), k.in(0).shape());
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const int64_t in = g.D * g.H * g.W, out = g.OD * g.OH * g.OW;
      for (int64_t p = 0; p < g.P; ++p) {
        const T* dy = k.in(0).data<T>() + p * out;
        T* dx = k.out().data<T>() + p * in;
        for_each_adaptive_window(g, [&](int64_t at, int64_t i, int64_t count) {
          dx[i] += dy[at] / static_cast<T>(count);
        });
      }
    });
  });
  d.differentiable = false;
  d.checked_via = forward;
  d.gradcheck = rank.adaptive_backward_cases;  // for the CUDA tests (gradchecked through the pool)
  d.cost = pool_cost(true, true);
  return d;
}

using V = std::vector<int64_t>;

PoolRank pool2d_rank() {
  PoolRank r{2, {}, {}, {}, {}, {}, {}};
  const InputSpec x5{{1, 2, 5, 5}, Domain::distinct}, x6{{2, 1, 6, 6}, Domain::distinct};
  r.max_cases = {gc({x5}, {{"kernel_size", int64_t{2}}}, "2×2, stride 2, odd size drops the last row"),
                 gc({x5}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}},
                    "3×3, stride 2, padding 1"),
                 gc({x6}, {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}}, "overlapping windows"),
                 gc({x6}, {{"kernel_size", V{3, 2}}, {"stride", V{1, 2}}, {"padding", V{1, 0}}},
                    "non-square: 3×2 window, stride (1, 2), padding (1, 0)"),
                 gc({x5}, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}}, "ceil_mode: a last partial window")};
  // Distinct x, one argmax per window.
  r.max_backward_cases = {gc({{{2, 3, 6, 6}, Domain::distinct}, {{2, 3, 3, 3}}}, {{"kernel_size", int64_t{2}}}),
                          gc({{{1, 2, 5, 5}, Domain::distinct}, {{1, 2, 4, 4}}},
                             {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}}, "overlapping windows add")};
  const InputSpec a5{{1, 2, 5, 5}}, a6{{2, 1, 6, 7}};
  r.avg_cases = {
      gc({a5}, {{"kernel_size", int64_t{2}}}, "2×2, stride 2"),
      gc({a5}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}},
         "3×3, stride 2, padding 1"),
      gc({a6}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}}, "overlapping windows"),
      gc({a6}, {{"kernel_size", V{2, 3}}, {"stride", V{2, 1}}, {"padding", V{0, 1}}},
         "non-square: 2×3 window, stride (2, 1), padding (0, 1)"),
      gc({a5},
         {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}, {"count_include_pad", false}},
         "count_include_pad=False: the padding is not counted"),
      gc({a6}, {{"kernel_size", int64_t{2}}, {"ceil_mode", true}},
         "ceil_mode: partial windows divide by what they cover")};
  r.avg_backward_cases = {
      gc({{{2, 3, 3, 3}}}, {{"kernel_size", int64_t{2}}, {"shape", V{2, 3, 6, 6}}}),
      gc({{{1, 2, 3, 3}}},
         {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}, {"shape", V{1, 2, 5, 5}}},
         "padding"),
      gc({{{1, 2, 3, 4}}},
         {{"kernel_size", int64_t{3}},
          {"stride", int64_t{2}},
          {"padding", int64_t{1}},
          {"ceil_mode", true},
          {"count_include_pad", false},
          {"shape", V{1, 2, 5, 6}}},
         "ceil_mode, padding not counted")};
  r.adaptive_cases = {gc({InputSpec{{1, 2, 5, 7}}}, {{"output_size", V{3, 4}}}, "overlapping windows"),
                      gc({InputSpec{{2, 1, 4, 4}}}, {{"output_size", V{2, 2}}}, "even split"),
                      gc({InputSpec{{1, 1, 3, 3}}}, {{"output_size", V{5, 4}}}, "output larger than input")};
  r.adaptive_backward_cases = {gc({{{2, 3, 3, 4}}}, {{"shape", V{2, 3, 7, 9}}})};
  return r;
}

// 1-D: keyword spotting's and text CNNs' pools over a sequence.
PoolRank pool1d_rank() {
  PoolRank r{1, {}, {}, {}, {}, {}, {}};
  const InputSpec x{{2, 3, 9}, Domain::distinct};
  r.max_cases = {gc({x}, {{"kernel_size", int64_t{2}}}, "2, stride 2, odd length drops the last"),
                 gc({x}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}},
                    "3, stride 2, padding 1")};
  r.max_backward_cases = {gc({{{2, 3, 9}, Domain::distinct}, {{2, 3, 8}}},
                             {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}}, "overlapping windows add")};
  r.avg_cases = {gc({InputSpec{{2, 3, 9}}},
                    {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}},
                    "3, stride 2, padding 1"),
                 gc({InputSpec{{2, 3, 10}}},
                    {{"kernel_size", int64_t{3}},
                     {"stride", int64_t{2}},
                     {"padding", int64_t{1}},
                     {"ceil_mode", true},
                     {"count_include_pad", false}},
                    "ceil_mode, padding not counted")};
  r.avg_backward_cases = {
      gc({{{2, 3, 5}}},
         {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}, {"shape", V{2, 3, 9}}},
         "padding")};
  r.adaptive_cases = {gc({InputSpec{{2, 3, 7}}}, {{"output_size", V{3}}}, "overlapping windows"),
                      gc({InputSpec{{1, 2, 3}}}, {{"output_size", V{5}}}, "output longer than input")};
  r.adaptive_backward_cases = {gc({{{2, 3, 4}}}, {{"shape", V{2, 3, 9}}})};
  return r;
}

// 3-D: video and volumes (each axis its own window, stride and padding).
PoolRank pool3d_rank() {
  PoolRank r{3, {}, {}, {}, {}, {}, {}};
  const InputSpec x{{1, 2, 4, 5, 5}, Domain::distinct};
  r.max_cases = {gc({x}, {{"kernel_size", int64_t{2}}}, "2×2×2, stride 2"),
                 gc({x}, {{"kernel_size", V{1, 3, 3}}, {"stride", V{1, 2, 2}}, {"padding", V{0, 1, 1}}},
                    "1×3×3, stride (1, 2, 2), padding (0, 1, 1)")};
  r.max_backward_cases = {gc({{{1, 2, 4, 5, 5}, Domain::distinct}, {{1, 2, 3, 4, 4}}},
                             {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}}, "overlapping windows add")};
  r.avg_cases = {gc({InputSpec{{1, 2, 4, 5, 5}}},
                    {{"kernel_size", V{2, 3, 3}}, {"stride", V{2, 2, 1}}, {"padding", V{1, 1, 0}}},
                    "2×3×3, stride (2, 2, 1), padding (1, 1, 0)"),
                 gc({InputSpec{{1, 2, 5, 5, 4}}},
                    {{"kernel_size", int64_t{2}}, {"ceil_mode", true}, {"count_include_pad", false}},
                    "ceil_mode along the odd axes")};
  r.avg_backward_cases = {gc({{{1, 2, 2, 2, 2}}}, {{"kernel_size", int64_t{2}}, {"shape", V{1, 2, 4, 5, 5}}})};
  r.adaptive_cases = {
      gc({InputSpec{{1, 2, 3, 5, 4}}}, {{"output_size", V{2, 3, 1}}}, "overlapping windows, one global axis")};
  r.adaptive_backward_cases = {gc({{{1, 2, 2, 3, 1}}}, {{"shape", V{1, 2, 3, 5, 4}}})};
  return r;
}

OPSCOPE_REGISTER_OPS(register_pool_ops) {
  for (const PoolRank& rank : {pool1d_rank(), pool2d_rank(), pool3d_rank()})
    for (OpDef (*make)(const PoolRank&) : {max_pool_op, max_pool_backward_op, avg_pool_op, avg_pool_backward_op,
                                           adaptive_avg_pool_op, adaptive_avg_pool_backward_op})
      registry.add(make(rank));
}

}  // namespace
}  // namespace opscope
