// Convolution over 1, 2 and 3 spatial axes (conv1d [N, C, L], conv2d [N, C, H, W], conv3d
// [N, C, D, H, W]), one family declared once per rank. conv2d has five algorithms side by side
// ("im2col", the default; "naive", the seven loops of the course; "winograd" F(2×2, 3×3);
// "fft"; "onednn", oneDNN's primitives in float32), conv1d and conv3d the first two. Each rank
// has two dedicated backward ops (convNd_backward_input, col2im, and convNd_backward_weight) and
// conv_transposeNd, which is convNd_backward_input read as a layer of its own (U-Net's and GANs'
// upsampling). conv1d is a 2-D problem of height 1 and runs the 2-D kernels unchanged; conv3d's
// im2col gathers Q·R·S taps per channel (vol2col).
//
// Shape letters: N batch, C input channels, H×W input size, K output channels, R×S kernel
// size, OH×OW output size, G groups (Cg = C/G input and Kg = K/G output channels per group).
// Stride, padding and dilation are an int or a pair (h, w), as in PyTorch; along H with stride
// sh, padding ph and dilation dh (likewise W with sw, pw, dw):
//   OH = (H + 2ph − dh·(R − 1) − 1) / sh + 1
//   y[n, k, oh, ow] = b[k] + Σ_{c<Cg, r<R, s<S} x[n, g·Cg + c, oh·sh − ph + r·dh, ow·sw − pw + s·dw] · w[k, c, r, s]
// where g = k / Kg and x is zero outside [0, H) × [0, W); conv3d adds the depth axis (D, Q, OD)
// the same way.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <type_traits>
#include <unsupported/Eigen/FFT>

#include "core/parallel.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu_util.h"
#include "ops/gemm.h"
#include "ops/geometry.h"
#include "ops/onednn_conv.h"

namespace opscope {
namespace {

using cpu::gc;
using V = std::vector<int64_t>;

// ---------------------------------------------------------------------------------------------
// Geometry: ConvGeom and conv_out_size (ops/geometry.h, shared with the CUDA kernels)

std::vector<AttrSpec> conv_attrs(int axes) {
  return {make_axes_attr("stride", 1, "step between output positions: n, or one per spatial axis", axes, 1),
          make_axes_attr("padding", 0, "zeros added on both sides of each spatial axis: n, or one per axis", axes, 0),
          make_axes_attr("dilation", 1, "spacing between kernel taps (1 = dense kernel): n, or one per axis", axes, 1),
          make_attr("groups", AttrType::integer, int64_t{1},
                    "channel groups: output group g sees only input group g (C and K must be multiples)", 1)};
}

// The spatial axes of a conv call: one per entry of its stride.
size_t spatial_axes(const Attrs& a) { return a.ints("stride").size(); }

// The op names of one rank: "conv" + "3d" and so on.
std::string ranked(const std::string& stem, size_t axes) { return stem + std::to_string(axes) + "d"; }

// "Q×R×S" of a shape's spatial axes (from index 2).
std::string spatial_str(const Shape& s) {
  std::string r;
  for (size_t i = 2; i < s.size(); ++i) r += (i > 2 ? "×" : "") + std::to_string(s[i]);
  return r;
}

// [N, K, OD, OH, OW] with only the spatial axes of the call's rank.
Shape conv_out_shape(const ConvGeom& g) {
  const Shape full = {g.OD, g.OH, g.OW};
  Shape y = {g.N, g.K};
  y.insert(y.end(), full.end() - g.spatial, full.end());
  return y;
}

// The axes a bias gradient sums over: N and every spatial axis.
V bias_sum_axes(size_t rank) {
  V axes = {0};
  for (size_t i = 2; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  return axes;
}

AttrMap conv_attr_map(const Attrs& a) {
  return {{"stride", a.ints("stride")},
          {"padding", a.ints("padding")},
          {"dilation", a.ints("dilation")},
          {"groups", a.i("groups")}};
}

// Checks an input of shape x against a weight of shape w for the call's attributes (the rules
// every conv op shares) and returns the geometry. `xname` names where x's shape came from.
ConvGeom check_conv(const InferCtx& c, const Shape& x, const Shape& w, const std::string& xname) {
  const Attrs& a = c.attrs;
  const size_t axes = spatial_axes(a), rank = axes + 2;
  const std::string op = ranked("conv", axes);
  if (x.size() != rank) {
    std::string batched = "[1";
    for (int64_t v : x) batched += ", " + std::to_string(v);
    c.fail(xname + " must be " + std::to_string(rank) + "-D " + spatial_layout(axes) + ", got " + shape_str(x) +
               " (rank " + std::to_string(x.size()) + ")",
           (x.size() >= 3 && x.size() <= 5
                ? "for a " + spatial_layout(x.size() - 2) + " input use " + ranked("conv", x.size() - 2)
                : op + " works on " + spatial_layout(axes) + ": batch, channels, then the spatial axes") +
               (x.size() + 1 == rank ? "; for one unbatched example add a batch axis: reshape(x, " + batched + "])"
                                     : ""));
  }
  if (w.size() != rank)
    c.fail("weight must be " + std::to_string(rank) + "-D [K, C/groups, " +
               (axes == 1   ? "S"
                : axes == 2 ? "R, S"
                            : "Q, R, S") +
               "], got " + shape_str(w) + " (rank " + std::to_string(w.size()) + ")",
           "weight holds K filters of C/groups channels and one tap per kernel position");
  const int64_t G = a.i("groups");
  if (x[1] % G != 0)
    c.fail(xname + " has " + std::to_string(x[1]) + " channels, which groups=" + std::to_string(G) +
               " does not divide (" + xname + " " + shape_str(x) + ")",
           "input channels C and output channels K must both be multiples of groups");
  if (w[0] % G != 0)
    c.fail("weight has " + std::to_string(w[0]) + " output channels, which groups=" + std::to_string(G) +
               " does not divide (weight " + shape_str(w) + ")",
           "input channels C and output channels K must both be multiples of groups");
  if (w[1] != x[1] / G)
    c.fail(xname + " has " + std::to_string(x[1]) + " channels but weight expects " + std::to_string(w[1] * G) +
               " (weight " + shape_str(w) + ", groups=" + std::to_string(G) + ")",
           "weight must be [K, C/groups, kernel...] = [" + std::to_string(w[0]) + ", " + std::to_string(x[1] / G) +
               ", " + spatial_str(w) + "] for this input");
  for (size_t i = 2; i < rank; ++i)
    if (w[i] < 1) c.fail("kernel must be at least 1 along every axis, got weight " + shape_str(w));
  const ConvGeom g = conv_geom(x, w, a);
  if (g.OD <= 0 || g.OH <= 0 || g.OW <= 0) {
    const auto &pad = a.ints("padding"), &dil = a.ints("dilation");
    std::string padded, dilated;
    for (size_t i = 0; i < axes; ++i) {
      padded += (i ? "×" : "") + std::to_string(x[2 + i] + 2 * pad[i]);
      dilated += (i ? "×" : "") + std::to_string(dil[i] * (w[2 + i] - 1) + 1);
    }
    c.fail(
        "output would be empty: " + xname + " " + shape_str(x) + " padded by " + attr_value_str(a.get("padding")) +
            " is " + padded + ", smaller than the dilated kernel " + dilated + " (weight " + shape_str(w) +
            ", dilation=" + attr_value_str(a.get("dilation")) + ")",
        "OH = (H + 2·padding − dilation·(R − 1) − 1) / stride + 1 must be >= 1 along every axis: add padding or use a "
        "smaller kernel or dilation");
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// Forward algorithms. Each gets contiguous x, w, optional bias b (nullptr) and the output y.

// naive: the seven nested loops of the course (n, k, oh, ow, c, r, s), literally, with the
// depth axis (od, q) around them for conv3d (a single pass when D = 1). Each output reads
// Cg·Q·R·S inputs scattered over Cg volumes, with a bounds test per tap (the padding).
//
// Calls f(x index, w index, y index) for every tap that lands inside x.
template <class F> void for_each_tap(const ConvGeom& g, F f) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t od = 0; od < g.OD; ++od)
        for (int64_t oh = 0; oh < g.OH; ++oh)
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t grp = k / g.Kg, yi = (((n * g.K + k) * g.OD + od) * g.OH + oh) * g.OW + ow;
            for (int64_t c = 0; c < g.Cg; ++c)
              for (int64_t q = 0; q < g.Q; ++q)
                for (int64_t r = 0; r < g.R; ++r)
                  for (int64_t s = 0; s < g.S; ++s) {
                    const int64_t id = od * g.sd - g.pd + q * g.dd, ih = oh * g.sh - g.ph + r * g.dh,
                                  iw = ow * g.sw - g.pw + s * g.dw;
                    if (id < 0 || id >= g.D || ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                    f((((n * g.C + grp * g.Cg + c) * g.D + id) * g.H + ih) * g.W + iw,
                      (((k * g.Cg + c) * g.Q + q) * g.R + r) * g.S + s, yi);
                  }
          }
}

template <class T> void conv_naive(const KernelCtx&, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  for (int64_t i = 0; i < g.N * g.K; ++i)
    std::fill(y + i * g.out_volume(), y + (i + 1) * g.out_volume(), b ? b[i % g.K] : T(0));
  for_each_tap(g, [&](int64_t xi, int64_t wi, int64_t yi) { y[yi] += x[xi] * w[wi]; });
}

// im2col and col2im run the kernels of ops/cpu/im2col.cpp (built per instruction set) on the
// thread pool: im2col over rows of the column buffer, col2im over channels.
cpu::ConvWindow window_of(const ConvGeom& g) {
  return {g.Cg, g.H, g.W, g.R, g.S, g.OH, g.OW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw};
}

// vol2col: im2col over three spatial axes, rows [q0, q1) of
// col[((c·Q + q)·R + r)·S + s][(od·OH + oh)·OW + ow] = x[c, od·sd − pd + q·dd, oh·sh − ph + r·dh, ow·sw − pw + s·dw].
// (The 2-D kernels of ops/cpu serve every planar geometry, conv1d's included.)
template <class T> void vol2col_rows(const ConvGeom& g, const T* xc, T* col, int64_t q0, int64_t q1) {
  for (int64_t row = q0; row < q1; ++row) {
    const int64_t s = row % g.S, r = (row / g.S) % g.R, q = (row / (g.S * g.R)) % g.Q, c = row / g.taps();
    T* out = col + row * g.out_volume();
    for (int64_t od = 0; od < g.OD; ++od)
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        const int64_t id = od * g.sd - g.pd + q * g.dd, ih = oh * g.sh - g.ph + r * g.dh;
        const bool inside = id >= 0 && id < g.D && ih >= 0 && ih < g.H;
        const T* line = xc + ((c * g.D + id) * g.H + ih) * g.W;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t iw = ow * g.sw - g.pw + s * g.dw;
          *out++ = inside && iw >= 0 && iw < g.W ? line[iw] : T(0);
        }
      }
  }
}

// col2vol: the adjoint, channels [c0, c1) (each channel's rows write only its own volume).
template <class T> void col2vol_channels(const ConvGeom& g, const T* col, T* dxc, int64_t c0, int64_t c1) {
  for (int64_t row = c0 * g.taps(); row < c1 * g.taps(); ++row) {
    const int64_t s = row % g.S, r = (row / g.S) % g.R, q = (row / (g.S * g.R)) % g.Q, c = row / g.taps();
    const T* in = col + row * g.out_volume();
    for (int64_t od = 0; od < g.OD; ++od)
      for (int64_t oh = 0; oh < g.OH; ++oh, in += g.OW) {
        const int64_t id = od * g.sd - g.pd + q * g.dd, ih = oh * g.sh - g.ph + r * g.dh;
        if (id < 0 || id >= g.D || ih < 0 || ih >= g.H) continue;
        T* line = dxc + ((c * g.D + id) * g.H + ih) * g.W;
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t iw = ow * g.sw - g.pw + s * g.dw;
          if (iw >= 0 && iw < g.W) line[iw] += in[ow];
        }
      }
  }
}

