// CUDA elementwise kernels: every pointwise op (binary arithmetic and comparisons with NumPy
// broadcasting, unary maths, the activations), each derived from its formula in
// ops/pointwise.h, and where. Bandwidth-bound: the roofline is bytes moved / copy bandwidth.
//
// Three paths per op, chosen on the host:
//  - vec4: float32, every tensor dense with the output's shape and 16-byte aligned: each thread
//    moves float4s (one 16-byte load per input), the tail (n % 4) by a scalar pass;
//  - dense: any dtype, dense same-shape inputs, a grid-stride loop;
//  - strided: broadcasting or strided views, offsets from the flat index (stride 0 = broadcast).
#include <cmath>

#include "ops/cuda/cuda_util.cuh"
#include "ops/pointwise_op.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

using pointwise::Formula;

// The formula of one op as a device functor (T the compute type; the launch casts to the stored type).
template <Formula F> struct FormulaFn {
  pointwise::Params p;
  template <class T> __device__ T operator()(T a, T b) const { return pointwise::eval<F, T>(a, b, p); }
  template <class T> __device__ T operator()(T a) const { return pointwise::eval<F, T>(a, a, p); }
};

template <class T, class R, class F> __global__ void binary_dense(const T* a, const T* b, R* out, int64_t n, F f) {
  GRID_STRIDE(i, n) out[i] = static_cast<R>(f(a[i], b[i]));
}

template <class F> __global__ void binary_vec4(const float4* a, const float4* b, float4* out, int64_t n4, F f) {
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
  const bool dense_same =
      a.is_contiguous() && b.is_contiguous() && a.shape() == out.shape() && b.shape() == out.shape();
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

template <class T>
__global__ void where_kernel(const int64_t* c, StridedIndex ic, const T* a, StridedIndex ia, const T* b,
                             StridedIndex ib, T* out, int64_t n) {
  GRID_STRIDE(i, n) out[i] = c[offset_of(ic, i)] ? a[offset_of(ia, i)] : b[offset_of(ib, i)];
}

template <class T, class F> __global__ void unary_dense(const T* x, T* out, int64_t n, F f) {
  GRID_STRIDE(i, n) out[i] = f(x[i]);
}

template <class F> __global__ void unary_vec4(const float4* x, float4* out, int64_t n4, F f) {
  GRID_STRIDE(i, n4) {
    const float4 v = x[i];
    out[i] = make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
  }
}

template <class T, class F> void launch_unary(const Tensor& x0, const Tensor& out, F f, const char* name) {
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

// The CUDA kernel of the pointwise op of formula F: as on the CPU, two operands compute in the
// output's dtype, or for a comparison (int64 0/1) in the inputs' promoted dtype.
template <Formula F> void launch_pointwise(KernelCtx& k) {
  const FormulaFn<F> f{pointwise_params(k.op, k.attrs)};
  const char* name = pointwise::name_of(F);
  const DType out = k.out().dtype();
  if constexpr (pointwise::arity_of(F) == 1) {
    switch (k.in(0).dtype()) {
      case DType::f32: return launch_unary<float>(k.in(0), k.out(), f, name);
      case DType::f64: return launch_unary<double>(k.in(0), k.out(), f, name);
      default:
        if constexpr (pointwise::takes_int64(F)) return launch_unary<int64_t>(k.in(0), k.out(), f, name);
        throw Error(std::string(name) + ": expected a floating-point tensor");
    }
  } else {
    const DType compute = is_floating(out) ? out : promote(k.in(0).dtype(), k.in(1).dtype());
    const bool flag = out == DType::i64 && compute != DType::i64;  // a comparison's 0/1
    switch (compute) {
      case DType::f32:
        return flag ? launch_binary<float, int64_t>(k.in(0), k.in(1), k.out(), f, name)
                    : launch_binary<float, float>(k.in(0), k.in(1), k.out(), f, name);
      case DType::f64:
        return flag ? launch_binary<double, int64_t>(k.in(0), k.in(1), k.out(), f, name)
                    : launch_binary<double, double>(k.in(0), k.in(1), k.out(), f, name);
      default:
        if constexpr (pointwise::takes_int64(F))
          return launch_binary<int64_t, int64_t>(k.in(0), k.in(1), k.out(), f, name);
        throw Error(std::string(name) + ": expected a floating-point tensor");
    }
  }
}

OPSCOPE_CUDA_REGISTER(register_elementwise_kernels) {
  // Every formula of ops/pointwise.h is the CUDA kernel of the op of its name.
#define OPSCOPE_PW_CUDA(name, arity, ints) add_kernel(#name, "default", launch_pointwise<Formula::name>);
  OPSCOPE_POINTWISE_FORMULAS(OPSCOPE_PW_CUDA)
#undef OPSCOPE_PW_CUDA
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
}

}  // namespace
}  // namespace opscope::cuda
