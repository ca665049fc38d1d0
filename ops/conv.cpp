// 2-D convolution in NCHW layout: conv2d with four algorithms side by side ("im2col", the
// default; "naive", the seven loops of the course; "winograd" F(2×2, 3×3); "fft"), and its two
// dedicated backward ops conv2d_backward_input (col2im) and conv2d_backward_weight.
//
// Shape letters: N batch, C input channels, H×W input size, K output channels, R×S kernel
// size, OH×OW output size, G groups (Cg = C/G input and Kg = K/G output channels per group).
// Stride, padding and dilation are an int or a pair (h, w), as in PyTorch; along H with stride
// sh, padding ph and dilation dh (likewise W with sw, pw, dw):
//   OH = (H + 2ph − dh·(R − 1) − 1) / sh + 1
//   y[n, k, oh, ow] = b[k] + Σ_{c<Cg, r<R, s<S} x[n, g·Cg + c, oh·sh − ph + r·dh, ow·sw − pw + s·dw] · w[k, c, r, s]
// where g = k / Kg and x is zero outside [0, H) × [0, W).
#include <Eigen/Dense>
#include <unsupported/Eigen/FFT>
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <type_traits>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;
using V = std::vector<int64_t>;

// ---------------------------------------------------------------------------------------------
// Geometry

struct ConvGeom {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input
  int64_t K = 0, R = 0, S = 0;         // weight [K, Cg, R, S]
  int64_t OH = 0, OW = 0;              // output
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;  // stride, padding, dilation along H and W
  int64_t G = 1, Cg = 0, Kg = 0;
  int64_t ohw() const { return OH * OW; }
  int64_t crs() const { return Cg * R * S; }  // rows of the im2col buffer (one group)
};

// Output size along one axis; <= 0 when the dilated kernel does not fit the padded input.
int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

ConvGeom make_geom(const Shape& x, const Shape& w, const Attrs& a) {
  ConvGeom g;
  g.N = x[0], g.C = x[1], g.H = x[2], g.W = x[3];
  g.K = w[0], g.R = w[2], g.S = w[3];
  const auto &st = a.ints("stride"), &pad = a.ints("padding"), &dil = a.ints("dilation");
  g.sh = st[0], g.sw = st[1], g.ph = pad[0], g.pw = pad[1], g.dh = dil[0], g.dw = dil[1];
  g.G = a.i("groups");
  g.Cg = g.C / g.G, g.Kg = g.K / g.G;
  g.OH = out_size(g.H, g.R, g.sh, g.ph, g.dh);
  g.OW = out_size(g.W, g.S, g.sw, g.pw, g.dw);
  return g;
}

std::vector<AttrSpec> conv_attrs() {
  return {make_pair_attr("stride", 1, "step between output positions: n, or (along H, along W)", 1),
          make_pair_attr("padding", 0, "zeros added on both sides of H and of W: n, or (H, W)", 0),
          make_pair_attr("dilation", 1, "spacing between kernel taps (1 = dense kernel): n, or (H, W)", 1),
          make_attr("groups", AttrType::integer, int64_t{1},
                    "channel groups: output group g sees only input group g (C and K must be multiples)", 1)};
}

AttrMap conv_attr_map(const Attrs& a) {
  return {{"stride", a.ints("stride")}, {"padding", a.ints("padding")}, {"dilation", a.ints("dilation")}, {"groups", a.i("groups")}};
}

