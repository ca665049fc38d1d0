// Pooling over the two spatial axes of x [N, C, H, W]: max_pool2d, avg_pool2d and
// adaptive_avg_pool2d, each with a dedicated backward op (max_pool2d_backward recomputes the
// argmax from x instead of saving an index tensor; the average pools spread dy evenly).
//
// Output size of the fixed-window pools: OH = (H + 2·PH - KH) / SH + 1 (floor), likewise W;
// kernel_size, stride and padding are an int or a pair (along H, along W), as in PyTorch.
// Each N·C plane is pooled independently.
//
// Two algorithms each: "vectorized" (the default: ops/cpu/pool.cpp, built per instruction set,
// SIMD over a row of windows for the common 2×2 stride-2 window, planes spread over threads)
// and "direct" (the loop over each window, the reference the other is checked against).
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

std::vector<AttrSpec> window_attrs() {
  return {make_pair_attr("kernel_size", 2, "window size: K (K×K) or (KH, KW)", 1.0),
          make_pair_attr("stride", 0, "step between windows: n or (along H, along W); 0 means = kernel_size", 0.0),
          make_pair_attr("padding", 0, "implicit border on each side: n or (along H, along W)", 0.0)};
}

// The window (ops/geometry.h, shared with the CUDA kernels).
using Window = PoolWindow;
Window window_of(const Shape& x, const Attrs& a) { return pool_window(x, a); }

cpu::PoolGeom geom_of(const Window& w) { return {w.KH, w.KW, w.SH, w.SW, w.PH, w.PW, w.H, w.W, w.OH, w.OW}; }

// Runs `planes(p0, p1)` over the N·C planes on the thread pool (planes are independent).
template <class F>
void over_planes(const Window& w, double ops_per_plane, F planes) {
  parallel_for(w.N * w.C, grain_for(ops_per_plane), planes);
}

// The vectorized kernels: forward (x -> y) and backward (x, dy -> dx; avg needs no x).
KernelFn vectorized_pool(bool max) {
  return [max](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs);
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

KernelFn vectorized_max_pool_backward() {
  return [](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs);
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

KernelFn vectorized_avg_pool_backward() {
  return [](KernelCtx& k) {
    const Window w = window_of(k.attrs.ints("shape"), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* dy = k.in(0).data<T>();
      T* dx = k.out().data<T>();
      over_planes(w, static_cast<double>(w.H * w.W), [&](int64_t p0, int64_t p1) {
        cpu::kern<T>().avg_pool_backward_planes(dy, dx, p0, p1, geom_of(w));
      });
    });
  };
}

std::string size_str(int64_t h, int64_t w) {
  return h == w ? std::to_string(h) : "(" + std::to_string(h) + ", " + std::to_string(w) + ")";
}

// Shape checks shared by the pools and their backward ops (x is the forward input's shape).
Window check_window(const InferCtx& c, const Shape& x) {
  if (x.size() != 4)
    c.fail("expected x of rank 4 [N, C, H, W], got " + shape_str(x), "add a batch axis with reshape if needed");
  const Window w = window_of(x, c.attrs);
  if ((x[2] == 0 || x[3] == 0) && x[0] * x[1] > 0)
    c.fail("x " + shape_str(x) + " has an empty plane: there is nothing to pool",
           "H and W must be at least 1 (padding alone cannot fill a window)");
  if (2 * w.PH > w.KH || 2 * w.PW > w.KW)
    c.fail("padding=" + size_str(w.PH, w.PW) + " is more than half of kernel_size=" + size_str(w.KH, w.KW),
           "padding must be at most kernel_size / 2 along each axis (a window must overlap the input)");
  if (x[2] + 2 * w.PH < w.KH || x[3] + 2 * w.PW < w.KW)
    c.fail("the " + std::to_string(w.KH) + "×" + std::to_string(w.KW) + " window does not fit in x " + shape_str(x) +
               " with padding=" + size_str(w.PH, w.PW),
           "need H + 2·padding >= kernel_size along H, and the same along W");
  return w;
}

std::vector<TensorMeta> infer_pool(const InferCtx& c) {
  c.expect_float(0);
  const Window w = check_window(c, c.inputs[0].shape);
  TensorMeta m = c.inputs[0];
  m.shape = {w.N, w.C, w.OH, w.OW};
  return {m};
}

// Calls f(oh, ow, h0, h1, w0, w1) for every output position with its window clipped to the input.
template <class F>
void for_each_window(const Window& w, F f) {
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    int64_t h0, h1;
    window_rows(w, oh, h0, h1);
    for (int64_t ow = 0; ow < w.OW; ++ow) {
      int64_t w0, w1;
      window_cols(w, ow, w0, w1);
      f(oh, ow, h0, h1, w0, w1);
    }
  }
}

