// CUDA max_pool2d and avg_pool2d with their backward ops, x [N, C, H, W], KH×KW windows, stride
// and padding per axis (the average divides by KH·KW, padding counted, as on the CPU). Forward: one thread per
// output. Backward: one thread per input element gathering from the windows that contain it
// (no atomics, so the sums are deterministic); max_pool2d_backward recomputes each window's
// argmax from x (ties to the first, NaN wins), as the CPU does, instead of saving indices.
#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"

namespace opscope::cuda {
namespace {

using Window = PoolWindow;  // ops/geometry.h, shared with the CPU kernels

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <class T>
__global__ void max_pool_forward(Window w, const T* x, T* y) {
  GRID_STRIDE(e, w.N * w.C * w.OH * w.OW) {
    const int64_t ow = e % w.OW, oh = (e / w.OW) % w.OH, p = e / (w.OW * w.OH);
    const T* plane = x + p * w.H * w.W;
    y[e] = plane[window_argmax(plane, w, oh, ow)];
  }
}

template <class T>
__global__ void avg_pool_forward(Window w, const T* x, T* y) {
  GRID_STRIDE(e, w.N * w.C * w.OH * w.OW) {
    const int64_t ow = e % w.OW, oh = (e / w.OW) % w.OH, p = e / (w.OW * w.OH);
    const T* plane = x + p * w.H * w.W;
    int64_t h0, h1, w0, w1;
    window_rows(w, oh, h0, h1);
    window_cols(w, ow, w0, w1);
    T s = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t c = w0; c < w1; ++c) s += plane[h * w.W + c];
    y[e] = s / T(w.KH * w.KW);
  }
}

template <class T, bool Max>
__global__ void pool_backward(Window w, const T* x, const T* dy, T* dx) {
  GRID_STRIDE(e, w.N * w.C * w.H * w.W) {
    const int64_t c = e % w.W, h = (e / w.W) % w.H, p = e / (w.W * w.H);
    const T* g = dy + p * w.OH * w.OW;
    int64_t oh0, oh1, ow0, ow1;
    windows_containing(h, w.SH, w.PH, w.KH, w.OH, oh0, oh1);
    windows_containing(c, w.SW, w.PW, w.KW, w.OW, ow0, ow1);
    T acc = 0;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        if constexpr (Max) {
          if (window_argmax(x + p * w.H * w.W, w, oh, ow) == h * w.W + c) acc += g[oh * w.OW + ow];
        } else {
          acc += g[oh * w.OW + ow];
        }
      }
    dx[e] = Max ? acc : acc / T(w.KH * w.KW);
  }
}

Tensor as(const Tensor& t, DType dt) { return dense(t.dtype() == dt ? t : t.cast(dt)); }

OPSCOPE_CUDA_REGISTER(register_pool_kernels) {
  add_kernel("max_pool2d", "direct", [](KernelCtx& k) {
    const Window w = pool_window(k.in(0).shape(), k.attrs);
    if (k.out().numel() == 0) return;
    visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      max_pool_forward<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, k.in(0).data<T>(), k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("max_pool_forward");
    });
  });
  add_kernel("avg_pool2d", "direct", [](KernelCtx& k) {
    const Window w = pool_window(k.in(0).shape(), k.attrs);
    if (k.out().numel() == 0) return;
    visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      avg_pool_forward<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, k.in(0).data<T>(), k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("avg_pool_forward");
    });
  });
  add_kernel("max_pool2d_backward", "direct", [](KernelCtx& k) {
    const Window w = pool_window(k.in(0).shape(), k.attrs);
    if (k.out().numel() == 0) return;
    const DType dt = k.out().dtype();
    Tensor x = as(k.in(0), dt), dy = as(k.in(1), dt);
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      pool_backward<T, true><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, x.data<T>(), dy.data<T>(),
                                                                                    k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("max_pool_backward");
    });
  });
  add_kernel("avg_pool2d_backward", "direct", [](KernelCtx& k) {
    const Window w = pool_window(k.attrs.ints("shape"), k.attrs);
    if (k.out().numel() == 0) return;
    const DType dt = k.out().dtype();
    Tensor dy = as(k.in(0), dt);
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      pool_backward<T, false><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, nullptr, dy.data<T>(),
                                                                                     k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("avg_pool_backward");
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
