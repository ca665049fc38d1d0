// CUDA elementwise kernels: binary arithmetic and comparisons with NumPy broadcasting, where,
// unary maths and the activations. Bandwidth-bound: the roofline is bytes moved / copy bandwidth.
//
// Three paths per op, chosen on the host:
//  - vec4: float32, every tensor dense with the output's shape and 16-byte aligned: each thread
//    moves float4s (one 16-byte load per input), the tail (n % 4) by a scalar pass;
//  - dense: any dtype, dense same-shape inputs, a grid-stride loop;
//  - strided: broadcasting or strided views, offsets from the flat index (stride 0 = broadcast).
#include <cmath>

#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// --- functors (one per op; T the compute type, R the result type) ------------------------------
struct Add { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct Sub { template <class T> __device__ T operator()(T a, T b) const { return a - b; } };
struct Mul { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct Div { template <class T> __device__ T operator()(T a, T b) const { return a / b; } };
struct Pow {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {  // integer power by squaring, as the CPU's std::pow then cast
      return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(b)));
    } else {
      return pow(a, b);
    }
  }
};
struct Maximum { template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
struct Minimum { template <class T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
struct Eq { template <class T> __device__ int64_t operator()(T a, T b) const { return a == b; } };
struct Ne { template <class T> __device__ int64_t operator()(T a, T b) const { return a != b; } };
struct Lt { template <class T> __device__ int64_t operator()(T a, T b) const { return a < b; } };
struct Le { template <class T> __device__ int64_t operator()(T a, T b) const { return a <= b; } };
struct Gt { template <class T> __device__ int64_t operator()(T a, T b) const { return a > b; } };
struct Ge { template <class T> __device__ int64_t operator()(T a, T b) const { return a >= b; } };

template <class T, class R, class F>
__global__ void binary_dense(const T* a, const T* b, R* out, int64_t n, F f) {
  GRID_STRIDE(i, n) out[i] = static_cast<R>(f(a[i], b[i]));
}

template <class F>
__global__ void binary_vec4(const float4* a, const float4* b, float4* out, int64_t n4, F f) {
  GRID_STRIDE(i, n4) {
    const float4 x = a[i], y = b[i];
    out[i] = make_float4(f(x.x, y.x), f(x.y, y.y), f(x.z, y.z), f(x.w, y.w));
  }
}

template <class T, class R, class F>
__global__ void binary_strided(const T* a, StridedIndex ia, const T* b, StridedIndex ib, R* out, int64_t n, F f) {
  GRID_STRIDE(i, n) out[i] = static_cast<R>(f(a[offset_of(ia, i)], b[offset_of(ib, i)]));
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// out = f(a, b) in compute type T, out of type R (contiguous, the broadcast shape).
template <class T, class R, class F>
void launch_binary(const Tensor& a0, const Tensor& b0, const Tensor& out, F f, const char* name) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const DType dt = dtype_of<T>();
  Tensor a = a0.dtype() == dt ? a0 : a0.cast(dt), b = b0.dtype() == dt ? b0 : b0.cast(dt);
  const bool dense_same = a.is_contiguous() && b.is_contiguous() && a.shape() == out.shape() && b.shape() == out.shape();
  if (dense_same) {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float>) {
      if (aligned16(a.raw_data()) && aligned16(b.raw_data()) && aligned16(out.raw_data())) {
        const int64_t n4 = n / 4;
        if (n4 > 0) {
          binary_vec4<<<grid_for(n4), kThreads, 0, stream()>>>(reinterpret_cast<const float4*>(a.data<float>()),
                                                               reinterpret_cast<const float4*>(b.data<float>()),
                                                               reinterpret_cast<float4*>(out.data<float>()), n4, f);
          OPSCOPE_CUDA_LAUNCHED(name);
        }
        if (n % 4) {  // the tail
          binary_dense<<<1, 32, 0, stream()>>>(a.data<float>() + n4 * 4, b.data<float>() + n4 * 4,
                                               out.data<float>() + n4 * 4, n % 4, f);
          OPSCOPE_CUDA_LAUNCHED(name);
        }
        return;
      }
    }
    binary_dense<<<grid_for(n), kThreads, 0, stream()>>>(a.data<T>(), b.data<T>(), out.data<R>(), n, f);
    OPSCOPE_CUDA_LAUNCHED(name);
    return;
  }
  const StridedIndex ia = strided_index(out.shape(), a.shape(), a.strides(), name);
  const StridedIndex ib = strided_index(out.shape(), b.shape(), b.strides(), name);
  binary_strided<<<grid_for(n), kThreads, 0, stream()>>>(a.data<T>(), ia, b.data<T>(), ib, out.data<R>(), n, f);
  OPSCOPE_CUDA_LAUNCHED(name);
}

template <class F>
void arith(const char* op, F f) {
  add_kernel(op, "default", [f, op](KernelCtx& k) {
    switch (k.out().dtype()) {
      case DType::f32: launch_binary<float, float>(k.in(0), k.in(1), k.out(), f, op); break;
      case DType::f64: launch_binary<double, double>(k.in(0), k.in(1), k.out(), f, op); break;
      default: launch_binary<int64_t, int64_t>(k.in(0), k.in(1), k.out(), f, op); break;
    }
  });
}

template <class F>
void compare(const char* op, F f) {
  add_kernel(op, "default", [f, op](KernelCtx& k) {
    switch (promote(k.in(0).dtype(), k.in(1).dtype())) {
      case DType::f32: launch_binary<float, int64_t>(k.in(0), k.in(1), k.out(), f, op); break;
      case DType::f64: launch_binary<double, int64_t>(k.in(0), k.in(1), k.out(), f, op); break;
      default: launch_binary<int64_t, int64_t>(k.in(0), k.in(1), k.out(), f, op); break;
    }
  });
}

template <class T>
__global__ void where_kernel(const int64_t* c, StridedIndex ic, const T* a, StridedIndex ia, const T* b,
                             StridedIndex ib, T* out, int64_t n) {
  GRID_STRIDE(i, n) out[i] = c[offset_of(ic, i)] ? a[offset_of(ia, i)] : b[offset_of(ib, i)];
}

// --- unary -----------------------------------------------------------------------------------
struct Neg { template <class T> __device__ T operator()(T x) const { return -x; } };
struct Exp { template <class T> __device__ T operator()(T x) const { return exp(x); } };
struct Log { template <class T> __device__ T operator()(T x) const { return log(x); } };
struct Sqrt { template <class T> __device__ T operator()(T x) const { return sqrt(x); } };
struct Abs { template <class T> __device__ T operator()(T x) const { return x < T(0) ? -x : x; } };
struct Sign { template <class T> __device__ T operator()(T x) const { return T((x > T(0)) - (x < T(0))); } };
struct Relu { template <class T> __device__ T operator()(T x) const { return x > T(0) ? x : T(0); } };
struct Sigmoid {  // overflow-safe: never exp of a large positive number
  template <class T> __device__ T operator()(T x) const {
    if (x >= T(0)) return T(1) / (T(1) + exp(-x));
    const T e = exp(x);
    return e / (T(1) + e);
  }
};
struct Tanh { template <class T> __device__ T operator()(T x) const { return tanh(x); } };
struct Erf { template <class T> __device__ T operator()(T x) const { return erf(x); } };
// Bounds as doubles for floats, saturated int64s for integers (the CPU's clip_bound).
struct Clip {
  double lo, hi;
  int64_t lo_i, hi_i;
  template <class T> __device__ T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return x < lo_i ? T(lo_i) : x > hi_i ? T(hi_i) : x;
    } else {
      const T l = T(lo), h = T(hi);
      const T y = x < l ? l : x;
      return y > h ? h : y;
    }
  }
};
int64_t saturated_int(double v) {
  if (v != v) return 0;
  if (v <= -9.2e18) return INT64_MIN;
  if (v >= 9.2e18) return INT64_MAX;
  return static_cast<int64_t>(v);
}
struct LeakyRelu {
  double slope;
  template <class T> __device__ T operator()(T x) const { return x > T(0) ? x : x * T(slope); }
};
struct Gelu {
  bool tanh_form;
  template <class T> __device__ T operator()(T x) const {
    if (tanh_form) return T(0.5) * x * (T(1) + tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)));
    return T(0.5) * x * (T(1) + erf(x * T(1.0 / kSqrt2)));
  }
};
struct GeluBackward {
  bool tanh_form;
  template <class T> __device__ T operator()(T x, T dy) const {
    if (tanh_form) {
      const T t = tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x));
      const T du = T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * x * x);
      return dy * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
    }
    const T cdf = T(0.5) * (T(1) + erf(x * T(1.0 / kSqrt2)));
    const T pdf = T(kInvSqrt2Pi) * exp(T(-0.5) * x * x);
    return dy * (cdf + x * pdf);
  }
};

