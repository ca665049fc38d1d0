// CUDA max_pool2d and avg_pool2d with their backward ops, x [N, C, H, W], KH×KW windows, stride
// and padding per axis (the average divides by KH·KW, padding counted, as on the CPU). Forward: one thread per
// output. Backward: one thread per input element gathering from the windows that contain it
// (no atomics, so the sums are deterministic); max_pool2d_backward recomputes each window's
// argmax from x (ties to the first, NaN wins), as the CPU does, instead of saving indices.
#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

struct Window {
  int64_t KH, KW, SH, SW, PH, PW, N, C, H, W, OH, OW;
};

Window window_of(const Shape& x, const Attrs& a) {
  Window w{};
  const auto &k = a.ints("kernel_size"), &st = a.ints("stride"), &pad = a.ints("padding");
  w.KH = k[0], w.KW = k[1];
  w.SH = st[0] == 0 ? w.KH : st[0];
  w.SW = st[1] == 0 ? w.KW : st[1];
  w.PH = pad[0], w.PW = pad[1];
  w.N = x[0], w.C = x[1], w.H = x[2], w.W = x[3];
  w.OH = (w.H + 2 * w.PH - w.KH) / w.SH + 1;
  w.OW = (w.W + 2 * w.PW - w.KW) / w.SW + 1;
  return w;
}

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Flat index in the plane of the window's max (clipped to the input).
template <class T>
__device__ int64_t window_argmax(const T* plane, const Window& w, int64_t oh, int64_t ow) {
  const int64_t hs = oh * w.SH - w.PH, ws = ow * w.SW - w.PW;
  const int64_t h0 = max(hs, int64_t(0)), h1 = min(hs + w.KH, w.H), w0 = max(ws, int64_t(0)), w1 = min(ws + w.KW, w.W);
  int64_t best = h0 * w.W + w0;
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t x = w0; x < w1; ++x) {
      const T v = plane[h * w.W + x];
      if (v > plane[best] || v != v) {
        best = h * w.W + x;
        if (v != v) return best;
      }
    }
  return best;
}

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
    const int64_t hs = oh * w.SH - w.PH, ws = ow * w.SW - w.PW;
    T s = 0;
    for (int64_t h = max(hs, int64_t(0)); h < min(hs + w.KH, w.H); ++h)
      for (int64_t c = max(ws, int64_t(0)); c < min(ws + w.KW, w.W); ++c) s += plane[h * w.W + c];
    y[e] = s / T(w.KH * w.KW);
  }
}

// Output windows that contain input row h: oh with oh·S − P <= h < oh·S − P + K.
__device__ __forceinline__ void windows_of(int64_t h, int64_t S, int64_t P, int64_t K, int64_t O, int64_t& lo,
                                           int64_t& hi) {
  const int64_t t = h + P;
  lo = t < K ? 0 : (t - K) / S + 1;
  hi = min(t / S, O - 1);
}

template <class T, bool Max>
__global__ void pool_backward(Window w, const T* x, const T* dy, T* dx) {
  GRID_STRIDE(e, w.N * w.C * w.H * w.W) {
    const int64_t c = e % w.W, h = (e / w.W) % w.H, p = e / (w.W * w.H);
    const T* g = dy + p * w.OH * w.OW;
    int64_t oh0, oh1, ow0, ow1;
    windows_of(h, w.SH, w.PH, w.KH, w.OH, oh0, oh1);
    windows_of(c, w.SW, w.PW, w.KW, w.OW, ow0, ow1);
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

struct Register {
  Register() {
    add_kernel("max_pool2d", "direct", [](KernelCtx& k) {
      const Window w = window_of(k.in(0).shape(), k.attrs);
      if (k.out().numel() == 0) return;
      visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
        using T = decltype(z);
        max_pool_forward<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, k.in(0).data<T>(), k.out().data<T>());
        OPSCOPE_CUDA_LAUNCHED("max_pool_forward");
      });
    });
    add_kernel("avg_pool2d", "direct", [](KernelCtx& k) {
      const Window w = window_of(k.in(0).shape(), k.attrs);
      if (k.out().numel() == 0) return;
      visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
        using T = decltype(z);
        avg_pool_forward<T><<<grid_for(k.out().numel()), kThreads, 0, stream()>>>(w, k.in(0).data<T>(), k.out().data<T>());
        OPSCOPE_CUDA_LAUNCHED("avg_pool_forward");
      });
    });
    add_kernel("max_pool2d_backward", "direct", [](KernelCtx& k) {
      const Window w = window_of(k.in(0).shape(), k.attrs);
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
      const Window w = window_of(k.attrs.ints("shape"), k.attrs);
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
} register_pool;

}  // namespace
}  // namespace opscope::cuda