// Adaptive windows: start = floor(i·H / OH), end = ceil((i + 1)·H / OH).
inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// FLOPs: one add or compare per window element per output (the backward ops: per dy element).
CostFn pool_cost(bool backward, bool adaptive) {
  return [backward, adaptive](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
                              std::string_view) {
    Cost c;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    for (auto& m : out) c.bytes_written += cpu::meta_bytes(m);
    const TensorMeta& big = backward ? out[0] : in[0];
    const TensorMeta& small = backward ? in.back() : out[0];
    const double window = adaptive ? cpu::meta_numel(big) / std::max(1.0, cpu::meta_numel(small))
                                   : static_cast<double>(a.ints("kernel_size")[0] * a.ints("kernel_size")[1]);
    c.flops = window * cpu::meta_numel(small);
    return c;
  };
}

Shape shape_attr_of(const Attrs& a) { return a.ints("shape"); }

OpDef max_pool2d_op() {
  OpDef d = OpDef::declare("max_pool2d", "pool",
                           "y[n, c, i, j] = max over the KH×KW window at (i·SH - PH, j·SW - PW) of x "
                           "(padding counts as -inf)",
                           {"x"});
  d.attrs = window_attrs();
  d.infer = infer_pool;
  d.default_algo = "vectorized";
  d.kernel(Device::cpu, "vectorized", vectorized_pool(true));
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t p = 0; p < w.N * w.C; ++p) {
        const T* plane = k.in(0).data<T>() + p * w.H * w.W;
        T* o = k.out().data<T>() + p * w.OH * w.OW;
        for (int64_t oh = 0; oh < w.OH; ++oh)
          for (int64_t ow = 0; ow < w.OW; ++ow) o[oh * w.OW + ow] = plane[window_argmax(plane, w, oh, ow)];
      }
    });
  });
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("max_pool2d_backward", {g.input(0), g.grad_output(0)}, g.attrs().to_map())};
  };
  d.backward_note = "dx[argmax of each window] += dy (ties: the first in row-major order); max_pool2d_backward "
                    "recomputes the argmax from x";
  d.cost = pool_cost(false, false);
  const InputSpec x5{{1, 2, 5, 5}, Domain::distinct}, x6{{2, 1, 6, 6}, Domain::distinct};
  d.gradcheck = {gc({x5}, {{"kernel_size", int64_t{2}}}, "2×2, stride 2, odd size drops the last row"),
                 gc({x5}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}, "3×3, stride 2, padding 1"),
                 gc({x6}, {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}}, "overlapping windows"),
                 gc({x6}, {{"kernel_size", std::vector<int64_t>{3, 2}}, {"stride", std::vector<int64_t>{1, 2}},
                           {"padding", std::vector<int64_t>{1, 0}}},
                    "non-square: 3×2 window, stride (1, 2), padding (1, 0)")};
  return d;
}

OpDef max_pool2d_backward_op() {
  OpDef d = OpDef::declare("max_pool2d_backward", "pool", "dx[argmax of each window of x] += dy", {"x", "dy"});
  d.attrs = window_attrs();
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    c.expect_float(1);
    const Window w = check_window(c, c.inputs[0].shape);
    if (c.inputs[1].shape != Shape{w.N, w.C, w.OH, w.OW})
      c.fail("dy has shape " + shape_str(c.inputs[1].shape) + " but max_pool2d of x " + shape_str(c.inputs[0].shape) +
             " gives " + shape_str({w.N, w.C, w.OH, w.OW}));
    TensorMeta m = c.inputs[0];
    m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
    return std::vector<TensorMeta>{m};
  };
  d.default_algo = "vectorized";
  d.kernel(Device::cpu, "vectorized", vectorized_max_pool_backward());
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs);
    const DType dt = k.out().dtype();
    Tensor x = cpu::as_dtype(k.in(0), dt), dy = cpu::as_dtype(k.in(1), dt);
    k.out().fill(0);
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t p = 0; p < w.N * w.C; ++p) {
        const T* plane = x.data<T>() + p * w.H * w.W;
        const T* g = dy.data<T>() + p * w.OH * w.OW;
        T* dx = k.out().data<T>() + p * w.H * w.W;
        for (int64_t oh = 0; oh < w.OH; ++oh)
          for (int64_t ow = 0; ow < w.OW; ++ow) dx[window_argmax(plane, w, oh, ow)] += g[oh * w.OW + ow];
      }
    });
  });
  d.differentiable = false;
  d.checked_via = "max_pool2d";
  // Cases for the CUDA tests (gradchecked through max_pool2d): distinct x, one argmax per window.
  d.gradcheck = {gc({{{2, 3, 6, 6}, Domain::distinct}, {{2, 3, 3, 3}}}, {{"kernel_size", int64_t{2}}}),
                 gc({{{1, 2, 5, 5}, Domain::distinct}, {{1, 2, 4, 4}}}, {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}},
                    "overlapping windows add")};
  d.cost = pool_cost(true, false);
  return d;
}

