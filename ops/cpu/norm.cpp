// layer_norm and batch_norm kernels and their backward (built per instruction set): mean and
// variance by Welford, two passes or the cancelling E[x²]−E[x]² (see ops/norm.cpp for the
// lesson), then the normalization. Each call handles a range of rows (layer_norm) or channels
// (batch_norm), so the op can spread them over threads.
//
// Welford here runs kLanes independent accumulators (element i goes to lane i mod kLanes, all
// lanes see the same count, so 1/count is one scalar per step and the loop vectorizes), merged
// at the end by Chan's formula; its serial form would be bound by a divide per element.
#include <Eigen/Core>
#include <cmath>

#include "ops/cpu/isa_build.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

template <class T> using Col = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T> using ColMap = Eigen::Map<Col<T>>;
template <class T> using ConstColMap = Eigen::Map<const Col<T>>;

// Count, mean and M2 = Σ (x − mean)² of a group of elements.
template <class T> struct Moments {
  int64_t n = 0;
  T mean = 0, m2 = 0;
};

// Chan et al.: the moments of the union of two disjoint groups.
template <class T> Moments<T> merge(const Moments<T>& a, const Moments<T>& b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  Moments<T> r;
  r.n = a.n + b.n;
  const T delta = b.mean - a.mean;
  const T fb = static_cast<T>(b.n) / static_cast<T>(r.n);
  r.mean = a.mean + delta * fb;
  r.m2 = a.m2 + b.m2 + delta * delta * static_cast<T>(a.n) * fb;
  return r;
}

constexpr int kLanes = 64;

// Welford over n contiguous elements: kLanes lanes in parallel, then the tail one at a time.
template <class T> Moments<T> welford(const T* x, int64_t n) {
  using Lane = Eigen::Array<T, kLanes, 1>;
  const int64_t blocks = n / kLanes;
  Moments<T> r;
  if (blocks > 0) {
    Lane mean = Lane::Zero(), m2 = Lane::Zero();
    for (int64_t b = 0; b < blocks; ++b) {
      Eigen::Map<const Lane> v(x + b * kLanes);
      const T inv = static_cast<T>(1) / static_cast<T>(b + 1);
      const Lane d = v - mean;  // deviation from the old mean
      mean += d * inv;
      m2 += d * (v - mean);  // times the deviation from the new mean
    }
    // Merge the lanes pairwise (equal counts n: mean = (a + b)/2, M2 = M2a + M2b + δ²·n/2),
    // a tree of log2(kLanes) vector steps instead of kLanes dependent divides.
    T n_each = static_cast<T>(blocks);
    for (int width = kLanes / 2; width >= 1; width /= 2) {
      for (int l = 0; l < width; ++l) {
        const T delta = mean[l + width] - mean[l];
        m2[l] += m2[l + width] + delta * delta * (n_each * static_cast<T>(0.5));
        mean[l] = (mean[l] + mean[l + width]) * static_cast<T>(0.5);
      }
      n_each *= 2;
    }
    r = Moments<T>{blocks * kLanes, mean[0], m2[0]};
  }
  for (int64_t i = blocks * kLanes; i < n; ++i) {
    ++r.n;
    const T d = x[i] - r.mean;
    r.mean += d / static_cast<T>(r.n);
    r.m2 += d * (x[i] - r.mean);
  }
  return r;
}

// Mean and biased variance of the group made of `chunks` runs of `len` contiguous elements,
// `stride` elements apart (layer_norm: one chunk; batch_norm: N chunks of S).
template <class T>
void group_stats(const T* x, int64_t chunks, int64_t len, int64_t stride, NormAlgo algo, T& mean, T& var) {
  const int64_t count = chunks * len;
  const T inv_count = static_cast<T>(1) / static_cast<T>(count);
  switch (algo) {
    case NormAlgo::welford: {
      Moments<T> m;
      for (int64_t c = 0; c < chunks; ++c) m = merge(m, welford(x + c * stride, len));
      mean = m.mean;
      var = m.m2 * inv_count;
      return;
    }
    case NormAlgo::two_pass: {
      T s = 0;
      for (int64_t c = 0; c < chunks; ++c) s += ConstColMap<T>(x + c * stride, len).sum();
      mean = s * inv_count;
      T ss = 0;
      for (int64_t c = 0; c < chunks; ++c) ss += (ConstColMap<T>(x + c * stride, len) - mean).square().sum();
      var = ss * inv_count;
      return;
    }
    case NormAlgo::naive: {
      T s = 0, ss = 0;  // accumulated in T on purpose: this is the cancellation being shown
      for (int64_t c = 0; c < chunks; ++c) {
        ConstColMap<T> v(x + c * stride, len);
        s += v.sum();
        ss += v.square().sum();
      }
      mean = s * inv_count;
      var = ss * inv_count - mean * mean;  // may come out negative: no clamp, the failure is visible
      return;
    }
  }
}

// y = (x − mean)·rstd·γ + β over n contiguous elements (γ, β: per element, or none).
template <class T> void normalize_run(const T* x, T* y, int64_t n, T mean, T rstd, const T* w, const T* b) {
  ConstColMap<T> xr(x, n);
  ColMap<T> yr(y, n);
  if (w && b) yr = (xr - mean) * rstd * ConstColMap<T>(w, n) + ConstColMap<T>(b, n);
  else if (w) yr = (xr - mean) * rstd * ConstColMap<T>(w, n);
  else if (b) yr = (xr - mean) * rstd + ConstColMap<T>(b, n);
  else yr = (xr - mean) * rstd;
}

