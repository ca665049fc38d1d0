// CUDA reductions: sum, mean, max, var over any axes, and sum_to. The input is seen as
// [A, R, B] (R reduced; a non-consecutive axis set is permuted into one block first, as on the
// CPU). Three kernels, as the course shows them:
//  - rows (B = 1, the last axes): one block per row, each thread a strided partial, then a warp
//    shuffle tree and a block reduce through shared memory;
//  - two-stage (few rows, very long ones, e.g. a full sum): stage 1 spreads each row over many
//    blocks into partials, stage 2 reduces the partials with the row kernel;
//  - columns (B > 1): one thread per output, reading R elements B apart (neighbouring threads
//    read neighbouring addresses: coalesced).
#include <algorithm>
#include <cmath>

#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

enum class Kind { sum, mean, max, var };

template <class T> __device__ __forceinline__ T nan_max(T a, T b) {  // NaN in, NaN out (as NumPy)
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}
template <class T> __device__ T block_nan_max(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < int((blockDim.x + 31) >> 5) ? partial[lane] : partial[0];
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <class T> __device__ T lowest() {
  if constexpr (std::is_floating_point_v<T>) return T(-INFINITY);
  else return T(INT64_MIN);
}

// One block per row of [rows, R]: out[row] = reduce(x[row, :]).
template <class T, Kind K> __global__ void reduce_rows(const T* x, T* out, int64_t R, int64_t correction) {
  const T* row = x + blockIdx.x * R;
  if constexpr (K == Kind::max) {
    T m = lowest<T>();
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) m = nan_max(m, row[i]);
    m = block_nan_max(m);
    if (threadIdx.x == 0) out[blockIdx.x] = m;
  } else {
    T s = 0;
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) s += row[i];
    s = block_sum(s);
    if constexpr (K == Kind::sum) {
      if (threadIdx.x == 0) out[blockIdx.x] = s;
    } else if constexpr (K == Kind::mean) {
      if (threadIdx.x == 0) out[blockIdx.x] = s / T(R);
    } else {  // var: two passes over the row (the mean first), no cancellation of E[x²] − E[x]²
      const T mean = s / T(R);
      T q = 0;
      for (int64_t i = threadIdx.x; i < R; i += blockDim.x) q += (row[i] - mean) * (row[i] - mean);
      q = block_sum(q);
      if (threadIdx.x == 0) out[blockIdx.x] = q / T(R - correction);
    }
  }
}

// Stage 1 of two: block (p, row) reduces its chunk of the row into partial[row, p].
template <class T, bool IsMax> __global__ void reduce_partials(const T* x, T* partial, int64_t R, int64_t chunk) {
  const int64_t row = blockIdx.y, p = blockIdx.x;
  const int64_t lo = p * chunk, hi = min(R, lo + chunk);
  const T* r = x + row * R;
  T v = IsMax ? lowest<T>() : T(0);
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) v = IsMax ? nan_max(v, r[i]) : v + r[i];
  v = IsMax ? block_nan_max(v) : block_sum(v);
  if (threadIdx.x == 0) partial[row * gridDim.x + p] = v;
}

// [A, R, B] with B > 1: one thread per output element (a, b).
template <class T, Kind K>
__global__ void reduce_columns(const T* x, T* out, int64_t A, int64_t R, int64_t B, int64_t correction) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < A * B; o += int64_t(gridDim.x) * blockDim.x) {
    const T* p = x + (o / B) * R * B + o % B;
    if constexpr (K == Kind::max) {
      T m = lowest<T>();
      for (int64_t r = 0; r < R; ++r) m = nan_max(m, p[r * B]);
      out[o] = m;
    } else {
      T s = 0;
      for (int64_t r = 0; r < R; ++r) s += p[r * B];
      if constexpr (K == Kind::sum) out[o] = s;
      else if constexpr (K == Kind::mean) out[o] = s / T(R);
      else {
        const T mean = s / T(R);
        T q = 0;
        for (int64_t r = 0; r < R; ++r) q += (p[r * B] - mean) * (p[r * B] - mean);
        out[o] = q / T(R - correction);
      }
    }
  }
}

template <class T> __global__ void divide_by(T* p, int64_t n, T d) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] /= d;
}

