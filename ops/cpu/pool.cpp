// max_pool2d and avg_pool2d, forward and backward, over the planes [p0, p1) of x [N·C, H, W]
// (built per instruction set; the op spreads the planes over threads).
//
// The common 2×2 window with stride 2 and no padding has its own loop (float32): a group of L
// windows (L = floats per register: 16 with AVX-512, 8 with AVX2, 4 in WebAssembly) is read as two registers per
// input row, split into the four corners of each window by shuffles (a b / c e), reduced in
// registers, and the backward's four dx values are interleaved back the same way, so each
// input and output byte is touched once (about copy bandwidth). A group without NaN takes the
// max in max instructions and routes dy to the first corner equal to it; a group holding a NaN
// takes a compare-and-select chain that propagates it. Other windows and float64 run
// the plain loop over each window. Both follow the `direct` algorithm
// of ops/pool.cpp exactly: NaN propagates, and ties go to the first element in row-major order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#else
#include <immintrin.h>
#endif

#include "ops/cpu/isa_build.h"
#include "ops/geometry.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

// --- the plain loops ---------------------------------------------------------------------------
// The window's clipped span along each axis is geometry.h's window_span, as in `direct` and CUDA.
template <class F> void for_each_window(const PoolGeom& g, F f) {
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
template <class T> int64_t argmax_in(const T* plane, int64_t W, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
  int64_t best = h0 * W + w0;
  for (int64_t h = h0; h < h1; ++h)
    for (int64_t x = w0; x < w1; ++x)
      if (plane[h * W + x] > plane[best] || std::isnan(plane[h * W + x])) {
        best = h * W + x;
        if (std::isnan(plane[best])) return best;
      }
  return best;
}

template <class T> void max_plane_plain(const PoolGeom& g, const T* x, T* y) {
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    y[oh * g.OW + ow] = x[argmax_in(x, g.W, h0, h1, w0, w1)];
  });
}

template <class T> void max_backward_plane_plain(const PoolGeom& g, const T* x, const T* dy, T* dx) {
  std::fill(dx, dx + g.H * g.W, T(0));
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    dx[argmax_in(x, g.W, h0, h1, w0, w1)] += dy[oh * g.OW + ow];
  });
}

template <class T> void avg_plane_plain(const PoolGeom& g, const T* x, T* y) {
  const T inv = static_cast<T>(1) / static_cast<T>(g.KH * g.KW);  // padding counts (count_include_pad)
  for_each_window(g, [&](int64_t oh, int64_t ow, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    T s = 0;
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t c = w0; c < w1; ++c) s += x[h * g.W + c];
    y[oh * g.OW + ow] = s * inv;
  });
}

