// max_pool2d and avg_pool2d, forward and backward, over the planes [p0, p1) of x [N·C, H, W]
// (built per instruction set; the op spreads the planes over threads).
//
// The common 2×2 window with stride 2 and no padding has its own loop (float32): a group of L
// windows (L = floats per register: 16 with AVX-512, 8 with AVX2) is read as two registers per
// input row, split into the four corners of each window by shuffles (a b / c e), reduced in
// registers, and the backward's four dx values are interleaved back the same way, so each
// input and output byte is touched once (about copy bandwidth). Other windows and float64 run
// the plain loop over each window. Both follow the `direct` algorithm
// of ops/pool.cpp exactly: NaN propagates, and ties go to the first element in row-major order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <immintrin.h>

#include "ops/cpu/isa_build.h"
#include "ops/geometry.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

// --- the plain loops ---------------------------------------------------------------------------
// The window's clipped span along each axis is geometry.h's window_span, as in `direct` and CUDA.
template <class F>
void for_each_window(const PoolGeom& g, F f) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    int64_t h0, h1;
    window_span(oh, g.SH, g.PH, g.KH, g.H, h0, h1);
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      int64_t w0, w1;
      window_span(ow, g.SW, g.PW, g.KW, g.W, w0, w1);
      f(oh, ow, h0, h1, w0, w1);
    }
  }
}

// Index (within the plane) of the max of the clipped window: the first NaN, else the first max.
template <class T>
int64_t argmax_in(const T* plane, int64_t W, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
  int64_t best = h0 * W + w0;
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t x = w0; x < w1; ++x)
      if (plane[h * W + x] > plane[best] || std::isnan(plane[h * W + x])) {
        best = h * W + x;
        if (std::isnan(plane[best])) return best;
      }
  return best;
}

template <class T>
void max_plane_plain(const PoolGeom& g, const T* x, T* y) {
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    y[oh * g.OW + ow] = x[argmax_in(x, g.W, h0, h1, w0, w1)];
  });
}

template <class T>
void max_backward_plane_plain(const PoolGeom& g, const T* x, const T* dy, T* dx) {
  std::fill(dx, dx + g.H * g.W, T(0));
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    dx[argmax_in(x, g.W, h0, h1, w0, w1)] += dy[oh * g.OW + ow];
  });
}

template <class T>
void avg_plane_plain(const PoolGeom& g, const T* x, T* y) {
  const T inv = static_cast<T>(1) / static_cast<T>(g.KH * g.KW);  // padding counts (count_include_pad)
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    T s = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t c = w0; c < w1; ++c) s += x[h * g.W + c];
    y[oh * g.OW + ow] = s * inv;
  });
}

template <class T>
void avg_backward_plane_plain(const PoolGeom& g, const T* dy, T* dx) {
  std::fill(dx, dx + g.H * g.W, T(0));
  const T inv = static_cast<T>(1) / static_cast<T>(g.KH * g.KW);
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    const T v = dy[oh * g.OW + ow] * inv;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t c = w0; c < w1; ++c) dx[h * g.W + c] += v;
  });
}

// --- 2×2, stride 2, no padding: a row of windows in SIMD registers ---------------------------
// Per output row: input rows r0, r1 (2·OW floats each), output o or the dy row g and dx rows
// d0, d1. Groups of L windows: the 2L input columns are loaded as two registers per row,
// split into the window corners a b / c e (even and odd columns), reduced, and for the
// backward the four corner outputs are interleaved back; the last group is masked.
#if defined(__AVX512F__)
constexpr int L = 16;
using VecF = __m512;
using VecI = __m512i;
using Mask = __mmask16;

