// CUDA layer_norm and batch_norm (welford, two_pass, naive) and their backward ops. x is [M rows, N] with N the
// product of normalized_shape (the trailing sizes of x); one block per row.
//
//  - welford: each thread runs Welford's update over its elements (mean and M2, no cancellation),
//    then the (count, mean, M2) triples are merged with Chan's formula by warp shuffles and
//    across warps in shared memory. One read of x for the statistics.
//  - two_pass: the mean, then Σ(x − μ)², two reads.
//  - naive: Σx and Σx² in one pass, var = E[x²] − E[x]²: cancels catastrophically when |μ| ≫ σ
//    (kept to show it; the tests use data where it is accurate).
// batch_norm (the same three algorithms) and batch_norm_backward: one block per channel c of
// x [N, C, S...], reading the N·S elements of that channel (S apart in runs of S); training
// updates the running statistics in place (unbiased variance), eval uses them.
// layer_norm_backward: row kernel for dx (μ and rstd recomputed two-pass, as on the CPU), then a
// column kernel for dγ = Σ_rows dy·x̂ and dβ = Σ_rows dy (one thread per column, coalesced).
#include <cmath>

#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"  // ChannelSplit, RowSplit: shared with the CPU

namespace opscope::cuda {
namespace {

enum class Algo { welford, two_pass, naive };

template <class T> struct Moments { T n, mean, m2; };
template <class T> __device__ __forceinline__ Moments<T> merge(Moments<T> a, Moments<T> b) {  // Chan et al.
  const T n = a.n + b.n;
  if (n == T(0)) return a;
  const T delta = b.mean - a.mean, fb = b.n / n;
  return {n, a.mean + delta * fb, a.m2 + b.m2 + delta * delta * a.n * fb};
}

template <class T> __device__ Moments<T> block_moments(Moments<T> v) {
  __shared__ T sn[32], smean[32], sm2[32];
  for (int o = 16; o > 0; o >>= 1) {
    Moments<T> other{__shfl_xor_sync(0xffffffffu, v.n, o), __shfl_xor_sync(0xffffffffu, v.mean, o),
                     __shfl_xor_sync(0xffffffffu, v.m2, o)};
    v = merge(v, other);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) sn[warp] = v.n, smean[warp] = v.mean, sm2[warp] = v.m2;
  __syncthreads();
  v = lane < warps ? Moments<T>{sn[lane], smean[lane], sm2[lane]} : Moments<T>{0, 0, 0};
  for (int o = 16; o > 0; o >>= 1) {
    Moments<T> other{__shfl_xor_sync(0xffffffffu, v.n, o), __shfl_xor_sync(0xffffffffu, v.mean, o),
                     __shfl_xor_sync(0xffffffffu, v.m2, o)};
    v = merge(v, other);
  }
  return v;
}

// Mean and biased variance of one row, computed by the whole block.
template <class T, Algo A> __device__ void row_stats(const T* x, int64_t N, T& mean, T& var) {
  if constexpr (A == Algo::welford) {
    Moments<T> m{0, 0, 0};
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
      m.n += T(1);
      const T d = x[i] - m.mean;
      m.mean += d / m.n;
      m.m2 += d * (x[i] - m.mean);
    }
    m = block_moments(m);
    mean = m.mean;
    var = m.m2 / T(N);
  } else if constexpr (A == Algo::two_pass) {
    T s = 0;
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += x[i];
    mean = block_sum(s) / T(N);
    T q = 0;
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) q += (x[i] - mean) * (x[i] - mean);
    var = block_sum(q) / T(N);
  } else {
    T s = 0, q = 0;
    for (int64_t i = threadIdx.x; i < N; i += blockDim.x) s += x[i], q += x[i] * x[i];
    s = block_sum(s);
    q = block_sum(q);
    mean = s / T(N);
    var = q / T(N) - mean * mean;  // may come out negative: the failure stays visible
  }
}

