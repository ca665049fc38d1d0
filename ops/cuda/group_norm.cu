// CUDA group_norm, instance_norm (group_norm with one group per channel) and group_norm_backward.
// x [N, C, S...] is N·G contiguous blocks of Cg·S elements (ops/geometry.h's GroupSplit):
//  - forward: one CUDA block per group computes μ and rstd two-pass (block sums), then writes
//    y = x̂·γ_c + β_c;
//  - backward: one block per group recomputes μ, rstd, sums g = dy·γ and g·x̂, writes dx; then one
//    thread per channel sums dγ_c = Σ dy·x̂ and dβ_c = Σ dy over the images, in order.
#include <cmath>

#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"

namespace opscope::cuda {
namespace {

constexpr int kBlock = 256;

// μ and rstd of the group at p (block elements), by the whole block.
template <class T> __device__ void group_moments(const T* p, int64_t block, T eps, T& mean, T& rstd) {
  T s = 0;
  for (int64_t i = threadIdx.x; i < block; i += blockDim.x) s += p[i];
  mean = block_sum(s) / T(block);
  T m2 = 0;
  for (int64_t i = threadIdx.x; i < block; i += blockDim.x) m2 += (p[i] - mean) * (p[i] - mean);
  rstd = T(1) / sqrt(block_sum(m2) / T(block) + eps);
}

template <class T>
__global__ void group_norm_kernel(GroupSplit s, const T* x, const T* w, const T* b, T eps, T* y, T* stats) {
  const int64_t grp = blockIdx.x, base = grp * s.block(), c0 = (grp % s.G) * s.Cg;
  T mean, rstd;
  group_moments(x + base, s.block(), eps, mean, rstd);
  if (stats && threadIdx.x == 0) stats[2 * grp] = mean, stats[2 * grp + 1] = rstd;
  for (int64_t i = threadIdx.x; i < s.block(); i += blockDim.x) {
    const int64_t c = c0 + i / s.S;
    const T v = (x[base + i] - mean) * rstd;
    y[base + i] = (w ? w[c] : T(1)) * v + (b ? b[c] : T(0));
  }
}

template <class T>
__global__ void group_norm_backward_kernel(GroupSplit s, const T* x, const T* dy, const T* w, T eps, T* dx, T* stats) {
  const int64_t grp = blockIdx.x, base = grp * s.block(), c0 = (grp % s.G) * s.Cg;
  T mean, rstd;
  group_moments(x + base, s.block(), eps, mean, rstd);
  if (threadIdx.x == 0) stats[2 * grp] = mean, stats[2 * grp + 1] = rstd;
  T sg = 0, sgx = 0;
  for (int64_t i = threadIdx.x; i < s.block(); i += blockDim.x) {
    const T g = dy[base + i] * (w ? w[c0 + i / s.S] : T(1));
    sg += g;
    sgx += g * (x[base + i] - mean) * rstd;
  }
  const T mean_g = block_sum(sg) / T(s.block()), mean_gx = block_sum(sgx) / T(s.block());
  for (int64_t i = threadIdx.x; i < s.block(); i += blockDim.x) {
    const T g = dy[base + i] * (w ? w[c0 + i / s.S] : T(1));
    dx[base + i] = rstd * (g - mean_g - (x[base + i] - mean) * rstd * mean_gx);
  }
}

template <class T>
__global__ void group_norm_param_grads(GroupSplit s, const T* x, const T* dy, const T* stats, T* dw, T* db) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= s.C) return;
  T sw = 0, sb = 0;
  for (int64_t n = 0; n < s.N; ++n) {
    const int64_t grp = n * s.G + c / s.Cg;
    const T mean = stats[2 * grp], rstd = stats[2 * grp + 1];
    for (int64_t i = (n * s.C + c) * s.S; i < (n * s.C + c + 1) * s.S; ++i) {
      sw += dy[i] * (x[i] - mean) * rstd;
      sb += dy[i];
    }
  }
  dw[c] = sw;
  db[c] = sb;
}

Tensor as(const Tensor& t, DType dt) { return dense(t.dtype() == dt ? t : t.cast(dt)); }

int64_t groups_of(const KernelCtx& k) {
  return k.op.find_attr("num_groups") ? k.attrs.i("num_groups") : k.in(0).shape()[1];
}

void forward(KernelCtx& k) {
  Tensor& y = k.out();
  if (y.numel() == 0) return;
  const DType dt = y.dtype();
  const Tensor x = as(k.in(0), dt);
  const Tensor w = k.inputs.size() > 1 ? as(k.in(1), dt) : Tensor(),
               b = k.inputs.size() > 2 ? as(k.in(2), dt) : Tensor();
  const GroupSplit s = group_split(x.shape(), groups_of(k));
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    group_norm_kernel<T>
        <<<unsigned(s.N * s.G), kBlock, 0, stream()>>>(s, x.data<T>(), w.defined() ? w.data<T>() : nullptr,
                                                       b.defined() ? b.data<T>() : nullptr,
                                                       static_cast<T>(k.attrs.f("eps")), y.data<T>(), nullptr);
    OPSCOPE_CUDA_LAUNCHED("group_norm_kernel");
  });
}

void backward(KernelCtx& k) {
  const DType dt = k.out(0).dtype();
  if (k.in(0).numel() == 0) {
    k.out(1).fill(0);
    k.out(2).fill(0);
    return;
  }
  const Tensor x = as(k.in(0), dt), dy = as(k.in(1), dt), w = k.inputs.size() > 2 ? as(k.in(2), dt) : Tensor();
  const GroupSplit s = group_split(x.shape(), groups_of(k));
  Tensor stats = k.workspace({s.N * s.G, 2}, dt);
  visit_float(dt, k.op.name, [&](auto z) {
    using T = decltype(z);
    group_norm_backward_kernel<T><<<unsigned(s.N * s.G), kBlock, 0, stream()>>>(s, x.data<T>(), dy.data<T>(),
                                                                                w.defined() ? w.data<T>() : nullptr,
                                                                                static_cast<T>(k.attrs.f("eps")),
                                                                                k.out(0).data<T>(), stats.data<T>());
    OPSCOPE_CUDA_LAUNCHED("group_norm_backward_kernel");
    group_norm_param_grads<T><<<grid_for(s.C), kThreads, 0, stream()>>>(s, x.data<T>(), dy.data<T>(), stats.data<T>(),
                                                                        k.out(1).data<T>(), k.out(2).data<T>());
    OPSCOPE_CUDA_LAUNCHED("group_norm_param_grads");
  });
}

OPSCOPE_CUDA_REGISTER(register_group_norm_kernels) {
  add_kernel("group_norm", "two_pass", forward);
  add_kernel("instance_norm", "two_pass", forward);
  add_kernel("group_norm_backward", "two_pass", backward);
}

}  // namespace
}  // namespace opscope::cuda
