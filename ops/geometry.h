// The geometry both devices share, so that the CPU and CUDA kernels agree on shapes by
// construction: convolution's output size, the pooling window (and its argmax), gather's
// view of x around its axis, the norms' splits of a tensor. No Eigen: ops/*.cpp and ops/cuda/*.cu include it; the index arithmetic
// is OPSCOPE_HD, the constructors from shapes and attributes run on the host.
//
// Shape letters: N batch, C input channels, D×H×W input, K output channels, Q×R×S kernel,
// OD×OH×OW output, G groups (Cg = C/G, Kg = K/G). One geometry serves 1, 2 and 3 spatial axes:
// the axes are right-aligned, so a 2-D problem has D = Q = OD = 1 and a 1-D one also H = R = OH
// = 1 (L is W). The 2-D kernels (and their fast paths) read only the H and W fields; kernels
// of any rank read the volumes.
#pragma once
#include <cstdint>
#include <string>

#include "core/op.h"
#include "ops/hd.h"

namespace opscope {

// The letters of x's layout for 1, 2 or 3 spatial axes: "[N, C, L]", "[N, C, H, W]", "[N, C, D, H, W]".
inline std::string spatial_layout(size_t axes) {
  return axes == 1 ? "[N, C, L]" : axes == 2 ? "[N, C, H, W]" : "[N, C, D, H, W]";
}

// --- convolution ---------------------------------------------------------------------------
// Output size along one axis: OH = (H + 2p − d·(R − 1) − 1) / st + 1; 0 when the dilated
// kernel does not fit the padded input.
OPSCOPE_HD int64_t conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

struct ConvGeom {
  int64_t N = 0, C = 0, D = 1, H = 0, W = 0;  // input
  int64_t K = 0, Q = 1, R = 0, S = 0;  // weight [K, Cg, Q, R, S]
  int64_t OD = 1, OH = 0, OW = 0;  // output
  int64_t sd = 1, sh = 1, sw = 1, pd = 0, ph = 0, pw = 0, dd = 1, dh = 1, dw = 1;  // stride, padding, dilation per axis
  int64_t G = 1, Cg = 0, Kg = 0;
  int spatial = 2;  // spatial axes of x: 1, 2 or 3
  OPSCOPE_HD int64_t ohw() const { return OH * OW; }
  OPSCOPE_HD int64_t crs() const { return Cg * R * S; }  // rows of the 2-D im2col buffer (one group)
  // The same counts over every spatial axis (equal to the 2-D ones when D = Q = OD = 1).
  OPSCOPE_HD int64_t in_volume() const { return D * H * W; }
  OPSCOPE_HD int64_t out_volume() const { return OD * OH * OW; }
  OPSCOPE_HD int64_t taps() const { return Q * R * S; }
  OPSCOPE_HD int64_t col_rows() const { return Cg * Q * R * S; }  // rows of the im2col buffer of any rank
  OPSCOPE_HD bool planar() const { return D == 1 && Q == 1 && OD == 1 && pd == 0; }  // the 2-D kernels apply
};

// The three (depth, height, width) values of a per-axis attribute of `axes` entries, the
// missing leading axes filled with `fill` (1 for sizes, strides, dilations; 0 for padding).
inline void right_aligned(const std::vector<int64_t>& v, int64_t fill, int64_t& d, int64_t& h, int64_t& w) {
  const size_t n = v.size();
  d = n >= 3 ? v[n - 3] : fill;
  h = n >= 2 ? v[n - 2] : fill;
  w = v[n - 1];
}

// x [N, C, (D,) (H,) W] (or the input_shape of a backward op), w [K, Cg, (Q,) (R,) S], the conv
// attributes (stride, padding and dilation hold one value per spatial axis).
inline ConvGeom conv_geom(const Shape& x, const Shape& w, const Attrs& a) {
  ConvGeom g;
  const std::vector<int64_t> xs(x.begin() + 2, x.end()), ks(w.begin() + 2, w.end());
  g.spatial = static_cast<int>(xs.size());
  g.N = x[0], g.C = x[1];
  g.K = w[0];
  right_aligned(xs, 1, g.D, g.H, g.W);
  right_aligned(ks, 1, g.Q, g.R, g.S);
  right_aligned(a.ints("stride"), 1, g.sd, g.sh, g.sw);
  right_aligned(a.ints("padding"), 0, g.pd, g.ph, g.pw);
  right_aligned(a.ints("dilation"), 1, g.dd, g.dh, g.dw);
  g.G = a.i("groups");
  g.Cg = g.C / g.G, g.Kg = g.K / g.G;
  g.OD = conv_out_size(g.D, g.Q, g.sd, g.pd, g.dd);
  g.OH = conv_out_size(g.H, g.R, g.sh, g.ph, g.dh);
  g.OW = conv_out_size(g.W, g.S, g.sw, g.pw, g.dw);
  return g;
}

// --- pooling windows -------------------------------------------------------------------------
// KD×KH×KW windows every (SD, SH, SW) elements over x [N, C, (D,) (H,) W] padded by (PD, PH, PW):
// OH = floor((H + 2·PH − KH) / SH) + 1, likewise OD and OW, or with ceil_mode the ceiling, minus
// the last window when it would start past the input and its begin padding (PyTorch's rule: the
// last window must start in the input or the left padding). kernel_size, stride and padding hold
// one value per spatial axis (right-aligned as for the convolution: a 2-D pool has KD = D = OD =
// 1); a stride of 0 means the kernel size. An average divides by the window clipped to the padded
// input (count_include_pad, PyTorch's default) or by the input elements it covers only.
struct PoolWindow {
  int64_t KH = 1, KW = 1, SH = 1, SW = 1, PH = 0, PW = 0;
  int64_t N = 1, C = 1, H = 1, W = 1, OH = 1, OW = 1;
  int64_t KD = 1, SD = 1, PD = 0, D = 1, OD = 1;
  bool ceil_mode = false, count_include_pad = true;
  OPSCOPE_HD int64_t in_volume() const { return D * H * W; }
  OPSCOPE_HD int64_t out_volume() const { return OD * OH * OW; }
  OPSCOPE_HD int64_t window() const { return KD * KH * KW; }
  // Every window lies inside the padded input and divides by its full size: the fast kernels' case.
  OPSCOPE_HD bool plain() const { return !ceil_mode && (count_include_pad || (PD == 0 && PH == 0 && PW == 0)); }
};

// Windows along one axis of n positions (kernel k, stride s, padding p).
OPSCOPE_HD int64_t pool_out_size(int64_t n, int64_t k, int64_t s, int64_t p, bool ceil_mode) {
  const int64_t span = n + 2 * p - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= n + p) --out;
  return out;
}

