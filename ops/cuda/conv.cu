// CUDA conv1d, conv2d and conv3d ("naive" and "im2col") and both backward ops, NC(D)(H)W, with stride,
// padding and dilation per axis and groups. Shape letters: N batch, C/K input/output channels, D×H×W input,
// Q×R×S kernel, OD×OH×OW output, G groups (Cg = C/G, Kg = K/G); a 2-D conv has D = Q = OD = 1.
//
//  naive   one thread per output element: the direct sum (seven loops in 2-D), Cg·Q·R·S multiply-adds each.
//  im2col  per image and group: unfold the input into a [Cg·Q·R·S, OD·OH·OW] matrix (workspace, the
//          memory the tracker shows), then one GEMM: y = W_g [Kg, Cg·R·S] · col (cuBLAS).
//  backward_input   naive: one thread per input element gathers from every output it touched
//                   (no atomics); im2col: col = W_gᵀ·dy_g, then col2im (gather per input element).
//  backward_weight  naive: one thread per weight element sums over N·OH·OW; im2col:
//                   dW_g += dy_g · col_nᵀ for each image (GEMM with accumulation).
//  conv_transposeNd the backward_input kernels on (x, w), then the bias.
#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Every rank runs these kernels: x and y are volumes D×H×W (OD×OH×OW), the filter Q×R×S; a 2-D
// convolution has D = Q = OD = 1 and a 1-D one H = R = OH = 1 too (conv_geom right-aligns).

// Along one axis: the input position output position o reads at tap t, or -1 in the padding.
__device__ int64_t input_reading(int64_t o, int64_t t, int64_t stride, int64_t pad, int64_t dil, int64_t in) {
  const int64_t i = o * stride - pad + t * dil;
  return i >= 0 && i < in ? i : -1;
}

template <class T> __global__ void conv_naive(ConvGeom g, const T* x, const T* w, const T* b, T* y) {
  GRID_STRIDE(e, g.N * g.K * g.out_volume()) {
    const int64_t ow = e % g.OW, oh = (e / g.OW) % g.OH, od = (e / g.ohw()) % g.OD;
    const int64_t k = (e / g.out_volume()) % g.K, n = e / (g.out_volume() * g.K);
    const int64_t grp = k / g.Kg;
    T acc = b ? b[k] : T(0);
    for (int64_t c = 0; c < g.Cg; ++c) {
      const T* xp = x + (n * g.C + grp * g.Cg + c) * g.in_volume();
      const T* wp = w + (k * g.Cg + c) * g.taps();
      for (int64_t q = 0; q < g.Q; ++q) {
        const int64_t d = input_reading(od, q, g.sd, g.pd, g.dd, g.D);
        for (int64_t r = 0; d >= 0 && r < g.R; ++r) {
          const int64_t h = input_reading(oh, r, g.sh, g.ph, g.dh, g.H);
          for (int64_t s = 0; h >= 0 && s < g.S; ++s) {
            const int64_t xw = input_reading(ow, s, g.sw, g.pw, g.dw, g.W);
            if (xw >= 0) acc += xp[(d * g.H + h) * g.W + xw] * wp[(q * g.R + r) * g.S + s];
          }
        }
      }
    }
    y[e] = acc;
  }
}

// col[((c·Q + q)·R + r)·S + s, (od·OH + oh)·OW + ow] = x[n, grp·Cg + c, od·sd − pd + q·dd,
// oh·sh − ph + r·dh, ow·sw − pw + s·dw] (vol2col; im2col when D = 1).
template <class T> __global__ void im2col(ConvGeom g, const T* x, int64_t n, int64_t grp, T* col) {
  const int64_t cols = g.out_volume();
  GRID_STRIDE(e, g.col_rows() * cols) {
    const int64_t p = e % cols, row = e / cols;
    const int64_t s = row % g.S, r = (row / g.S) % g.R, q = (row / (g.S * g.R)) % g.Q, c = row / g.taps();
    const int64_t ow = p % g.OW, oh = (p / g.OW) % g.OH, od = p / g.ohw();
    const int64_t d = input_reading(od, q, g.sd, g.pd, g.dd, g.D), h = input_reading(oh, r, g.sh, g.ph, g.dh, g.H),
                  w = input_reading(ow, s, g.sw, g.pw, g.dw, g.W);
    const bool inside = d >= 0 && h >= 0 && w >= 0;
    col[e] = inside ? x[(((n * g.C + grp * g.Cg + c) * g.D + d) * g.H + h) * g.W + w] : T(0);
  }
}

