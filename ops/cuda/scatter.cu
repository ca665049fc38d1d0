// CUDA gather_elements and its backward, gather_nd, scatter_nd and topk (ops/scatter.cpp).
//  - gather_elements: one thread per output element; its backward adds dy with atomicAdd
//    (repeated indices: the float add order varies, so the last bits may differ run to run).
//  - gather_nd / scatter_nd: the index rows are checked and made non-negative on the host (each
//    component has its own bound), then one thread per element of the selected slices; "add"
//    adds with atomicAdd, "none" writes (ONNX leaves repeated rows undefined: here any may win).
//  - topk: one thread per element counts the elements of its line that come before it (its rank
//    in the order of ops/scatter.cpp: greater first, ties by index, NaN greatest) and writes
//    itself at its rank when it is among the k first: O(n²) per line, no sort, no atomics.
#include <vector>

#include "ops/cuda/cuda_util.cuh"
#include "ops/geometry.h"
#include "ops/index_check.h"

namespace opscope::cuda {
namespace {

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Shapes by value for the kernels: index's shape and strides, x's strides.
struct ElementsGeom {
  int rank = 0;
  int64_t axis = 0, n = 0;
  int64_t idx[kMaxRank] = {}, idx_stride[kMaxRank] = {}, x_stride[kMaxRank] = {};
};

ElementsGeom elements_geom(const Shape& x, const Shape& idx, int64_t axis, const std::string& op) {
  if (x.size() > static_cast<size_t>(kMaxRank)) throw Error(op + ": the CUDA kernel takes up to 8 axes");
  ElementsGeom g;
  g.rank = static_cast<int>(x.size());
  g.axis = axis;
  g.n = x[static_cast<size_t>(axis)];
  int64_t si = 1, sx = 1;
  for (int a = g.rank - 1; a >= 0; --a) {
    g.idx[a] = idx[a];
    g.idx_stride[a] = si;
    g.x_stride[a] = sx;
    si *= idx[a];
    sx *= x[a];
  }
  return g;
}

__device__ int64_t element_offset(const ElementsGeom& g, int64_t e, int64_t at) {
  int64_t off = 0;
  for (int a = 0; a < g.rank; ++a) off += (a == g.axis ? at : (e / g.idx_stride[a]) % g.idx[a]) * g.x_stride[a];
  return off;
}

template <class T>
__global__ void gather_elements_kernel(ElementsGeom g, const T* x, const int64_t* idx, T* y, int64_t count) {
  GRID_STRIDE(e, count) {
    const int64_t i = idx[e] < 0 ? idx[e] + g.n : idx[e];
    y[e] = x[element_offset(g, e, i)];
  }
}

template <class T>
__global__ void scatter_add_elements_kernel(ElementsGeom g, const T* dy, const int64_t* idx, T* dx, int64_t count) {
  GRID_STRIDE(e, count) {
    const int64_t i = idx[e] < 0 ? idx[e] + g.n : idx[e];
    atomicAdd(&dx[element_offset(g, e, i)], dy[e]);
  }
}

void check_elements(KernelCtx& k, const Tensor& idx, int64_t n) {
  if (const int64_t bad = first_out_of_range(k, idx, n, -n); bad >= 0)
    throw gather_index_out_of_range(k.op.name, static_cast<int64_t>(idx.get(bad)), bad, n);
}

// gather_nd / scatter_nd: the flat offset (within the batch) of each index row, from the host.
struct NdRows {
  Tensor offsets;  // [rows·batches] int64 on the device
  int64_t rows = 0, batches = 1, slice = 1, data_batch = 0;
};

NdRows nd_rows(KernelCtx& k, const Shape& data, const Tensor& indices, int64_t b) {
  const Shape& is = indices.shape();
  NdRows r;
  const int64_t q = is.back();
  for (int64_t a = 0; a < b; ++a) r.batches *= data[a];
  r.rows = shape_numel(Shape(is.begin(), is.end() - 1)) / std::max<int64_t>(1, r.batches);
  for (size_t a = static_cast<size_t>(b + q); a < data.size(); ++a) r.slice *= data[a];
  r.data_batch = shape_numel(Shape(data.begin() + b, data.end()));
  const Tensor host = indices.to(Device::cpu, MemCategory::temporary);
  const int64_t* p = host.data<int64_t>();
  std::vector<int64_t> off(static_cast<size_t>(r.rows * r.batches));
  for (size_t row = 0; row < off.size(); ++row) {
    int64_t o = 0;
    for (int64_t j = 0; j < q; ++j) {
      const int64_t flat = static_cast<int64_t>(row) * q + j;
      o = o * data[b + j] + gather_index(p[flat], flat, data[b + j], k.op.name);
    }
    off[row] = o * r.slice;
  }
  r.offsets = Tensor::from_vector<int64_t>(off, {static_cast<int64_t>(off.size())}, DType::i64, MemCategory::temporary)
                  .to(Device::cuda, MemCategory::temporary);
  return r;
}

template <class T>
__global__ void gather_nd_kernel(const T* data, const int64_t* offsets, T* y, int64_t rows, int64_t slice,
                                 int64_t data_batch, int64_t total) {
  GRID_STRIDE(e, total) {
    const int64_t row = e / slice, i = e % slice, batch = row / rows;
    y[e] = data[batch * data_batch + offsets[row] + i];
  }
}

template <class T>
__global__ void scatter_nd_kernel(const T* updates, const int64_t* offsets, T* out, int64_t slice, int64_t total,
                                  bool add) {
  GRID_STRIDE(e, total) {
    T* dst = out + offsets[e / slice] + e % slice;
    if (add) atomicAdd(dst, updates[e]);
    else *dst = updates[e];
  }
}

template <class T> __device__ bool comes_before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool na = a != a, nb = b != b;
  if (na || nb) return na && nb ? ia < ib : largest ? na : nb;
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

// x as [outer, n, inner]; thread e is element i of line (o, b).
template <class T>
__global__ void topk_kernel(const T* x, T* vals, int64_t* idx, int64_t outer, int64_t n, int64_t inner, int64_t k,
                            bool largest) {
  GRID_STRIDE(e, outer * n * inner) {
    const int64_t b = e % inner, i = (e / inner) % n, o = e / (inner * n);
    const T* line = x + o * n * inner + b;
    const T v = line[i * inner];
    int64_t rank = 0;
    for (int64_t j = 0; j < n && rank < k; ++j)
      if (comes_before(line[j * inner], j, v, i, largest)) ++rank;
    if (rank < k) {
      vals[(o * k + rank) * inner + b] = v;
      idx[(o * k + rank) * inner + b] = i;
    }
  }
}

OPSCOPE_CUDA_REGISTER(register_scatter_kernels) {
  add_kernel("gather_elements", "default", [](KernelCtx& k) {
    const int64_t count = k.out().numel();
    if (count == 0) return;
    const int64_t axis = normalize_axis(k.attrs.i("axis"), k.in(0).dim(), "gather_elements");
    const Tensor x = dense(k.in(0)), idx = dense(k.in(1));
    check_elements(k, idx, x.shape()[axis]);
    const ElementsGeom g = elements_geom(x.shape(), idx.shape(), axis, k.op.name);
    visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      gather_elements_kernel<T>
          <<<grid_for(count), kThreads, 0, stream()>>>(g, x.data<T>(), idx.data<int64_t>(), k.out().data<T>(), count);
      OPSCOPE_CUDA_LAUNCHED("gather_elements_kernel");
    });
  });
  add_kernel("gather_elements_backward", "default", [](KernelCtx& k) {
    k.out().fill(0);
    const int64_t count = k.in(1).numel();
    if (count == 0) return;
    const int64_t axis = normalize_axis(k.attrs.i("axis"), k.out().dim(), "gather_elements_backward");
    const Tensor idx = dense(k.in(1));
    check_elements(k, idx, k.out().shape()[axis]);
    const ElementsGeom g = elements_geom(k.out().shape(), idx.shape(), axis, k.op.name);
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const Tensor dy = dense(k.in(0).dtype() == k.out().dtype() ? k.in(0) : k.in(0).cast(k.out().dtype()));
      scatter_add_elements_kernel<T>
          <<<grid_for(count), kThreads, 0, stream()>>>(g, dy.data<T>(), idx.data<int64_t>(), k.out().data<T>(), count);
      OPSCOPE_CUDA_LAUNCHED("scatter_add_elements_kernel");
    });
  });
  add_kernel("gather_nd", "default", [](KernelCtx& k) {
    const int64_t total = k.out().numel();
    if (total == 0) return;
    const Tensor data = dense(k.in(0));
    const NdRows r = nd_rows(k, data.shape(), k.in(1), k.attrs.i("batch_dims"));
    visit_float(data.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      gather_nd_kernel<T><<<grid_for(total), kThreads, 0, stream()>>>(data.data<T>(), r.offsets.data<int64_t>(),
                                                                      k.out().data<T>(), r.rows, r.slice, r.data_batch,
                                                                      total);
      OPSCOPE_CUDA_LAUNCHED("gather_nd_kernel");
    });
  });
  add_kernel("scatter_nd", "default", [](KernelCtx& k) {
    k.out().copy_from(k.in(0));
    const int64_t total = k.in(2).numel();
    if (total == 0) return;
    const NdRows r = nd_rows(k, k.in(0).shape(), k.in(1), 0);
    visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const Tensor updates = dense(k.in(2));
      scatter_nd_kernel<T><<<grid_for(total), kThreads, 0, stream()>>>(updates.data<T>(), r.offsets.data<int64_t>(),
                                                                       k.out().data<T>(), r.slice, total,
                                                                       k.attrs.s("reduction") == "add");
      OPSCOPE_CUDA_LAUNCHED("scatter_nd_kernel");
    });
  });
  add_kernel("topk", "default", [](KernelCtx& k) {
    if (k.out(0).numel() == 0) return;
    const Tensor x = dense(k.in(0));
    const int64_t axis = normalize_axis(k.attrs.i("axis"), x.dim(), "topk");
    const GatherGeom g = gather_geom(x.shape(), axis, k.attrs.i("k"));
    visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      topk_kernel<T><<<grid_for(x.numel()), kThreads, 0, stream()>>>(x.data<T>(), k.out(0).data<T>(),
                                                                     k.out(1).data<int64_t>(), g.outer, g.n, g.inner,
                                                                     g.count, k.attrs.b("largest"));
      OPSCOPE_CUDA_LAUNCHED("topk_kernel");
    });
  });
}

}  // namespace
}  // namespace opscope::cuda