OpDef avg_pool2d_op() {
  OpDef d = OpDef::declare("avg_pool2d", "pool",
                           "y[n, c, i, j] = (1/(KH·KW))·Σ over the KH×KW window of x (padding counts as zeros: "
                           "count_include_pad)",
                           {"x"});
  d.attrs = window_attrs();
  d.infer = infer_pool;
  d.default_algo = "vectorized";
  d.kernel(Device::cpu, "vectorized", vectorized_pool(false));
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Window w = window_of(k.in(0).shape(), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T inv = static_cast<T>(1) / static_cast<T>(w.KH * w.KW);
      for (int64_t p = 0; p < w.N * w.C; ++p) {
        const T* plane = k.in(0).data<T>() + p * w.H * w.W;
        T* o = k.out().data<T>() + p * w.OH * w.OW;
        for_each_window(w, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
          T s = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t x = w0; x < w1; ++x) s += plane[h * w.W + x];
          o[oh * w.OW + ow] = s * inv;
        });
      }
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    AttrMap a = g.attrs().to_map();
    a.push_back({"shape", g.input_meta(0).shape});
    return {g.call("avg_pool2d_backward", {g.grad_output(0)}, a)};
  };
  d.backward_note = "dx[each element of a window] += dy / (KH·KW) (avg_pool2d_backward)";
  d.cost = pool_cost(false, false);
  const InputSpec x5{{1, 2, 5, 5}}, x6{{2, 1, 6, 7}};
  d.gradcheck = {gc({x5}, {{"kernel_size", int64_t{2}}}, "2×2, stride 2"),
                 gc({x5}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}, "3×3, stride 2, padding 1"),
                 gc({x6}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}}, "overlapping windows"),
                 gc({x6}, {{"kernel_size", std::vector<int64_t>{2, 3}}, {"stride", std::vector<int64_t>{2, 1}},
                           {"padding", std::vector<int64_t>{0, 1}}},
                    "non-square: 2×3 window, stride (2, 1), padding (0, 1)")};
  return d;
}

OpDef avg_pool2d_backward_op() {
  OpDef d = OpDef::declare("avg_pool2d_backward", "pool", "dx[each element of each window] += dy / (KH·KW)", {"dy"});
  d.attrs = window_attrs();
  d.attrs.push_back(make_attr("shape", AttrType::int_list, std::vector<int64_t>{}, "shape of the forward input x",
                              {}, {}, {}, true));
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const Shape xs = shape_attr_of(c.attrs);
    const Window w = check_window(c, xs);
    if (c.inputs[0].shape != Shape{w.N, w.C, w.OH, w.OW})
      c.fail("dy has shape " + shape_str(c.inputs[0].shape) + " but avg_pool2d of x " + shape_str(xs) + " gives " +
             shape_str({w.N, w.C, w.OH, w.OW}));
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  d.default_algo = "vectorized";
  d.kernel(Device::cpu, "vectorized", vectorized_avg_pool_backward());
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Window w = window_of(k.attrs.ints("shape"), k.attrs);
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T inv = static_cast<T>(1) / static_cast<T>(w.KH * w.KW);
      for (int64_t p = 0; p < w.N * w.C; ++p) {
        const T* g = k.in(0).data<T>() + p * w.OH * w.OW;
        T* dx = k.out().data<T>() + p * w.H * w.W;
        for_each_window(w, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
          const T v = g[oh * w.OW + ow] * inv;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t x = w0; x < w1; ++x) dx[h * w.W + x] += v;
        });
      }
    });
  });
  d.differentiable = false;
  d.checked_via = "avg_pool2d";
  // Cases for the CUDA tests (gradchecked through avg_pool2d).
  d.gradcheck = {gc({{{2, 3, 3, 3}}}, {{"kernel_size", int64_t{2}}, {"shape", std::vector<int64_t>{2, 3, 6, 6}}}),
                 gc({{{1, 2, 3, 3}}}, {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}, {"shape", std::vector<int64_t>{1, 2, 5, 5}}},
                    "padding")};
  d.cost = pool_cost(true, false);
  return d;
}