// col[(c·R + r)·S + s][oh·OW + ow] = x[c, oh·sh − ph + r·dh, ow·sw − pw + s·dw] (0 outside), for one
// image and one group; xc points at channel g·Cg of image n. Rows [q0, q1) only.
template <class T> void im2col_rows(const ConvGeom& g, const T* xc, T* col, int64_t q0, int64_t q1) {
  if (g.planar()) cpu::kern<T>().im2col_rows(xc, col, q0, q1, window_of(g));
  else vol2col_rows(g, xc, col, q0, q1);
}

// col2im: the adjoint of im2col, dx[c, ih, iw] += col[row][oh·OW + ow] (overlapping windows add).
template <class T> void col2im_channels(const ConvGeom& g, const T* col, T* dxc, int64_t c0, int64_t c1) {
  if (g.planar()) cpu::kern<T>().col2im_channels(col, dxc, c0, c1, window_of(g));
  else col2vol_channels(g, col, dxc, c0, c1);
}

template <class T> void im2col(const ConvGeom& g, const T* xc, T* col) {
  parallel_for(g.col_rows(), grain_for(static_cast<double>(g.out_volume())),
               [&](int64_t q0, int64_t q1) { im2col_rows(g, xc, col, q0, q1); });
}

template <class T> void col2im(const ConvGeom& g, const T* col, T* dxc) {
  parallel_for(g.Cg, grain_for(static_cast<double>(g.taps() * g.out_volume())),
               [&](int64_t c0, int64_t c1) { col2im_channels(g, col, dxc, c0, c1); });
}

// How the im2col algorithms use the threads: with many images (and groups), each (image,
// group) is one item on one thread, with a column buffer per thread; with few, the items run
// one after another and each spreads its own im2col and GEMM over the threads. The choice
// depends on the shape and the machine's cores, never on the thread setting, so the bits do
// not either. The cost model reports the same buffers the kernels take.
struct Im2colPlan {
  bool per_item = false;
  int64_t items = 1, grain = 1;
  int workers = 1;  // column buffers
};

Im2colPlan im2col_plan(const ConvGeom& g) {
  Im2colPlan p;
  p.items = g.N * g.G;
  p.per_item = p.items >= 2 * hardware_threads();
  if (p.per_item) {
    p.grain = grain_for(2.0 * static_cast<double>(g.Kg) * static_cast<double>(g.col_rows()) *
                        static_cast<double>(g.out_volume()));
    p.workers = parallel_workers(p.items, p.grain);
  }
  return p;
}

// Runs item(i, col) for every (image, group) i = n·G + grp, with col a Cg·R·S × OH·OW buffer;
// `serial_im2col` tells the item whether it is alone on its thread.
template <class T, class F> void for_each_item(const KernelCtx& k, const ConvGeom& g, F item) {
  const Im2colPlan plan = im2col_plan(g);
  Tensor col_t = k.workspace({plan.workers, g.col_rows(), g.out_volume()}, k.out().dtype());
  T* col = col_t.data<T>();
  if (!plan.per_item) {
    for (int64_t i = 0; i < plan.items; ++i) item(i, col, false);
    return;
  }
  parallel_for_indexed(plan.items, plan.grain, [&](int worker, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) item(i, col + worker * g.col_rows() * g.out_volume(), true);
  });
}

// im2col of one item: on this thread only, or spread over the threads.
template <class T> void im2col_item(const ConvGeom& g, const T* xc, T* col, bool on_this_thread) {
  if (on_this_thread) im2col_rows(g, xc, col, 0, g.col_rows());
  else im2col(g, xc, col);
}

template <class T>
void gemm_item(bool on_this_thread, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
               const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const cpu::ConstMatrix<T> a{A, lda, !ta}, b{B, ldb, !tb};
  if (on_this_thread) cpu::gemm_serial<T>(cpu::default_gemm(), M, N, K, a, b, T(1), beta, C, ldc);
  else cpu::gemm<T>(cpu::default_gemm(), M, N, K, a, b, T(1), beta, C, ldc);
}

// im2col: per image and group, y[n, g] (Kg × OH·OW) = W_g (Kg × Cg·R·S) · col (Cg·R·S × OH·OW)
// (conv3d: Cg·Q·R·S rows and OD·OH·OW columns),
// one GEMM through OpenBLAS (ops/gemm.h). The col buffers (Cg·R·S·OH·OW elements) are workspace.
template <class T> void conv_im2col(const KernelCtx& k, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  for_each_item<T>(k, g, [&](int64_t i, T* col, bool alone) {
    const int64_t n = i / g.G, grp = i % g.G;
    im2col_item(g, x + (n * g.C + grp * g.Cg) * g.in_volume(), col, alone);
    T* out = y + (n * g.K + grp * g.Kg) * g.out_volume();
    if (b)  // y = b, then y += W·col
      for (int64_t kk = 0; kk < g.Kg; ++kk)
        std::fill(out + kk * g.out_volume(), out + (kk + 1) * g.out_volume(), b[grp * g.Kg + kk]);
    gemm_item<T>(alone, false, false, g.Kg, g.out_volume(), g.col_rows(), w + grp * g.Kg * g.col_rows(), g.col_rows(),
                 col, g.out_volume(), b ? T(1) : T(0), out, g.out_volume());
  });
}

// winograd F(2×2, 3×3): each 2×2 output tile from a 4×4 input tile d as Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A,
// 16 multiplications instead of 36. Summed over channels, the ⊙ stage becomes 16 GEMMs
// M[ξ] (Kg × tiles) = U[ξ] (Kg × Cg) · V[ξ] (Cg × tiles), one per position ξ of the 4×4 tile, over
// the tiles of all N images, taken kWinogradBlock tiles at a time so that V and M stay in cache.
// Workspace: U, V, M (16·(Kg·Cg + Cg·TB + Kg·TB) elements, TB = min(tiles, kWinogradBlock)).
//   G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1]   Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]   Aᵀ = [1 1 1 0; 0 1 −1 −1]
constexpr int64_t kWinogradBlock = 256;