// `average`: an avg_pool's window (it has count_include_pad; a max pool's padding is never counted).
inline PoolWindow pool_window(const Shape& x, const Attrs& a, bool average) {
  PoolWindow w;
  right_aligned(a.ints("kernel_size"), 1, w.KD, w.KH, w.KW);
  right_aligned(a.ints("stride"), 1, w.SD, w.SH, w.SW);
  right_aligned(a.ints("padding"), 0, w.PD, w.PH, w.PW);
  if (w.SD == 0) w.SD = w.KD;
  if (w.SH == 0) w.SH = w.KH;
  if (w.SW == 0) w.SW = w.KW;
  w.ceil_mode = a.b("ceil_mode");
  w.count_include_pad = !average || a.b("count_include_pad");
  w.N = x[0], w.C = x[1];
  right_aligned(std::vector<int64_t>(x.begin() + 2, x.end()), 1, w.D, w.H, w.W);
  w.OD = pool_out_size(w.D, w.KD, w.SD, w.PD, w.ceil_mode);
  w.OH = pool_out_size(w.H, w.KH, w.SH, w.PH, w.ceil_mode);
  w.OW = pool_out_size(w.W, w.KW, w.SW, w.PW, w.ceil_mode);
  return w;
}

// Along one axis (stride s, padding p, kernel k, n input positions): the input positions
// [lo, hi) of window o, clipped to the input.
OPSCOPE_HD void window_span(int64_t o, int64_t s, int64_t p, int64_t k, int64_t n, int64_t& lo, int64_t& hi) {
  const int64_t start = o * s - p;
  lo = start < 0 ? 0 : start;
  hi = start + k < n ? start + k : n;
}
OPSCOPE_HD void window_depths(const PoolWindow& w, int64_t od, int64_t& lo, int64_t& hi) {
  window_span(od, w.SD, w.PD, w.KD, w.D, lo, hi);
}
OPSCOPE_HD void window_rows(const PoolWindow& w, int64_t oh, int64_t& lo, int64_t& hi) {
  window_span(oh, w.SH, w.PH, w.KH, w.H, lo, hi);
}
OPSCOPE_HD void window_cols(const PoolWindow& w, int64_t ow, int64_t& lo, int64_t& hi) {
  window_span(ow, w.SW, w.PW, w.KW, w.W, lo, hi);
}