// Checks an input of shape x against a weight of shape w for the call's attributes (the rules
// every conv op shares) and returns the geometry. `xname` names where x's shape came from.
ConvGeom check_conv(const InferCtx& c, const Shape& x, const Shape& w, const std::string& xname) {
  const Attrs& a = c.attrs;
  if (x.size() != 4)
    c.fail(xname + " must be 4-D [N, C, H, W], got " + shape_str(x) + " (rank " + std::to_string(x.size()) + ")",
           x.size() == 3 ? "add a batch axis: reshape(x, [1, " + std::to_string(x[0]) + ", " + std::to_string(x[1]) +
                               ", " + std::to_string(x[2]) + "])"
                         : "conv2d works on NCHW images: batch, channels, height, width");
  if (w.size() != 4)
    c.fail("weight must be 4-D [K, C/groups, R, S], got " + shape_str(w) + " (rank " + std::to_string(w.size()) + ")",
           "weight holds K filters of C/groups channels and R×S taps");
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
           "weight must be [K, C/groups, R, S] = [" + std::to_string(w[0]) + ", " + std::to_string(x[1] / G) + ", " +
               std::to_string(w[2]) + ", " + std::to_string(w[3]) + "] for this input");
  if (w[2] < 1 || w[3] < 1) c.fail("kernel must be at least 1×1, got weight " + shape_str(w));
  const ConvGeom g = make_geom(x, w, a);
  if (g.OH <= 0 || g.OW <= 0) {
    const int64_t rd = g.dh * (g.R - 1) + 1, sd = g.dw * (g.S - 1) + 1;
    c.fail("output would be empty: " + xname + " " + shape_str(x) + " padded by " + attr_value_str(a.get("padding")) +
               " is " + std::to_string(g.H + 2 * g.ph) + "×" + std::to_string(g.W + 2 * g.pw) +
               ", smaller than the dilated kernel " + std::to_string(rd) + "×" + std::to_string(sd) + " (weight " +
               shape_str(w) + ", dilation=" + attr_value_str(a.get("dilation")) + ")",
           "OH = (H + 2·padding − dilation·(R − 1) − 1) / stride + 1 must be >= 1: add padding or use a smaller "
           "kernel or dilation");
  }
  return g;
}

// ---------------------------------------------------------------------------------------------
// Forward algorithms. Each gets contiguous x, w, optional bias b (nullptr) and the output y.

template <class T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapR = Eigen::Map<MatR<T>>;
template <class T>
using CMapR = Eigen::Map<const MatR<T>>;

// naive: the seven nested loops of the course (n, k, oh, ow, c, r, s), literally. Each output
// reads Cg·R·S inputs scattered over Cg planes, with a bounds test per tap (the padding).
template <class T>
void conv_naive(const KernelCtx&, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t grp = k / g.Kg;
          T acc = b ? b[k] : T(0);
          for (int64_t c = 0; c < g.Cg; ++c)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t ih = oh * g.sh - g.ph + r * g.dh, iw = ow * g.sw - g.pw + s * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                acc += x[((n * g.C + grp * g.Cg + c) * g.H + ih) * g.W + iw] * w[((k * g.Cg + c) * g.R + r) * g.S + s];
              }
          y[((n * g.K + k) * g.OH + oh) * g.OW + ow] = acc;
        }
}

// The output columns ow whose input column ow·st + off lies in [0, W): [lo, hi).
inline void valid_range(int64_t off, int64_t stride, int64_t extent, int64_t count, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = extent - 1 - off < 0 ? 0 : std::min(count, (extent - 1 - off) / stride + 1);
  lo = std::min(lo, hi);
}

// im2col for one image and one group: col[(c·R + r)·S + s][oh·OW + ow] =
// x[c, oh·sh − ph + r·dh, ow·sw − pw + s·dw] (0 outside). xc points at channel g·Cg of image n.
template <class T>
void im2col(const ConvGeom& g, const T* xc, T* col) {
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        T* row = col + ((c * g.R + r) * g.S + s) * g.ohw();
        const int64_t off_w = s * g.dw - g.pw;
        int64_t lo, hi;
        valid_range(off_w, g.sw, g.W, g.OW, lo, hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          T* dst = row + oh * g.OW;
          const int64_t ih = oh * g.sh - g.ph + r * g.dh;
          if (ih < 0 || ih >= g.H) {
            std::fill(dst, dst + g.OW, T(0));
            continue;
          }
          const T* src = xc + (c * g.H + ih) * g.W + off_w;
          std::fill(dst, dst + lo, T(0));
          if (g.sw == 1) std::copy(src + lo, src + hi, dst + lo);
          else
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * g.sw];
          std::fill(dst + hi, dst + g.OW, T(0));
        }
      }
}

