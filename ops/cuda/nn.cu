// CUDA embedding: lookup (gather) and its backward (scatter-add with atomics).
//
// Forward: one thread per output element y[i, d] = weight[indices[i], d]: neighbouring threads
// read neighbouring d of one row (coalesced), rows themselves are random accesses: the locality
// the course talks about. Backward: dweight[indices[i], d] += dy[i, d]; repeated indices collide,
// so the adds are atomicAdd (float add order varies: results may differ in the last bits run to
// run, unlike the CPU's sequential loop).
// Indices outside [0, V) are found on the device (the first bad position, by atomicMin) and
// reported as the CPU does; that check reads 8 bytes back, a synchronisation.
#include <climits>

#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

__global__ void find_bad_index(const int64_t* idx, int64_t n, int64_t V, unsigned long long* first_bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (idx[i] < 0 || idx[i] >= V) atomicMin(first_bad, static_cast<unsigned long long>(i));
}

void check_indices(KernelCtx& k, const Tensor& idx, int64_t V) {
  const int64_t n = idx.numel();
  if (n == 0) return;
  Tensor flag = k.workspace({1}, DType::i64);
  flag.fill(static_cast<double>(INT64_MAX));
  find_bad_index<<<grid_for(n), kThreads, 0, stream()>>>(idx.data<int64_t>(), n, V,
                                                         reinterpret_cast<unsigned long long*>(flag.data<int64_t>()));
  OPSCOPE_CUDA_LAUNCHED("find_bad_index");
  const int64_t bad = static_cast<int64_t>(flag.get(0));
  if (bad != INT64_MAX) {
    const int64_t value = static_cast<int64_t>(idx.get(bad));
    throw Error(k.op.name + ": index " + std::to_string(value) + " (at flat position " + std::to_string(bad) +
                    ") is out of range for a table of " + std::to_string(V) + " rows",
                "every index must be in [0, " + std::to_string(V) + ")");
  }
}

template <class T>
__global__ void gather_rows(const int64_t* idx, const T* w, T* y, int64_t n, int64_t D) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n * D; e += int64_t(gridDim.x) * blockDim.x)
    y[e] = w[idx[e / D] * D + e % D];
}

template <class T>
__global__ void scatter_add_rows(const int64_t* idx, const T* dy, T* dw, int64_t n, int64_t D, int64_t pad) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n * D; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = idx[e / D];
    if (row != pad) atomicAdd(&dw[row * D + e % D], dy[e]);
  }
}

struct Register {
  Register() {
    add_kernel("embedding", "gather", [](KernelCtx& k) {
      const Tensor& idx = k.in(0);
      const Tensor& w = k.in(1);
      const int64_t n = idx.numel(), V = w.shape()[0], D = w.shape()[1];
      check_indices(k, idx, V);
      if (n * D == 0) return;
      visit_dtype(w.dtype(), [&](auto z) {
        using T = decltype(z);
        gather_rows<T><<<grid_for(n * D), kThreads, 0, stream()>>>(idx.data<int64_t>(), w.data<T>(), k.out().data<T>(),
                                                                   n, D);
        OPSCOPE_CUDA_LAUNCHED("gather_rows");
      });
    });
    add_kernel("embedding_backward", "scatter_add", [](KernelCtx& k) {
      const Tensor& idx = k.in(0);
      const int64_t n = idx.numel(), V = k.out().shape()[0], D = k.out().shape()[1];
      check_indices(k, idx, V);
      k.out().fill(0);
      if (n * D == 0) return;
      visit_float(k.out().dtype(), k.op.name, [&](auto z) {
        using T = decltype(z);
        Tensor dy = k.in(1).dtype() == k.out().dtype() ? k.in(1) : k.in(1).cast(k.out().dtype());
        scatter_add_rows<T><<<grid_for(n * D), kThreads, 0, stream()>>>(idx.data<int64_t>(), dy.data<T>(),
                                                                        k.out().data<T>(), n, D, k.attrs.i("padding_idx"));
        OPSCOPE_CUDA_LAUNCHED("scatter_add_rows");
      });
    });
  }
} register_embedding;

}  // namespace
}  // namespace opscope::cuda
