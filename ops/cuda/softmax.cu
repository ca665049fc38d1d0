// CUDA softmax, log_softmax and softmax_backward along any axis. The input is seen as [A, R, B]
// with R the softmax axis. Bandwidth-bound: one read and one write of x is the floor.
//
//  - B = 1 and R ≤ 1024 ("the row fits"): one warp per row. Each lane keeps its R/32 elements in
//    registers: max and sum by warp shuffles, one read, one write.
//  - B = 1 and R > 1024: one block per row with the online softmax: each thread keeps a running
//    max m and sum d, rescaling d by e^(m_old − m_new) when its max grows, so one pass gives both;
//    the block merges the (m, d) pairs, then a second pass writes e^(x − m) / d.
//  - B > 1: one thread per column, R elements B apart (neighbouring threads, neighbouring
//    addresses).
// "naive" skips the max: e^x overflows for x > 88 in float32, the failure the course shows.
#include <cmath>

#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

enum class Kind { stable, naive, log };
constexpr int kWarpRowMax = 1024, kPerLane = kWarpRowMax / 32;

template <class T, Kind K> __global__ void softmax_warp_rows(const T* x, T* y, int64_t rows, int R) {
  const int64_t row = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps leave together
  const T* xr = x + row * R;
  T v[kPerLane];
  T m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + i * 32;
    v[i] = c < R ? xr[c] : T(-INFINITY);
    m = max(m, v[i]);
  }
  m = K == Kind::naive ? T(0) : warp_max(m);
  T d = 0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + i * 32;
    if (c < R) {
      v[i] = exp(v[i] - m);
      d += v[i];
    }
  }
  d = warp_sum(d);
  T* yr = y + row * R;
  const T inv = T(1) / d, logd = log(d);
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int c = lane + i * 32;
    if (c < R) yr[c] = K == Kind::log ? xr[c] - m - logd : v[i] * inv;
  }
}

// Merge of two online-softmax states: the larger max wins, the other sum is rescaled.
template <class T> __device__ __forceinline__ void merge_md(T& m, T& d, T m2, T d2) {
  const T mm = max(m, m2);
  if (mm == T(-INFINITY)) return;  // both empty
  d = d * exp(m - mm) + d2 * exp(m2 - mm);
  m = mm;
}

template <class T, Kind K> __global__ void softmax_block_rows(const T* x, T* y, int64_t R) {
  const T* xr = x + blockIdx.x * R;
  T m = K == Kind::naive ? T(0) : T(-INFINITY), d = 0;
  for (int64_t c = threadIdx.x; c < R; c += blockDim.x) {
    const T v = xr[c];
    if constexpr (K == Kind::naive) {
      d += exp(v);
    } else if (v > m) {  // a new max: rescale what was summed so far
      d = d * exp(m - v) + T(1);
      m = v;
    } else {
      d += exp(v - m);
    }
  }
  // Warp, then block merge of (m, d).
  for (int o = 16; o > 0; o >>= 1) {
    const T m2 = __shfl_xor_sync(0xffffffffu, m, o), d2 = __shfl_xor_sync(0xffffffffu, d, o);
    if constexpr (K == Kind::naive) d += d2;
    else merge_md(m, d, m2, d2);
  }
  __shared__ T sm[32], sd[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) sm[warp] = m, sd[warp] = d;
  __syncthreads();
  if (warp == 0) {
    m = lane < warps ? sm[lane] : (K == Kind::naive ? T(0) : T(-INFINITY));
    d = lane < warps ? sd[lane] : T(0);
    for (int o = 16; o > 0; o >>= 1) {
      const T m2 = __shfl_xor_sync(0xffffffffu, m, o), d2 = __shfl_xor_sync(0xffffffffu, d, o);
      if constexpr (K == Kind::naive) d += d2;
      else merge_md(m, d, m2, d2);
    }
    if (lane == 0) sm[0] = m, sd[0] = d;
  }
  __syncthreads();
  m = sm[0];
  d = sd[0];
  T* yr = y + blockIdx.x * R;
  const T inv = T(1) / d, logd = log(d);
  for (int64_t c = threadIdx.x; c < R; c += blockDim.x)
    yr[c] = K == Kind::log ? xr[c] - m - logd : exp(xr[c] - m) * inv;
}

