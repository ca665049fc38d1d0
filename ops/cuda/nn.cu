// CUDA embedding (lookup and atomic backward), gather and gather_backward (the same along any
// axis), linear and dropout.
//
// linear: y = x·Wᵀ + b as one cuBLAS GEMM over all rows of x (W stays [out, in]: the GEMM reads
// it transposed), then a bias pass. dropout: the CPU's counter-based hash (splitmix64 of seed and
// index), so the GPU drops exactly the elements the CPU drops.
//
// Forward: one thread per output element y[i, d] = weight[indices[i], d]: neighbouring threads
// read neighbouring d of one row (coalesced), rows themselves are random accesses: the locality
// the course talks about. Backward: dweight[indices[i], d] += dy[i, d]; repeated indices collide,
// so the adds are atomicAdd (float add order varies: results may differ in the last bits run to
// run, unlike the CPU's sequential loop).
// Indices outside [0, V) (gather: [-n, n)) are found on the device (the first bad position, by
// atomicMin) and reported as the CPU does (ops/index_check.h); that check reads 8 bytes back, a
// synchronisation.
#include <algorithm>
#include <climits>

#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"
#include "ops/index_check.h"

namespace opscope::cuda {
namespace {

void check_indices(KernelCtx& k, const Tensor& idx, int64_t V) {
  if (const int64_t bad = first_out_of_range(k, idx, V); bad >= 0)
    throw index_out_of_range(k.op.name, static_cast<int64_t>(idx.get(bad)), bad, V);
}

// gather's indices lie in [-n, n) (negative ones count from the end).
void check_gather_indices(KernelCtx& k, const Tensor& idx, int64_t n) {
  if (const int64_t bad = first_out_of_range(k, idx, n, -n); bad >= 0)
    throw gather_index_out_of_range(k.op.name, static_cast<int64_t>(idx.get(bad)), bad, n);
}

template <class T> __global__ void gather_rows(const int64_t* idx, const T* w, T* y, int64_t n, int64_t D) {
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

// gather: x as [outer, n, inner] around the axis; one thread per output element.
template <class T>
__global__ void gather_axis(const int64_t* idx, const T* x, T* y, int64_t outer, int64_t n, int64_t count,
                            int64_t inner) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < outer * count * inner;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = e % inner, j = (e / inner) % count, o = e / (inner * count);
    int64_t i = idx[j];
    if (i < 0) i += n;
    y[e] = x[(o * n + i) * inner + b];
  }
}

template <class T>
__global__ void scatter_add_axis(const int64_t* idx, const T* dy, T* dx, int64_t outer, int64_t n, int64_t count,
                                 int64_t inner) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < outer * count * inner;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = e % inner, j = (e / inner) % count, o = e / (inner * count);
    int64_t i = idx[j];
    if (i < 0) i += n;
    atomicAdd(&dx[(o * n + i) * inner + b], dy[e]);
  }
}