// col2im: the adjoint of im2col, dx[c, ih, iw] += col[row][oh·OW + ow] (overlapping windows add).
template <class T>
void col2im(const ConvGeom& g, const T* col, T* dxc) {
  for (int64_t c = 0; c < g.Cg; ++c)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        const T* row = col + ((c * g.R + r) * g.S + s) * g.ohw();
        const int64_t off_w = s * g.dw - g.pw;
        int64_t lo, hi;
        valid_range(off_w, g.sw, g.W, g.OW, lo, hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + r * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* src = row + oh * g.OW;
          T* dst = dxc + (c * g.H + ih) * g.W + off_w;
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.sw] += src[ow];
        }
      }
}

// im2col: per image and group, y[n, g] (Kg × OH·OW) = W_g (Kg × Cg·R·S) · col (Cg·R·S × OH·OW),
// one GEMM through Eigen. The col buffer (Cg·R·S·OH·OW elements) is workspace, reused.
template <class T>
void conv_im2col(const KernelCtx& k, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  Tensor col_t = k.workspace({g.crs(), g.ohw()}, k.out().dtype());
  T* col = col_t.data<T>();
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col(g, x + (n * g.C + grp * g.Cg) * g.H * g.W, col);
      MapR<T> out(y + (n * g.K + grp * g.Kg) * g.ohw(), g.Kg, g.ohw());
      out.noalias() = CMapR<T>(w + grp * g.Kg * g.crs(), g.Kg, g.crs()) * CMapR<T>(col, g.crs(), g.ohw());
      if (b) out.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(b + grp * g.Kg, g.Kg);
    }
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
  auto pair = [](int64_t h, int64_t w) { return h == w ? std::to_string(h) : "(" + std::to_string(h) + ", " + std::to_string(w) + ")"; };
  std::string got = std::to_string(g.R) + "×" + std::to_string(g.S) + " stride " + pair(g.sh, g.sw);
  if (g.dh != 1 || g.dw != 1) got += " dilation " + pair(g.dh, g.dw);
  throw Error("conv2d: winograd: needs a 3×3 kernel with stride 1 and dilation 1, got " + got,
              "use algo=\"im2col\" (the default) or \"fft\" for other kernels, strides and dilations");
}

template <class T>
void conv_winograd(const KernelCtx& k, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
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
        MapR<T>(M + xi * step_m, Kg, nb).noalias() = CMapR<T>(U + xi * Kg * Cg, Kg, Cg) * CMapR<T>(Vb + xi * step_v, Cg, nb);
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

template <class T>
struct Fft2 {
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

template <class T>
void conv_fft(const KernelCtx& k, const ConvGeom& g, const T* x, const T* w, const T* b, T* y) {
  using Cx = std::complex<T>;
  using CxArray = Eigen::Array<Cx, Eigen::Dynamic, 1>;
  const FftPlan pl = fft_plan(g);
  const int64_t P = pl.P, Q = pl.Q, PQ = P * Q;
  const DType dt = k.out().dtype();
  // Complex buffers as pairs of reals: the tracker sees them as workspace like any other.
  Tensor spec_t = k.workspace({pl.planes, PQ, 2}, dt), line_t = k.workspace({2 * std::max(P, Q), 2}, dt);
  Cx* spec = reinterpret_cast<Cx*>(spec_t.data<T>());
  Cx* Xh = spec;                    // [N][Cg][P·Q]
  Cx* Wh = spec + g.N * g.Cg * PQ;  // [Cg][P·Q]
  Cx* Yh = Wh + g.Cg * PQ;          // [P·Q]
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

template <class T>
void backward_input_im2col(const KernelCtx& k, const ConvGeom& g, const T* dy, const T* w, T* dx) {
  Tensor col_t = k.workspace({g.crs(), g.ohw()}, k.out().dtype());
  T* col = col_t.data<T>();
  std::fill(dx, dx + g.N * g.C * g.H * g.W, T(0));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      MapR<T>(col, g.crs(), g.ohw()).noalias() = CMapR<T>(w + grp * g.Kg * g.crs(), g.Kg, g.crs()).transpose() *
                                                 CMapR<T>(dy + (n * g.K + grp * g.Kg) * g.ohw(), g.Kg, g.ohw());
      col2im(g, col, dx + (n * g.C + grp * g.Cg) * g.H * g.W);
    }
}

template <class T>
void backward_input_naive(const KernelCtx&, const ConvGeom& g, const T* dy, const T* w, T* dx) {
  std::fill(dx, dx + g.N * g.C * g.H * g.W, T(0));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.K; ++k)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t grp = k / g.Kg;
          const T d = dy[((n * g.K + k) * g.OH + oh) * g.OW + ow];
          for (int64_t c = 0; c < g.Cg; ++c)
            for (int64_t r = 0; r < g.R; ++r)
              for (int64_t s = 0; s < g.S; ++s) {
                const int64_t ih = oh * g.sh - g.ph + r * g.dh, iw = ow * g.sw - g.pw + s * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                dx[((n * g.C + grp * g.Cg + c) * g.H + ih) * g.W + iw] += d * w[((k * g.Cg + c) * g.R + r) * g.S + s];
              }
        }
}