template <class T> void avg_backward_plane_plain(const PoolGeom& g, const T* dy, T* dx) {
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
// The first n lanes of a register (n may be <= 0 or >= L).
struct Part {
  Mask m;
};
inline Part first(int n) { return {n >= 16 ? Mask(0xFFFF) : n <= 0 ? Mask(0) : Mask((1u << n) - 1)}; }
inline VecF load(const float* p, Part k) { return _mm512_maskz_loadu_ps(k.m, p); }
inline void store(float* p, VecF v, Part k) { _mm512_mask_storeu_ps(p, k.m, v); }
// Columns 2i and 2i + 1 of 2n floats at r: the first L in lanes lo, the rest in lanes hi.
inline void split(const Lanes& m, const float* r, Part lo, Part hi, VecF& even, VecF& odd) {
  const VecF x0 = load(r, lo), x1 = load(r + 16, hi);
  even = _mm512_permutex2var_ps(x0, m.even, x1);
  odd = _mm512_permutex2var_ps(x0, m.odd, x1);
}
// Stores 2n floats e0 o0 e1 o1 ... (lanes as split's).
inline void join(const Lanes& m, float* r, Part lo, Part hi, VecF even, VecF odd) {
  store(r, _mm512_permutex2var_ps(even, m.lo, odd), lo);
  store(r + 16, _mm512_permutex2var_ps(even, m.hi, odd), hi);
}
// argmax_in's chain: take v when best is not NaN and v is larger or NaN.
inline void take_if_larger(VecF& best, VecI& idx, VecF v, int k) {
  const Mask t = _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q) &
                 (_mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
  best = _mm512_mask_mov_ps(best, t, v);
  idx = _mm512_mask_mov_epi32(idx, t, _mm512_set1_epi32(k));
}
inline VecF where_index(VecI idx, int k, VecF v) {
  return _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(idx, _mm512_set1_epi32(k)), v);
}
inline VecI zero_index() { return _mm512_setzero_si512(); }
// v > best ? v : best (a tie keeps best, the earlier element); only for lanes without NaN.
inline VecF max_keep_first(VecF v, VecF best) { return _mm512_max_ps(v, best); }
inline bool any_nan(VecF a, VecF b, VecF c, VecF e) {
  return (_mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(c, e, _CMP_UNORD_Q)) != 0;
}
// The four corners' dx: g where the corner is the first one equal to best, else 0.
inline void route_to_first_equal(VecF a, VecF b, VecF c, VecF best, VecF g, VecF& da, VecF& db, VecF& dc, VecF& de) {
  const Mask ma = _mm512_cmp_ps_mask(a, best, _CMP_EQ_OQ);
  const Mask mb = _mm512_cmp_ps_mask(b, best, _CMP_EQ_OQ) & ~ma;
  const Mask mc = _mm512_cmp_ps_mask(c, best, _CMP_EQ_OQ) & ~(ma | mb);
  da = _mm512_maskz_mov_ps(ma, g);
  db = _mm512_maskz_mov_ps(mb, g);
  dc = _mm512_maskz_mov_ps(mc, g);
  de = _mm512_maskz_mov_ps(Mask(~(ma | mb | mc)), g);
}
inline VecF add(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline VecF mul(VecF a, float s) { return _mm512_mul_ps(a, _mm512_set1_ps(s)); }
#elif defined(__wasm_simd128__)
// WebAssembly's 128-bit SIMD (the browser build): four lanes, no masked loads or stores, so a
// partial group goes through a small buffer.
constexpr int L = 4;
using VecF = v128_t;
using VecI = v128_t;

struct Lanes {};
struct Part {
  int n;
};
inline Part first(int n) { return {n}; }
inline VecF load(const float* p, Part k) {
  if (k.n >= 4) return wasm_v128_load(p);
  alignas(16) float t[4] = {0, 0, 0, 0};
  if (k.n > 0) std::memcpy(t, p, sizeof(float) * static_cast<size_t>(k.n));
  return wasm_v128_load(t);
}
inline void store(float* p, VecF v, Part k) {
  if (k.n >= 4) {
    wasm_v128_store(p, v);
  } else if (k.n > 0) {
    alignas(16) float t[4];
    wasm_v128_store(t, v);
    std::memcpy(p, t, sizeof(float) * static_cast<size_t>(k.n));
  }
}
inline void split(const Lanes&, const float* r, Part lo, Part hi, VecF& even, VecF& odd) {
  const VecF x0 = load(r, lo), x1 = load(r + 4, hi);
  even = wasm_i32x4_shuffle(x0, x1, 0, 2, 4, 6);
  odd = wasm_i32x4_shuffle(x0, x1, 1, 3, 5, 7);
}
inline void join(const Lanes&, float* r, Part lo, Part hi, VecF even, VecF odd) {
  store(r, wasm_i32x4_shuffle(even, odd, 0, 4, 1, 5), lo);
  store(r + 4, wasm_i32x4_shuffle(even, odd, 2, 6, 3, 7), hi);
}
inline VecF is_nan(VecF v) { return wasm_v128_not(wasm_f32x4_eq(v, v)); }
inline void take_if_larger(VecF& best, VecI& idx, VecF v, int k) {
  const VecF t = wasm_v128_and(wasm_f32x4_eq(best, best), wasm_v128_or(wasm_f32x4_gt(v, best), is_nan(v)));
  best = wasm_v128_bitselect(v, best, t);
  idx = wasm_v128_bitselect(wasm_i32x4_splat(k), idx, t);
}
inline VecF where_index(VecI idx, int k, VecF v) { return wasm_v128_and(wasm_i32x4_eq(idx, wasm_i32x4_splat(k)), v); }
inline VecI zero_index() { return wasm_i32x4_splat(0); }
inline VecF max_keep_first(VecF v, VecF best) { return wasm_f32x4_pmax(best, v); }  // best < v ? v : best
inline bool any_nan(VecF a, VecF b, VecF c, VecF e) {
  return wasm_v128_any_true(wasm_v128_or(wasm_v128_or(is_nan(a), is_nan(b)), wasm_v128_or(is_nan(c), is_nan(e))));
}
inline void route_to_first_equal(VecF a, VecF b, VecF c, VecF best, VecF g, VecF& da, VecF& db, VecF& dc, VecF& de) {
  const VecF ma = wasm_f32x4_eq(a, best);
  const VecF mb = wasm_v128_andnot(wasm_f32x4_eq(b, best), ma);
  const VecF taken = wasm_v128_or(ma, mb);
  const VecF mc = wasm_v128_andnot(wasm_f32x4_eq(c, best), taken);
  da = wasm_v128_and(ma, g);
  db = wasm_v128_and(mb, g);
  dc = wasm_v128_and(mc, g);
  de = wasm_v128_andnot(g, wasm_v128_or(taken, mc));
}
inline VecF add(VecF a, VecF b) { return wasm_f32x4_add(a, b); }
inline VecF mul(VecF a, float s) { return wasm_f32x4_mul(a, wasm_f32x4_splat(s)); }
#else
constexpr int L = 8;
using VecF = __m256;
using VecI = __m256i;

struct Lanes {};
// Lane masks for maskload/maskstore: the first n lanes.
inline __m256i lane_mask(int n) {
  const int k = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
struct Part {
  int n;
  __m256i m;
};
inline Part first(int n) { return {n, lane_mask(n)}; }
inline VecF load(const float* p, Part k) { return k.n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, k.m); }
inline void store(float* p, VecF v, Part k) {
  if (k.n >= 8) _mm256_storeu_ps(p, v);
  else if (k.n > 0) _mm256_maskstore_ps(p, k.m, v);
}
inline void split(const Lanes&, const float* r, Part lo, Part hi, VecF& even, VecF& odd) {
  const VecF x0 = load(r, lo), x1 = load(r + 8, hi);
  // shuffle_ps works per 128-bit half; permute4x64 puts the halves in order.
  even = _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(x0, x1, _MM_SHUFFLE(2, 0, 2, 0))), 0xD8));
  odd = _mm256_castpd_ps(
      _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(x0, x1, _MM_SHUFFLE(3, 1, 3, 1))), 0xD8));
}
inline void join(const Lanes&, float* r, Part lo, Part hi, VecF even, VecF odd) {
  const VecF low = _mm256_unpacklo_ps(even, odd), high = _mm256_unpackhi_ps(even, odd);
  store(r, _mm256_permute2f128_ps(low, high, 0x20), lo);
  store(r + 8, _mm256_permute2f128_ps(low, high, 0x31), hi);
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
inline VecF max_keep_first(VecF v, VecF best) { return _mm256_max_ps(v, best); }
inline bool any_nan(VecF a, VecF b, VecF c, VecF e) {
  return _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q), _mm256_cmp_ps(c, e, _CMP_UNORD_Q))) != 0;
}
inline void route_to_first_equal(VecF a, VecF b, VecF c, VecF best, VecF g, VecF& da, VecF& db, VecF& dc, VecF& de) {
  const VecF ma = _mm256_cmp_ps(a, best, _CMP_EQ_OQ);
  const VecF mb = _mm256_andnot_ps(ma, _mm256_cmp_ps(b, best, _CMP_EQ_OQ));
  const VecF taken = _mm256_or_ps(ma, mb);
  const VecF mc = _mm256_andnot_ps(taken, _mm256_cmp_ps(c, best, _CMP_EQ_OQ));
  da = _mm256_and_ps(ma, g);
  db = _mm256_and_ps(mb, g);
  dc = _mm256_and_ps(mc, g);
  de = _mm256_andnot_ps(_mm256_or_ps(taken, mc), g);
}
inline VecF add(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline VecF mul(VecF a, float s) { return _mm256_mul_ps(a, _mm256_set1_ps(s)); }
#endif

// A group of n windows (1 <= n <= L) of a row: the lanes of its n outputs and of its 2n
// inputs (per input row: the first L, then the rest), computed once per plane.
struct Span {
  Part out, lo, hi;
};
inline Span span_of(int n) { return {first(n), first(2 * n), first(2 * n - L)}; }

const Lanes& lanes() {
  static const Lanes m;
  return m;
}

// The window corners of n windows: a b over c e.
struct Corners {
  VecF a, b, c, e;
};
inline Corners corners(const Lanes& m, const float* r0, const float* r1, const Span& s) {
  Corners w;
  split(m, r0, s.lo, s.hi, w.a, w.b);
  split(m, r1, s.lo, s.hi, w.c, w.e);
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

// argmax_in's max when no corner is NaN: a strict > chain in row-major order, as a max
// instruction does it (fewer instructions than argmax4's NaN-aware chain, which the groups
// holding a NaN still take).
inline VecF max4(const Corners& w) { return max_keep_first(w.e, max_keep_first(w.c, max_keep_first(w.b, w.a))); }
inline bool any_nan(const Corners& w) { return any_nan(w.a, w.b, w.c, w.e); }

// The groups of a row of OW windows: the rest (OW mod L windows), then whole groups of L.
// each(f) calls f(ow0, span); the whole groups' span is a constant (no mask to apply), the
// rest's is computed once here rather than in every row.
//
// With `spill`, the rest runs unmasked too: masked loads and stores (VMASKMOVPS) are slow on
// AMD's cores, where they took half of a 28-wide plane's time. Its extra lanes read the next
// input rows and write what the loop writes again later: the outputs of the next row, the
// start of this window row's second input row (rewritten by the first whole group, which is
// why the rest goes first) and of the next window row's first. So a spilling row needs a next
// row in its plane, at least one whole group, and no column outside every window (W = 2·OW).
class RowGroups {
 public:
  RowGroups(int64_t OW, bool spill)
      : whole_(OW / L * L), rest_n_(static_cast<int>(OW % L)), rest_(span_of(spill && whole_ > 0 ? L : rest_n_)) {}
  template <class F> void each(F f) const {
    if (rest_n_ > 0) f(whole_, rest_);
    for (int64_t ow0 = 0; ow0 < whole_; ow0 += L) f(ow0, span_of(L));
  }

 private:
  int64_t whole_;
  int rest_n_;
  Span rest_;
};

// The groups of each output row of a plane: every row but the last spills (see RowGroups).
class PlaneRows {
 public:
  explicit PlaneRows(const PoolGeom& g) : inner_(g.OW, g.W == 2 * g.OW), last_(g.OW, false), OH_(g.OH) {}
  const RowGroups& row(int64_t oh) const { return oh + 1 < OH_ ? inner_ : last_; }

 private:
  RowGroups inner_, last_;
  int64_t OH_;
};

// The loops read the geometry into locals first: the stores through float pointers would
// otherwise make the compiler reload it in every group.
// A forward pool: each group's window corners reduced to its outputs by reduce(corners).
template <class Reduce> void forward_plane_2x2(const PoolGeom& g, const float* x, float* y, Reduce reduce) {
  const Lanes m = lanes();
  const int64_t W = g.W, OH = g.OH, OW = g.OW;
  const PlaneRows rows(g);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = x + 2 * oh * W;
    float* o = y + oh * OW;
    rows.row(oh).each([&](int64_t ow0, const Span& s) {
      store(o + ow0, reduce(corners(m, r0 + 2 * ow0, r0 + W + 2 * ow0, s)), s.out);
    });
  }
}

void max_plane_2x2(const PoolGeom& g, const float* x, float* y) {
  forward_plane_2x2(g, x, y, [](const Corners& w) {
    VecF best;
    if (any_nan(w)) argmax4(w, best);
    else best = max4(w);
    return best;
  });
}

void max_backward_plane_2x2(const PoolGeom& g, const float* x, const float* dy, float* dx) {
  const Lanes m = lanes();
  const int64_t W = g.W, H = g.H, OH = g.OH, OW = g.OW;
  const PlaneRows rows(g);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = x + 2 * oh * W;
    const float* gr = dy + oh * OW;
    float* d0 = dx + 2 * oh * W;
    rows.row(oh).each([&](int64_t ow0, const Span& s) {
      const Corners w = corners(m, r0 + 2 * ow0, r0 + W + 2 * ow0, s);
      const VecF gv = load(gr + ow0, s.out);
      VecF da, db, dc, de;
      if (any_nan(w)) {
        VecF best;
        const VecI idx = argmax4(w, best);
        da = where_index(idx, 0, gv), db = where_index(idx, 1, gv), dc = where_index(idx, 2, gv),
        de = where_index(idx, 3, gv);
      } else {
        route_to_first_equal(w.a, w.b, w.c, max4(w), gv, da, db, dc, de);
      }
      join(m, d0 + 2 * ow0, s.lo, s.hi, da, db);
      join(m, d0 + W + 2 * ow0, s.lo, s.hi, dc, de);
    });
    for (int64_t c = 2 * OW; c < W; ++c) d0[c] = d0[W + c] = 0.0f;  // odd W: the last column is in no window
  }
  for (int64_t r = 2 * OH; r < H; ++r) std::fill(dx + r * W, dx + (r + 1) * W, 0.0f);  // odd H
}

