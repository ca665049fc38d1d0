// CUDA pad ("constant", "reflect", "replicate"), pad_backward (reflect, replicate), upsample_nearest2d,
// interpolate with its backward (sources and weights from ops/geometry.h, as on the CPU), and
// adaptive_avg_pool1d/2d/3d with their backward ops. One thread per output element; the two backward ops
// scatter into dx with atomicAdd (an input element feeds several outputs; the float add order
// varies, so the last bits may differ run to run).
#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

struct PadGeom {
  int rank;
  int64_t in[kMaxRank], out[kMaxRank], left[kMaxRank];
};

PadGeom pad_geom(const Shape& in, const Shape& out, const std::vector<int64_t>& pads) {
  if (in.size() > static_cast<size_t>(kMaxRank)) throw Error("pad: the CUDA kernel takes up to 8 axes");
  PadGeom g{};
  g.rank = static_cast<int>(in.size());
  for (size_t i = 0; i < in.size(); ++i) g.in[i] = in[i], g.out[i] = out[i], g.left[i] = 0;
  for (size_t p = 0; p < pads.size() / 2; ++p) g.left[in.size() - 1 - p] = pads[2 * p];
  return g;
}

// Flat input index of output element o, or -1 where a constant pad supplies the value (along
// each axis, ops/geometry.h's pad_source_index, as on the CPU).
__device__ int64_t pad_source(const PadGeom& g, int64_t o, PadMode mode) {
  int64_t src = 0, stride = 1;
  for (int a = g.rank - 1; a >= 0; --a) {
    const int64_t i = pad_source_index(o % g.out[a], g.left[a], g.in[a], mode);
    o /= g.out[a];
    if (i < 0) return -1;
    src += i * stride;
    stride *= g.in[a];
  }
  return src;
}

template <class T> __global__ void pad_kernel(PadGeom g, const T* x, T* y, int64_t n, PadMode mode, T value) {
  GRID_STRIDE(o, n) {
    const int64_t s = pad_source(g, o, mode);
    y[o] = s < 0 ? value : x[s];
  }
}

template <class T> __global__ void pad_backward_kernel(PadGeom g, const T* dy, T* dx, int64_t n, PadMode mode) {
  GRID_STRIDE(o, n) atomicAdd(&dx[pad_source(g, o, mode)], dy[o]);
}

template <class T> __global__ void upsample_kernel(const T* x, T* y, int64_t planes, int64_t H, int64_t W, int64_t s) {
  const int64_t OH = H * s, OW = W * s;
  GRID_STRIDE(e, planes * OH * OW) {
    const int64_t j = e % OW, i = (e / OW) % OH, p = e / (OW * OH);
    y[e] = x[(p * H + i / s) * W + j / s];
  }
}

__device__ __forceinline__ int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
__device__ __forceinline__ int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

// x [N, C, (D,) (H,) W] → y [N, C, (OD,) (OH,) OW] as volumes, sizes right-aligned (1 on the axes
// the rank lacks), as the CPU's adaptive geometry.
struct AdaptiveDims {
  int64_t planes = 1, D = 1, H = 1, W = 1, OD = 1, OH = 1, OW = 1;
};
AdaptiveDims adaptive_dims(const Shape& x, const Shape& y) {
  AdaptiveDims a;
  a.planes = x[0] * x[1];
  right_aligned(std::vector<int64_t>(x.begin() + 2, x.end()), 1, a.D, a.H, a.W);
  right_aligned(std::vector<int64_t>(y.begin() + 2, y.end()), 1, a.OD, a.OH, a.OW);
  return a;
}

// Output e's window [d0, d1) × [h0, h1) × [w0, w1) in the volume of plane p.
struct AdaptiveWindow {
  int64_t p, d0, d1, h0, h1, w0, w1;
  __device__ int64_t size() const { return (d1 - d0) * (h1 - h0) * (w1 - w0); }
};
__device__ AdaptiveWindow adaptive_window(const AdaptiveDims& a, int64_t e) {
  const int64_t j = e % a.OW, i = (e / a.OW) % a.OH, l = (e / (a.OW * a.OH)) % a.OD, p = e / (a.OW * a.OH * a.OD);
  return {p,
          adaptive_start(l, a.D, a.OD),
          adaptive_end(l, a.D, a.OD),
          adaptive_start(i, a.H, a.OH),
          adaptive_end(i, a.H, a.OH),
          adaptive_start(j, a.W, a.OW),
          adaptive_end(j, a.W, a.OW)};
}

