// The scalar formula of every pointwise operator, written once. The CPU kernels
// (ops/pointwise_cpu.h), the CUDA kernels (ops/cuda/elementwise.cu) and the fused kernels of
// both devices are all derived from these functions, so the devices agree by construction.
// No Eigen and no std:: containers: nvcc compiles this header for the GPU as it is.
//
// Adding a pointwise op: its formula here (a function f_NAME and a line in the list below),
// then its declaration in its family file with cpu::make_pointwise(d, Formula::NAME) (ops/pointwise_cpu.h):
// the CPU and CUDA kernels, fusion and the CUDA-vs-CPU tests follow from these two.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/hd.h"

namespace opscope::pointwise {

// The numbers a formula takes from its op's attributes (OpDef::pointwise.params, in order).
struct Params {
  double p0 = 0, p1 = 0;
};

// X(name, arity, takes_int64): every formula, each the op of the same name.
// clang-format off
#define OPSCOPE_POINTWISE_FORMULAS(X)                                                                                 \
  X(add, 2, true) X(sub, 2, true) X(mul, 2, true) X(div, 2, false) X(pow, 2, true) X(maximum, 2, true)                \
  X(minimum, 2, true) X(eq, 2, true) X(ne, 2, true) X(lt, 2, true) X(le, 2, true) X(gt, 2, true) X(ge, 2, true)       \
  X(neg, 1, true) X(exp, 1, false) X(log, 1, false) X(sqrt, 1, false) X(abs, 1, true) X(sign, 1, true)                \
  X(relu, 1, false) X(leaky_relu, 1, false) X(gelu, 1, false) X(gelu_backward, 2, false) X(sigmoid, 1, false)         \
  X(tanh, 1, false) X(softplus, 1, false) X(erf, 1, false) X(clip, 1, true) X(tanh_backward, 2, false)            \
  X(sigmoid_backward, 2, false) X(relu_backward, 2, false) X(hardsigmoid, 1, false) X(hardsigmoid_backward, 2, false)   \
  X(hardswish, 1, false) X(hardswish_backward, 2, false) X(elu, 1, false) X(selu, 1, false)                            \
  X(elu_backward, 2, false) X(mish, 1, false) X(mish_backward, 2, false) X(floor, 1, true) X(ceil, 1, true)           \
  X(round, 1, true) X(sin, 1, false) X(cos, 1, false) X(mod, 2, true) X(fmod, 2, true)
// clang-format on

enum class Formula : uint8_t {
#define OPSCOPE_PW_ENUM(name, arity, ints) name,
  OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_ENUM)
#undef OPSCOPE_PW_ENUM
};

constexpr int arity_of(Formula f) {
  switch (f) {
#define OPSCOPE_PW_ARITY(name, arity, ints) \
  case Formula::name: return arity;
    OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_ARITY)
#undef OPSCOPE_PW_ARITY
  }
  return 0;
}

constexpr bool takes_int64(Formula f) {
  switch (f) {
#define OPSCOPE_PW_INTS(name, arity, ints) \
  case Formula::name: return ints;
    OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_INTS)
#undef OPSCOPE_PW_INTS
  }
  return false;
}

constexpr const char* name_of(Formula f) {
  switch (f) {
#define OPSCOPE_PW_NAME(name, arity, ints) \
  case Formula::name: return #name;
    OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_NAME)
#undef OPSCOPE_PW_NAME
  }
  return "?";
}

// The maths the formulas call, the same name on both devices (CUDA's own functions on the GPU).
namespace math {
#if defined(__CUDA_ARCH__)
#define OPSCOPE_PW_MATH(fn)                           \
  OPSCOPE_HD float fn(float x) { return ::fn##f(x); } \
  OPSCOPE_HD double fn(double x) { return ::fn(x); }
#else
#define OPSCOPE_PW_MATH(fn)                           \
  OPSCOPE_HD float fn(float x) { return std::fn(x); } \
  OPSCOPE_HD double fn(double x) { return std::fn(x); }
#endif
OPSCOPE_PW_MATH(exp)
OPSCOPE_PW_MATH(log)
OPSCOPE_PW_MATH(log1p)
OPSCOPE_PW_MATH(sqrt)
OPSCOPE_PW_MATH(tanh)
OPSCOPE_PW_MATH(erf)
OPSCOPE_PW_MATH(fabs)
OPSCOPE_PW_MATH(expm1)
OPSCOPE_PW_MATH(floor)
OPSCOPE_PW_MATH(ceil)
OPSCOPE_PW_MATH(rint)  // to nearest, ties to even (the default rounding mode), as NumPy's and PyTorch's round
OPSCOPE_PW_MATH(sin)
OPSCOPE_PW_MATH(cos)
#undef OPSCOPE_PW_MATH
#if defined(__CUDA_ARCH__)
OPSCOPE_HD float fmod(float a, float b) { return ::fmodf(a, b); }
OPSCOPE_HD double fmod(double a, double b) { return ::fmod(a, b); }
#else
OPSCOPE_HD float fmod(float a, float b) { return std::fmod(a, b); }
OPSCOPE_HD double fmod(double a, double b) { return std::fmod(a, b); }
#endif
template <class T> OPSCOPE_HD T pow(T a, T b) {
  if constexpr (std::is_integral_v<T>) {  // as the CPU always did: std::pow in double, then cast
    return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(b)));
  } else {
#if defined(__CUDA_ARCH__)
    return ::pow(a, b);
#else
    return std::pow(a, b);
#endif
  }
}
}  // namespace math