// Padding may differ along H and W; a non-square kernel, a stride or a dilation may not.
bool winograd_fits(const ConvGeom& g) {
  return g.R == 3 && g.S == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1;
}

void check_winograd(const ConvGeom& g) {
  if (winograd_fits(g)) return;
  auto pair = [](int64_t h, int64_t w) {
    return h == w ? std::to_string(h) : "(" + std::to_string(h) + ", " + std::to_string(w) + ")";
  };
  std::string got = std::to_string(g.R) + "×" + std::to_string(g.S) + " stride " + pair(g.sh, g.sw);
  if (g.dh != 1 || g.dw != 1) got += " dilation " + pair(g.dh, g.dw);
  throw Error("conv2d: winograd: needs a 3×3 kernel with stride 1 and dilation 1, got " + got,
              "use algo=\"im2col\" (the default) or \"fft\" for other kernels, strides and dilations");
}

template <class T> void conv_winograd(const KernelCtx& k, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  check_winograd(g);
  const int64_t tH = (g.OH + 1) / 2, tW = (g.OW + 1) / 2, per_image = tH * tW, T_ = g.N * per_image;
  const int64_t Kg = g.Kg, Cg = g.Cg, TB = std::min(T_, kWinogradBlock);
  const DType dt = k.out().dtype();
  Tensor Ut = k.workspace({16, Kg, Cg}, dt), Vt = k.workspace({16, Cg, TB}, dt), Mt = k.workspace({16, Kg, TB}, dt);
  T *U = Ut.data<T>(), *Vb = Vt.data<T>(), *M = Mt.data<T>();
  for (int64_t grp = 0; grp < g.G; ++grp) {
    // Filter transform: U[ξ][k][c] = (G f Gᵀ)[ξ].
    for (int64_t kk = 0; kk < Kg; ++kk)
      for (int64_t c = 0; c < Cg; ++c) {
        const T* f = w + ((grp * Kg + kk) * Cg + c) * 9;
        T t[4][3], u[4][4];
        for (int j = 0; j < 3; ++j) {
          t[0][j] = f[j];
          t[1][j] = T(0.5) * (f[j] + f[3 + j] + f[6 + j]);
          t[2][j] = T(0.5) * (f[j] - f[3 + j] + f[6 + j]);
          t[3][j] = f[6 + j];
        }
        for (int i = 0; i < 4; ++i) {
          u[i][0] = t[i][0];
          u[i][1] = T(0.5) * (t[i][0] + t[i][1] + t[i][2]);
          u[i][2] = T(0.5) * (t[i][0] - t[i][1] + t[i][2]);
          u[i][3] = t[i][2];
        }
        for (int xi = 0; xi < 16; ++xi) U[(xi * Kg + kk) * Cg + c] = u[xi / 4][xi % 4];
      }
    // Tiles in blocks of TB (so V and M stay in cache): tile t = (n·tH + th)·tW + tw.
    for (int64_t t0 = 0; t0 < T_; t0 += TB) {
      const int64_t nb = std::min(TB, T_ - t0), step_v = Cg * nb, step_m = Kg * nb;
      // Input transform: V[ξ][c][t] = (Bᵀ d B)[ξ] for the 4×4 tile at (2·th − p, 2·tw − p).
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t tt = 0; tt < nb; ++tt) {
          const int64_t t = t0 + tt, n = t / per_image, th = (t % per_image) / tW, tw = t % tW;
          const T* plane = x + (n * g.C + grp * Cg + c) * g.H * g.W;
          T d[4][4], bd[4][4];
          const int64_t h0 = 2 * th - g.ph, w0 = 2 * tw - g.pw;
          if (h0 >= 0 && h0 + 4 <= g.H && w0 >= 0 && w0 + 4 <= g.W) {  // interior tile: no bounds tests
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) d[i][j] = plane[(h0 + i) * g.W + w0 + j];
          } else {
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                const int64_t ih = h0 + i, iw = w0 + j;
                d[i][j] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? plane[ih * g.W + iw] : T(0);
              }
          }
          for (int j = 0; j < 4; ++j) {
            bd[0][j] = d[0][j] - d[2][j];
            bd[1][j] = d[1][j] + d[2][j];
            bd[2][j] = d[2][j] - d[1][j];
            bd[3][j] = d[1][j] - d[3][j];
          }
          for (int i = 0; i < 4; ++i) {
            T* v = Vb + (i * 4) * step_v + c * nb + tt;  // position ξ = 4i + j is j·step_v further
            v[0] = bd[i][0] - bd[i][2];
            v[step_v] = bd[i][1] + bd[i][2];
            v[2 * step_v] = bd[i][2] - bd[i][1];
            v[3 * step_v] = bd[i][1] - bd[i][3];
          }
        }
      // The multiply-accumulate over channels: 16 GEMMs [Kg × Cg]·[Cg × nb].
      for (int64_t xi = 0; xi < 16; ++xi)
        cpu::gemm<T>(cpu::default_gemm(), false, false, Kg, nb, Cg, T(1), U + xi * Kg * Cg, Cg, Vb + xi * step_v, nb,
                     T(0), M + xi * step_m, nb);
      // Output transform Y = Aᵀ m A, writing only the part of a tile inside OH × OW.
      for (int64_t kk = 0; kk < Kg; ++kk) {
        const T bias = b ? b[grp * Kg + kk] : T(0);
        for (int64_t tt = 0; tt < nb; ++tt) {
          const int64_t t = t0 + tt, n = t / per_image, th = (t % per_image) / tW, tw = t % tW;
          T* out = y + (n * g.K + grp * Kg + kk) * g.ohw();
          const T* m = M + kk * nb + tt;
          T am[2][4];
          for (int j = 0; j < 4; ++j) {
            const T m0 = m[j * step_m], m1 = m[(4 + j) * step_m], m2 = m[(8 + j) * step_m], m3 = m[(12 + j) * step_m];
            am[0][j] = m0 + m1 + m2;
            am[1][j] = m1 - m2 - m3;
          }
          for (int i = 0; i < 2; ++i) {
            const int64_t oh = 2 * th + i;
            if (oh >= g.OH) break;
            out[oh * g.OW + 2 * tw] = am[i][0] + am[i][1] + am[i][2] + bias;
            if (2 * tw + 1 < g.OW) out[oh * g.OW + 2 * tw + 1] = am[i][1] - am[i][2] - am[i][3] + bias;
          }
        }
      }
    }
  }
}

// fft: correlation theorem. On P×Q planes (P >= H + 2ph, Q >= W + 2pw, sizes with factors 2, 3, 5
// only, where kissfft is fastest) the stride-1 result is
//   y1 = IFFT2( Σ_c FFT2(x_pad[c]) ⊙ conj(FFT2(w_dil[k, c])) )   (real part)
// with w_dil the kernel with dh − 1 zeros between rows and dw − 1 between columns of taps
// (dilation). No wrap-around reaches the valid outputs, since oh·sh + r·dh <= H + 2ph − 1 < P.
// Strides (sh, sw) keep every sh-th row and sw-th column.
// 2-D FFTs are 1-D FFTs over the rows, then over the columns. Workspace per group:
// N·Cg input spectra, Cg filter spectra, one output spectrum, two line buffers (complex).
int64_t fft_size(int64_t n) {
  for (int64_t m = std::max<int64_t>(n, 2);; ++m) {  // Eigen's kissfft fails for n = 1
    int64_t r = m;
    for (int64_t f : {2, 3, 5})
      while (r % f == 0) r /= f;
    if (r == 1) return m;
  }
}

struct FftPlan {
  int64_t P, Q, planes;  // spectra held at once: N·Cg + Cg + 1
};
FftPlan fft_plan(const ConvGeom& g) {
  return {fft_size(g.H + 2 * g.ph), fft_size(g.W + 2 * g.pw), g.N * g.Cg + g.Cg + 1};
}

template <class T> struct Fft2 {
  using Cx = std::complex<T>;
  Eigen::FFT<T> fft;
  Cx *a, *b;  // line buffers of max(P, Q)
  int64_t P, Q;
  Fft2(Cx* lines, int64_t p, int64_t q) : a(lines), b(lines + std::max(p, q)), P(p), Q(q) {
    fft.SetFlag(Eigen::FFT<T>::Unscaled);  // the inverse is scaled once, by 1/(P·Q), on extraction
  }
  void run(Cx* plane, bool inverse) {
    for (int64_t p = 0; p < P; ++p) {
      std::copy(plane + p * Q, plane + (p + 1) * Q, a);
      if (inverse) fft.inv(plane + p * Q, a, Q);
      else fft.fwd(plane + p * Q, a, Q);
    }
    for (int64_t q = 0; q < Q; ++q) {
      for (int64_t p = 0; p < P; ++p) a[p] = plane[p * Q + q];
      if (inverse) fft.inv(b, a, P);
      else fft.fwd(b, a, P);
      for (int64_t p = 0; p < P; ++p) plane[p * Q + q] = b[p];
    }
  }
};