OpDef adaptive_avg_pool2d_op() {
  OpDef d = OpDef::declare("adaptive_avg_pool2d", "pool",
                           "y[n, c, i, j] = mean of x[n, c, floor(i·H/OH) : ceil((i+1)·H/OH), floor(j·W/OW) : "
                           "ceil((j+1)·W/OW)]",
                           {"x"});
  d.attrs = {make_attr("output_size", AttrType::int_list, std::vector<int64_t>{}, "[OH, OW]", {}, {}, {}, true)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const Shape& xs = c.inputs[0].shape;
    if (xs.size() != 4) c.fail("expected x of rank 4 [N, C, H, W], got " + shape_str(xs));
    const auto& os = c.attrs.ints("output_size");
    if (os.size() != 2 || os[0] < 1 || os[1] < 1)
      c.fail("output_size must be two positive sizes [OH, OW], got " + attr_value_str(os));
    if ((xs[2] == 0 || xs[3] == 0) && xs[0] * xs[1] > 0)
      c.fail("x " + shape_str(xs) + " has an empty plane: there is nothing to average", "H and W must be at least 1");
    TensorMeta m = c.inputs[0];
    m.shape = {xs[0], xs[1], os[0], os[1]};
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Shape& xs = k.in(0).shape();
    const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
    const int64_t OH = k.out().shape()[2], OW = k.out().shape()[3];
    if (k.out().numel() == 0) return;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t p = 0; p < P; ++p) {
        const T* plane = k.in(0).data<T>() + p * H * W;
        T* o = k.out().data<T>() + p * OH * OW;
        for (int64_t i = 0; i < OH; ++i) {
          const int64_t h0 = adaptive_start(i, H, OH), h1 = adaptive_end(i, H, OH);
          for (int64_t j = 0; j < OW; ++j) {
            const int64_t w0 = adaptive_start(j, W, OW), w1 = adaptive_end(j, W, OW);
            T s = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t x = w0; x < w1; ++x) s += plane[h * W + x];
            o[i * OW + j] = s / static_cast<T>((h1 - h0) * (w1 - w0));
          }
        }
      }
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("adaptive_avg_pool2d_backward", {g.grad_output(0)}, {{"shape", g.input_meta(0).shape}})};
  };
  d.backward_note = "dx[each element of window (i, j)] += dy[i, j] / (window size) (adaptive_avg_pool2d_backward)";
  d.cost = pool_cost(false, true);
  d.gradcheck = {gc({InputSpec{{1, 2, 5, 7}}}, {{"output_size", std::vector<int64_t>{3, 4}}}, "overlapping windows"),
                 gc({InputSpec{{2, 1, 4, 4}}}, {{"output_size", std::vector<int64_t>{2, 2}}}, "even split"),
                 gc({InputSpec{{1, 1, 3, 3}}}, {{"output_size", std::vector<int64_t>{5, 4}}}, "output larger than input")};
  return d;
}

OpDef adaptive_avg_pool2d_backward_op() {
  OpDef d = OpDef::declare("adaptive_avg_pool2d_backward", "pool",
                           "dx[each element of window (i, j)] += dy[i, j] / (window size)", {"dy"});
  d.attrs = {make_attr("shape", AttrType::int_list, std::vector<int64_t>{}, "shape of the forward input x", {}, {}, {},
                       true)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const Shape xs = shape_attr_of(c.attrs);
    if (xs.size() != 4 || c.inputs[0].shape.size() != 4 || c.inputs[0].shape[0] != xs[0] ||
        c.inputs[0].shape[1] != xs[1])
      c.fail("dy " + shape_str(c.inputs[0].shape) + " and x " + shape_str(xs) + " must both be [N, C, ., .] with the same N, C");
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Shape& xs = k.out().shape();
    const int64_t P = xs[0] * xs[1], H = xs[2], W = xs[3];
    const int64_t OH = k.in(0).shape()[2], OW = k.in(0).shape()[3];
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      for (int64_t p = 0; p < P; ++p) {
        const T* g = k.in(0).data<T>() + p * OH * OW;
        T* dx = k.out().data<T>() + p * H * W;
        for (int64_t i = 0; i < OH; ++i) {
          const int64_t h0 = adaptive_start(i, H, OH), h1 = adaptive_end(i, H, OH);
          for (int64_t j = 0; j < OW; ++j) {
            const int64_t w0 = adaptive_start(j, W, OW), w1 = adaptive_end(j, W, OW);
            const T v = g[i * OW + j] / static_cast<T>((h1 - h0) * (w1 - w0));
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t x = w0; x < w1; ++x) dx[h * W + x] += v;
          }
        }
      }
    });
  });
  d.differentiable = false;
  d.checked_via = "adaptive_avg_pool2d";
  // Cases for the CUDA tests (gradchecked through adaptive_avg_pool2d): overlapping windows.
  d.gradcheck = {gc({{{2, 3, 3, 4}}}, {{"shape", std::vector<int64_t>{2, 3, 7, 9}}})};
  d.cost = pool_cost(true, true);
  return d;
}

OPSCOPE_REGISTER_OPS(register_pool_ops) {
  for (OpDef (*make)() : {max_pool2d_op, max_pool2d_backward_op, avg_pool2d_op, avg_pool2d_backward_op,
                          adaptive_avg_pool2d_op, adaptive_avg_pool2d_backward_op})
    registry.add(make());
}

}  // namespace
}  // namespace opscope
