// softmax, log_softmax and softmax_backward over rows (built per instruction set). The axis
// splits x into [A, C, B]: A independent groups of C rows of B contiguous elements; a call
// handles groups [a0, a1), so the op can spread the groups over threads.
//
// The last axis (B = 1) is the fast path: each row of C elements is processed while it sits in
// cache, with the SIMD exp of vec_exp.h. Another axis works on whole rows of B elements at a
// time (vectorized over B), so no transposed copy is made either way.
#include <cmath>
#include <limits>

#include "ops/cpu/vec_exp.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

// out = softmax(x) (stable: exp(x − max) / Σ exp(x − max); naive: exp(x) / Σ exp(x), which
// overflows for x around 89 in float32 and 710 in float64) or log_softmax(x) = x − max − log Σ exp(x − max).
template <class T>
void softmax_rows(const T* x, T* out, int64_t a0, int64_t a1, int64_t C, int64_t B, SoftmaxKind kind) {
  if (B == 1) {
    // Per row: one pass for the max (from memory), one for exp and its sum, one to scale (in cache).
    // A NaN anywhere in a row makes its sum NaN, so the fast max (which may skip NaN) is enough.
    for (int64_t a = a0; a < a1; ++a) {
      ConstRowMap<T> xr(x + a * C, C);
      RowMap<T> o(out + a * C, C);
      const T* next = a + 1 < a1 ? x + (a + 1) * C : nullptr;
      switch (kind) {
        case SoftmaxKind::stable: {
          const T m = xr.maxCoeff();
          o *= static_cast<T>(1) / exp_shifted_sum<T>(x + a * C, m, out + a * C, C, next);
          break;
        }
        case SoftmaxKind::naive:
          o = xr.exp();
          o /= o.sum();  // inf / inf = nan once exp overflows
          break;
        case SoftmaxKind::log: {
          const T m = xr.maxCoeff();
          o = xr - (m + std::log(exp_shifted_sum<T>(x + a * C, m, nullptr, C, next)));
          break;
        }
      }
    }
    return;
  }
  RowArray<T> m(B), sum(B);
  for (int64_t a = a0; a < a1; ++a) {
    const T* xa = x + a * C * B;
    T* oa = out + a * C * B;
    auto xrow = [&](int64_t c) { return ConstRowMap<T>(xa + c * B, B); };
    auto orow = [&](int64_t c) { return RowMap<T>(oa + c * B, B); };
    if (kind == SoftmaxKind::naive) {
      m.setZero();
    } else {
      m.setConstant(-std::numeric_limits<T>::infinity());
      for (int64_t c = 0; c < C; ++c) m = m.max(xrow(c));
    }
    sum.setZero();
    for (int64_t c = 0; c < C; ++c) {
      assign_exp_flushed<T>(orow(c), xrow(c) - m);
      sum += orow(c);
    }
    if (kind == SoftmaxKind::log) {
      m += sum.log();
      for (int64_t c = 0; c < C; ++c) orow(c) = xrow(c) - m;
    } else {
      for (int64_t c = 0; c < C; ++c) orow(c) /= sum;
    }
  }
}

// dx = s * (dy − Σ dy·s) along the axis, in one pass per row.
template <class T>
void softmax_backward_rows(const T* sm, const T* dy, T* dx, int64_t a0, int64_t a1, int64_t C, int64_t B) {
  if (B == 1) {
    for (int64_t a = a0; a < a1; ++a) {
      ConstRowMap<T> sr(sm + a * C, C), dr(dy + a * C, C);
      RowMap<T> o(dx + a * C, C);
      const T dot = (sr * dr).sum();
      o = sr * (dr - dot);
    }
    return;
  }
  RowArray<T> dot(B);
  for (int64_t a = a0; a < a1; ++a) {
    const int64_t base = a * C * B;
    dot.setZero();
    for (int64_t c = 0; c < C; ++c) dot += ConstRowMap<T>(sm + base + c * B, B) * ConstRowMap<T>(dy + base + c * B, B);
    for (int64_t c = 0; c < C; ++c) {
      ConstRowMap<T> sr(sm + base + c * B, B), dr(dy + base + c * B, B);
      RowMap<T>(dx + base + c * B, B) = sr * (dr - dot);
    }
  }
}

}  // namespace

void add_softmax_kernels(KernelTable& t) {
  t.f32.softmax_rows = softmax_rows<float>;
  t.f64.softmax_rows = softmax_rows<double>;
  t.f32.softmax_backward_rows = softmax_backward_rows<float>;
  t.f64.softmax_backward_rows = softmax_backward_rows<double>;
}

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