template <class T, Algo A> __global__ void layer_norm_rows(const T* x, const T* w, const T* b, T* y, int64_t N, T eps) {
  const T* xr = x + blockIdx.x * N;
  T mean, var;
  row_stats<T, A>(xr, N, mean, var);
  const T rstd = T(1) / sqrt(var + eps);
  T* yr = y + blockIdx.x * N;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    T v = (xr[i] - mean) * rstd;
    if (w) v *= w[i];
    if (b) v += b[i];
    yr[i] = v;
  }
}

// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)), g = dy·γ; saves μ and rstd per row for dγ.
template <class T>
__global__ void layer_norm_backward_rows(const T* x, const T* dy, const T* w, T* dx, T* mean_out, T* rstd_out,
                                         int64_t N, T eps) {
  const int64_t off = blockIdx.x * N;
  T mean, var;
  row_stats<T, Algo::two_pass>(x + off, N, mean, var);
  const T rstd = T(1) / sqrt(var + eps);
  T sg = 0, sgx = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const T g = w ? dy[off + i] * w[i] : dy[off + i];
    sg += g;
    sgx += g * (x[off + i] - mean) * rstd;
  }
  const T mean_g = block_sum(sg) / T(N), mean_gx = block_sum(sgx) / T(N);
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const T g = w ? dy[off + i] * w[i] : dy[off + i];
    const T xhat = (x[off + i] - mean) * rstd;
    dx[off + i] = rstd * (g - mean_g - xhat * mean_gx);
  }
  if (threadIdx.x == 0) mean_out[blockIdx.x] = mean, rstd_out[blockIdx.x] = rstd;
}

template <class T>
__global__ void layer_norm_backward_params(const T* x, const T* dy, const T* mean, const T* rstd, T* dw, T* db,
                                           int64_t M, int64_t N) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < N; j += int64_t(gridDim.x) * blockDim.x) {
    T sw = 0, sb = 0;
    for (int64_t m = 0; m < M; ++m) {
      const T d = dy[m * N + j];
      sw += d * (x[m * N + j] - mean[m]) * rstd[m];
      sb += d;
    }
    dw[j] = sw;
    db[j] = sb;
  }
}

int threads_for(int64_t N);

// Mean and biased variance of the `count` elements at(e), computed by the whole block.
template <class T, Algo A, class At> __device__ void gathered_stats(At at, int64_t count, T& mean, T& var) {
  if constexpr (A == Algo::welford) {
    Moments<T> m{0, 0, 0};
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
      const T v = at(e);
      m.n += T(1);
      const T d = v - m.mean;
      m.mean += d / m.n;
      m.m2 += d * (v - m.mean);
    }
    m = block_moments(m);
    mean = m.mean;
    var = m.m2 / T(count);
  } else if constexpr (A == Algo::two_pass) {
    T s = 0;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) s += at(e);
    mean = block_sum(s) / T(count);
    T q = 0;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) q += (at(e) - mean) * (at(e) - mean);
    var = block_sum(q) / T(count);
  } else {
    T s = 0, q = 0;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) s += at(e), q += at(e) * at(e);
    s = block_sum(s);
    q = block_sum(q);
    mean = s / T(count);
    var = q / T(count) - mean * mean;
  }
}

template <class T, Algo A>
__global__ void batch_norm_channels(const T* x, T* y, T* rm, T* rv, const T* w, const T* b, int64_t N, int64_t C,
                                    int64_t S, T eps, T momentum, bool training) {
  const int64_t c = blockIdx.x, count = N * S;
  auto index = [=](int64_t e) { return (e / S * C + c) * S + e % S; };
  auto at = [=](int64_t e) { return x[index(e)]; };
  T mean, var;
  if (training) {
    gathered_stats<T, A>(at, count, mean, var);
    if (threadIdx.x == 0) {
      rm[c] = (T(1) - momentum) * rm[c] + momentum * mean;
      rv[c] = (T(1) - momentum) * rv[c] + momentum * var * T(count) / T(count - 1);
    }
  } else {
    mean = rm[c];
    var = rv[c];
  }
  const T rstd = T(1) / sqrt(var + eps);
  const T scale = rstd * (w ? w[c] : T(1)), shift = (b ? b[c] : T(0)) - mean * scale;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) y[index(e)] = x[index(e)] * scale + shift;
}