template <class T>
void backward_weight_im2col(const KernelCtx& k, const ConvGeom& g, const T* x, const T* dy, T* dw) {
  Tensor col_t = k.workspace({g.crs(), g.ohw()}, k.out().dtype());
  T* col = col_t.data<T>();
  std::fill(dw, dw + g.K * g.crs(), T(0));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t grp = 0; grp < g.G; ++grp) {
      im2col(g, x + (n * g.C + grp * g.Cg) * g.H * g.W, col);
      MapR<T>(dw + grp * g.Kg * g.crs(), g.Kg, g.crs()).noalias() +=
          CMapR<T>(dy + (n * g.K + grp * g.Kg) * g.ohw(), g.Kg, g.ohw()) *
          CMapR<T>(col, g.crs(), g.ohw()).transpose();
    }
}

template <class T>
void backward_weight_naive(const KernelCtx&, const ConvGeom& g, const T* x, const T* dy, T* dw) {
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t c = 0; c < g.Cg; ++c)
      for (int64_t r = 0; r < g.R; ++r)
        for (int64_t s = 0; s < g.S; ++s) {
          const int64_t grp = k / g.Kg;
          T acc = 0;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < g.OH; ++oh)
              for (int64_t ow = 0; ow < g.OW; ++ow) {
                const int64_t ih = oh * g.sh - g.ph + r * g.dh, iw = ow * g.sw - g.pw + s * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                acc += dy[((n * g.K + k) * g.OH + oh) * g.OW + ow] * x[((n * g.C + grp * g.Cg + c) * g.H + ih) * g.W + iw];
              }
          dw[((k * g.Cg + c) * g.R + r) * g.S + s] = acc;
        }
}

// ---------------------------------------------------------------------------------------------
// Kernel wrappers: cast inputs to the output dtype, build the geometry, pick float or double.

template <class T>
using ForwardFn = void (*)(const KernelCtx&, const ConvGeom&, const T*, const T*, const T*, T*);
template <class T>
using BackwardFnT = void (*)(const KernelCtx&, const ConvGeom&, const T*, const T*, T*);