template <class T> void conv_fft(const KernelCtx& k, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  using Cx = std::complex<T>;
  using CxArray = Eigen::Array<Cx, Eigen::Dynamic, 1>;
  const FftPlan pl = fft_plan(g);
  const int64_t P = pl.P, Q = pl.Q, PQ = P * Q;
  const DType dt = k.out().dtype();
  // Complex buffers as pairs of reals: the tracker sees them as workspace like any other.
  Tensor spec_t = k.workspace({pl.planes, PQ, 2}, dt), line_t = k.workspace({2 * std::max(P, Q), 2}, dt);
  Cx* spec = reinterpret_cast<Cx*>(spec_t.data<T>());
  Cx* Xh = spec;  // [N][Cg][P·Q]
  Cx* Wh = spec + g.N * g.Cg * PQ;  // [Cg][P·Q]
  Cx* Yh = Wh + g.Cg * PQ;  // [P·Q]
  Fft2<T> fft(reinterpret_cast<Cx*>(line_t.data<T>()), P, Q);
  const T scale = T(1) / static_cast<T>(PQ);
  for (int64_t grp = 0; grp < g.G; ++grp) {
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t c = 0; c < g.Cg; ++c) {
        Cx* plane = Xh + (n * g.Cg + c) * PQ;
        std::fill(plane, plane + PQ, Cx(0));
        const T* src = x + (n * g.C + grp * g.Cg + c) * g.H * g.W;
        for (int64_t ih = 0; ih < g.H; ++ih)
          for (int64_t iw = 0; iw < g.W; ++iw) plane[(ih + g.ph) * Q + iw + g.pw] = Cx(src[ih * g.W + iw]);
        fft.run(plane, false);
      }
    for (int64_t kk = 0; kk < g.Kg; ++kk) {
      const int64_t ko = grp * g.Kg + kk;
      for (int64_t c = 0; c < g.Cg; ++c) {
        Cx* plane = Wh + c * PQ;
        std::fill(plane, plane + PQ, Cx(0));
        const T* f = w + (ko * g.Cg + c) * g.R * g.S;
        for (int64_t r = 0; r < g.R; ++r)
          for (int64_t s = 0; s < g.S; ++s) plane[r * g.dh * Q + s * g.dw] = Cx(f[r * g.S + s]);
        fft.run(plane, false);
        Eigen::Map<CxArray>(plane, PQ) = Eigen::Map<CxArray>(plane, PQ).conjugate();
      }
      for (int64_t n = 0; n < g.N; ++n) {
        Eigen::Map<CxArray> acc(Yh, PQ);
        acc.setZero();
        for (int64_t c = 0; c < g.Cg; ++c)
          acc += Eigen::Map<const CxArray>(Xh + (n * g.Cg + c) * PQ, PQ) * Eigen::Map<const CxArray>(Wh + c * PQ, PQ);
        fft.run(Yh, true);
        T* out = y + (n * g.K + ko) * g.ohw();
        const T bias = b ? b[ko] : T(0);
        for (int64_t oh = 0; oh < g.OH; ++oh)
          for (int64_t ow = 0; ow < g.OW; ++ow)
            out[oh * g.OW + ow] = Yh[oh * g.sh * Q + ow * g.sw].real() * scale + bias;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward algorithms.
// dx: dcol (Cg·R·S × OH·OW) = W_gᵀ · dy[n, g], then col2im into dx[n, g].
// dw: dW_g (Kg × Cg·R·S) += dy[n, g] · colᵀ, with col = im2col(x[n, g]).

template <class T> void backward_input_im2col(const KernelCtx& k, const ConvGeom& g, const T* dy, const T* w, T* dx) {
  std::fill(dx, dx + g.N * g.C * g.in_volume(), T(0));
  for_each_item<T>(k, g, [&](int64_t i, T* col, bool alone) {
    const int64_t n = i / g.G, grp = i % g.G;
    gemm_item<T>(alone, true, false, g.col_rows(), g.out_volume(), g.Kg, w + grp * g.Kg * g.col_rows(), g.col_rows(),
                 dy + (n * g.K + grp * g.Kg) * g.out_volume(), g.out_volume(), T(0), col, g.out_volume());
    T* dxc = dx + (n * g.C + grp * g.Cg) * g.in_volume();
    if (alone) col2im_channels(g, col, dxc, 0, g.Cg);
    else col2im(g, col, dxc);
  });
}

template <class T> void backward_input_naive(const KernelCtx&, const ConvGeom& g, const T* dy, const T* w, T* dx) {
  std::fill(dx, dx + g.N * g.C * g.in_volume(), T(0));
  for_each_tap(g, [&](int64_t xi, int64_t wi, int64_t yi) { dx[xi] += dy[yi] * w[wi]; });
}

// dW sums over the images: with many images, fixed ranges of images (at most 16, fixed by the
// shape) each sum into their own dW, and the ranges are added in order.
constexpr int64_t kWeightRanges = 16;

template <class T> void backward_weight_im2col(const KernelCtx& k, const ConvGeom& g, const T* x, const T* dy, T* dw) {
  const int64_t wsize = g.K * g.col_rows();
  std::fill(dw, dw + wsize, T(0));
  const Im2colPlan plan = im2col_plan(g);
  if (!plan.per_item) {
    Tensor col_t = k.workspace({g.col_rows(), g.out_volume()}, k.out().dtype());
    T* col = col_t.data<T>();
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        im2col(g, x + (n * g.C + grp * g.Cg) * g.in_volume(), col);
        gemm_item<T>(false, false, true, g.Kg, g.col_rows(), g.out_volume(),
                     dy + (n * g.K + grp * g.Kg) * g.out_volume(), g.out_volume(), col, g.out_volume(), T(1),
                     dw + grp * g.Kg * g.col_rows(), g.col_rows());
      }
    return;
  }
  const int64_t per_range = std::max<int64_t>(1, (g.N + kWeightRanges - 1) / kWeightRanges);
  const int64_t ranges = (g.N + per_range - 1) / per_range;
  const int workers = parallel_workers(ranges, 1);
  Tensor col_t = k.workspace({workers, g.col_rows(), g.out_volume()}, k.out().dtype());
  Tensor part_t = k.workspace({ranges, wsize}, k.out().dtype());
  T* cols = col_t.data<T>();
  T* parts = part_t.data<T>();
  parallel_for_indexed(ranges, 1, [&](int worker, int64_t r0, int64_t r1) {
    T* col = cols + worker * g.col_rows() * g.out_volume();
    for (int64_t r = r0; r < r1; ++r) {
      T* part = parts + r * wsize;
      std::fill(part, part + wsize, T(0));
      for (int64_t n = r * per_range; n < std::min(g.N, (r + 1) * per_range); ++n)
        for (int64_t grp = 0; grp < g.G; ++grp) {
          im2col_item(g, x + (n * g.C + grp * g.Cg) * g.in_volume(), col, true);
          gemm_item<T>(true, false, true, g.Kg, g.col_rows(), g.out_volume(),
                       dy + (n * g.K + grp * g.Kg) * g.out_volume(), g.out_volume(), col, g.out_volume(), T(1),
                       part + grp * g.Kg * g.col_rows(), g.col_rows());
        }
    }
  });
  for (int64_t r = 0; r < ranges; ++r)
    for (int64_t i = 0; i < wsize; ++i) dw[i] += parts[r * wsize + i];
}

template <class T> void backward_weight_naive(const KernelCtx&, const ConvGeom& g, const T* x, const T* dy, T* dw) {
  std::fill(dw, dw + g.K * g.col_rows(), T(0));
  for_each_tap(g, [&](int64_t xi, int64_t wi, int64_t yi) { dw[wi] += dy[yi] * x[xi]; });
}

// ---------------------------------------------------------------------------------------------
// onednn: oneDNN's convolution_forward / _backward_data / _backward_weights (ops/onednn_conv.h,
// a module opened on first use), direct (not Winograd) sums in blocked layouts it chooses.
// float32 only: oneDNN has no float64 convolution. Any stride, padding, dilation and groups.

void conv_onednn(const KernelCtx& k, const ConvGeom& g, const float* x, const float* w, const float* b, float* y) {
  cpu::onednn_conv(k, cpu::OnednnPass::forward, g, x, w, b, y);
}
void backward_input_onednn(const KernelCtx& k, const ConvGeom& g, const float* dy, const float* w, float* dx) {
  cpu::onednn_conv(k, cpu::OnednnPass::backward_data, g, dy, w, nullptr, dx);
}
void backward_weight_onednn(const KernelCtx& k, const ConvGeom& g, const float* x, const float* dy, float* dw) {
  cpu::onednn_conv(k, cpu::OnednnPass::backward_weights, g, x, dy, nullptr, dw);
}

[[noreturn]] void onednn_float64(const KernelCtx& k) {
  throw Error(k.op.name + ": algorithm onednn computes in float32 only (oneDNN has no float64 convolution)",
              "use algo=\"im2col\" (the default) for float64, or cast to float32 with .float()");
}
void conv_onednn_f64(const KernelCtx& k, const ConvGeom&, const double*, const double*, const double*, double*) {
  onednn_float64(k);
}
void backward_onednn_f64(const KernelCtx& k, const ConvGeom&, const double*, const double*, double*) {
  onednn_float64(k);
}

// ---------------------------------------------------------------------------------------------
// Kernel wrappers: cast inputs to the output dtype, build the geometry, pick float or double.

template <class T> using ForwardFn = void (*)(const KernelCtx&, const ConvGeom&, const T*, const T*, const T*, T*);
template <class T> using BackwardFnT = void (*)(const KernelCtx&, const ConvGeom&, const T*, const T*, T*);

KernelFn forward_kernel(ForwardFn<float> f32, ForwardFn<double> f64) {
  return [f32, f64](KernelCtx& k) {
    const DType dt = k.out().dtype();
    const Tensor x = cpu::as_dtype(k.in(0), dt), w = cpu::as_dtype(k.in(1), dt);
    const Tensor b = k.inputs.size() > 2 && k.in(2).defined() ? cpu::as_dtype(k.in(2), dt) : Tensor();
    const ConvGeom g = conv_geom(x.shape(), w.shape(), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* pb = b.defined() ? b.data<T>() : nullptr;
      if constexpr (std::is_same_v<T, float>) f32(k, g, x.data<T>(), w.data<T>(), pb, k.out().data<T>());
      else f64(k, g, x.data<T>(), w.data<T>(), pb, k.out().data<T>());
    });
  };
}

// conv2d_backward_input: inputs (dy, w), x's shape from the attribute input_shape.
// conv2d_backward_weight: inputs (x, dy), w's shape from the attribute weight_shape.
KernelFn backward_kernel(bool input_grad, BackwardFnT<float> f32, BackwardFnT<double> f64) {
  return [=](KernelCtx& k) {
    const DType dt = k.out().dtype();
    const Tensor a = cpu::as_dtype(k.in(0), dt), b = cpu::as_dtype(k.in(1), dt);
    const ConvGeom g =
        input_grad ? conv_geom(k.out().shape(), b.shape(), k.attrs) : conv_geom(a.shape(), k.out().shape(), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_same_v<T, float>) f32(k, g, a.data<T>(), b.data<T>(), k.out().data<T>());
      else f64(k, g, a.data<T>(), b.data<T>(), k.out().data<T>());
    });
  };
}

