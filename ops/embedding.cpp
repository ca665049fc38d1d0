// Embedding lookup: y[..., :] = weight[indices[...], :], and its backward embedding_backward,
// which scatters rows of dy back into a [V, D] table (repeated indices add up; the padding
// row gets no gradient). The forward is a gather of whole rows: each lookup copies D
// contiguous values, so its speed depends on how scattered the indices are (locality).
#include <cstring>

#include "ops/cpu_util.h"
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
    if (idx[i] < 0 || idx[i] >= V)
      throw index_out_of_range(op, idx[i], i, V);
}

OPSCOPE_REGISTER_OPS(register_embedding_ops) {
  {
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
    d.backward_note = "dweight[indices[i]] += dy[i] for every lookup i (repeated indices add up; padding_idx gets "
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
    registry.add(std::move(d));
  }
  {
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
    d.gradcheck = {gc({{{3, 4}, Domain::index, 6}, {{3, 4, 5}}}, {{"num_embeddings", int64_t{6}}, {"padding_idx", int64_t{2}}})};
    d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
      Cost c;
      c.bytes_read = cpu::meta_bytes(in[0]) + 2 * cpu::meta_bytes(in[1]);  // dy and the rows it adds into
      c.bytes_written = cpu::meta_bytes(out[0]) + cpu::meta_bytes(in[1]);
      c.flops = cpu::meta_numel(in[1]);
      return c;
    };
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