struct Lanes {
  VecI even, odd, lo, hi;
  Lanes() {
    alignas(64) int32_t e[16], o[16], l[16], h[16];
    for (int i = 0; i < 16; ++i) {
      e[i] = 2 * i;
      o[i] = 2 * i + 1;
      l[i] = i / 2 + (i % 2) * 16;
      h[i] = 8 + i / 2 + (i % 2) * 16;
    }
    even = _mm512_load_si512(e);
    odd = _mm512_load_si512(o);
    lo = _mm512_load_si512(l);
    hi = _mm512_load_si512(h);
  }
};
inline Mask first(int n) { return n >= 16 ? Mask(0xFFFF) : n <= 0 ? Mask(0) : Mask((1u << n) - 1); }
inline VecF load(const float* p, int n) { return _mm512_maskz_loadu_ps(first(n), p); }
inline void store(float* p, VecF v, int n) { _mm512_mask_storeu_ps(p, first(n), v); }
// Columns 2i and 2i + 1 of 2n floats at r.
inline void split(const Lanes& m, const float* r, int n, VecF& even, VecF& odd) {
  const VecF x0 = load(r, 2 * n), x1 = load(r + 16, 2 * n - 16);
  even = _mm512_permutex2var_ps(x0, m.even, x1);
  odd = _mm512_permutex2var_ps(x0, m.odd, x1);
}
// Stores 2n floats: e0 o0 e1 o1 ...
inline void join(const Lanes& m, float* r, int n, VecF even, VecF odd) {
  store(r, _mm512_permutex2var_ps(even, m.lo, odd), 2 * n);
  store(r + 16, _mm512_permutex2var_ps(even, m.hi, odd), 2 * n - 16);
}
// argmax_in's chain: take v when best is not NaN and v is larger or NaN.
inline void take_if_larger(VecF& best, VecI& idx, VecF v, int k) {
  const Mask t = _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q) &
                 (_mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
  best = _mm512_mask_mov_ps(best, t, v);
  idx = _mm512_mask_mov_epi32(idx, t, _mm512_set1_epi32(k));
}
inline VecF where_index(VecI idx, int k, VecF v) { return _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(idx, _mm512_set1_epi32(k)), v); }
inline VecI zero_index() { return _mm512_setzero_si512(); }
inline VecF add(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline VecF mul(VecF a, float s) { return _mm512_mul_ps(a, _mm512_set1_ps(s)); }
#else
constexpr int L = 8;
using VecF = __m256;
using VecI = __m256i;

struct Lanes {};
// Lane masks for maskload/maskstore: the first n lanes.
inline __m256i first(int n) {
  const int k = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline VecF load(const float* p, int n) { return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, first(n)); }
inline void store(float* p, VecF v, int n) {
  if (n >= 8) _mm256_storeu_ps(p, v);
  else if (n > 0) _mm256_maskstore_ps(p, first(n), v);
}
inline void split(const Lanes&, const float* r, int n, VecF& even, VecF& odd) {
  const VecF x0 = load(r, 2 * n), x1 = load(r + 8, 2 * n - 8);
  // shuffle_ps works per 128-bit half; permute4x64 puts the halves in order.
  even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(x0, x1, _MM_SHUFFLE(2, 0, 2, 0))), 0xD8));
  odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(x0, x1, _MM_SHUFFLE(3, 1, 3, 1))), 0xD8));
}
inline void join(const Lanes&, float* r, int n, VecF even, VecF odd) {
  const VecF lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
  store(r, _mm256_permute2f128_ps(lo, hi, 0x20), 2 * n);
  store(r + 8, _mm256_permute2f128_ps(lo, hi, 0x31), 2 * n - 8);
}
inline void take_if_larger(VecF& best, VecI& idx, VecF v, int k) {
  const VecF t = _mm256_and_ps(_mm256_cmp_ps(best, best, _CMP_ORD_Q),
                               _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  best = _mm256_blendv_ps(best, v, t);
  idx = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(idx), _mm256_castsi256_ps(_mm256_set1_epi32(k)), t));
}
inline VecF where_index(VecI idx, int k, VecF v) {
  return _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, _mm256_set1_epi32(k))), v);
}
inline VecI zero_index() { return _mm256_setzero_si256(); }
inline VecF add(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline VecF mul(VecF a, float s) { return _mm256_mul_ps(a, _mm256_set1_ps(s)); }
#endif

const Lanes& lanes() {
  static const Lanes m;
  return m;
}

// The window corners of n windows: a b over c e.
struct Corners {
  VecF a, b, c, e;
};
inline Corners corners(const float* r0, const float* r1, int n) {
  Corners w;
  split(lanes(), r0, n, w.a, w.b);
  split(lanes(), r1, n, w.c, w.e);
  return w;
}

// The max (NaN propagating) and the corner index 0..3 that argmax_in picks.
inline VecI argmax4(const Corners& w, VecF& best) {
  best = w.a;
  VecI idx = zero_index();
  take_if_larger(best, idx, w.b, 1);
  take_if_larger(best, idx, w.c, 2);
  take_if_larger(best, idx, w.e, 3);
  return idx;
}

void max_plane_2x2(const PoolGeom& g, const float* x, float* y) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* r0 = x + 2 * oh * g.W;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += L) {
      const int n = static_cast<int>(std::min<int64_t>(L, g.OW - ow0));
      VecF best;
      argmax4(corners(r0 + 2 * ow0, r0 + g.W + 2 * ow0, n), best);
      store(y + oh * g.OW + ow0, best, n);
    }
  }
}