// Along one axis: how many positions window o averages over: the window clipped to the padded
// input [−p, n + p) with count_include_pad, else to the input [0, n).
OPSCOPE_HD int64_t window_count(int64_t o, int64_t s, int64_t p, int64_t k, int64_t n, bool include_pad) {
  const int64_t start = o * s - p;
  const int64_t lo = include_pad ? start : (start < 0 ? 0 : start);
  const int64_t end = start + k, limit = include_pad ? n + p : n;
  return (end < limit ? end : limit) - lo;
}
// What the average of output (od, oh, ow) divides by.
OPSCOPE_HD int64_t window_divisor(const PoolWindow& w, int64_t od, int64_t oh, int64_t ow) {
  return window_count(od, w.SD, w.PD, w.KD, w.D, w.count_include_pad) *
         window_count(oh, w.SH, w.PH, w.KH, w.H, w.count_include_pad) *
         window_count(ow, w.SW, w.PW, w.KW, w.W, w.count_include_pad);
}

// Along one axis: the windows [lo, hi] (of `out` windows) that contain input position i:
// o·s − p <= i < o·s − p + k.
OPSCOPE_HD void windows_containing(int64_t i, int64_t s, int64_t p, int64_t k, int64_t out, int64_t& lo, int64_t& hi) {
  const int64_t t = i + p;
  lo = t < k ? 0 : (t - k) / s + 1;
  hi = t / s < out - 1 ? t / s : out - 1;
}

// Flat index in the volume (D×H×W) of the max of output (od, oh, ow)'s window; ties go to the
// first, and a NaN wins (it propagates, as in PyTorch).
template <class T>
OPSCOPE_HD int64_t window_argmax(const T* volume, const PoolWindow& w, int64_t od, int64_t oh, int64_t ow) {
  int64_t d0, d1, h0, h1, w0, w1;
  window_depths(w, od, d0, d1);
  window_rows(w, oh, h0, h1);
  window_cols(w, ow, w0, w1);
  int64_t best = (d0 * w.H + h0) * w.W + w0;
  for (int64_t d = d0; d < d1; ++d)
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t x = w0; x < w1; ++x) {
        const int64_t at = (d * w.H + h) * w.W + x;
        const T v = volume[at];
        if (v > volume[best] || v != v) {
          best = at;
          if (v != v) return best;
        }
      }
  return best;
}
// The 2-D form (D = 1): the flat index in the H×W plane.
template <class T> OPSCOPE_HD int64_t window_argmax(const T* plane, const PoolWindow& w, int64_t oh, int64_t ow) {
  return window_argmax(plane, w, 0, oh, ow);
}

// --- padding ---------------------------------------------------------------------------------
// Which input position output position o reads along one axis of n positions padded by `left`:
// reflect mirrors around the edge without repeating it, replicate repeats the edge; -1 where a
// constant pad supplies the value.
enum class PadMode : int { constant, reflect, replicate };
inline PadMode pad_mode(const std::string& s) {
  return s == "reflect" ? PadMode::reflect : s == "replicate" ? PadMode::replicate : PadMode::constant;
}
OPSCOPE_HD int64_t pad_source_index(int64_t o, int64_t left, int64_t n, PadMode mode) {
  const int64_t i = o - left;
  if (i >= 0 && i < n) return i;
  if (mode == PadMode::constant) return -1;
  if (mode == PadMode::replicate) return i < 0 ? 0 : n - 1;
  return i < 0 ? -i : 2 * (n - 1) - i;
}