template <class T> __global__ void adaptive_avg_kernel(const T* x, T* y, AdaptiveDims a) {
  GRID_STRIDE(e, a.planes * a.OD * a.OH * a.OW) {
    const AdaptiveWindow win = adaptive_window(a, e);
    T s = 0;
    for (int64_t d = win.d0; d < win.d1; ++d)
      for (int64_t h = win.h0; h < win.h1; ++h)
        for (int64_t w = win.w0; w < win.w1; ++w) s += x[((win.p * a.D + d) * a.H + h) * a.W + w];
    y[e] = s / T(win.size());
  }
}

template <class T> __global__ void adaptive_avg_backward_kernel(const T* dy, T* dx, AdaptiveDims a) {
  GRID_STRIDE(e, a.planes * a.OD * a.OH * a.OW) {
    const AdaptiveWindow win = adaptive_window(a, e);
    const T v = dy[e] / T(win.size());
    for (int64_t d = win.d0; d < win.d1; ++d)
      for (int64_t h = win.h0; h < win.h1; ++h)
        for (int64_t w = win.w0; w < win.w1; ++w) atomicAdd(&dx[((win.p * a.D + d) * a.H + h) * a.W + w], v);
  }
}

// The (up to) four taps of output (oh, ow): rows r0, r1 and columns c0, c1 with the weights of
// r1 and c1 (0 for the nearest modes, which read (r0, c0) alone).
struct Taps2 {
  int64_t r0, r1, c0, c1;
  double lh, lw;
};
__device__ Taps2 taps_at(const ResizeGeom& g, int64_t oh, int64_t ow) {
  Taps2 t{0, 0, 0, 0, 0, 0};
  if (g.mode == ResizeMode::bilinear) {
    linear_sources(g.h, oh, t.r0, t.r1, t.lh);
    linear_sources(g.w, ow, t.c0, t.c1, t.lw);
  } else {
    t.r0 = t.r1 = nearest_source(g.h, oh, g.mode);
    t.c0 = t.c1 = nearest_source(g.w, ow, g.mode);
  }
  return t;
}

template <class T> __global__ void interpolate_kernel(ResizeGeom g, const T* x, T* y) {
  const int64_t OH = g.h.out, OW = g.w.out, H = g.h.in, W = g.w.in;
  GRID_STRIDE(e, g.planes * OH * OW) {
    const int64_t ow = e % OW, oh = (e / OW) % OH, p = e / (OW * OH);
    const Taps2 t = taps_at(g, oh, ow);
    const T* plane = x + p * H * W;
    const T lh1 = T(t.lh), lw1 = T(t.lw), lh0 = T(1) - lh1, lw0 = T(1) - lw1;
    y[e] = lh0 * (lw0 * plane[t.r0 * W + t.c0] + lw1 * plane[t.r0 * W + t.c1]) +
           lh1 * (lw0 * plane[t.r1 * W + t.c0] + lw1 * plane[t.r1 * W + t.c1]);
  }
}

template <class T> __global__ void interpolate_backward_kernel(ResizeGeom g, const T* dy, T* dx) {
  const int64_t OH = g.h.out, OW = g.w.out, H = g.h.in, W = g.w.in;
  GRID_STRIDE(e, g.planes * OH * OW) {
    const int64_t ow = e % OW, oh = (e / OW) % OH, p = e / (OW * OH);
    const Taps2 t = taps_at(g, oh, ow);
    T* plane = dx + p * H * W;
    const T lh1 = T(t.lh), lw1 = T(t.lw), lh0 = T(1) - lh1, lw0 = T(1) - lw1, d = dy[e];
    atomicAdd(&plane[t.r0 * W + t.c0], lh0 * lw0 * d);
    if (g.mode != ResizeMode::bilinear) continue;
    atomicAdd(&plane[t.r0 * W + t.c1], lh0 * lw1 * d);
    atomicAdd(&plane[t.r1 * W + t.c0], lh1 * lw0 * d);
    atomicAdd(&plane[t.r1 * W + t.c1], lh1 * lw1 * d);
  }
}