// Along one axis: the output position whose window reads input position i at tap t, or -1.
__device__ int64_t output_reading(int64_t i, int64_t t, int64_t stride, int64_t pad, int64_t dil, int64_t out) {
  const int64_t u = i + pad - t * dil;
  if (u < 0 || u % stride) return -1;
  return u / stride < out ? u / stride : -1;
}

// The inverse: each input element of (n, group) sums the col entries that read it.
template <class T> __global__ void col2im(ConvGeom g, const T* col, int64_t n, int64_t grp, T* dx) {
  const int64_t cols = g.out_volume();
  GRID_STRIDE(e, g.Cg * g.in_volume()) {
    const int64_t w = e % g.W, h = (e / g.W) % g.H, d = (e / (g.W * g.H)) % g.D, c = e / g.in_volume();
    T acc = 0;
    for (int64_t q = 0; q < g.Q; ++q) {
      const int64_t od = output_reading(d, q, g.sd, g.pd, g.dd, g.OD);
      if (od < 0) continue;
      for (int64_t r = 0; r < g.R; ++r) {
        const int64_t oh = output_reading(h, r, g.sh, g.ph, g.dh, g.OH);
        if (oh < 0) continue;
        for (int64_t s = 0; s < g.S; ++s) {
          const int64_t ow = output_reading(w, s, g.sw, g.pw, g.dw, g.OW);
          if (ow >= 0) acc += col[(((c * g.Q + q) * g.R + r) * g.S + s) * cols + (od * g.OH + oh) * g.OW + ow];
        }
      }
    }
    dx[(n * g.C + grp * g.Cg + c) * g.in_volume() + e % g.in_volume()] = acc;
  }
}

template <class T> __global__ void add_bias(const T* b, T* y, int64_t N, int64_t K, int64_t plane) {
  GRID_STRIDE(e, N * K * plane) y[e] += b[(e / plane) % K];
}

template <class T> __global__ void backward_input_naive(ConvGeom g, const T* dy, const T* w, T* dx) {
  GRID_STRIDE(e, g.N * g.C * g.in_volume()) {
    const int64_t wi = e % g.W, h = (e / g.W) % g.H, d = (e / (g.W * g.H)) % g.D;
    const int64_t c = (e / g.in_volume()) % g.C, n = e / (g.in_volume() * g.C);
    const int64_t grp = c / g.Cg, cg = c % g.Cg;
    T acc = 0;
    for (int64_t kk = 0; kk < g.Kg; ++kk) {
      const int64_t k = grp * g.Kg + kk;
      for (int64_t q = 0; q < g.Q; ++q) {
        const int64_t od = output_reading(d, q, g.sd, g.pd, g.dd, g.OD);
        if (od < 0) continue;
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t oh = output_reading(h, r, g.sh, g.ph, g.dh, g.OH);
          if (oh < 0) continue;
          for (int64_t s = 0; s < g.S; ++s) {
            const int64_t ow = output_reading(wi, s, g.sw, g.pw, g.dw, g.OW);
            if (ow < 0) continue;
            acc += dy[(((n * g.K + k) * g.OD + od) * g.OH + oh) * g.OW + ow] *
                   w[(((k * g.Cg + cg) * g.Q + q) * g.R + r) * g.S + s];
          }
        }
      }
    }
    dx[e] = acc;
  }
}

