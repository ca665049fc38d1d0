// CUDA max_poolNd and avg_poolNd (N = 1, 2, 3) with their backward ops, x [N, C, L], [N, C, H, W]
// or [N, C, D, H, W] read as volumes D×H×W (ops/geometry.h's PoolWindow, right-aligned: a 2-D
// pool has D = 1), windows, stride and padding per axis, ceil_mode and count_include_pad (the
// average divides by window_divisor, as on the CPU). Forward: one thread per output. Backward: one thread per
// input element gathering from the windows that contain it (no atomics, so the sums are
// deterministic); max_poolNd_backward recomputes each window's argmax from x (ties to the first,
// NaN wins), as the CPU does, instead of saving indices.
#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"

namespace opscope::cuda {
namespace {

using Window = PoolWindow;  // ops/geometry.h, shared with the CPU kernels

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Output e of a pool over volumes D×H×W (1-D and 2-D pools have D = 1, and 1-D H = 1 too).
struct OutPos {
  int64_t p, od, oh, ow;
};
__device__ OutPos out_pos(const Window& w, int64_t e) {
  return {e / w.out_volume(), (e / (w.OW * w.OH)) % w.OD, (e / w.OW) % w.OH, e % w.OW};
}

template <class T> __global__ void max_pool_forward(Window w, const T* x, T* y) {
  GRID_STRIDE(e, w.N * w.C * w.out_volume()) {
    const OutPos o = out_pos(w, e);
    const T* volume = x + o.p * w.in_volume();
    y[e] = volume[window_argmax(volume, w, o.od, o.oh, o.ow)];
  }
}

template <class T> __global__ void avg_pool_forward(Window w, const T* x, T* y) {
  GRID_STRIDE(e, w.N * w.C * w.out_volume()) {
    const OutPos o = out_pos(w, e);
    const T* volume = x + o.p * w.in_volume();
    int64_t d0, d1, h0, h1, w0, w1;
    window_depths(w, o.od, d0, d1);
    window_rows(w, o.oh, h0, h1);
    window_cols(w, o.ow, w0, w1);
    T s = 0;
    for (int64_t d = d0; d < d1; ++d)
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t c = w0; c < w1; ++c) s += volume[(d * w.H + h) * w.W + c];
    y[e] = s / T(window_divisor(w, o.od, o.oh, o.ow));
  }
}

template <class T, bool Max> __global__ void pool_backward(Window w, const T* x, const T* dy, T* dx) {
  GRID_STRIDE(e, w.N * w.C * w.in_volume()) {
    const int64_t c = e % w.W, h = (e / w.W) % w.H, d = (e / (w.W * w.H)) % w.D, p = e / w.in_volume();
    const T* g = dy + p * w.out_volume();
    int64_t od0, od1, oh0, oh1, ow0, ow1;
    windows_containing(d, w.SD, w.PD, w.KD, w.OD, od0, od1);
    windows_containing(h, w.SH, w.PH, w.KH, w.OH, oh0, oh1);
    windows_containing(c, w.SW, w.PW, w.KW, w.OW, ow0, ow1);
    const int64_t at = (d * w.H + h) * w.W + c;
    T acc = 0;
    for (int64_t od = od0; od <= od1; ++od)
      for (int64_t oh = oh0; oh <= oh1; ++oh)
        for (int64_t ow = ow0; ow <= ow1; ++ow) {
          const T gy = g[(od * w.OH + oh) * w.OW + ow];
          if constexpr (Max) {
            if (window_argmax(x + p * w.in_volume(), w, od, oh, ow) == at) acc += gy;
          } else {
            acc += gy / T(window_divisor(w, od, oh, ow));
          }
        }
    dx[e] = acc;
  }
}

Tensor as(const Tensor& t, DType dt) { return dense(t.dtype() == dt ? t : t.cast(dt)); }

void max_pool(KernelCtx& k) {
  const Window w = pool_window(k.in(0).shape(), k.attrs, false);
  if (k.out().numel() == 0) return;
  visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
    using T = decltype(z);
    max_pool_forward<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, k.in(0).data<T>(), k.out().data<T>());
    OPSCOPE_CUDA_LAUNCHED("max_pool_forward");
  });
}

void avg_pool(KernelCtx& k) {
  const Window w = pool_window(k.in(0).shape(), k.attrs, true);
  if (k.out().numel() == 0) return;
  visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
    using T = decltype(z);
    avg_pool_forward<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, k.in(0).data<T>(), k.out().data<T>());
    OPSCOPE_CUDA_LAUNCHED("avg_pool_forward");
  });
}

void max_pool_backward(KernelCtx& k) {
  const Window w = pool_window(k.in(0).shape(), k.attrs, false);
  if (k.out().numel() == 0) return;
  const DType dt = k.out().dtype();
  Tensor x = as(k.in(0), dt), dy = as(k.in(1), dt);
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    pool_backward<T, true>
        <<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, x.data<T>(), dy.data<T>(), k.out().data<T>());
    OPSCOPE_CUDA_LAUNCHED("max_pool_backward");
  });
}

void avg_pool_backward(KernelCtx& k) {
  const Window w = pool_window(k.attrs.ints("shape"), k.attrs, true);
  if (k.out().numel() == 0) return;
  const DType dt = k.out().dtype();
  Tensor dy = as(k.in(0), dt);
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    pool_backward<T, false>
        <<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, nullptr, dy.data<T>(), k.out().data<T>());
    OPSCOPE_CUDA_LAUNCHED("avg_pool_backward");
  });
}

OPSCOPE_CUDA_REGISTER(register_pool_kernels) {
  for (const std::string rank : {"1d", "2d", "3d"}) {
    add_kernel("max_pool" + rank, "direct", max_pool);
    add_kernel("avg_pool" + rank, "direct", avg_pool);
    add_kernel("max_pool" + rank + "_backward", "direct", max_pool_backward);
    add_kernel("avg_pool" + rank + "_backward", "direct", avg_pool_backward);
  }
}

}  // namespace
}  // namespace opscope::cuda