inline constexpr double kSqrt1_2 = 0.70710678118654752440;  // 1/√2
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // √(2/π)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/√(2π)

// --- the formulas: y = f(a, b) (b unused by unary ones) ----------------------------------------
template <class T> OPSCOPE_HD T f_add(T a, T b, const Params&) { return a + b; }
template <class T> OPSCOPE_HD T f_sub(T a, T b, const Params&) { return a - b; }
template <class T> OPSCOPE_HD T f_mul(T a, T b, const Params&) { return a * b; }
template <class T> OPSCOPE_HD T f_div(T a, T b, const Params&) { return a / b; }
template <class T> OPSCOPE_HD T f_pow(T a, T b, const Params&) { return math::pow(a, b); }
template <class T> OPSCOPE_HD T f_maximum(T a, T b, const Params&) { return a > b ? a : b; }
template <class T> OPSCOPE_HD T f_minimum(T a, T b, const Params&) { return a < b ? a : b; }
// Comparisons give 0 or 1 (the kernels store it as int64).
template <class T> OPSCOPE_HD T f_eq(T a, T b, const Params&) { return T(a == b); }
template <class T> OPSCOPE_HD T f_ne(T a, T b, const Params&) { return T(a != b); }
template <class T> OPSCOPE_HD T f_lt(T a, T b, const Params&) { return T(a < b); }
template <class T> OPSCOPE_HD T f_le(T a, T b, const Params&) { return T(a <= b); }
template <class T> OPSCOPE_HD T f_gt(T a, T b, const Params&) { return T(a > b); }
template <class T> OPSCOPE_HD T f_ge(T a, T b, const Params&) { return T(a >= b); }

