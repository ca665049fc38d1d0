// CUDA cumsum (one thread per line along the axis: the sum runs in order, as on the CPU) and
// triu / tril (one thread per element).
#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

template <class T>
__global__ void cumsum_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  GRID_STRIDE(l, outer * inner) {
    const int64_t off = (l / inner) * n * inner + l % inner;
    T acc = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t i = off + (reverse ? n - 1 - s : s) * inner;
      const T v = x[i];
      if (exclusive) {
        y[i] = acc;
        acc += v;
      } else {
        acc += v;
        y[i] = acc;
      }
    }
  }
}

template <class T>
__global__ void triangle_kernel(const T* x, T* y, int64_t total, int64_t R, int64_t C, int64_t diagonal, bool upper) {
  GRID_STRIDE(e, total) {
    const int64_t j = e % C, i = (e / C) % R;
    y[e] = (upper ? j - i >= diagonal : j - i <= diagonal) ? x[e] : T(0);
  }
}

KernelFn triangle(bool upper) {
  return [upper](KernelCtx& k) {
    const int64_t total = k.out().numel();
    if (total == 0) return;
    const Shape& s = k.in(0).shape();
    const Tensor x = dense(k.in(0));
    visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      triangle_kernel<T><<<grid_for(total), kThreads, 0, stream()>>>(x.data<T>(), k.out().data<T>(), total,
                                                                     s[s.size() - 2], s.back(), k.attrs.i("diagonal"),
                                                                     upper);
      OPSCOPE_CUDA_LAUNCHED("triangle_kernel");
    });
  };
}

OPSCOPE_CUDA_REGISTER(register_scan_kernels) {
  add_kernel("cumsum", "sequential", [](KernelCtx& k) {
    if (k.out().numel() == 0) return;
    const Tensor x = dense(k.in(0));
    const int64_t axis = normalize_axis(k.attrs.i("axis"), x.dim(), "cumsum");
    const GatherGeom g = gather_geom(x.shape(), axis, 0);
    visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      cumsum_kernel<T><<<grid_for(g.outer * g.inner), kThreads, 0, stream()>>>(x.data<T>(), k.out().data<T>(), g.outer,
                                                                               g.n, g.inner, k.attrs.b("exclusive"),
                                                                               k.attrs.b("reverse"));
      OPSCOPE_CUDA_LAUNCHED("cumsum_kernel");
    });
  });
  add_kernel("triu", "default", triangle(true));
  add_kernel("tril", "default", triangle(false));
}

}  // namespace
}  // namespace opscope::cuda
