// Embedding lookup: y[..., :] = weight[indices[...], :], and its backward embedding_backward,
// which scatters rows of dy back into a [V, D] table (repeated indices add up; the padding
// row gets no gradient). The forward is a gather of whole rows: each lookup copies D
// contiguous values, so its speed depends on how scattered the indices are (locality).
// gather is the general form along any axis (NumPy's take, ONNX's Gather), with
// gather_backward scattering dy back.
#include <algorithm>
#include <cstring>

#include "ops/cpu_util.h"
#include "ops/geometry.h"
#include "ops/index_check.h"

namespace opscope {
namespace {

using cpu::gc;

AttrSpec padding_idx_attr() {
  return make_attr("padding_idx", AttrType::integer, int64_t{-1},
                   "row that gets no gradient (its lookups still return it); -1 = none", -1.0);
}

void check_indices(const InferCtx& c) {
  if (c.inputs[0].dtype != DType::i64)
    c.fail(std::string("indices must be int64, got ") + dtype_name(c.inputs[0].dtype),
           "embedding looks rows up by integer index; cast the indices to int64");
}

void check_padding_idx(const InferCtx& c, int64_t V) {
  const int64_t p = c.attrs.i("padding_idx");
  if (p >= V)
    c.fail("padding_idx=" + std::to_string(p) + " is out of range for num_embeddings=" + std::to_string(V),
           "padding_idx must be in [0, " + std::to_string(V) + ") or -1 for none");
}

// Throws naming the first index outside [0, V).
void check_range(const int64_t* idx, int64_t n, int64_t V, const std::string& op) {
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= V) throw index_out_of_range(op, idx[i], i, V);
}

Shape gathered_shape(const Shape& x, int64_t axis, const Shape& indices) {
  Shape s(x.begin(), x.begin() + axis);
  s.insert(s.end(), indices.begin(), indices.end());
  s.insert(s.end(), x.begin() + axis + 1, x.end());
  return s;
}

OpDef embedding_def() {
  OpDef d = OpDef::declare("embedding", "embedding",
                           "y[..., d] = weight[indices[...], d] (weight is [V, D]; y is indices.shape + [D])",
                           {"indices", "weight"});
  d.attrs = {padding_idx_attr()};
  d.infer = [](const InferCtx& c) {
    check_indices(c);
    c.expect_float(1);
    const Shape& ws = c.inputs[1].shape;
    if (ws.size() != 2) c.fail("weight must be a [V, D] table, got " + shape_str(ws));
    check_padding_idx(c, ws[0]);
    TensorMeta m = c.inputs[1];
    m.shape = c.inputs[0].shape;
    m.shape.push_back(ws[1]);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "gather", [](KernelCtx& k) {
    const Tensor& idx = k.in(0);
    const Tensor& w = k.in(1);
    const int64_t n = idx.numel(), V = w.shape()[0], D = w.shape()[1];
    const int64_t* pi = idx.data<int64_t>();
    check_range(pi, n, V, k.op.name);
    const size_t row = static_cast<size_t>(D) * dtype_size(w.dtype());
    const char* src = static_cast<const char*>(w.raw_data());
    char* dst = static_cast<char*>(k.out().raw_data());
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * row, src + pi[i] * row, row);
  });
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    if (!g.needs_grad(1)) return {Val{}, Val{}};
    return {Val{}, g.call("embedding_backward", {g.input(0), g.grad_output(0)},
                          {{"num_embeddings", g.input_meta(1).shape[0]}, {"padding_idx", g.attrs().i("padding_idx")}})};
  };
  d.backward_note =
      "dweight[indices[i]] += dy[i] for every lookup i (repeated indices add up; padding_idx gets "
      "nothing); no gradient for indices";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(out[0]);  // the rows looked up, not the whole table
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  const InputSpec idx6{{6}, Domain::index, 4, false}, idx23{{2, 3}, Domain::index, 4, false}, w43{{4, 3}};
  d.gradcheck = {gc({idx6, w43}, {}, "6 lookups in a 4-row table: repeated indices"),
                 gc({idx23, w43}, {}, "2-d indices"),
                 gc({idx6, InputSpec{{5, 2}}}, {{"padding_idx", int64_t{4}}}, "padding row (never looked up here)")};
  return d;
}