template <class T> OPSCOPE_HD T f_neg(T a, T, const Params&) { return -a; }
template <class T> OPSCOPE_HD T f_exp(T a, T, const Params&) { return math::exp(a); }
template <class T> OPSCOPE_HD T f_log(T a, T, const Params&) { return math::log(a); }
template <class T> OPSCOPE_HD T f_sqrt(T a, T, const Params&) { return math::sqrt(a); }
template <class T> OPSCOPE_HD T f_abs(T a, T, const Params&) {
  if constexpr (std::is_integral_v<T>) return a < T(0) ? -a : a;
  else return math::fabs(a);
}
template <class T> OPSCOPE_HD T f_sign(T a, T, const Params&) { return T((a > T(0)) - (a < T(0))); }
// max(x, 0), written so that NaN stays NaN (as PyTorch's relu).
template <class T> OPSCOPE_HD T f_relu(T a, T, const Params&) { return a < T(0) ? T(0) : a; }
// p0: negative_slope
template <class T> OPSCOPE_HD T f_leaky_relu(T a, T, const Params& p) { return a > T(0) ? a : a * T(p.p0); }
// p0: 0 = x·Φ(x) with erf, 1 = the tanh approximation x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))
template <class T> OPSCOPE_HD T f_gelu(T a, T, const Params& p) {
  if (p.p0 == 1) return T(0.5) * a * (T(1) + math::tanh(T(kSqrt2OverPi) * (a + T(0.044715) * a * a * a)));
  return T(0.5) * a * (T(1) + math::erf(a * T(kSqrt1_2)));
}
// a = x, b = dy: dx = dy·(Φ(x) + x·φ(x)), or the derivative of the tanh form.
template <class T> OPSCOPE_HD T f_gelu_backward(T x, T dy, const Params& p) {
  if (p.p0 == 1) {
    const T t = math::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x));
    const T du = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
    return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  }
  const T cdf = T(0.5) * (T(1) + math::erf(x * T(kSqrt1_2)));
  const T pdf = T(kInvSqrt2Pi) * math::exp(T(-0.5) * x * x);
  return dy * (cdf + x * pdf);
}
// 1 / (1 + e^-x) without ever taking e of a large positive number.
template <class T> OPSCOPE_HD T f_sigmoid(T a, T, const Params&) {
  if (a >= T(0)) return T(1) / (T(1) + math::exp(-a));
  const T e = math::exp(a);
  return e / (T(1) + e);
}
template <class T> OPSCOPE_HD T f_tanh(T a, T, const Params&) { return math::tanh(a); }
// a = y (the forward's output), b = dy: one pass for the backward of tanh and of sigmoid, where
// written as formulas of ops they would be three nodes and three passes over the data.
template <class T> OPSCOPE_HD T f_tanh_backward(T y, T dy, const Params&) { return dy * (T(1) - y * y); }
template <class T> OPSCOPE_HD T f_sigmoid_backward(T y, T dy, const Params&) { return dy * y * (T(1) - y); }
// a = y = relu(x), b = dy: dy where y > 0, else 0 (one pass, no mask tensor; as
// where(gt(y, 0), dy, 0), NaN in y gives 0).
template <class T> OPSCOPE_HD T f_relu_backward(T y, T dy, const Params&) { return y > T(0) ? dy : T(0); }
// p0: beta, p1: threshold. log(1 + e^(βx))/β, and x itself once βx > threshold (where the two
// differ by less than e^-threshold and e^(βx) would overflow).
template <class T> OPSCOPE_HD T f_softplus(T a, T, const Params& p) {
  const T bx = a * T(p.p0);
  return bx > T(p.p1) ? a : math::log1p(math::exp(bx)) / T(p.p0);
}
template <class T> OPSCOPE_HD T f_erf(T a, T, const Params&) { return math::erf(a); }
// A bound of clip in the element type: for int64, ±inf and values beyond its range saturate
// and NaN is 0.
template <class T> OPSCOPE_HD T clip_bound(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (v != v) return T(0);
    if (v <= -9.2e18) return T(-9223372036854775807LL - 1);
    if (v >= 9.2e18) return T(9223372036854775807LL);
  }
  return static_cast<T>(v);
}
// p0: min, p1: max (±inf: no bound). A NaN x stays NaN.
template <class T> OPSCOPE_HD T f_clip(T a, T, const Params& p) {
  const T lo = clip_bound<T>(p.p0), hi = clip_bound<T>(p.p1);
  const T y = a < lo ? lo : a;
  return y > hi ? hi : y;
}

