// CUDA cross_entropy (fused log-softmax + negative log-likelihood), cross_entropy_backward and
// mse_loss. logits [N, C], targets [N] int64. The scalar losses sum in double, as the CPU does.
//
//  cross_entropy   one block per sample: m = max, lse = m + log Σ e^(x − m) (never exp of a
//                  positive number), loss_i = lse − x[target]; then one block adds the N terms.
//  backward        one block per sample: dx = scale·(softmax(x) − onehot(target)), scale = dL
//                  (divided by N for reduction=mean).
//  mse_loss        one block sums (p − q)² over all elements.
// A target outside [0, C) is an error naming it, found on the device (8 bytes read back).
#include "ops/cuda/cuda_util.cuh"
#include "ops/index_check.h"

namespace opscope::cuda {
namespace {

void check_targets(KernelCtx& k, const Tensor& targets, int64_t C) {
  if (const int64_t bad = first_out_of_range(k, targets, C); bad >= 0)
    throw target_out_of_range(k.op.name, static_cast<int64_t>(targets.get(bad)), bad, C);
}

template <class T> __global__ void cross_entropy_rows(const T* x, const int64_t* t, double* loss, int64_t C) {
  const T* row = x + blockIdx.x * C;
  T m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = max(m, row[c]);
  m = block_max(m);
  T s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += exp(row[c] - m);
  s = block_sum(s);
  if (threadIdx.x == 0) loss[blockIdx.x] = static_cast<double>(m + log(s) - row[t[blockIdx.x]]);
}

// out[0] = Σ terms (÷ divisor), one block, in double.
template <class T> __global__ void sum_terms(const double* terms, int64_t n, double divisor, T* out) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += terms[i];
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<T>(s / divisor);
}

template <class T>
__global__ void cross_entropy_backward_rows(const T* x, const int64_t* t, const T* dl, double divisor, T* dx,
                                            int64_t C) {
  const T* row = x + blockIdx.x * C;
  T m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = max(m, row[c]);
  m = block_max(m);
  T s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += exp(row[c] - m);
  s = block_sum(s);
  const T scale = static_cast<T>(static_cast<double>(dl[0]) / divisor);
  T* o = dx + blockIdx.x * C;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    o[c] = exp(row[c] - m) / s * scale - (c == t[blockIdx.x] ? scale : T(0));
}

template <class T> __global__ void squared_error(const T* p, const T* q, int64_t n, double divisor, T* out) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double e = static_cast<double>(p[i]) - static_cast<double>(q[i]);
    s += e * e;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<T>(s / divisor);
}

int threads_for(int64_t n) { return n <= 64 ? 32 : n <= 1024 ? 128 : 512; }

OPSCOPE_CUDA_REGISTER(register_loss_kernels) {
  add_kernel("cross_entropy", "default", [](KernelCtx& k) {
    const Tensor x = dense(k.in(0)), t = dense(k.in(1));
    const int64_t N = x.shape()[0], C = x.shape()[1];
    check_targets(k, t, C);
    const double divisor = k.attrs.s("reduction") == "mean" ? static_cast<double>(N) : 1.0;  // N = 0: NaN
    Tensor terms = k.workspace({std::max<int64_t>(N, 1)}, DType::f64);
    visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      if (N > 0 && C > 0) {
        cross_entropy_rows<T>
            <<<unsigned(N), threads_for(C), 0, stream()>>>(x.data<T>(), t.data<int64_t>(), terms.data<double>(), C);
        OPSCOPE_CUDA_LAUNCHED("cross_entropy_rows");
      }
      sum_terms<T><<<1, 512, 0, stream()>>>(terms.data<double>(), N, divisor, k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("sum_terms");
    });
  });
  add_kernel("cross_entropy_backward", "default", [](KernelCtx& k) {
    const DType dt = k.out().dtype();
    const Tensor x = dense(k.in(0)), t = dense(k.in(1));
    const Tensor dl = k.in(2).dtype() == dt ? dense(k.in(2)) : k.in(2).cast(dt);
    const int64_t N = x.shape()[0], C = x.shape()[1];
    if (N == 0 || C == 0) return;
    check_targets(k, t, C);
    const double divisor = k.attrs.s("reduction") == "mean" ? static_cast<double>(N) : 1.0;
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      cross_entropy_backward_rows<T><<<unsigned(N), threads_for(C), 0, stream()>>>(x.data<T>(), t.data<int64_t>(),
                                                                                   dl.data<T>(), divisor,
                                                                                   k.out().data<T>(), C);
      OPSCOPE_CUDA_LAUNCHED("cross_entropy_backward_rows");
    });
  });
  add_kernel("mse_loss", "default", [](KernelCtx& k) {
    const DType dt = k.out().dtype();
    auto as = [&](const Tensor& t) { return dense(t.dtype() == dt ? t : t.cast(dt)); };
    const Tensor p = as(k.in(0)), q = as(k.in(1));
    const int64_t n = p.numel();
    const double divisor = k.attrs.s("reduction") == "mean" ? static_cast<double>(n) : 1.0;
    visit_float(dt, k.op.name, [&](auto z) {
      using T = decltype(z);
      squared_error<T><<<1, 1024, 0, stream()>>>(p.data<T>(), q.data<T>(), n, divisor, k.out().data<T>());
      OPSCOPE_CUDA_LAUNCHED("squared_error");
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