OpDef embedding_backward_def() {
  OpDef d = OpDef::declare("embedding_backward", "embedding",
                           "dweight[v, :] = Σ over lookups i with indices[i] = v of dy[i, :] (0 for v = padding_idx)",
                           {"indices", "dy"});
  d.attrs = {make_attr("num_embeddings", AttrType::integer, int64_t{0}, "V, the rows of the table", 0.0, {}, {}, true),
             padding_idx_attr()};
  d.infer = [](const InferCtx& c) {
    check_indices(c);
    c.expect_float(1);
    const Shape& is = c.inputs[0].shape;
    const Shape& ds = c.inputs[1].shape;
    if (ds.size() != is.size() + 1 || !std::equal(is.begin(), is.end(), ds.begin()))
      c.fail("dy has shape " + shape_str(ds) + " but indices " + shape_str(is) + " need indices.shape + [D]");
    const int64_t V = c.attrs.i("num_embeddings");
    check_padding_idx(c, V);
    TensorMeta m = c.inputs[1];
    m.shape = {V, ds.back()};
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "scatter_add", [](KernelCtx& k) {
    const Tensor& idx = k.in(0);
    const int64_t n = idx.numel(), V = k.out().shape()[0], D = k.out().shape()[1];
    const int64_t pad = k.attrs.i("padding_idx");
    const int64_t* pi = idx.data<int64_t>();
    check_range(pi, n, V, k.op.name);
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* dy = k.in(1).data<T>();
      T* dw = k.out().data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if (pi[i] == pad) continue;
        cpu::ArrayMap<T>(dw + pi[i] * D, D) += cpu::ConstArrayMap<T>(dy + i * D, D);
      }
    });
  });
  d.differentiable = false;
  d.checked_via = "embedding";
  // Cases for the CUDA tests (gradchecked through embedding): repeated indices, a padding row.
  d.gradcheck = {
      gc({{{3, 4}, Domain::index, 6}, {{3, 4, 5}}}, {{"num_embeddings", int64_t{6}}, {"padding_idx", int64_t{2}}})};
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[0]) + 2 * cpu::meta_bytes(in[1]);  // dy and the rows it adds into
    c.bytes_written = cpu::meta_bytes(out[0]) + cpu::meta_bytes(in[1]);
    c.flops = cpu::meta_numel(in[1]);
    return c;
  };
  return d;
}

OpDef gather_def() {
  OpDef d =
      OpDef::declare("gather", "embedding",
                     "y = x with axis indexed by indices (NumPy take): y[a.., i.., b..] = x[a.., indices[i..], b..]; "
                     "y.shape = x.shape[:axis] + indices.shape + x.shape[axis+1:]",
                     {"x", "indices"});
  d.attrs = {make_attr("axis", AttrType::integer, int64_t{0}, "axis of x to index (negative counts from the end)")};
  d.infer = [](const InferCtx& c) {
    if (c.inputs[1].dtype != DType::i64)
      c.fail(std::string("indices must be int64, got ") + dtype_name(c.inputs[1].dtype), "cast the indices to int64");
    c.expect_rank(0, 1);
    const Shape& xs = c.inputs[0].shape;
    const int64_t axis = normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(xs.size()), "gather");
    if (xs[axis] == 0 && shape_numel(c.inputs[1].shape) > 0)
      c.fail("axis " + std::to_string(axis) + " of x " + shape_str(xs) + " is empty: there is nothing to gather");
    TensorMeta m = c.inputs[0];
    m.shape = gathered_shape(xs, axis, c.inputs[1].shape);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const Tensor& x = k.in(0);
    const int64_t axis = normalize_axis(k.attrs.i("axis"), x.dim(), "gather");
    const GatherGeom g = gather_geom(x.shape(), axis, k.in(1).numel());
    const int64_t* pi = k.in(1).data<int64_t>();
    const size_t es = dtype_size(x.dtype()), row = static_cast<size_t>(g.inner) * es;
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(k.out().raw_data());
    std::vector<int64_t> at(static_cast<size_t>(g.count));
    for (int64_t j = 0; j < g.count; ++j) at[j] = gather_index(pi[j], j, g.n, k.op.name);
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t j = 0; j < g.count; ++j)
        std::memcpy(dst + (o * g.count + j) * row, src + (o * g.n + at[j]) * row, row);
  });
  d.saves = {{SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    if (!g.needs_grad(0)) return {Val{}, Val{}};
    const Shape& xs = g.input_meta(0).shape;
    const int64_t axis = normalize_axis(g.attrs().i("axis"), static_cast<int64_t>(xs.size()), "gather");
    return {g.call("gather_backward", {g.grad_output(0), g.input(1)}, {{"axis", axis}, {"size", xs[axis]}}), Val{}};
  };
  d.backward_note =
      "dx = gather_backward(dy, indices): dx[a.., indices[i..], b..] += dy[a.., i.., b..] (repeated indices add up); "
      "no gradient for indices";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[1]) + cpu::meta_bytes(out[0]);  // the rows taken, not all of x
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  const InputSpec x45{{4, 5}}, idx3{{3}, Domain::index, 4, false}, idx22{{2, 2}, Domain::index, 5, false};
  d.gradcheck = {gc({x45, idx3}, {}, "rows of a matrix, repeated indices"),
                 gc({x45, idx22}, {{"axis", int64_t{1}}}, "columns by 2-d indices"),
                 gc({InputSpec{{2, 3, 4}}, InputSpec{{}, Domain::index, 3, false}}, {{"axis", int64_t{-2}}},
                    "a 0-d index drops the axis")};
  return d;
}