// p0: alpha, p1: beta. clamp(alpha·x + beta, 0, 1); PyTorch's hardsigmoid = relu6(x + 3)/6 is
// alpha = 1/6, beta = 1/2 (ONNX's HardSigmoid defaults to alpha = 0.2).
template <class T> OPSCOPE_HD T f_hardsigmoid(T a, T, const Params& p) {
  const T y = T(p.p0) * a + T(p.p1);
  return y < T(0) ? T(0) : y > T(1) ? T(1) : y;
}
// a = x, b = dy: alpha·dy inside the ramp (0 < alpha·x + beta < 1), 0 on the flat parts. The
// ramp's ends are compared in x (−beta/alpha, (1 − beta)/alpha) rather than through alpha·x + beta,
// which a fused multiply-add leaves a hair above 0 at x = −3 and so off PyTorch's kink.
template <class T> OPSCOPE_HD T f_hardsigmoid_backward(T x, T dy, const Params& p) {
  const T alpha = T(p.p0), beta = T(p.p1);
  if (alpha == T(0)) return T(0);
  const T end0 = -beta / alpha, end1 = (T(1) - beta) / alpha;
  const T lo = end0 < end1 ? end0 : end1, hi = end0 < end1 ? end1 : end0;
  return x > lo && x < hi ? dy * alpha : T(0);
}
// x·relu6(x + 3)/6: 0 below −3, x above 3, x·(x + 3)/6 between (MobileNetV3's activation).
template <class T> OPSCOPE_HD T f_hardswish(T a, T, const Params&) {
  return a <= T(-3) ? T(0) : a >= T(3) ? a : a * (a + T(3)) / T(6);
}
// a = x, b = dy: the derivative 0, (2x + 3)/6, 1 on the three pieces (PyTorch's choice at the
// kinks: both take the middle piece's, −½ at x = −3 and 1½ at x = 3).
template <class T> OPSCOPE_HD T f_hardswish_backward(T x, T dy, const Params&) {
  return x < T(-3) ? T(0) : x <= T(3) ? dy * (x / T(3) + T(0.5)) : dy;
}
// p0: alpha. x for x > 0, alpha·(e^x − 1) below (expm1 keeps the digits of small x).
template <class T> OPSCOPE_HD T f_elu(T a, T, const Params& p) { return a > T(0) ? a : T(p.p0) * math::expm1(a); }
// p0: alpha, p1: scale. selu = scale·elu(x, alpha) with the self-normalising constants.
template <class T> OPSCOPE_HD T f_selu(T a, T, const Params& p) {
  return T(p.p1) * (a > T(0) ? a : T(p.p0) * math::expm1(a));
}
// a = x, b = dy; p0: alpha, p1: scale (1 for elu): scale·dy for x > 0, scale·alpha·e^x·dy below.
template <class T> OPSCOPE_HD T f_elu_backward(T x, T dy, const Params& p) {
  return x > T(0) ? dy * T(p.p1) : dy * T(p.p1) * T(p.p0) * math::exp(x);
}
// log(1 + e^x) as softplus with threshold 20 (mish's inner function).
template <class T> OPSCOPE_HD T softplus1(T x) { return x > T(20) ? x : math::log1p(math::exp(x)); }
// x·tanh(softplus(x)) (YOLOv4's activation).
template <class T> OPSCOPE_HD T f_mish(T a, T, const Params&) { return a * math::tanh(softplus1(a)); }
// a = x, b = dy: dy·(t + x·σ(x)·(1 − t²)), t = tanh(softplus(x)).
template <class T> OPSCOPE_HD T f_mish_backward(T x, T dy, const Params& p) {
  const T t = math::tanh(softplus1(x));
  return dy * (t + x * f_sigmoid(x, x, p) * (T(1) - t * t));
}
// Rounding: integers are already whole.
template <class T> OPSCOPE_HD T f_floor(T a, T, const Params&) {
  if constexpr (std::is_integral_v<T>) return a;
  else return math::floor(a);
}
template <class T> OPSCOPE_HD T f_ceil(T a, T, const Params&) {
  if constexpr (std::is_integral_v<T>) return a;
  else return math::ceil(a);
}
template <class T> OPSCOPE_HD T f_round(T a, T, const Params&) {
  if constexpr (std::is_integral_v<T>) return a;
  else return math::rint(a);
}
template <class T> OPSCOPE_HD T f_sin(T a, T, const Params&) { return math::sin(a); }
template <class T> OPSCOPE_HD T f_cos(T a, T, const Params&) { return math::cos(a); }
// The remainder of a / b with the sign of b (Python's %, torch.remainder, NumPy's mod):
// fmod's, moved by b when the signs differ. Integer division by 0 gives 0 (not a trap).
template <class T> OPSCOPE_HD T f_mod(T a, T b, const Params&) {
  if constexpr (std::is_integral_v<T>) {
    if (b == T(0) || b == T(-1)) return T(0);  // b = −1: INT64_MIN % −1 would trap
    T r = a % b;
    return r != T(0) && ((r < T(0)) != (b < T(0))) ? r + b : r;
  } else {
    const T r = math::fmod(a, b);
    return r != T(0) && ((r < T(0)) != (b < T(0))) ? r + b : r;
  }
}
// The remainder with the sign of a (C's fmod, torch.fmod, ONNX's Mod with fmod=1).
template <class T> OPSCOPE_HD T f_fmod(T a, T b, const Params&) {
  if constexpr (std::is_integral_v<T>) {
    if (b == T(0) || b == T(-1)) return T(0);
    return a % b;
  } else {
    return math::fmod(a, b);
  }
}

// --- evaluation --------------------------------------------------------------------------------
// y = f(a, b) for a formula known when compiling (folded to the one formula).
template <Formula F, class T> OPSCOPE_HD T eval(T a, T b, const Params& p) {
#define OPSCOPE_PW_STATIC(name, arity, ints)                                   \
  if constexpr (F == Formula::name) {                                          \
    if constexpr (ints || !std::is_integral_v<T>) return f_##name<T>(a, b, p); \
    else return T(0);                                                          \
  } else
  OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_STATIC)
#undef OPSCOPE_PW_STATIC
  return T(0);
}

// y = f(a, b) for a formula chosen at run time (a fused kernel's instruction).
template <class T> OPSCOPE_HD T eval(Formula f, T a, T b, const Params& p) {
  switch (f) {
#define OPSCOPE_PW_DYNAMIC(name, arity, ints) \
  case Formula::name: return eval<Formula::name, T>(a, b, p);
    OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_DYNAMIC)
#undef OPSCOPE_PW_DYNAMIC
  }
  return T(0);
}

}  // namespace opscope::pointwise