template <class T> __global__ void add_row_bias(const T* b, T* y, int64_t rows, int64_t cols) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < rows * cols;
       e += int64_t(gridDim.x) * blockDim.x)
    y[e] += b[e % cols];
}

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t host_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class T> __global__ void dropout_kernel(const T* x, T* y, int64_t n, uint64_t key, double p, T scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double u =
        static_cast<double>(mix64(key + (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
    y[i] = u >= p ? x[i] * scale : T(0);
  }
}

OPSCOPE_CUDA_REGISTER(register_nn_kernels) {
  add_kernel(
      "linear", "cublas",
      [](KernelCtx& k) {
        const DType dt = k.out().dtype();
        if (k.out().numel() == 0) return;
        auto as = [&](const Tensor& t) { return dense(t.dtype() == dt ? t : t.cast(dt)); };
        const Tensor x = as(k.in(0)), w = as(k.in(1));
        const int64_t out = w.shape()[0], in = w.shape()[1], rows = x.numel() / std::max<int64_t>(in, 1);
        visit_float(dt, k.op.name, [&](auto z) {
          using T = decltype(z);
          if (in == 0) {
            k.out().fill(0);
          } else {
            gemm<T>(false, true, int(rows), int(out), int(in), x.data<T>(), w.data<T>(), k.out().data<T>(), false);
          }
          if (k.inputs.size() > 2) {
            const Tensor b = as(k.in(2));
            add_row_bias<T><<<grid_for(rows * out), kThreads, 0, stream()>>>(b.data<T>(), k.out().data<T>(), rows, out);
            OPSCOPE_CUDA_LAUNCHED("add_row_bias");
          }
        });
      },
      true);
  add_kernel("dropout", "default", [](KernelCtx& k) {
    const double p = k.attrs.f("p");
    if (!k.attrs.b("training") || p == 0.0) {
      k.out().copy_from(k.in(0));
      return;
    }
    const uint64_t key = host_mix64(static_cast<uint64_t>(k.attrs.i("seed")) ^ 0x5851f42d4c957f2dULL);
    const int64_t n = k.out().numel();
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      dropout_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(k.in(0).data<T>(), k.out().data<T>(), n, key, p,
                                                                static_cast<T>(1.0 / (1.0 - p)));
      OPSCOPE_CUDA_LAUNCHED("dropout_kernel");
    });
  });
  add_kernel("embedding", "gather", [](KernelCtx& k) {
    const Tensor& idx = k.in(0);
    const Tensor& w = k.in(1);
    const int64_t n = idx.numel(), V = w.shape()[0], D = w.shape()[1];
    check_indices(k, idx, V);
    if (n * D == 0) return;
    visit_dtype(w.dtype(), [&](auto z) {
      using T = decltype(z);
      gather_rows<T>
          <<<grid_for(n * D), kThreads, 0, stream()>>>(idx.data<int64_t>(), w.data<T>(), k.out().data<T>(), n, D);
      OPSCOPE_CUDA_LAUNCHED("gather_rows");
    });
  });
  add_kernel("gather", "default", [](KernelCtx& k) {
    const Tensor& x = k.in(0);
    const int64_t axis = normalize_axis(k.attrs.i("axis"), x.dim(), "gather");
    const GatherGeom g = gather_geom(x.shape(), axis, k.in(1).numel());
    check_gather_indices(k, k.in(1), g.n);
    const int64_t total = k.out().numel();
    if (total == 0) return;
    visit_dtype(x.dtype(), [&](auto z) {
      using T = decltype(z);
      gather_axis<T><<<grid_for(total), kThreads, 0, stream()>>>(k.in(1).data<int64_t>(), x.data<T>(),
                                                                 k.out().data<T>(), g.outer, g.n, g.count, g.inner);
      OPSCOPE_CUDA_LAUNCHED("gather_axis");
    });
  });
  add_kernel("gather_backward", "default", [](KernelCtx& k) {
    const GatherGeom g = gather_geom(k.out().shape(), k.attrs.i("axis"), k.in(1).numel());
    check_gather_indices(k, k.in(1), g.n);
    k.out().fill(0);
    const int64_t total = k.in(0).numel();
    if (total == 0) return;
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      Tensor dy = k.in(0).dtype() == k.out().dtype() ? k.in(0) : k.in(0).cast(k.out().dtype());
      scatter_add_axis<T><<<grid_for(total), kThreads, 0, stream()>>>(k.in(1).data<int64_t>(), dy.data<T>(),
                                                                      k.out().data<T>(), g.outer, g.n, g.count,
                                                                      g.inner);
      OPSCOPE_CUDA_LAUNCHED("scatter_add_axis");
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
                                                                      k.out().data<T>(), n, D,
                                                                      k.attrs.i("padding_idx"));
      OPSCOPE_CUDA_LAUNCHED("scatter_add_rows");
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