template <class T, Kind K> __global__ void softmax_columns(const T* x, T* y, int64_t A, int64_t R, int64_t B) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < A * B; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (o / B) * R * B + o % B;
    T m = K == Kind::naive ? T(0) : T(-INFINITY), d = 0;
    if (K != Kind::naive)
      for (int64_t r = 0; r < R; ++r) m = max(m, x[base + r * B]);
    for (int64_t r = 0; r < R; ++r) d += exp(x[base + r * B] - m);
    const T inv = T(1) / d, logd = log(d);
    for (int64_t r = 0; r < R; ++r) {
      const T v = x[base + r * B];
      y[base + r * B] = K == Kind::log ? v - m - logd : exp(v - m) * inv;
    }
  }
}

// dx = s ⊙ (dy − Σ dy·s) along the axis.
template <class T> __global__ void softmax_backward_rows(const T* s, const T* dy, T* dx, int64_t R) {
  const int64_t off = blockIdx.x * R;
  T dot = 0;
  for (int64_t c = threadIdx.x; c < R; c += blockDim.x) dot += s[off + c] * dy[off + c];
  dot = block_sum(dot);
  for (int64_t c = threadIdx.x; c < R; c += blockDim.x) dx[off + c] = s[off + c] * (dy[off + c] - dot);
}

template <class T>
__global__ void softmax_backward_columns(const T* s, const T* dy, T* dx, int64_t A, int64_t R, int64_t B) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < A * B; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (o / B) * R * B + o % B;
    T dot = 0;
    for (int64_t r = 0; r < R; ++r) dot += s[base + r * B] * dy[base + r * B];
    for (int64_t r = 0; r < R; ++r) dx[base + r * B] = s[base + r * B] * (dy[base + r * B] - dot);
  }
}

struct Split {
  int64_t A = 1, R = 1, B = 1;
};
Split split_at(const Shape& s, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank == 0) return {};
  if (axis < 0) axis += rank;
  Split r;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? r.A : i == axis ? r.R : r.B) *= s[i];
  return r;
}

unsigned blocks_for_rows(int64_t rows) { return static_cast<unsigned>(rows); }

template <Kind K> void softmax_kernel(KernelCtx& k) {
  const Tensor& x = k.in(0);
  if (x.numel() == 0) return;
  const Split s = split_at(x.shape(), k.attrs.i("axis"));
  visit_float(x.dtype(), k.op.name, [&](auto z) {
    using T = decltype(z);
    const T* px = x.data<T>();
    T* py = k.out().data<T>();
    if (s.B > 1) {
      softmax_columns<T, K><<<grid_for(s.A * s.B), kThreads, 0, stream()>>>(px, py, s.A, s.R, s.B);
      OPSCOPE_CUDA_LAUNCHED("softmax_columns");
    } else if (s.R <= kWarpRowMax) {
      constexpr int kWarpsPerBlock = 8;
      const unsigned blocks = static_cast<unsigned>((s.A + kWarpsPerBlock - 1) / kWarpsPerBlock);
      softmax_warp_rows<T, K><<<blocks, kWarpsPerBlock * 32, 0, stream()>>>(px, py, s.A, static_cast<int>(s.R));
      OPSCOPE_CUDA_LAUNCHED("softmax_warp_rows");
    } else {
      softmax_block_rows<T, K><<<blocks_for_rows(s.A), 512, 0, stream()>>>(px, py, s.R);
      OPSCOPE_CUDA_LAUNCHED("softmax_block_rows");
    }
  });
}

OPSCOPE_CUDA_REGISTER(register_softmax_kernels) {
  add_kernel("softmax", "stable", softmax_kernel<Kind::stable>);
  add_kernel("softmax", "naive", softmax_kernel<Kind::naive>);
  add_kernel("log_softmax", "stable", softmax_kernel<Kind::log>);
  add_kernel("softmax_backward", "default", [](KernelCtx& k) {
    const DType dt = k.out().dtype();
    Tensor s = k.in(0).dtype() == dt ? k.in(0) : k.in(0).cast(dt);
    Tensor dy = k.in(1).dtype() == dt ? k.in(1) : k.in(1).cast(dt);
    if (s.numel() == 0) return;
    const Split sp = split_at(s.shape(), k.attrs.i("axis"));
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      if (sp.B > 1) {
        softmax_backward_columns<T><<<grid_for(sp.A * sp.B), kThreads, 0, stream()>>>(s.data<T>(), dy.data<T>(),
                                                                                      k.out().data<T>(), sp.A, sp.R,
                                                                                      sp.B);
        OPSCOPE_CUDA_LAUNCHED("softmax_backward_columns");
      } else {
        softmax_backward_rows<T>
            <<<blocks_for_rows(sp.A), sp.R <= 256 ? 64 : 512, 0, stream()>>>(s.data<T>(), dy.data<T>(),
                                                                             k.out().data<T>(), sp.R);
        OPSCOPE_CUDA_LAUNCHED("softmax_backward_rows");
      }
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