template <class T> __global__ void backward_weight_naive(ConvGeom g, const T* x, const T* dy, T* dw) {
  GRID_STRIDE(e, g.K * g.Cg * g.taps()) {
    const int64_t s = e % g.S, r = (e / g.S) % g.R, q = (e / (g.S * g.R)) % g.Q;
    const int64_t c = (e / g.taps()) % g.Cg, k = e / (g.taps() * g.Cg);
    const int64_t grp = k / g.Kg;
    T acc = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* xp = x + (n * g.C + grp * g.Cg + c) * g.in_volume();
      const T* gp = dy + (n * g.K + k) * g.out_volume();
      for (int64_t od = 0; od < g.OD; ++od) {
        const int64_t d = input_reading(od, q, g.sd, g.pd, g.dd, g.D);
        for (int64_t oh = 0; d >= 0 && oh < g.OH; ++oh) {
          const int64_t h = input_reading(oh, r, g.sh, g.ph, g.dh, g.H);
          for (int64_t ow = 0; h >= 0 && ow < g.OW; ++ow) {
            const int64_t xw = input_reading(ow, s, g.sw, g.pw, g.dw, g.W);
            if (xw >= 0) acc += xp[(d * g.H + h) * g.W + xw] * gp[(od * g.OH + oh) * g.OW + ow];
          }
        }
      }
    }
    dw[e] = acc;
  }
}

Tensor as(const Tensor& t, DType dt) { return dense(t.dtype() == dt ? t : t.cast(dt)); }

void check_int(const ConvGeom& g) {
  if (g.Kg > INT32_MAX || g.out_volume() > INT32_MAX || g.col_rows() > INT32_MAX)
    throw Error("conv: the CUDA im2col kernel takes GEMM sizes below 2^31");
}

void forward(KernelCtx& k, bool im2col_algo) {
  const Tensor& y = k.out();
  if (y.numel() == 0) return;
  const DType dt = y.dtype();
  const Tensor x = as(k.in(0), dt), w = as(k.in(1), dt);
  const Tensor b = k.inputs.size() > 2 && k.in(2).defined() ? as(k.in(2), dt) : Tensor();
  const ConvGeom g = conv_geom(x.shape(), w.shape(), k.attrs);
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    const T* pb = b.defined() ? b.data<T>() : nullptr;
    if (!im2col_algo) {
      conv_naive<T><<<grid_for(y.numel()), kThreads, 0, stream()>>>(g, x.data<T>(), w.data<T>(), pb, y.data<T>());
      OPSCOPE_CUDA_LAUNCHED("conv_naive");
      return;
    }
    check_int(g);
    const int64_t crs = g.col_rows(), cols = g.out_volume();
    Tensor col = k.workspace({crs, cols}, dt);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        im2col<T><<<grid_for(crs * cols), kThreads, 0, stream()>>>(g, x.data<T>(), n, grp, col.data<T>());
        OPSCOPE_CUDA_LAUNCHED("im2col");
        gemm<T>(false, false, int(g.Kg), int(cols), int(crs), w.data<T>() + grp * g.Kg * crs, col.data<T>(),
                y.data<T>() + (n * g.K + grp * g.Kg) * cols, false);
      }
    if (pb) {
      add_bias<T><<<grid_for(y.numel()), kThreads, 0, stream()>>>(pb, y.data<T>(), g.N, g.K, cols);
      OPSCOPE_CUDA_LAUNCHED("add_bias");
    }
  });
}

// conv2d_backward_input: inputs (dy, w), output dx with the attribute input_shape.
void backward_input(KernelCtx& k, bool im2col_algo) {
  const Tensor& dx = k.out();
  if (dx.numel() == 0) return;
  const DType dt = dx.dtype();
  const Tensor dy = as(k.in(0), dt), w = as(k.in(1), dt);
  const ConvGeom g = conv_geom(dx.shape(), w.shape(), k.attrs);
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    if (!im2col_algo || dy.numel() == 0) {
      backward_input_naive<T>
          <<<grid_for(dx.numel()), kThreads, 0, stream()>>>(g, dy.data<T>(), w.data<T>(), dx.data<T>());
      OPSCOPE_CUDA_LAUNCHED("backward_input_naive");
      return;
    }
    check_int(g);
    const int64_t crs = g.col_rows(), cols = g.out_volume();
    Tensor col = k.workspace({crs, cols}, dt);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        // col [crs, cols] = W_gᵀ [crs, Kg] · dy_g [Kg, cols]
        gemm<T>(true, false, int(crs), int(cols), int(g.Kg), w.data<T>() + grp * g.Kg * crs,
                dy.data<T>() + (n * g.K + grp * g.Kg) * cols, col.data<T>(), false);
        col2im<T><<<grid_for(g.Cg * g.in_volume()), kThreads, 0, stream()>>>(g, col.data<T>(), n, grp, dx.data<T>());
        OPSCOPE_CUDA_LAUNCHED("col2im");
      }
  });
}