// conv_transpose2d: inputs (x, w, bias?), y = conv2d_backward_input(x, w) + b, the geometry of
// the convolution whose input has y's shape.
KernelFn transpose_kernel(BackwardFnT<float> f32, BackwardFnT<double> f64) {
  return [=](KernelCtx& k) {
    const DType dt = k.out().dtype();
    const Tensor x = cpu::as_dtype(k.in(0), dt), w = cpu::as_dtype(k.in(1), dt);
    const Tensor b = k.inputs.size() > 2 && k.in(2).defined() ? cpu::as_dtype(k.in(2), dt) : Tensor();
    const ConvGeom g = conv_geom(k.out().shape(), w.shape(), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      T* y = k.out().data<T>();
      if constexpr (std::is_same_v<T, float>) f32(k, g, x.data<T>(), w.data<T>(), y);
      else f64(k, g, x.data<T>(), w.data<T>(), y);
      if (!b.defined()) return;
      const T* pb = b.data<T>();
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t c = 0; c < g.C; ++c) {
          T* plane = y + (n * g.C + c) * g.in_volume();
          for (int64_t i = 0; i < g.in_volume(); ++i) plane[i] += pb[c];
        }
    });
  };
}

// ---------------------------------------------------------------------------------------------
// Cost. MACs of the direct sum: N·K·OH·OW·Cg·R·S (naive, im2col: flops = 2·MACs).
// winograd: the ⊙ stage multiplies 16 per 4×4 tile: 16·N·K·Cg·⌈OH/2⌉·⌈OW/2⌉ (= 4/9 of the
//   direct count when OH, OW are even: 2.25× fewer); flops add the transforms, counted as
//   32 per input tile and channel, 24 per output tile and filter, 28 per filter.
// fft: on P×Q planes, a 2-D FFT ≈ 5·PQ·log2(PQ) flops (of which ≈ 2·PQ·log2(PQ) multiplications);
//   G·(N·Cg + Kg·Cg) forward and N·K inverse FFTs, and N·K·Cg·PQ complex MACs (4 multiplications,
//   8 flops each).
double direct_macs(const ConvGeom& g) { return static_cast<double>(g.N) * g.K * g.out_volume() * g.Cg * g.taps(); }

// Whether x and w have the ranks of a convolution over their call's spatial axes (the cost
// model runs on shapes inference may still reject).
bool conv_ranks(const Shape& x, const Shape& w, const Attrs& a) {
  return x.size() == spatial_axes(a) + 2 && w.size() == x.size();
}

Cost conv_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
               std::string_view algo) {
  Cost c;
  for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
  c.bytes_written = cpu::meta_bytes(out[0]);
  if (in.size() < 2 || !conv_ranks(in[0].shape, in[1].shape, a)) return c;
  const ConvGeom g = conv_geom(in[0].shape, in[1].shape, a);
  const double elem = static_cast<double>(dtype_size(out[0].dtype));
  const double macs = direct_macs(g);
  if (algo == "winograd") {
    const double tiles = static_cast<double>(g.N) * ((g.OH + 1) / 2) * ((g.OW + 1) / 2);
    c.multiplications = 16.0 * g.K * g.Cg * tiles;
    c.flops = 2 * c.multiplications + 32.0 * tiles * g.C + 24.0 * tiles * g.K + 28.0 * g.K * g.Cg;
    const double tb = std::min(tiles, static_cast<double>(kWinogradBlock));
    c.workspace_bytes = 16.0 * (g.Kg * g.Cg + g.Cg * tb + g.Kg * tb) * elem;
  } else if (algo == "fft") {
    const FftPlan pl = fft_plan(g);
    const double PQ = static_cast<double>(pl.P) * pl.Q, lg = std::log2(std::max(PQ, 2.0));
    const double ffts =
        g.G * (static_cast<double>(g.N) * g.Cg + static_cast<double>(g.Kg) * g.Cg) + static_cast<double>(g.N) * g.K;
    const double cmacs = static_cast<double>(g.N) * g.K * g.Cg * PQ;
    c.multiplications = ffts * 2 * PQ * lg + 4 * cmacs;
    c.flops = ffts * 5 * PQ * lg + 8 * cmacs;
    c.workspace_bytes = (pl.planes * PQ + 2.0 * std::max(pl.P, pl.Q)) * 2 * elem;
  } else {
    c.multiplications = macs;
    c.flops = 2 * macs;
    if (algo == "onednn") c.workspace_bytes = cpu::onednn_workspace_bytes(cpu::OnednnPass::forward, g, in.size() > 2);
    else if (algo != "naive")
      c.workspace_bytes = im2col_plan(g).workers * static_cast<double>(g.col_rows()) * g.out_volume() * elem;
  }
  if (in.size() > 2) c.flops += static_cast<double>(g.N) * g.K * g.out_volume();  // bias adds
  return c;
}

// The backward ops: the same MAC count as the forward (each is one GEMM of the same size).
CostFn backward_cost(bool input_grad) {
  return [input_grad](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
                      std::string_view algo) {
    Cost c;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    c.bytes_written = cpu::meta_bytes(out[0]);
    const Shape& xs = input_grad ? out[0].shape : in[0].shape;
    const Shape& ws = input_grad ? in[1].shape : out[0].shape;
    if (!conv_ranks(xs, ws, a)) return c;
    const ConvGeom g = conv_geom(xs, ws, a);
    c.multiplications = direct_macs(g);
    c.flops = 2 * c.multiplications;
    if (algo == "onednn") {  // oneDNN's layouts of the tensors and its scratchpad
      c.workspace_bytes =
          cpu::onednn_workspace_bytes(input_grad ? cpu::OnednnPass::backward_data : cpu::OnednnPass::backward_weights,
                                      g, false);
    } else if (algo != "naive") {  // the column buffers, and for dW with many images the partial sums
      const double elem = static_cast<double>(dtype_size(out[0].dtype));
      const Im2colPlan plan = im2col_plan(g);
      double workers = plan.workers, partial = 0;
      if (!input_grad && plan.per_item) {
        const int64_t per_range = std::max<int64_t>(1, (g.N + kWeightRanges - 1) / kWeightRanges);
        const int64_t ranges = (g.N + per_range - 1) / per_range;
        workers = parallel_workers(ranges, 1);
        partial = static_cast<double>(ranges) * static_cast<double>(g.K * g.col_rows());
      }
      c.workspace_bytes = (workers * static_cast<double>(g.col_rows()) * g.out_volume() + partial) * elem;
    }
    return c;
  };
}

