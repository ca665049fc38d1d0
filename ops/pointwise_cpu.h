// The CPU kernels of the pointwise ops and the CPU fused kernel's inner loop, derived from the
// formulas of ops/pointwise.h. A plain loop over a formula is what the compiler vectorises by
// itself for arithmetic (add, relu, leaky_relu, ...); for the transcendental ones it calls libm
// once per element, so those formulas also have a vectorised Eigen form here, kept only where
// bench_pointwise measures it faster than the loop (its table prints both, side by side).
#pragma once
#include <Eigen/Core>
#include <type_traits>
#include <unsupported/Eigen/SpecialFunctions>

#include "core/op.h"
#include "ops/cpu/kernels.h"
#include "ops/pointwise.h"

namespace opscope::cpu {

using pointwise::Formula;
using pointwise::Params;

// y[i] = f(a[i], b[i]) over n contiguous elements: the formula itself, one element at a time.
template <Formula F, class T> void pointwise_loop(const T* a, const T* b, T* y, int64_t n, const Params& p) {
  if constexpr (pointwise::arity_of(F) == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = pointwise::eval<F, T>(a[i], a[i], p);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = pointwise::eval<F, T>(a[i], b[i], p);
  }
}

// The vectorised forms (Eigen array expressions of the same formula); a formula without one
// runs its loop.
template <Formula F> struct Vectorised : std::false_type {};
#define OPSCOPE_VECTORISED(name, expr)                                                                      \
  template <> struct Vectorised<Formula::name> : std::true_type {                                           \
    template <class T, class X, class Y> static void run(const X& x, const X& y, Y& out, const Params& p) { \
      (void)y;                                                                                              \
      (void)p;                                                                                              \
      out = expr;                                                                                           \
    }                                                                                                       \
  };
OPSCOPE_VECTORISED(exp, x.exp())
OPSCOPE_VECTORISED(log, x.log())
OPSCOPE_VECTORISED(sqrt, x.sqrt())
OPSCOPE_VECTORISED(tanh, x.tanh())
OPSCOPE_VECTORISED(erf, x.erf())
OPSCOPE_VECTORISED(sigmoid, x.logistic())  // Eigen's overflow-safe 1 / (1 + e^-x)
// max(x, 0) + slope·min(x, 0): the loop's select is a branch per element (GCC keeps the
// conditional product under -ftrapping-math), mispredicted on random signs.
OPSCOPE_VECTORISED(leaky_relu, x.max(T(0)) + T(p.p0) * x.min(T(0)))
#undef OPSCOPE_VECTORISED
template <> struct Vectorised<Formula::gelu> : std::true_type {
  template <class T, class X, class Y> static void run(const X& x, const X&, Y& out, const Params& p) {
    if (p.p0 == 1) out = T(0.5) * x * (T(1) + (T(pointwise::kSqrt2OverPi) * (x + T(0.044715) * x * x * x)).tanh());
    else out = T(0.5) * x * (T(1) + (x * T(pointwise::kSqrt1_2)).erf());
  }
};
// a = y, b = dy. relu_backward has no second form: its select loop runs as fast as Eigen's
// (bench_pointwise).
template <> struct Vectorised<Formula::tanh_backward> : std::true_type {
  template <class T, class X, class Y> static void run(const X& y, const X& dy, Y& out, const Params&) {
    out = dy * (T(1) - y * y);
  }
};
template <> struct Vectorised<Formula::sigmoid_backward> : std::true_type {
  template <class T, class X, class Y> static void run(const X& y, const X& dy, Y& out, const Params&) {
    out = dy * y * (T(1) - y);
  }
};
// dx = gelu_backward(x, dy)
template <> struct Vectorised<Formula::gelu_backward> : std::true_type {
  template <class T, class X, class Y> static void run(const X& x, const X& dy, Y& out, const Params& p) {
    if (p.p0 == 1) {
      out = (T(pointwise::kSqrt2OverPi) * (x + T(0.044715) * x * x * x)).tanh();  // t, then dx over it
      out = dy * (T(0.5) * (T(1) + out) +
                  T(0.5) * x * (T(1) - out * out) * (T(pointwise::kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x)));
    } else {
      out = dy * (T(0.5) * (T(1) + (x * T(pointwise::kSqrt1_2)).erf()) +
                  x * T(pointwise::kInvSqrt2Pi) * (T(-0.5) * x * x).exp());
    }
  }
};

// y = f(a, b) over n contiguous elements, the fastest way measured.
template <Formula F, class T> void pointwise_chunk(const T* a, const T* b, T* y, int64_t n, const Params& p) {
  if constexpr ((F == Formula::gelu || F == Formula::gelu_backward) && std::is_same_v<T, float>) {
    // The same expression built for the widest vectors the CPU has (ops/cpu/gelu.cpp).
    if (const auto gelu = kern<float>().gelu) return gelu(a, F == Formula::gelu ? nullptr : b, y, n, p.p0 == 1);
  }
  if constexpr (Vectorised<F>::value && std::is_floating_point_v<T>) {
    using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<const Arr> x(a, n), z(pointwise::arity_of(F) == 2 ? b : a, n);
    Eigen::Map<Arr> out(y, n);
    Vectorised<F>::template run<T>(x, z, out, p);
  } else {
    pointwise_loop<F, T>(a, b, y, n, p);
  }
}

// The same for a formula chosen at run time (one switch per chunk, not per element).
template <class T> void pointwise_chunk(Formula f, const T* a, const T* b, T* y, int64_t n, const Params& p) {
  switch (f) {
#define OPSCOPE_PW_CHUNK(name, arity, ints)                                                              \
  case Formula::name:                                                                                    \
    if constexpr (ints || std::is_floating_point_v<T>) pointwise_chunk<Formula::name, T>(a, b, y, n, p); \
    return;
    OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_CHUNK)
#undef OPSCOPE_PW_CHUNK
  }
}

// The CPU kernel of a pointwise op: NumPy broadcasting for two operands, the inputs cast to
// the computing dtype (the output's; for comparisons the inputs' promoted dtype, stored as 0/1).
KernelFn pointwise_kernel(Formula f);

// Makes `d` the pointwise op of formula `f` (d.name must be the formula's name): its trait
// (fusible), elementwise (may run in place) and its CPU kernel "default". `params`: the
// attributes that are the formula's numbers, in order.
void make_pointwise(OpDef& d, Formula f, std::vector<std::string> params = {});

}  // namespace opscope::cpu