void max_backward_plane_2x2(const PoolGeom& g, const float* x, const float* dy, float* dx) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* r0 = x + 2 * oh * g.W;
    float* d0 = dx + 2 * oh * g.W;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += L) {
      const int n = static_cast<int>(std::min<int64_t>(L, g.OW - ow0));
      VecF best;
      const VecI idx = argmax4(corners(r0 + 2 * ow0, r0 + g.W + 2 * ow0, n), best);
      const VecF gv = load(dy + oh * g.OW + ow0, n);
      join(lanes(), d0 + 2 * ow0, n, where_index(idx, 0, gv), where_index(idx, 1, gv));
      join(lanes(), d0 + g.W + 2 * ow0, n, where_index(idx, 2, gv), where_index(idx, 3, gv));
    }
    for (int64_t c = 2 * g.OW; c < g.W; ++c) d0[c] = d0[g.W + c] = 0.0f;  // odd W: the last column is in no window
  }
  for (int64_t r = 2 * g.OH; r < g.H; ++r) std::fill(dx + r * g.W, dx + (r + 1) * g.W, 0.0f);  // odd H
}

void avg_plane_2x2(const PoolGeom& g, const float* x, float* y) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* r0 = x + 2 * oh * g.W;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += L) {
      const int n = static_cast<int>(std::min<int64_t>(L, g.OW - ow0));
      const Corners w = corners(r0 + 2 * ow0, r0 + g.W + 2 * ow0, n);
      store(y + oh * g.OW + ow0, mul(add(add(add(w.a, w.b), w.c), w.e), 0.25f), n);  // the plain loop's order
    }
  }
}

void avg_backward_plane_2x2(const PoolGeom& g, const float* dy, float* dx) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    float* d0 = dx + 2 * oh * g.W;
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += L) {
      const int n = static_cast<int>(std::min<int64_t>(L, g.OW - ow0));
      const VecF v = mul(load(dy + oh * g.OW + ow0, n), 0.25f);
      join(lanes(), d0 + 2 * ow0, n, v, v);
      join(lanes(), d0 + g.W + 2 * ow0, n, v, v);
    }
    for (int64_t c = 2 * g.OW; c < g.W; ++c) d0[c] = d0[g.W + c] = 0.0f;
  }
  for (int64_t r = 2 * g.OH; r < g.H; ++r) std::fill(dx + r * g.W, dx + (r + 1) * g.W, 0.0f);
}

bool is_2x2(const PoolGeom& g) {
  return g.KH == 2 && g.KW == 2 && g.SH == 2 && g.SW == 2 && g.PH == 0 && g.PW == 0;
}

// --- the table's entries -----------------------------------------------------------------------
template <class T>
void max_pool_planes(const T* x, T* y, int64_t p0, int64_t p1, const PoolGeom& g) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * g.H * g.W;
    T* yp = y + p * g.OH * g.OW;
    if constexpr (sizeof(T) == 4) {
      if (is_2x2(g)) {
        max_plane_2x2(g, xp, yp);
        continue;
      }
    }
    max_plane_plain(g, xp, yp);
  }
}

template <class T>
void max_pool_backward_planes(const T* x, const T* dy, T* dx, int64_t p0, int64_t p1, const PoolGeom& g) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * g.H * g.W;
    const T* gp = dy + p * g.OH * g.OW;
    T* dp = dx + p * g.H * g.W;
    if constexpr (sizeof(T) == 4) {
      if (is_2x2(g)) {
        max_backward_plane_2x2(g, xp, gp, dp);
        continue;
      }
    }
    max_backward_plane_plain(g, xp, gp, dp);
  }
}

template <class T>
void avg_pool_planes(const T* x, T* y, int64_t p0, int64_t p1, const PoolGeom& g) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* xp = x + p * g.H * g.W;
    T* yp = y + p * g.OH * g.OW;
    if constexpr (sizeof(T) == 4) {
      if (is_2x2(g)) {
        avg_plane_2x2(g, xp, yp);
        continue;
      }
    }
    avg_plane_plain(g, xp, yp);
  }
}

template <class T>
void avg_pool_backward_planes(const T* dy, T* dx, int64_t p0, int64_t p1, const PoolGeom& g) {
  for (int64_t p = p0; p < p1; ++p) {
    const T* gp = dy + p * g.OH * g.OW;
    T* dp = dx + p * g.H * g.W;
    if constexpr (sizeof(T) == 4) {
      if (is_2x2(g)) {
        avg_backward_plane_2x2(g, gp, dp);
        continue;
      }
    }
    avg_backward_plane_plain(g, gp, dp);
  }
}

template <class T>
void add_typed(TypedKernels<T>& k) {
  k.max_pool_planes = max_pool_planes<T>;
  k.max_pool_backward_planes = max_pool_backward_planes<T>;
  k.avg_pool_planes = avg_pool_planes<T>;
  k.avg_pool_backward_planes = avg_pool_backward_planes<T>;
}

}  // namespace

void add_pool_kernels(KernelTable& t) {
  add_typed(t.f32);
  add_typed(t.f64);
}

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