OPSCOPE_CUDA_REGISTER(register_resize_kernels) {
  add_kernel("interpolate", "direct", [](KernelCtx& k) {
    const int64_t n = k.out().numel();
    if (n == 0) return;
    const ResizeGeom g = resize_geom(k.in(0).shape(), k.out().shape(), k.attrs);
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const Tensor x = dense(k.in(0));
      interpolate_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(g, x.data<T>(), k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("interpolate_kernel");
    });
  });
  add_kernel("interpolate_backward", "direct", [](KernelCtx& k) {
    k.out().fill(0);
    const int64_t n = k.in(0).numel();
    if (n == 0 || k.out().numel() == 0) return;
    const ResizeGeom g = resize_geom(k.out().shape(), k.in(0).shape(), k.attrs);
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      Tensor dy = dense(k.in(0).dtype() == k.out().dtype() ? k.in(0) : k.in(0).cast(k.out().dtype()));
      interpolate_backward_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(g, dy.data<T>(), k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("interpolate_backward_kernel");
    });
  });
  add_kernel("pad", "direct", [](KernelCtx& k) {
    const int64_t n = k.out().numel();
    if (n == 0) return;
    const PadGeom g = pad_geom(k.in(0).shape(), k.out().shape(), k.attrs.ints("pads"));
    const PadMode mode = pad_mode(k.attrs.s("mode"));
    visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      pad_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(g, k.in(0).data<T>(), k.out().data<T>(), n, mode,
                                                            static_cast<T>(k.attrs.f("value")));
      OPSCOPE_CUDA_LAUNCHED("pad_kernel");
    });
  });
  add_kernel("pad_backward", "direct", [](KernelCtx& k) {
    k.out().fill(0);
    const int64_t n = k.in(0).numel();
    if (n == 0 || k.out().numel() == 0) return;
    const PadGeom g = pad_geom(k.out().shape(), k.in(0).shape(), k.attrs.ints("pads"));
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      Tensor dy = k.in(0).dtype() == k.out().dtype() ? k.in(0) : k.in(0).cast(k.out().dtype());
      pad_backward_kernel<T>
          <<<grid_for(n), kThreads, 0, stream()>>>(g, dy.data<T>(), k.out().data<T>(), n, pad_mode(k.attrs.s("mode")));
      OPSCOPE_CUDA_LAUNCHED("pad_backward_kernel");
    });
  });
  add_kernel("upsample_nearest2d", "direct", [](KernelCtx& k) {
    const Shape& xs = k.in(0).shape();
    if (k.out().numel() == 0) return;
    visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      upsample_kernel<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(k.in(0).data<T>(), k.out().data<T>(),
                                                                               xs[0] * xs[1], xs[2], xs[3],
                                                                               k.attrs.i("scale_factor"));
      OPSCOPE_CUDA_LAUNCHED("upsample_kernel");
    });
  });
  for (const std::string rank : {"1d", "2d", "3d"}) {
    add_kernel("adaptive_avg_pool" + rank, "direct", [](KernelCtx& k) {
      if (k.out().numel() == 0) return;
      const AdaptiveDims a = adaptive_dims(k.in(0).shape(), k.out().shape());
      visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
        using T = decltype(z);
        adaptive_avg_kernel<T>
            <<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(k.in(0).data<T>(), k.out().data<T>(), a);
        OPSCOPE_CUDA_LAUNCHED("adaptive_avg_kernel");
      });
    });
    add_kernel("adaptive_avg_pool" + rank + "_backward", "direct", [](KernelCtx& k) {
      k.out().fill(0);
      if (k.in(0).numel() == 0 || k.out().numel() == 0) return;
      const AdaptiveDims a = adaptive_dims(k.out().shape(), k.in(0).shape());
      visit_float(k.out().dtype(), k.op.name, [&](auto z) {
        using T = decltype(z);
        Tensor dy = k.in(0).dtype() == k.out().dtype() ? k.in(0) : k.in(0).cast(k.out().dtype());
        adaptive_avg_backward_kernel<T>
            <<<grid_for(k.in(0).numel()), kThreads, 0, stream()>>>(dy.data<T>(), k.out().data<T>(), a);
        OPSCOPE_CUDA_LAUNCHED("adaptive_avg_backward_kernel");
      });
    });
  }
}

}  // namespace
}  // namespace opscope::cuda