// conv2d_backward_weight: inputs (x, dy), output dw with the attribute weight_shape.
void backward_weight(KernelCtx& k, bool im2col_algo) {
  const Tensor& dw = k.out();
  if (dw.numel() == 0) return;
  const DType dt = dw.dtype();
  const Tensor x = as(k.in(0), dt), dy = as(k.in(1), dt);
  const ConvGeom g = conv_geom(x.shape(), dw.shape(), k.attrs);
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    if (!im2col_algo || dy.numel() == 0) {
      backward_weight_naive<T>
          <<<grid_for(dw.numel()), kThreads, 0, stream()>>>(g, x.data<T>(), dy.data<T>(), dw.data<T>());
      OPSCOPE_CUDA_LAUNCHED("backward_weight_naive");
      return;
    }
    check_int(g);
    const int64_t crs = g.col_rows(), cols = g.out_volume();
    Tensor col = k.workspace({crs, cols}, dt);
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        im2col<T><<<grid_for(crs * cols), kThreads, 0, stream()>>>(g, x.data<T>(), n, grp, col.data<T>());
        OPSCOPE_CUDA_LAUNCHED("im2col");
        // dW_g [Kg, crs] (+)= dy_g [Kg, cols] · colᵀ [cols, crs]
        gemm<T>(false, true, int(g.Kg), int(crs), int(cols), dy.data<T>() + (n * g.K + grp * g.Kg) * cols,
                col.data<T>(), dw.data<T>() + grp * g.Kg * crs, n > 0);
      }
  });
}

// conv_transposeNd: inputs (x, w, bias?), y = convNd_backward_input(x, w) (+ b per channel).
void transpose(KernelCtx& k, bool im2col_algo) {
  backward_input(k, im2col_algo);
  const Tensor& y = k.out();
  if (k.inputs.size() < 3 || !k.in(2).defined() || y.numel() == 0) return;
  const Tensor b = as(k.in(2), y.dtype());
  visit_float(y.dtype(), k.op.name, [&](auto z) {
    using T = decltype(z);
    const int64_t N = y.shape()[0], K = y.shape()[1];
    add_bias<T><<<grid_for(y.numel()), kThreads, 0, stream()>>>(b.data<T>(), y.data<T>(), N, K, y.numel() / (N * K));
    OPSCOPE_CUDA_LAUNCHED("add_bias");
  });
}

// One set of kernels for every rank (conv_geom right-aligns: 2-D has D = Q = OD = 1, 1-D also
// H = R = OH = 1), as the CPU's vol2col serves 3-D.
OPSCOPE_CUDA_REGISTER(register_conv_kernels) {
  for (const std::string rank : {"1d", "2d", "3d"}) {
    for (const char* algo : {"im2col", "naive"}) {
      const bool im2col_algo = std::string(algo) == "im2col";
      add_kernel("conv_transpose" + rank, algo, [im2col_algo](KernelCtx& k) { transpose(k, im2col_algo); });
      add_kernel("conv" + rank, algo, [im2col_algo](KernelCtx& k) { forward(k, im2col_algo); });
      add_kernel("conv" + rank + "_backward_input", algo,
                 [im2col_algo](KernelCtx& k) { backward_input(k, im2col_algo); });
      add_kernel("conv" + rank + "_backward_weight", algo,
                 [im2col_algo](KernelCtx& k) { backward_weight(k, im2col_algo); });
    }
  }
}

}  // namespace
}  // namespace opscope::cuda