template <class T, class F>
__global__ void unary_dense(const T* x, T* out, int64_t n, F f) {
  GRID_STRIDE(i, n) out[i] = f(x[i]);
}

template <class F>
__global__ void unary_vec4(const float4* x, float4* out, int64_t n4, F f) {
  GRID_STRIDE(i, n4) {
    const float4 v = x[i];
    out[i] = make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
  }
}

template <class T, class F>
void launch_unary(const Tensor& x0, const Tensor& out, F f, const char* name) {
  const int64_t n = out.numel();
  if (n == 0) return;
  Tensor x = dense(x0);
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(x.raw_data()) && aligned16(out.raw_data())) {
      const int64_t n4 = n / 4;
      if (n4 > 0) {
        unary_vec4<<<grid_for(n4), kThreads, 0, stream()>>>(reinterpret_cast<const float4*>(x.data<float>()),
                                                            reinterpret_cast<float4*>(out.data<float>()), n4, f);
        OPSCOPE_CUDA_LAUNCHED(name);
      }
      if (n % 4) {
        unary_dense<<<1, 32, 0, stream()>>>(x.data<float>() + n4 * 4, out.data<float>() + n4 * 4, n % 4, f);
        OPSCOPE_CUDA_LAUNCHED(name);
      }
      return;
    }
  }
  unary_dense<<<grid_for(n), kThreads, 0, stream()>>>(x.data<T>(), out.data<T>(), n, f);
  OPSCOPE_CUDA_LAUNCHED(name);
}