template <class T>
__global__ void batch_norm_backward_channels(const T* x, const T* dy, const T* rm, const T* rv, const T* w, T* dx,
                                             T* dw, T* db, int64_t N, int64_t C, int64_t S, T eps, bool training) {
  const int64_t c = blockIdx.x, count = N * S;
  auto index = [=](int64_t e) { return (e / S * C + c) * S + e % S; };
  T mean, var;
  if (training) gathered_stats<T, Algo::two_pass>([=](int64_t e) { return x[index(e)]; }, count, mean, var);
  else mean = rm[c], var = rv[c];
  const T rstd = T(1) / sqrt(var + eps), gamma = w ? w[c] : T(1);
  T sdy = 0, sdyx = 0;
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const T d = dy[index(e)];
    sdy += d;
    sdyx += d * (x[index(e)] - mean) * rstd;
  }
  sdy = block_sum(sdy);
  sdyx = block_sum(sdyx);
  const T mdy = training ? sdy / T(count) : T(0), mdyx = training ? sdyx / T(count) : T(0);
  for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
    const int64_t i = index(e);
    dx[i] = gamma * rstd * (dy[i] - mdy - (x[i] - mean) * rstd * mdyx);
  }
  if (threadIdx.x == 0) dw[c] = sdyx, db[c] = sdy;
}

template <Algo A> void batch_norm_kernel(KernelCtx& k) {
  const Tensor& x0 = k.in(0);
  const ChannelSplit s = channel_split(x0.shape());
  if (x0.numel() == 0) return;
  for (size_t i = 1; i <= 2; ++i)
    if (!k.in(i).is_contiguous())
      throw Error(std::string("batch_norm: ") + (i == 1 ? "running_mean" : "running_var") +
                      " must be a contiguous tensor: it is updated in place",
                  "make the running statistics with zeros(C) and ones(C), not as a slice of another tensor");
  visit_float(x0.dtype(), k.op.name, [&](auto z) {
    using T = decltype(z);
    const Tensor x = dense(x0);
    Tensor w = k.inputs.size() > 3 ? dense(k.in(3).cast(x0.dtype())) : Tensor();
    Tensor b = k.inputs.size() > 4 ? dense(k.in(4).cast(x0.dtype())) : Tensor();
    batch_norm_channels<T, A><<<unsigned(s.C), threads_for(s.N * s.S), 0, stream()>>>(
        x.data<T>(), k.out().data<T>(), k.in(1).data<T>(), k.in(2).data<T>(), w.defined() ? w.data<T>() : nullptr,
        b.defined() ? b.data<T>() : nullptr, s.N, s.C, s.S, static_cast<T>(k.attrs.f("eps")),
        static_cast<T>(k.attrs.f("momentum")), k.attrs.b("training"));
    OPSCOPE_CUDA_LAUNCHED("batch_norm_channels");
  });
}

int threads_for(int64_t N) { return N <= 128 ? 32 : N <= 1024 ? 128 : 512; }

template <Algo A> void layer_norm_kernel(KernelCtx& k) {
  const Tensor& x = k.in(0);
  if (x.numel() == 0) return;
  const RowSplit s = layer_split(x.shape(), static_cast<int64_t>(k.attrs.ints("normalized_shape").size()));
  visit_float(x.dtype(), k.op.name, [&](auto z) {
    using T = decltype(z);
    Tensor w = k.inputs.size() > 1 ? k.in(1).cast(x.dtype()) : Tensor();
    Tensor b = k.inputs.size() > 2 ? k.in(2).cast(x.dtype()) : Tensor();
    layer_norm_rows<T, A>
        <<<unsigned(s.M), threads_for(s.N), 0, stream()>>>(x.data<T>(), w.defined() ? w.data<T>() : nullptr,
                                                           b.defined() ? b.data<T>() : nullptr, k.out().data<T>(), s.N,
                                                           static_cast<T>(k.attrs.f("eps")));
    OPSCOPE_CUDA_LAUNCHED("layer_norm_rows");
  });
}