KernelFn forward_kernel(ForwardFn<float> f32, ForwardFn<double> f64) {
  return [f32, f64](KernelCtx& k) {
    const DType dt = k.out().dtype();
    const Tensor x = cpu::as_dtype(k.in(0), dt), w = cpu::as_dtype(k.in(1), dt);
    const Tensor b = k.inputs.size() > 2 && k.in(2).defined() ? cpu::as_dtype(k.in(2), dt) : Tensor();
    const ConvGeom g = make_geom(x.shape(), w.shape(), k.attrs);
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
    const ConvGeom g = input_grad ? make_geom(k.out().shape(), b.shape(), k.attrs)
                                  : make_geom(a.shape(), k.out().shape(), k.attrs);
    if (k.out().numel() == 0) return;
    cpu::visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_same_v<T, float>) f32(k, g, a.data<T>(), b.data<T>(), k.out().data<T>());
      else f64(k, g, a.data<T>(), b.data<T>(), k.out().data<T>());
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
double direct_macs(const ConvGeom& g) {
  return static_cast<double>(g.N) * g.K * g.OH * g.OW * g.Cg * g.R * g.S;
}

Cost conv_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
               std::string_view algo) {
  Cost c;
  for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
  c.bytes_written = cpu::meta_bytes(out[0]);
  if (in.size() < 2 || in[0].shape.size() != 4 || in[1].shape.size() != 4) return c;
  const ConvGeom g = make_geom(in[0].shape, in[1].shape, a);
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
    const double ffts = g.G * (static_cast<double>(g.N) * g.Cg + static_cast<double>(g.Kg) * g.Cg) +
                        static_cast<double>(g.N) * g.K;
    const double cmacs = static_cast<double>(g.N) * g.K * g.Cg * PQ;
    c.multiplications = ffts * 2 * PQ * lg + 4 * cmacs;
    c.flops = ffts * 5 * PQ * lg + 8 * cmacs;
    c.workspace_bytes = (pl.planes * PQ + 2.0 * std::max(pl.P, pl.Q)) * 2 * elem;
  } else {
    c.multiplications = macs;
    c.flops = 2 * macs;
    if (algo != "naive") c.workspace_bytes = static_cast<double>(g.crs()) * g.ohw() * elem;
  }
  if (in.size() > 2) c.flops += static_cast<double>(g.N) * g.K * g.ohw();  // bias adds
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
    if (xs.size() != 4 || ws.size() != 4) return c;
    const ConvGeom g = make_geom(xs, ws, a);
    c.multiplications = direct_macs(g);
    c.flops = 2 * c.multiplications;
    if (algo != "naive")
      c.workspace_bytes = static_cast<double>(g.crs()) * g.ohw() * static_cast<double>(dtype_size(out[0].dtype));
    return c;
  };
}

// ---------------------------------------------------------------------------------------------
// Shape inference

std::vector<TensorMeta> infer_conv2d(const InferCtx& c) {
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
  m.shape = {g.N, g.K, g.OH, g.OW};
  m.dtype = dt;
  m.device = c.inputs[0].device;
  return {m};
}

// dy must be exactly the conv2d output of (x_shape, w_shape).
void check_dy(const InferCtx& c, const ConvGeom& g, const Shape& dy) {
  const Shape expect = {g.N, g.K, g.OH, g.OW};
  if (dy != expect)
    c.fail("dy has shape " + shape_str(dy) + " but conv2d of x [" + std::to_string(g.N) + ", " + std::to_string(g.C) +
               ", " + std::to_string(g.H) + ", " + std::to_string(g.W) + "] gives " + shape_str(expect),
           "dy must have the shape of the forward output");
}

std::vector<TensorMeta> infer_backward_input(const InferCtx& c) {
  c.expect_float(0);
  c.expect_float(1);
  const Shape xs = c.attrs.ints("input_shape");
  const ConvGeom g = check_conv(c, xs, c.inputs[1].shape, "input_shape");
  check_dy(c, g, c.inputs[0].shape);
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
  check_dy(c, g, c.inputs[1].shape);
  TensorMeta m;
  m.shape = ws;
  m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  m.device = c.inputs[0].device;
  return {m};
}