OpDef gather_backward_def() {
  OpDef d = OpDef::declare("gather_backward", "embedding",
                           "dx = zeros with axis of length size; dx[a.., indices[i..], b..] += dy[a.., i.., b..]",
                           {"dy", "indices"});
  d.attrs = {make_attr("axis", AttrType::integer, int64_t{0}, "the forward axis (non-negative)", 0.0),
             make_attr("size", AttrType::integer, int64_t{0}, "length of x along axis", 0.0, {}, {}, true)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    if (c.inputs[1].dtype != DType::i64) c.fail("indices must be int64");
    const Shape& dys = c.inputs[0].shape;
    const Shape& is = c.inputs[1].shape;
    const int64_t axis = c.attrs.i("axis");
    if (static_cast<int64_t>(dys.size()) < axis + static_cast<int64_t>(is.size()) ||
        !std::equal(is.begin(), is.end(), dys.begin() + axis))
      c.fail("dy " + shape_str(dys) + " does not hold indices " + shape_str(is) + " at axis " + std::to_string(axis));
    TensorMeta m = c.inputs[0];
    m.shape = Shape(dys.begin(), dys.begin() + axis);
    m.shape.push_back(c.attrs.i("size"));
    m.shape.insert(m.shape.end(), dys.begin() + axis + static_cast<int64_t>(is.size()), dys.end());
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const int64_t axis = k.attrs.i("axis");
    const GatherGeom g = gather_geom(k.out().shape(), axis, k.in(1).numel());
    const int64_t* pi = k.in(1).data<int64_t>();
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      Tensor dyt = cpu::as_dtype(k.in(0), k.out().dtype());
      const T* dy = dyt.data<T>();
      T* dx = k.out().data<T>();
      for (int64_t j = 0; j < g.count; ++j) {
        const int64_t at = gather_index(pi[j], j, g.n, k.op.name);
        for (int64_t o = 0; o < g.outer; ++o)
          cpu::ArrayMap<T>(dx + (o * g.n + at) * g.inner, g.inner) +=
              cpu::ConstArrayMap<T>(dy + (o * g.count + j) * g.inner, g.inner);
      }
    });
  });
  d.differentiable = false;
  d.checked_via = "gather";
  // Cases for the CUDA tests (gradchecked through gather): repeated indices add up.
  d.gradcheck = {gc({{{3, 5}}, {{3}, Domain::index, 4, false}}, {{"axis", int64_t{0}}, {"size", int64_t{4}}}, "rows"),
                 gc({{{4, 2, 2}}, {{2, 2}, Domain::index, 5, false}}, {{"axis", int64_t{1}}, {"size", int64_t{5}}},
                    "columns by 2-d indices")};
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[1]) + 2 * cpu::meta_bytes(in[0]);
    c.bytes_written = cpu::meta_bytes(out[0]) + cpu::meta_bytes(in[0]);
    c.flops = cpu::meta_numel(in[0]);
    return c;
  };
  return d;
}

OPSCOPE_REGISTER_OPS(register_embedding_ops) {
  registry.add(embedding_def());
  registry.add(embedding_backward_def());
  registry.add(gather_def());
  registry.add(gather_backward_def());
}

}  // namespace
}  // namespace opscope
