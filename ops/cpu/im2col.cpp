// im2col and col2im for conv2d (built per instruction set). One image, one group: the column
// buffer has a row per (c, r, s) of Cg·R·S and a column per output position of OH·OW:
//   col[(c·R + r)·S + s][oh·OW + ow] = x[c, oh·st − p + r·d, ow·st − p + s·d]   (0 outside)
// im2col fills rows [q0, q1) (rows are independent); col2im, its adjoint, adds channels
// [c0, c1) back into dx (a channel's rows only ever touch that channel's plane). So the op can
// split both over threads without two threads writing one element.
#include <algorithm>

#include "ops/cpu/isa_build.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

// The output columns ow whose input column ow·st + off lies in [0, W): [lo, hi).
inline void valid_range(int64_t off, int64_t stride, int64_t extent, int64_t count, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = extent - 1 - off < 0 ? 0 : std::min(count, (extent - 1 - off) / stride + 1);
  lo = std::min(lo, hi);
}

template <class T> void im2col_rows(const T* xc, T* col, int64_t q0, int64_t q1, const ConvWindow& g) {
  const int64_t ohw = g.OH * g.OW;
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t c = q / (g.R * g.S), r = (q / g.S) % g.R, s = q % g.S;
    T* row = col + q * ohw;
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

// dx[c, ih, iw] += col[row][oh·OW + ow] for the channels [c0, c1) (overlapping windows add).
template <class T> void col2im_channels(const T* col, T* dxc, int64_t c0, int64_t c1, const ConvWindow& g) {
  const int64_t ohw = g.OH * g.OW;
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        const T* row = col + ((c * g.R + r) * g.S + s) * ohw;
        const int64_t off_w = s * g.dw - g.pw;
        int64_t lo, hi;
        valid_range(off_w, g.sw, g.W, g.OW, lo, hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + r * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const T* src = row + oh * g.OW;
          T* dst = dxc + (c * g.H + ih) * g.W + off_w;
          if (g.sw == 1)
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += src[ow];
          else
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.sw] += src[ow];
        }
      }
}

template <class T> void add_typed(TypedKernels<T>& k) {
  k.im2col_rows = im2col_rows<T>;
  k.col2im_channels = col2im_channels<T>;
}

}  // namespace

void add_im2col_kernels(KernelTable& t) {
  add_typed(t.f32);
  add_typed(t.f64);
}

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