template <class T>
void layer_norm_rows(const T* x, T* y, int64_t m0, int64_t m1, int64_t N, T eps, const T* w, const T* b,
                     NormAlgo algo) {
  for (int64_t m = m0; m < m1; ++m) {
    T mean = 0, var = 0;
    group_stats<T>(x + m * N, 1, N, N, algo, mean, var);
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    normalize_run<T>(x + m * N, y + m * N, N, mean, rstd, w, b);
  }
}

// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·γ for rows [m0, m1); this range's
// Σ dy·x̂ and Σ dy go to dw, db (the op adds the ranges up in order). g: N elements of scratch.
template <class T>
void layer_norm_backward_rows(const T* x, const T* dy, const T* w, T* dx, T* dw, T* db, T* gbuf, int64_t m0, int64_t m1,
                              int64_t N, T eps) {
  ColMap<T> dwm(dw, N), dbm(db, N), g(gbuf, N);
  dwm.setZero();
  dbm.setZero();
  const T inv_n = static_cast<T>(1) / static_cast<T>(N);
  for (int64_t m = m0; m < m1; ++m) {
    const T* px = x + m * N;
    ConstColMap<T> xr(px, N), dr(dy + m * N, N);
    T mean = 0, var = 0;
    group_stats<T>(px, 1, N, N, NormAlgo::two_pass, mean, var);
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    auto xhat = (xr - mean) * rstd;
    if (w) g = dr * ConstColMap<T>(w, N);
    else g = dr;
    const T mean_g = g.sum() * inv_n, mean_gx = (g * xhat).sum() * inv_n;
    ColMap<T>(dx + m * N, N) = rstd * (g - mean_g - xhat * mean_gx);
    dwm += dr * xhat;
    dbm += dr;
  }
}

// batch_norm over channels [c0, c1) of x [N, C, S]: batch statistics (training, which also
// updates the running ones in place) or the running statistics (eval).
template <class T>
void batch_norm_channels(const T* x, T* y, int64_t c0, int64_t c1, int64_t N, int64_t C, int64_t S, T eps,
                         bool training, T momentum, T* rm, T* rv, const T* w, const T* b, NormAlgo algo) {
  const int64_t count = N * S;
  for (int64_t c = c0; c < c1; ++c) {
    T mean = 0, var = 0;
    if (training) {
      group_stats<T>(x + c * S, N, S, C * S, algo, mean, var);
      const T unbiased = var * static_cast<T>(count) / static_cast<T>(count - 1);
      rm[c] = (1 - momentum) * rm[c] + momentum * mean;
      rv[c] = (1 - momentum) * rv[c] + momentum * unbiased;
    } else {
      mean = rm[c];
      var = rv[c];
    }
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    const T scale = rstd * (w ? w[c] : static_cast<T>(1));
    const T shift = (b ? b[c] : static_cast<T>(0)) - mean * scale;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = (n * C + c) * S;
      ColMap<T>(y + off, S) = ConstColMap<T>(x + off, S) * scale + shift;
    }
  }
}

// Training: dx = γ·rstd·(dy − mean(dy) − x̂·mean(dy·x̂)) with batch statistics (two-pass);
// eval: dx = γ·rstd·dy with the running statistics. Both: dγ = Σ dy·x̂, dβ = Σ dy per channel.
template <class T>
void batch_norm_backward_channels(const T* x, const T* dy, const T* rm, const T* rv, const T* w, T* dx, T* dw, T* db,
                                  int64_t c0, int64_t c1, int64_t N, int64_t C, int64_t S, T eps, bool training) {
  const T inv_count = static_cast<T>(1) / static_cast<T>(N * S);
  for (int64_t c = c0; c < c1; ++c) {
    T mean = 0, var = 0;
    if (training) group_stats<T>(x + c * S, N, S, C * S, NormAlgo::two_pass, mean, var);
    else mean = rm[c], var = rv[c];
    const T rstd = static_cast<T>(1) / std::sqrt(var + eps);
    const T gamma = w ? w[c] : static_cast<T>(1);
    T sum_dy = 0, sum_dyx = 0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = (n * C + c) * S;
      ConstColMap<T> xr(x + off, S), dr(dy + off, S);
      sum_dy += dr.sum();
      sum_dyx += (dr * ((xr - mean) * rstd)).sum();
    }
    db[c] = sum_dy;
    dw[c] = sum_dyx;
    const T mdy = training ? sum_dy * inv_count : 0, mdyx = training ? sum_dyx * inv_count : 0;
    for (int64_t n = 0; n < N; ++n) {
      const int64_t off = (n * C + c) * S;
      ConstColMap<T> xr(x + off, S), dr(dy + off, S);
      ColMap<T>(dx + off, S) = (gamma * rstd) * (dr - mdy - (xr - mean) * rstd * mdyx);
    }
  }
}

template <class T> void add_typed(TypedKernels<T>& k) {
  k.layer_norm_rows = layer_norm_rows<T>;
  k.layer_norm_backward_rows = layer_norm_backward_rows<T>;
  k.batch_norm_channels = batch_norm_channels<T>;
  k.batch_norm_backward_channels = batch_norm_backward_channels<T>;
}

}  // namespace

void add_norm_kernels(KernelTable& t) {
  add_typed(t.f32);
  add_typed(t.f64);
}

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