// --- interpolate ---------------------------------------------------------------------------------
// x [N, C, H, W] resized to [N, C, OH, OW], PyTorch's F.interpolate. Along one axis, `ratio` is
// the input step per output step: 1/scale_factor when a scale was given, else in/out (and
// (in − 1)/(out − 1) with align_corners). As PyTorch, the nearest modes compute the source in
// float32 whatever the tensor's type (so both agree on which source a boundary picks).
enum class ResizeMode : int { nearest, nearest_exact, bilinear };
struct ResizeAxis {
  int64_t in = 1, out = 1;
  double ratio = 1;
  bool align_corners = false;
};
struct ResizeGeom {
  int64_t planes = 1;  // N·C
  ResizeAxis h, w;
  ResizeMode mode = ResizeMode::nearest;
};
// nearest: floor(o·ratio); nearest-exact: floor((o + ½)·ratio); both clamped to the input.
OPSCOPE_HD int64_t nearest_source(const ResizeAxis& a, int64_t o, ResizeMode mode) {
  const float r = static_cast<float>(a.ratio);
  const float src = mode == ResizeMode::nearest_exact ? (static_cast<float>(o) + 0.5f) * r : static_cast<float>(o) * r;
  const int64_t i = static_cast<int64_t>(src);  // src >= 0: truncation is floor
  return i < a.in - 1 ? i : a.in - 1;
}
// bilinear: the two sources i0 <= i1 of output o and the weight of i1 (i0's is 1 − l1):
// src = o·ratio with align_corners, else (o + ½)·ratio − ½ clamped at 0 (half-pixel centres).
OPSCOPE_HD void linear_sources(const ResizeAxis& a, int64_t o, int64_t& i0, int64_t& i1, double& l1) {
  double src = a.align_corners ? static_cast<double>(o) * a.ratio : (static_cast<double>(o) + 0.5) * a.ratio - 0.5;
  if (src < 0) src = 0;
  i0 = static_cast<int64_t>(src);
  if (i0 > a.in - 1) i0 = a.in - 1;
  i1 = i0 < a.in - 1 ? i0 + 1 : i0;
  l1 = src - static_cast<double>(i0);
  if (l1 < 0) l1 = 0;
}
// The ratio along one axis of in → out positions (scale: the given factor, 0 when none).
inline ResizeAxis resize_axis(int64_t in, int64_t out, double scale, bool align_corners) {
  ResizeAxis a;
  a.in = in;
  a.out = out;
  a.align_corners = align_corners;
  if (align_corners) a.ratio = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  else a.ratio = scale > 0 ? 1.0 / scale : static_cast<double>(in) / static_cast<double>(out);
  return a;
}

// The geometry of x [N, C, H, W] → y [N, C, OH, OW] for interpolate's attributes (size or
// scale_factor[, scale_factor_w], mode, align_corners).
inline ResizeGeom resize_geom(const Shape& x, const Shape& y, const Attrs& a) {
  ResizeGeom g;
  g.planes = x[0] * x[1];
  const std::string& m = a.s("mode");
  g.mode = m == "bilinear"        ? ResizeMode::bilinear
           : m == "nearest-exact" ? ResizeMode::nearest_exact
                                  : ResizeMode::nearest;
  const double sh = a.f("scale_factor"), sw = a.f("scale_factor_w") > 0 ? a.f("scale_factor_w") : sh;
  const bool given_size = a.ints("size")[0] > 0;
  g.h = resize_axis(x[2], y[2], given_size ? 0.0 : sh, a.b("align_corners"));
  g.w = resize_axis(x[3], y[3], given_size ? 0.0 : sw, a.b("align_corners"));
  return g;
}

// --- gather ----------------------------------------------------------------------------------
// x seen as [outer, n, inner] around the gathered axis, and how many indices are taken.
struct GatherGeom {
  int64_t outer = 1, n = 0, inner = 1, count = 0;
};

inline GatherGeom gather_geom(const Shape& x, int64_t axis, int64_t count) {
  GatherGeom g;
  for (int64_t a = 0; a < axis; ++a) g.outer *= x[static_cast<size_t>(a)];
  g.n = x[static_cast<size_t>(axis)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < x.size(); ++a) g.inner *= x[a];
  g.count = count;
  return g;
}

// --- the norms' splits -----------------------------------------------------------------------
// batch_norm: x [N, C, ...] as N×C planes of S elements, statistics per channel c.
struct ChannelSplit {
  int64_t N = 1, C = 1, S = 1;
};
inline ChannelSplit channel_split(const Shape& s) {
  ChannelSplit r;
  r.N = s[0];
  r.C = s[1];
  for (size_t i = 2; i < s.size(); ++i) r.S *= s[i];
  return r;
}

// group_norm: x [N, C, S...] as N·G contiguous blocks of Cg·S elements (Cg = C/G channels of S
// positions each), statistics per block; instance_norm is G = C.
struct GroupSplit {
  int64_t N = 1, C = 1, G = 1, Cg = 1, S = 1;
  OPSCOPE_HD int64_t block() const { return Cg * S; }
};
inline GroupSplit group_split(const Shape& s, int64_t groups) {
  GroupSplit r;
  r.N = s[0];
  r.C = s[1];
  r.G = groups;
  r.Cg = r.C / groups;
  for (size_t i = 2; i < s.size(); ++i) r.S *= s[i];
  return r;
}

// layer_norm: M rows of the N elements of the last k axes, statistics per row.
struct RowSplit {
  int64_t M = 1, N = 1;
};
inline RowSplit layer_split(const Shape& s, int64_t k) {
  RowSplit r;
  const size_t lead = s.size() - static_cast<size_t>(k);
  for (size_t i = 0; i < s.size(); ++i) (i < lead ? r.M : r.N) *= s[i];
  return r;
}

}  // namespace opscope