// conv_transpose2d: the convolution read backwards. Its MACs are those of the convolution whose
// input gradient it computes; the bias adds one per output element.
Cost transpose_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
                    std::string_view algo) {
  Cost c = backward_cost(true)({in[0], in[1]}, out, a, algo);
  if (in.size() > 2) {
    c.bytes_read += cpu::meta_bytes(in[2]);
    c.flops += cpu::meta_numel(out[0]);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Shape inference

std::vector<TensorMeta> infer_conv(const InferCtx& c) {
  const Shape &x = c.inputs[0].shape, &w = c.inputs[1].shape;
  c.expect_float(0);
  c.expect_float(1);
  const ConvGeom g = check_conv(c, x, w, "x");
  DType dt = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  if (c.inputs.size() > 2) {
    c.expect_float(2);
    const Shape& b = c.inputs[2].shape;
    if (b.size() != 1 || b[0] != g.K)
      c.fail("bias has shape " + shape_str(b) + " but weight " + shape_str(w) + " has " + std::to_string(g.K) +
                 " output channels (bias must be [" + std::to_string(g.K) + "])",
             "bias holds one value per output channel");
    dt = promote(dt, c.inputs[2].dtype);
  }
  TensorMeta m;
  m.shape = conv_out_shape(g);
  m.dtype = dt;
  m.device = c.inputs[0].device;
  return {m};
}

// dy must be exactly the convolution's output of (x_shape, w_shape).
void check_dy(const InferCtx& c, const ConvGeom& g, const Shape& x, const Shape& dy) {
  const Shape expect = conv_out_shape(g);
  if (dy != expect)
    c.fail("dy has shape " + shape_str(dy) + " but " + ranked("conv", x.size() - 2) + " of x " + shape_str(x) +
               " gives " + shape_str(expect),
           "dy must have the shape of the forward output");
}

std::vector<TensorMeta> infer_backward_input(const InferCtx& c) {
  c.expect_float(0);
  c.expect_float(1);
  const Shape xs = c.attrs.ints("input_shape");
  const ConvGeom g = check_conv(c, xs, c.inputs[1].shape, "input_shape");
  check_dy(c, g, xs, c.inputs[0].shape);
  TensorMeta m;
  m.shape = xs;
  m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  m.device = c.inputs[0].device;
  return {m};
}

std::vector<TensorMeta> infer_backward_weight(const InferCtx& c) {
  c.expect_float(0);
  c.expect_float(1);
  const Shape ws = c.attrs.ints("weight_shape");
  const ConvGeom g = check_conv(c, c.inputs[0].shape, ws, "x");
  check_dy(c, g, c.inputs[0].shape, c.inputs[1].shape);
  TensorMeta m;
  m.shape = ws;
  m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  m.device = c.inputs[0].device;
  return {m};
}

// conv_transpose2d: x [N, Cin, H, W], weight [Cin, Cout/G, R, S] (PyTorch's layout) give
// y [N, Cout, OH, OW] with OH = (H − 1)·stride − 2·padding + dilation·(R − 1) + output_padding + 1:
// the input shape of the convolution (same stride, padding, dilation, groups) whose output is
// x. output_padding (< stride) picks among the input sizes that convolution maps to H.
std::vector<TensorMeta> infer_conv_transpose(const InferCtx& c) {
  const Shape &x = c.inputs[0].shape, &w = c.inputs[1].shape;
  c.expect_float(0);
  c.expect_float(1);
  const size_t axes = spatial_axes(c.attrs), rank = axes + 2;
  if (x.size() != rank)
    c.fail("x must be " + std::to_string(rank) + "-D " + spatial_layout(axes) + ", got " + shape_str(x),
           ranked("conv_transpose", axes) + " works on " + spatial_layout(axes) +
               (x.size() >= 3 && x.size() <= 5 ? "; for this input use " + ranked("conv_transpose", x.size() - 2)
                                               : ""));
  if (w.size() != rank)
    c.fail("weight must be " + std::to_string(rank) + "-D [Cin, Cout/groups, kernel...], got " + shape_str(w),
           "PyTorch's ConvTranspose layout: input channels first (the convolution's weight read the other way)");
  const int64_t G = c.attrs.i("groups");
  if (w[0] != x[1])
    c.fail("x has " + std::to_string(x[1]) + " channels but weight " + shape_str(w) + " expects " +
               std::to_string(w[0]),
           "weight is [Cin, Cout/groups, R, S]: its first axis is x's channels");
  if (x[1] % G != 0)
    c.fail("x has " + std::to_string(x[1]) + " channels, which groups=" + std::to_string(G) + " does not divide",
           "input and output channels must both be multiples of groups");
  const auto &st = c.attrs.ints("stride"), &pad = c.attrs.ints("padding"), &dil = c.attrs.ints("dilation"),
             &op = c.attrs.ints("output_padding");
  Shape y = {x[0], w[1] * G};
  y.resize(rank);
  const char* axis_names[3] = {"D", "H", "W"};
  for (size_t a = 0; a < axes; ++a) {
    if (op[a] >= st[a])
      c.fail("output_padding " + attr_value_str(op) + " must be smaller than the stride " + attr_value_str(st),
             "output_padding chooses among the stride's possible input sizes of the convolution it reverses");
    y[2 + a] = (x[2 + a] - 1) * st[a] - 2 * pad[a] + dil[a] * (w[2 + a] - 1) + op[a] + 1;
    if (y[2 + a] <= 0)
      c.fail("output would be empty: x " + shape_str(x) + " with weight " + shape_str(w) + ", stride " +
                 attr_value_str(st) + " and padding " + attr_value_str(pad) + " gives " + std::to_string(y[2 + a]) +
                 " along " + axis_names[3 - axes + a],
             "OH = (H − 1)·stride − 2·padding + dilation·(R − 1) + output_padding + 1 must be >= 1: less padding");
  }
  check_conv(c, y, w, "the output");  // the convolution it reverses: x is that convolution's output
  DType dt = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  if (c.inputs.size() > 2) {
    c.expect_float(2);
    if (c.inputs[2].shape != Shape{y[1]})
      c.fail("bias has shape " + shape_str(c.inputs[2].shape) + " but the output has " + std::to_string(y[1]) +
                 " channels",
             "bias holds one value per output channel");
    dt = promote(dt, c.inputs[2].dtype);
  }
  TensorMeta m;
  m.shape = y;
  m.dtype = dt;
  m.device = c.inputs[0].device;
  return {m};
}

// ---------------------------------------------------------------------------------------------
// The family of one rank: convNd, its two backward ops and conv_transposeNd. What differs per
// rank is which algorithms run (conv2d's winograd, fft and onednn are 2-D), the gradcheck cases
// and the kernel lab's sizes.

struct ConvRank {
  size_t axes;
  std::vector<GradcheckCase> forward_cases, input_cases, weight_cases, transpose_cases;
  LabSizes forward_lab, transpose_lab;
};

std::string input_axes_doc(size_t axes) {
  return axes == 1   ? "x [N, C, L], w [K, C/groups, S]"
         : axes == 2 ? "x [N, C, H, W], w [K, C/groups, R, S]"
                     : "x [N, C, D, H, W], w [K, C/groups, Q, R, S]";
}

OpDef conv_op(const ConvRank& rank) {
  const size_t axes = rank.axes;
  const std::string name = ranked("conv", axes);
  OpDef d = OpDef::declare(name, "conv",
                           axes == 2 ? "y[n, k, oh, ow] = b[k] + Σ_{c, r, s} x[n, g·C/G + c, oh·stride − pad + r·dil, "
                                       "ow·stride − pad + s·dil]·w[k, c, r, s] "
                                       "(NCHW; x [N, C, H, W], w [K, C/groups, R, S], g = k / (K/groups))"
                                     : "y[n, k, o] = b[k] + Σ_{c, t} x[n, g·C/G + c, o·stride − pad + t·dil]·w[k, c, "
                                       "t] along each spatial axis (" +
                                           input_axes_doc(axes) + ", g = k / (K/groups))",
                           {"x", "weight", "bias?"});
  d.attrs = conv_attrs(static_cast<int>(axes));
  d.infer = infer_conv;
  d.kernel(Device::cpu, "im2col", forward_kernel(conv_im2col<float>, conv_im2col<double>));
  d.default_algo = "im2col";
  d.kernel(Device::cpu, "naive", forward_kernel(conv_naive<float>, conv_naive<double>));
  if (axes == 2) {
    d.kernel(Device::cpu, "winograd", forward_kernel(conv_winograd<float>, conv_winograd<double>));
    d.kernel(Device::cpu, "fft", forward_kernel(conv_fft<float>, conv_fft<double>));
    d.kernel(Device::cpu, "onednn", forward_kernel(conv_onednn, conv_onednn_f64));
    d.float32_only = {"onednn"};
  }
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [name](GradCtx& g) -> std::vector<Val> {
    Val dy = g.grad_output(0), dx, dw, db;
    const AttrMap a = conv_attr_map(g.attrs());
    if (g.needs_grad(0)) {
      AttrMap ai = a;
      ai.emplace_back("input_shape", V(g.input_meta(0).shape));
      dx = g.call(name + "_backward_input", {dy, g.input(1)}, ai);
    }
    if (g.needs_grad(1)) {
      AttrMap aw = a;
      aw.emplace_back("weight_shape", V(g.input_meta(1).shape));
      dw = g.call(name + "_backward_weight", {g.input(0), dy}, aw);
    }
    if (g.num_inputs() == 3 && g.needs_grad(2))
      db = g.call("sum", {dy}, {{"axes", bias_sum_axes(g.input_meta(0).shape.size())}});
    if (g.num_inputs() == 3) return {dx, dw, db};
    return {dx, dw};
  };
  d.backward_note = "dx = " + name + "_backward_input(dy, w), dw = " + name +
                    "_backward_weight(x, dy), db = Σ dy over N and " +
                    (axes == 1   ? "L"
                     : axes == 2 ? "H, W"
                                 : "D, H, W");
  d.cost = conv_cost;
  d.gradcheck = rank.forward_cases;
  d.lab = rank.forward_lab;
  return d;
}

OpDef backward_input_op(const ConvRank& rank) {
  const std::string conv = ranked("conv", rank.axes);
  OpDef d = OpDef::declare(conv + "_backward_input", "conv",
                           "dx[n, g·C/G + c, o·stride − pad + t·dil] += dy[n, k, o]·w[k, c, t] along each spatial axis "
                           "(col2im(Wᵀ·dy))",
                           {"dy", "weight"});
  d.attrs = conv_attrs(static_cast<int>(rank.axes));
  d.attrs.push_back(make_attr("input_shape", AttrType::int_list, V{},
                              "shape of the forward input x " + spatial_layout(rank.axes), {}, {}, {}, true));
  d.infer = infer_backward_input;
  d.kernel(Device::cpu, "im2col", backward_kernel(true, backward_input_im2col<float>, backward_input_im2col<double>));
  d.default_algo = "im2col";
  d.kernel(Device::cpu, "naive", backward_kernel(true, backward_input_naive<float>, backward_input_naive<double>));
  if (rank.axes == 2) {
    d.kernel(Device::cpu, "onednn", backward_kernel(true, backward_input_onednn, backward_onednn_f64));
    d.float32_only = {"onednn"};
  }
  d.differentiable = false;
  d.checked_via = conv;
  d.gradcheck = rank.input_cases;  // for the CUDA tests (gradchecked through the convolution)
  d.cost = backward_cost(true);
  return d;
}

OpDef backward_weight_op(const ConvRank& rank) {
  const std::string conv = ranked("conv", rank.axes);
  OpDef d = OpDef::declare(conv + "_backward_weight", "conv",
                           "dw[k, c, t] = Σ_{n, o} dy[n, k, o]·x[n, g·C/G + c, o·stride − pad + t·dil] over the output "
                           "positions o (dy·im2col(x)ᵀ)",
                           {"x", "dy"});
  d.attrs = conv_attrs(static_cast<int>(rank.axes));
  d.attrs.push_back(make_attr("weight_shape", AttrType::int_list, V{},
                              "shape of the forward weight [K, C/groups, kernel...]", {}, {}, {}, true));
  d.infer = infer_backward_weight;
  d.kernel(Device::cpu, "im2col",
           backward_kernel(false, backward_weight_im2col<float>, backward_weight_im2col<double>));
  d.default_algo = "im2col";
  d.kernel(Device::cpu, "naive", backward_kernel(false, backward_weight_naive<float>, backward_weight_naive<double>));
  if (rank.axes == 2) {
    d.kernel(Device::cpu, "onednn", backward_kernel(false, backward_weight_onednn, backward_onednn_f64));
    d.float32_only = {"onednn"};
  }
  d.differentiable = false;
  d.checked_via = conv;
  d.gradcheck = rank.weight_cases;  // for the CUDA tests (gradchecked through the convolution)
  d.cost = backward_cost(false);
  return d;
}

OpDef conv_transpose_op(const ConvRank& rank) {
  const size_t axes = rank.axes;
  const std::string conv = ranked("conv", axes);
  OpDef d =
      OpDef::declare(ranked("conv_transpose", axes), "conv",
                     "y = " + conv +
                         "_backward_input(x, w) + b: each x element adds x·w[c, ...] into the window of y that the "
                         "convolution would have read (x [N, Cin, spatial...], w [Cin, Cout/groups, kernel...])",
                     {"x", "weight", "bias?"});
  const int n = static_cast<int>(axes);
  d.attrs = {make_axes_attr("stride", 1, "the step of the convolution it reverses: y grows by stride per x element", n,
                            1),
             make_axes_attr("padding", 0, "the padding of the convolution it reverses: cropped from y's borders", n, 0),
             make_axes_attr("output_padding", 0,
                            "extra positions at y's end (< stride): which input size of the convolution", n, 0),
             make_attr("groups", AttrType::integer, int64_t{1}, "channel groups (Cin and Cout multiples of it)", 1),
             make_axes_attr("dilation", 1, "spacing between kernel taps", n, 1)};
  d.infer = infer_conv_transpose;
  d.kernel(Device::cpu, "im2col", transpose_kernel(backward_input_im2col<float>, backward_input_im2col<double>));
  d.default_algo = "im2col";
  d.kernel(Device::cpu, "naive", transpose_kernel(backward_input_naive<float>, backward_input_naive<double>));
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [conv](GradCtx& g) -> std::vector<Val> {
    Val dy = g.grad_output(0), dx, dw, db;
    const AttrMap a = conv_attr_map(g.attrs());
    if (g.needs_grad(0)) dx = g.call(conv, {dy, g.input(1)}, a);
    if (g.needs_grad(1)) {
      AttrMap aw = a;
      aw.emplace_back("weight_shape", V(g.input_meta(1).shape));
      dw = g.call(conv + "_backward_weight", {dy, g.input(0)}, aw);
    }
    if (g.num_inputs() == 3 && g.needs_grad(2))
      db = g.call("sum", {dy}, {{"axes", bias_sum_axes(g.input_meta(0).shape.size())}});
    if (g.num_inputs() == 3) return {dx, dw, db};
    return {dx, dw};
  };
  d.backward_note = d.name + " is " + conv + "'s input gradient, so its own gradients are convolutions: dx = " + conv +
                    "(dy, w), dw = " + conv +
                    "_backward_weight(dy, x) (dy as the convolution's input, x as its output "
                    "gradient), db = Σ dy over N and the spatial axes";
  d.cost = transpose_cost;
  d.gradcheck = rank.transpose_cases;
  d.lab = rank.transpose_lab;
  return d;
}

void register_conv_rank(OpRegistry& registry, const ConvRank& rank) {
  registry.add(conv_op(rank));
  registry.add(backward_input_op(rank));
  registry.add(backward_weight_op(rank));
  registry.add(conv_transpose_op(rank));
}

// conv2d: only cases every algorithm runs (winograd: 3×3, stride 1, dilation 1). Stride,
// dilation, other kernel sizes are gradchecked for naive, im2col and fft in tests/test_ops_conv.cpp.
ConvRank conv2d_rank() {
  ConvRank r{2, {}, {}, {}, {}, {}, {}};
  const InputSpec x1{{1, 2, 5, 5}}, w1{{3, 2, 3, 3}}, b1{{3}};
  const InputSpec x2{{2, 4, 4, 5}}, w2{{4, 2, 3, 3}}, b2{{4}};
  r.forward_cases = {gc({x1, w1, b1}, {}, "3×3, bias, odd 3×3 output (partial winograd tiles)"),
                     gc({x1, w1}, {{"padding", int64_t{1}}}, "padding 1, no bias"),
                     gc({x1, w1, b1}, {{"padding", int64_t{1}}}, "padding 1, bias"),
                     gc({x2, w2, b2}, {{"groups", int64_t{2}}, {"padding", int64_t{1}}}, "groups 2, batch 2, bias"),
                     gc({x2, w2}, {{"groups", int64_t{2}}}, "groups 2, no bias"),
                     gc({x2, w2, b2}, {{"groups", int64_t{2}}, {"padding", V{1, 0}}},
                        "padding (1, 0): H padded, W not")};
  // dy of x [1, 2, 5, 5] ⊛ w [3, 2, 3, 3], and a strided grouped one.
  r.input_cases = {gc({{{1, 3, 3, 3}}, {{3, 2, 3, 3}}}, {{"input_shape", V{1, 2, 5, 5}}}),
                   gc({{{2, 6, 3, 3}}, {{6, 2, 3, 2}}},
                      {{"input_shape", V{2, 4, 7, 6}}, {"stride", int64_t{2}}, {"groups", int64_t{2}}},
                      "stride 2, groups 2")};
  r.weight_cases = {gc({{{1, 2, 5, 5}}, {{1, 3, 3, 3}}}, {{"weight_shape", V{3, 2, 3, 3}}}),
                    gc({{{2, 4, 7, 6}}, {{2, 6, 3, 3}}},
                       {{"weight_shape", V{6, 2, 3, 2}}, {"stride", int64_t{2}}, {"groups", int64_t{2}}},
                       "stride 2, groups 2")};
  const InputSpec tx1{{1, 3, 3, 3}}, tw1{{3, 2, 3, 3}}, tb1{{2}};
  const InputSpec tx2{{2, 4, 3, 2}}, tw2{{4, 3, 2, 3}}, tb2{{6}};
  r.transpose_cases = {
      gc({tx1, tw1, tb1}, {}, "3×3, bias: 3×3 → 5×5"),
      gc({tx1, tw1}, {{"stride", int64_t{2}}, {"padding", int64_t{1}}, {"output_padding", int64_t{1}}},
         "stride 2, padding 1, output_padding 1: 3×3 → 6×6 (the U-Net doubling)"),
      gc({tx2, tw2, tb2}, {{"groups", int64_t{2}}, {"stride", V{2, 1}}, {"dilation", V{1, 2}}},
         "groups 2, stride (2, 1), dilation (1, 2), batch 2"),
      gc({tx2, tw2},
         {{"groups", int64_t{2}}, {"padding", V{1, 0}}, {"stride", int64_t{3}}, {"output_padding", V{2, 0}}},
         "stride 3, output_padding (2, 0), padding (1, 0)")};
  r.forward_lab = {
      "N C H W K R: x N×C×H×W, weight K×C×R×R, padding R/2",
      {8, 64, 56, 56, 64, 3},
      6,
      [](const std::vector<int64_t>& s) {
        return cpu::lab_case({{s[0], s[1], s[2], s[3]}, {s[4], s[1], s[5], s[5]}}, {{"padding", s[5] / 2}});
      },
      {}};
  r.transpose_lab = {"N C H W K R: x N×C×H×W, weight C×K×R×R, stride 2, padding R/2, output_padding 1 (H doubles)",
                     {8, 64, 28, 28, 32, 3},
                     6,
                     [](const std::vector<int64_t>& s) {
                       return cpu::lab_case({{s[0], s[1], s[2], s[3]}, {s[1], s[4], s[5], s[5]}},
                                            {{"stride", int64_t{2}},
                                             {"padding", s[5] / 2},
                                             {"output_padding", int64_t{1}}});
                     },
                     {}};
  return r;
}

// conv1d: what audio and text CNNs use (a strided, dilated, grouped, padded 1-D kernel).
ConvRank conv1d_rank() {
  ConvRank r{1, {}, {}, {}, {}, {}, {}};
  const InputSpec x1{{2, 4, 9}}, w1{{6, 2, 3}}, b1{{6}};
  r.forward_cases = {gc({x1, w1, b1}, {{"groups", int64_t{2}}, {"padding", int64_t{1}}}, "groups 2, padding 1, bias"),
                     gc({x1, w1}, {{"groups", int64_t{2}}, {"stride", int64_t{2}}, {"dilation", int64_t{2}}},
                        "stride 2, dilation 2"),
                     gc({{{1, 3, 7}}, {{2, 3, 4}}, {{2}}}, {{"padding", int64_t{2}}, {"stride", int64_t{3}}},
                        "even kernel, stride 3")};
  r.input_cases = {gc({{{2, 6, 4}}, {{6, 2, 3}}},
                      {{"input_shape", V{2, 4, 9}}, {"groups", int64_t{2}}, {"stride", int64_t{2}}},
                      "stride 2, groups 2")};
  r.weight_cases = {gc({{{2, 4, 9}}, {{2, 6, 4}}},
                       {{"weight_shape", V{6, 2, 3}}, {"groups", int64_t{2}}, {"stride", int64_t{2}}},
                       "stride 2, groups 2")};
  r.transpose_cases = {
      gc({{{2, 4, 5}}, {{4, 3, 3}}, {{6}}},
         {{"groups", int64_t{2}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}, {"output_padding", int64_t{1}}},
         "groups 2, stride 2, padding 1, output_padding 1: L 5 → 10"),
      gc({{{1, 2, 4}}, {{2, 3, 2}}}, {{"dilation", int64_t{3}}}, "dilation 3")};
  r.forward_lab = {"N C L K S: x N×C×L, weight K×C×S, padding S/2",
                   {8, 64, 4096, 64, 9},
                   5,
                   [](const std::vector<int64_t>& s) {
                     return cpu::lab_case({{s[0], s[1], s[2]}, {s[3], s[1], s[4]}}, {{"padding", s[4] / 2}});
                   },
                   {}};
  r.transpose_lab = {"N C L K S: x N×C×L, weight C×K×S, stride 2, padding S/2, output_padding 1 (L doubles)",
                     {8, 64, 2048, 32, 3},
                     5,
                     [](const std::vector<int64_t>& s) {
                       return cpu::lab_case({{s[0], s[1], s[2]}, {s[1], s[3], s[4]}}, {{"stride", int64_t{2}},
                                                                                       {"padding", s[4] / 2},
                                                                                       {"output_padding", int64_t{1}}});
                     },
                     {}};
  return r;
}

// conv3d: video and medical volumes (each axis its own stride, padding and dilation).
ConvRank conv3d_rank() {
  ConvRank r{3, {}, {}, {}, {}, {}, {}};
  const InputSpec x1{{1, 2, 4, 4, 5}}, w1{{4, 1, 2, 3, 3}}, b1{{4}};
  r.forward_cases = {gc({x1, w1, b1}, {{"groups", int64_t{2}}, {"padding", V{0, 1, 1}}},
                        "groups 2, padding (0, 1, 1), bias"),
                     gc({{{2, 2, 5, 4, 4}}, {{2, 2, 3, 2, 2}}},
                        {{"stride", V{2, 1, 2}}, {"dilation", V{1, 2, 1}}, {"padding", int64_t{1}}},
                        "stride (2, 1, 2), dilation (1, 2, 1), padding 1")};
  r.input_cases = {gc({{{1, 4, 3, 2, 3}}, {{4, 1, 2, 3, 3}}},
                      {{"input_shape", V{1, 2, 4, 4, 5}}, {"groups", int64_t{2}}}, "groups 2")};
  r.weight_cases = {gc({{{1, 2, 4, 4, 5}}, {{1, 4, 3, 2, 3}}},
                       {{"weight_shape", V{4, 1, 2, 3, 3}}, {"groups", int64_t{2}}}, "groups 2")};
  r.transpose_cases = {
      gc({{{1, 2, 2, 3, 2}}, {{2, 2, 2, 2, 3}}, {{4}}},
         {{"groups", int64_t{2}}, {"stride", V{2, 1, 2}}, {"padding", V{0, 1, 1}}, {"output_padding", V{1, 0, 1}}},
         "groups 2, stride (2, 1, 2), padding (0, 1, 1), output_padding (1, 0, 1)")};
  r.forward_lab = {
      "N C D H W K R: x N×C×D×H×W, weight K×C×R×R×R, padding R/2",
      {2, 16, 8, 28, 28, 16, 3},
      7,
      [](const std::vector<int64_t>& s) {
        return cpu::lab_case({{s[0], s[1], s[2], s[3], s[4]}, {s[5], s[1], s[6], s[6], s[6]}}, {{"padding", s[6] / 2}});
      },
      {}};
  r.transpose_lab = {"N C D H W K R: x N×C×D×H×W, weight C×K×R×R×R, stride 2, padding R/2, output_padding 1",
                     {2, 16, 8, 14, 14, 8, 3},
                     7,
                     [](const std::vector<int64_t>& s) {
                       return cpu::lab_case({{s[0], s[1], s[2], s[3], s[4]}, {s[1], s[5], s[6], s[6], s[6]}},
                                            {{"stride", int64_t{2}},
                                             {"padding", s[6] / 2},
                                             {"output_padding", int64_t{1}}});
                     },
                     {}};
  return r;
}

OPSCOPE_REGISTER_OPS(register_conv_ops) {
  for (const ConvRank& rank : {conv1d_rank(), conv2d_rank(), conv3d_rank()}) register_conv_rank(registry, rank);
}

}  // namespace
}  // namespace opscope