OPSCOPE_REGISTER_OPS(register_conv_ops) {
  {
    OpDef d = OpDef::declare(
        "conv2d", "conv",
        "y[n, k, oh, ow] = b[k] + Σ_{c, r, s} x[n, g·C/G + c, oh·stride − pad + r·dil, ow·stride − pad + s·dil]·w[k, c, r, s] "
        "(NCHW; x [N, C, H, W], w [K, C/groups, R, S], g = k / (K/groups))",
        {"x", "weight", "bias?"});
    d.attrs = conv_attrs();
    d.infer = infer_conv2d;
    // The first kernel registered is the default.
    d.kernel(Device::cpu, "im2col", forward_kernel(conv_im2col<float>, conv_im2col<double>));
    d.kernel(Device::cpu, "naive", forward_kernel(conv_naive<float>, conv_naive<double>));
    d.kernel(Device::cpu, "winograd", forward_kernel(conv_winograd<float>, conv_winograd<double>));
    d.kernel(Device::cpu, "fft", forward_kernel(conv_fft<float>, conv_fft<double>));
    d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      Val dy = g.grad_output(0), dx, dw, db;
      const AttrMap a = conv_attr_map(g.attrs());
      if (g.needs_grad(0)) {
        AttrMap ai = a;
        ai.emplace_back("input_shape", V(g.input_meta(0).shape));
        dx = g.call("conv2d_backward_input", {dy, g.input(1)}, ai);
      }
      if (g.needs_grad(1)) {
        AttrMap aw = a;
        aw.emplace_back("weight_shape", V(g.input_meta(1).shape));
        dw = g.call("conv2d_backward_weight", {g.input(0), dy}, aw);
      }
      if (g.num_inputs() == 3 && g.needs_grad(2)) db = g.call("sum", {dy}, {{"axes", V{0, 2, 3}}});
      if (g.num_inputs() == 3) return {dx, dw, db};
      return {dx, dw};
    };
    d.backward_note = "dx = conv2d_backward_input(dy, w), dw = conv2d_backward_weight(x, dy), db = Σ dy over N, H, W";
    d.cost = conv_cost;
    // Only cases every algorithm runs (winograd: 3×3, stride 1, dilation 1). Stride, dilation,
    // other kernel sizes are gradchecked for naive, im2col and fft in tests/test_ops_conv.cpp.
    const InputSpec x1{{1, 2, 5, 5}}, w1{{3, 2, 3, 3}}, b1{{3}};
    const InputSpec x2{{2, 4, 4, 5}}, w2{{4, 2, 3, 3}}, b2{{4}};
    d.gradcheck = {gc({x1, w1, b1}, {}, "3×3, bias, odd 3×3 output (partial winograd tiles)"),
                   gc({x1, w1}, {{"padding", int64_t{1}}}, "padding 1, no bias"),
                   gc({x1, w1, b1}, {{"padding", int64_t{1}}}, "padding 1, bias"),
                   gc({x2, w2, b2}, {{"groups", int64_t{2}}, {"padding", int64_t{1}}}, "groups 2, batch 2, bias"),
                   gc({x2, w2}, {{"groups", int64_t{2}}}, "groups 2, no bias"),
                   gc({x2, w2, b2}, {{"groups", int64_t{2}}, {"padding", V{1, 0}}}, "padding (1, 0): H padded, W not")};
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("conv2d_backward_input", "conv",
                             "dx[n, g·C/G + c, oh·stride − pad + r·dil, ow·stride − pad + s·dil] += dy[n, k, oh, ow]·w[k, c, r, s] "
                             "(col2im(Wᵀ·dy))",
                             {"dy", "weight"});
    d.attrs = conv_attrs();
    d.attrs.push_back(make_attr("input_shape", AttrType::int_list, V{}, "shape of the forward input x [N, C, H, W]", {},
                                {}, {}, true));
    d.infer = infer_backward_input;
    d.kernel(Device::cpu, "im2col", backward_kernel(true, backward_input_im2col<float>, backward_input_im2col<double>));
    d.kernel(Device::cpu, "naive", backward_kernel(true, backward_input_naive<float>, backward_input_naive<double>));
    d.differentiable = false;
    d.checked_via = "conv2d";
    d.cost = backward_cost(true);
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("conv2d_backward_weight", "conv",
                             "dw[k, c, r, s] = Σ_{n, oh, ow} dy[n, k, oh, ow]·x[n, g·C/G + c, oh·stride − pad + r·dil, "
                             "ow·stride − pad + s·dil] (dy·im2col(x)ᵀ)",
                             {"x", "dy"});
    d.attrs = conv_attrs();
    d.attrs.push_back(make_attr("weight_shape", AttrType::int_list, V{}, "shape of the forward weight [K, C/groups, R, S]",
                                {}, {}, {}, true));
    d.infer = infer_backward_weight;
    d.kernel(Device::cpu, "im2col", backward_kernel(false, backward_weight_im2col<float>, backward_weight_im2col<double>));
    d.kernel(Device::cpu, "naive", backward_kernel(false, backward_weight_naive<float>, backward_weight_naive<double>));
    d.differentiable = false;
    d.checked_via = "conv2d";
    d.cost = backward_cost(false);
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