// `make(attrs)` builds the functor from the call's attributes.
template <class Make>
void unary_op(const char* op, bool float_only, Make make) {
  add_kernel(op, "default", [op, float_only, make](KernelCtx& k) {
    const auto f = make(k.attrs);
    switch (k.in(0).dtype()) {
      case DType::f32: launch_unary<float>(k.in(0), k.out(), f, op); break;
      case DType::f64: launch_unary<double>(k.in(0), k.out(), f, op); break;
      default:
        if (float_only) throw Error(std::string(op) + ": expected a floating-point tensor");
        launch_unary<int64_t>(k.in(0), k.out(), f, op);
    }
  });
}

struct Register {
  Register() {
    arith("add", Add{});
    arith("sub", Sub{});
    arith("mul", Mul{});
    arith("div", Div{});
    arith("pow", Pow{});
    arith("maximum", Maximum{});
    arith("minimum", Minimum{});
    compare("eq", Eq{});
    compare("ne", Ne{});
    compare("lt", Lt{});
    compare("le", Le{});
    compare("gt", Gt{});
    compare("ge", Ge{});
    add_kernel("where", "default", [](KernelCtx& k) {
      const Tensor& out = k.out();
      const int64_t n = out.numel();
      if (n == 0) return;
      Tensor c = k.in(0).dtype() == DType::i64 ? k.in(0) : k.in(0).cast(DType::i64);
      Tensor a = k.in(1).dtype() == out.dtype() ? k.in(1) : k.in(1).cast(out.dtype());
      Tensor b = k.in(2).dtype() == out.dtype() ? k.in(2) : k.in(2).cast(out.dtype());
      const StridedIndex ic = strided_index(out.shape(), c.shape(), c.strides(), "where");
      const StridedIndex ia = strided_index(out.shape(), a.shape(), a.strides(), "where");
      const StridedIndex ib = strided_index(out.shape(), b.shape(), b.strides(), "where");
      visit_dtype(out.dtype(), [&](auto z) {
        using T = decltype(z);
        where_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(c.data<int64_t>(), ic, a.data<T>(), ia, b.data<T>(), ib,
                                                                out.data<T>(), n);
        OPSCOPE_CUDA_LAUNCHED("where_kernel");
      });
    });
    auto none = [](const Attrs&) { return 0; };
    unary_op("neg", false, [none](const Attrs& a) { (void)none(a); return Neg{}; });
    unary_op("exp", true, [](const Attrs&) { return Exp{}; });
    unary_op("log", true, [](const Attrs&) { return Log{}; });
    unary_op("sqrt", true, [](const Attrs&) { return Sqrt{}; });
    unary_op("abs", false, [](const Attrs&) { return Abs{}; });
    unary_op("sign", false, [](const Attrs&) { return Sign{}; });
    unary_op("relu", true, [](const Attrs&) { return Relu{}; });
    unary_op("sigmoid", true, [](const Attrs&) { return Sigmoid{}; });
    unary_op("tanh", true, [](const Attrs&) { return Tanh{}; });
    unary_op("erf", true, [](const Attrs&) { return Erf{}; });
    unary_op("clip", false, [](const Attrs& a) {
      return Clip{a.f("min"), a.f("max"), saturated_int(a.f("min")), saturated_int(a.f("max"))};
    });
    unary_op("leaky_relu", true, [](const Attrs& a) { return LeakyRelu{a.f("negative_slope")}; });
    unary_op("gelu", true, [](const Attrs& a) { return Gelu{a.s("approximate") == "tanh"}; });
    add_kernel("gelu_backward", "default", [](KernelCtx& k) {
      const GeluBackward f{k.attrs.s("approximate") == "tanh"};
      visit_float(k.in(0).dtype(), "gelu_backward", [&](auto z) {
        using T = decltype(z);
        launch_binary<T, T>(dense(k.in(0)), dense(k.in(1)), k.out(), f, "gelu_backward");
      });
    });
  }
} register_elementwise;

}  // namespace
}  // namespace opscope::cuda