template <class T, Kind K>
void launch_reduce(const KernelCtx& k, const Tensor& x0, std::vector<int64_t> axes, const Tensor& out,
                   int64_t correction) {
  if (out.numel() == 0) return;
  const Shape& s = x0.shape();
  const int64_t rank = x0.dim();
  std::sort(axes.begin(), axes.end());
  Tensor x = dense(x0);
  int64_t A = 1, R = 1, B = 1;
  bool consecutive = true;
  for (size_t i = 1; i < axes.size(); ++i) consecutive = consecutive && axes[i] == axes[i - 1] + 1;
  if (axes.empty()) {
    A = x.numel();
  } else if (consecutive) {
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axes.front()) A *= s[i];
      else if (i <= axes.back()) R *= s[i];
      else B *= s[i];
    }
  } else {  // kept axes first, reduced last: one permuted copy into workspace memory
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i), A *= s[i];
    for (int64_t a : axes) perm.push_back(a), R *= s[a];
    Tensor moved = x.view_permute(perm);
    x = k.workspace(moved.shape(), x.dtype());
    x.copy_from(moved);
  }
  if (R == 0) {  // an empty reduction: 0 for sum, NaN for mean/var, an error for max (as the CPU)
    if (K == Kind::max) throw Error(k.op.name + ": max of an empty axis has no value");
    Tensor o = out;
    o.fill(K == Kind::sum ? 0.0 : static_cast<double>(NAN));
    return;
  }
  const T* px = x.data<T>();
  T* po = out.data<T>();
  if (B > 1) {
    reduce_columns<T, K><<<grid_for(A * B), kThreads, 0, stream()>>>(px, po, A, R, B, correction);
    OPSCOPE_CUDA_LAUNCHED("reduce_columns");
    return;
  }
  constexpr int64_t kLongRow = 1 << 16;
  if ((K == Kind::sum || K == Kind::max || K == Kind::mean) && A < 128 && R >= kLongRow) {
    const int64_t chunk = 8 * 1024, P = std::min<int64_t>((R + chunk - 1) / chunk, 1024);
    const int64_t per = (R + P - 1) / P;
    Tensor partial = k.workspace({A, P}, x.dtype());
    constexpr bool is_max = K == Kind::max;
    reduce_partials<T, is_max>
        <<<dim3(unsigned(P), unsigned(A)), kThreads, 0, stream()>>>(px, partial.data<T>(), R, per);
    OPSCOPE_CUDA_LAUNCHED("reduce_partials");
    if constexpr (K == Kind::mean) {
      // Sum the partials, then divide by R (not by P): a mean of partial sums.
      reduce_rows<T, Kind::sum><<<unsigned(A), kThreads, 0, stream()>>>(partial.data<T>(), po, P, 0);
      OPSCOPE_CUDA_LAUNCHED("reduce_rows");
      divide_by<<<grid_for(A), kThreads, 0, stream()>>>(po, A, T(R));
      OPSCOPE_CUDA_LAUNCHED("divide_by");
    } else {
      reduce_rows<T, K><<<unsigned(A), kThreads, 0, stream()>>>(partial.data<T>(), po, P, 0);
      OPSCOPE_CUDA_LAUNCHED("reduce_rows");
    }
    return;
  }
  reduce_rows<T, K><<<unsigned(A), kThreads, 0, stream()>>>(px, po, R, correction);
  OPSCOPE_CUDA_LAUNCHED("reduce_rows");
}

std::vector<int64_t> axes_of(const Tensor& x, const std::vector<int64_t>& given) {
  std::vector<int64_t> axes;
  const int64_t rank = x.dim();
  if (given.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t a : given)
    if (rank > 0) axes.push_back(a < 0 ? a + rank : a);
  return axes;
}

template <Kind K> void register_reduction(const char* op) {
  add_kernel(op, "default", [](KernelCtx& k) {
    const auto axes = axes_of(k.in(0), k.attrs.ints("axes"));
    const int64_t correction = K == Kind::var && k.attrs.b("unbiased") ? 1 : 0;
    switch (k.in(0).dtype()) {
      case DType::f32: launch_reduce<float, K>(k, k.in(0), axes, k.out(), correction); break;
      case DType::f64: launch_reduce<double, K>(k, k.in(0), axes, k.out(), correction); break;
      default:
        if constexpr (K == Kind::sum || K == Kind::max) launch_reduce<int64_t, K>(k, k.in(0), axes, k.out(), 0);
        else throw Error(k.op.name + ": expected a floating-point tensor, got int64");
    }
  });
}

// argmax / argmin over one axis (or the flattened tensor): one thread per output (a, b) scans
// its R elements B apart; ties go to the first, NaN wins (as the CPU).
template <class T, bool Largest> __global__ void arg_reduce(const T* x, int64_t* out, int64_t A, int64_t R, int64_t B) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < A * B; e += int64_t(gridDim.x) * blockDim.x) {
    const T* p = x + (e / B) * R * B + e % B;
    int64_t best = 0;
    for (int64_t r = 1; r < R; ++r) {
      const T cur = p[r * B], top = p[best * B];
      if (top != top) break;
      if (cur != cur || (Largest ? cur > top : cur < top)) best = r;
    }
    out[e] = best;
  }
}

template <bool Largest> void register_arg_reduction(const char* op) {
  add_kernel(op, "default", [](KernelCtx& k) {
    const Tensor x = dense(k.in(0));
    const auto axes = axes_of(x, k.attrs.ints("axes"));
    int64_t A = 1, R = 1, B = 1;
    for (int64_t i = 0; i < x.dim(); ++i) {
      if (axes.empty() || i < axes.front()) A *= x.shape()[i];
      else if (i <= axes.back()) R *= x.shape()[i];
      else B *= x.shape()[i];
    }
    if (k.out().numel() == 0) return;
    visit_dtype(x.dtype(), [&](auto z) {
      using T = decltype(z);
      arg_reduce<T, Largest><<<grid_for(A * B), kThreads, 0, stream()>>>(x.data<T>(), k.out().data<int64_t>(), A, R, B);
      OPSCOPE_CUDA_LAUNCHED("arg_reduce");
    });
  });
}

OPSCOPE_CUDA_REGISTER(register_reduce_kernels) {
  register_arg_reduction<true>("argmax");
  register_arg_reduction<false>("argmin");
  register_reduction<Kind::sum>("sum");
  register_reduction<Kind::mean>("mean");
  register_reduction<Kind::max>("max");
  register_reduction<Kind::var>("var");
  add_kernel("sum_to", "default", [](KernelCtx& k) {
    const Shape& from = k.in(0).shape();
    const auto& to = k.attrs.ints("shape");
    std::vector<int64_t> axes;  // leading axes summed away, then axes where the target has 1
    const size_t lead = from.size() - to.size();
    for (size_t i = 0; i < lead; ++i) axes.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < to.size(); ++i)
      if (to[i] != from[lead + i]) axes.push_back(static_cast<int64_t>(lead + i));
    if (axes.empty()) {
      k.out().copy_from(k.in(0));
      return;
    }
    visit_dtype(k.in(0).dtype(), [&](auto z) {
      using T = decltype(z);
      launch_reduce<T, Kind::sum>(k, k.in(0), axes, k.out(), 0);
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