OPSCOPE_CUDA_REGISTER(register_norm_kernels) {
  add_kernel("layer_norm", "welford", layer_norm_kernel<Algo::welford>);
  add_kernel("layer_norm", "two_pass", layer_norm_kernel<Algo::two_pass>);
  add_kernel("layer_norm", "naive", layer_norm_kernel<Algo::naive>);
  add_kernel("batch_norm", "welford", batch_norm_kernel<Algo::welford>);
  add_kernel("batch_norm", "two_pass", batch_norm_kernel<Algo::two_pass>);
  add_kernel("batch_norm", "naive", batch_norm_kernel<Algo::naive>);
  add_kernel("batch_norm_backward", "default", [](KernelCtx& k) {
    const DType dt = k.out(0).dtype();
    const ChannelSplit s = channel_split(k.in(0).shape());
    if (k.in(0).numel() == 0) {
      k.out(1).fill(0);
      k.out(2).fill(0);
      return;
    }
    auto as = [&](const Tensor& t) { return dense(t.dtype() == dt ? t : t.cast(dt)); };
    const Tensor x = as(k.in(0)), dy = as(k.in(1)), rm = as(k.in(2)), rv = as(k.in(3));
    const Tensor w = k.inputs.size() > 4 ? as(k.in(4)) : Tensor();
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      batch_norm_backward_channels<T><<<unsigned(s.C), threads_for(s.N * s.S), 0, stream()>>>(
          x.data<T>(), dy.data<T>(), rm.data<T>(), rv.data<T>(), w.defined() ? w.data<T>() : nullptr,
          k.out(0).data<T>(), k.out(1).data<T>(), k.out(2).data<T>(), s.N, s.C, s.S, static_cast<T>(k.attrs.f("eps")),
          k.attrs.b("training"));
      OPSCOPE_CUDA_LAUNCHED("batch_norm_backward_channels");
    });
  });
  add_kernel("layer_norm_backward", "default", [](KernelCtx& k) {
    const DType dt = k.out(0).dtype();
    const RowSplit s = layer_split(k.in(0).shape(), static_cast<int64_t>(k.attrs.ints("normalized_shape").size()));
    if (k.in(0).numel() == 0) {
      k.out(1).fill(0);
      k.out(2).fill(0);
      return;
    }
    Tensor x = k.in(0).cast(dt), dy = k.in(1).cast(dt);
    Tensor w = k.inputs.size() > 2 ? k.in(2).cast(dt) : Tensor();
    Tensor stats = k.workspace({2, s.M}, dt);
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      T* mean = stats.data<T>();
      T* rstd = mean + s.M;
      layer_norm_backward_rows<T><<<unsigned(s.M), threads_for(s.N), 0, stream()>>>(x.data<T>(), dy.data<T>(),
                                                                                    w.defined() ? w.data<T>() : nullptr,
                                                                                    k.out(0).data<T>(), mean, rstd, s.N,
                                                                                    static_cast<T>(k.attrs.f("eps")));
      OPSCOPE_CUDA_LAUNCHED("layer_norm_backward_rows");
      layer_norm_backward_params<T><<<grid_for(s.N), kThreads, 0, stream()>>>(x.data<T>(), dy.data<T>(), mean, rstd,
                                                                              k.out(1).data<T>(), k.out(2).data<T>(),
                                                                              s.M, s.N);
      OPSCOPE_CUDA_LAUNCHED("layer_norm_backward_params");
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