void avg_plane_2x2(const PoolGeom& g, const float* x, float* y) {
  forward_plane_2x2(g, x, y, [](const Corners& w) {
    return mul(add(add(add(w.a, w.b), w.c), w.e), 0.25f);
  });  // the plain loop's order
}

void avg_backward_plane_2x2(const PoolGeom& g, const float* dy, float* dx) {
  const Lanes m = lanes();
  const int64_t W = g.W, H = g.H, OH = g.OH, OW = g.OW;
  const PlaneRows rows(g);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* gr = dy + oh * OW;
    float* d0 = dx + 2 * oh * W;
    rows.row(oh).each([&](int64_t ow0, const Span& s) {
      const VecF v = mul(load(gr + ow0, s.out), 0.25f);
      join(m, d0 + 2 * ow0, s.lo, s.hi, v, v);
      join(m, d0 + W + 2 * ow0, s.lo, s.hi, v, v);
    });
    for (int64_t c = 2 * OW; c < W; ++c) d0[c] = d0[W + c] = 0.0f;
  }
  for (int64_t r = 2 * OH; r < H; ++r) std::fill(dx + r * W, dx + (r + 1) * W, 0.0f);
}

bool is_2x2(const PoolGeom& g) { return g.KH == 2 && g.KW == 2 && g.SH == 2 && g.SW == 2 && g.PH == 0 && g.PW == 0; }

// --- the table's entries -----------------------------------------------------------------------
template <class T> void max_pool_planes(const T* x, T* y, int64_t p0, int64_t p1, const PoolGeom& g) {
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

template <class T> void avg_pool_planes(const T* x, T* y, int64_t p0, int64_t p1, const PoolGeom& g) {
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

template <class T> void avg_pool_backward_planes(const T* dy, T* dx, int64_t p0, int64_t p1, const PoolGeom& g) {
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

template <class T> void add_typed(TypedKernels<T>& k) {
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
