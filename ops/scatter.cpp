// Indexing by index tensors, as ONNX and PyTorch models use them: gather_elements (torch.gather)
// and its backward gather_elements_backward (a scatter-add), gather_nd and scatter_nd (ONNX's
// GatherND and ScatterND: Swin's shifted-window mask is a ScatterND), and topk (values and their
// indices), whose backward scatters through gather_elements_backward.
//
// Indices are int64; a negative one counts from the end of its axis (ONNX's rule) and one out of
// range is an error naming its value and position.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/parallel.h"
#include "ops/cpu_util.h"
#include "ops/geometry.h"
#include "ops/index_check.h"

namespace opscope {
namespace {

using cpu::gc;
using V = std::vector<int64_t>;

// Row-major strides of a shape (in elements).
V strides_of(const Shape& s) {
  V st(s.size(), 1);
  for (size_t a = s.size(); a-- > 1;) st[a - 1] = st[a] * s[a];
  return st;
}

void expect_indices(const InferCtx& c, size_t i) {
  if (c.inputs[i].dtype != DType::i64)
    c.fail(std::string("indices must be int64, got ") + dtype_name(c.inputs[i].dtype), "cast them first: idx.long()");
}

// ---------------------------------------------------------------------------------------------
// gather_elements: y[i, j, k] = x[index[i, j, k], j, k] (axis 0; likewise along any axis). index
// has x's rank and sizes at most x's along the other axes; y has index's shape.

// The offset in x of y's element e: its own coordinates, with the axis coordinate from index.
struct ElementsGeom {
  Shape idx;
  V x_strides, idx_strides;
  int64_t axis = 0, n = 0;
};
ElementsGeom elements_geom(const Shape& x, const Shape& idx, int64_t axis) {
  return {idx, strides_of(x), strides_of(idx), axis, x[static_cast<size_t>(axis)]};
}
int64_t element_offset(const ElementsGeom& g, int64_t e, int64_t at) {
  int64_t off = 0;
  for (size_t a = 0; a < g.idx.size(); ++a) {
    const int64_t coord = (e / g.idx_strides[a]) % g.idx[a];
    off += (static_cast<int64_t>(a) == g.axis ? at : coord) * g.x_strides[a];
  }
  return off;
}

void check_elements(const InferCtx& c, const Shape& x, const Shape& idx, int64_t axis, const char* xname) {
  if (idx.size() != x.size())
    c.fail("index " + shape_str(idx) + " must have the rank of " + xname + " " + shape_str(x),
           "gather_elements picks one element per index: index has one axis per axis of x");
  for (size_t a = 0; a < x.size(); ++a)
    if (static_cast<int64_t>(a) != axis && idx[a] > x[a])
      c.fail("index " + shape_str(idx) + " is larger than " + xname + " " + shape_str(x) + " along axis " +
                 std::to_string(a),
             "along the axes other than `axis`, index may be at most as large as x");
}

template <class T>
void gather_elements_cpu(const KernelCtx& k, const T* x, const int64_t* idx, T* y, const ElementsGeom& g) {
  const int64_t n = shape_numel(g.idx);
  for (int64_t e = 0; e < n; ++e) y[e] = x[element_offset(g, e, gather_index(idx[e], e, g.n, k.op.name))];
}

// dx = 0, then dx[index[e] along axis] += dy[e] (repeated indices add up, in order).
template <class T>
void scatter_add_elements_cpu(const KernelCtx& k, const T* dy, const int64_t* idx, T* dx, const ElementsGeom& g) {
  const int64_t n = shape_numel(g.idx);
  for (int64_t e = 0; e < n; ++e) dx[element_offset(g, e, gather_index(idx[e], e, g.n, k.op.name))] += dy[e];
}

// ---------------------------------------------------------------------------------------------
// gather_nd / scatter_nd: indices [..., q] address data's first q axes (after batch_dims batch
// axes shared with indices); each index row selects a slice of data.shape[b + q:].
struct NdGeom {
  int64_t batches = 1;  // product of the batch axes
  int64_t rows = 0;  // index rows per batch
  int64_t q = 0;  // components per row
  int64_t slice = 1;  // elements per selected slice
  V dims;  // data's sizes along the q indexed axes
  int64_t data_batch = 0;  // elements of data per batch
};
NdGeom nd_geom(const Shape& data, const Shape& idx, int64_t b) {
  NdGeom g;
  g.q = idx.back();
  for (int64_t a = 0; a < b; ++a) g.batches *= data[a];
  g.rows = shape_numel(Shape(idx.begin(), idx.end() - 1)) / std::max<int64_t>(1, g.batches);
  for (int64_t a = b; a < b + g.q; ++a) g.dims.push_back(data[a]);
  for (size_t a = static_cast<size_t>(b + g.q); a < data.size(); ++a) g.slice *= data[a];
  g.data_batch = shape_numel(Shape(data.begin() + b, data.end()));
  return g;
}
// The offset (within its batch) of the slice index row r points at.
int64_t nd_offset(const NdGeom& g, const int64_t* row, int64_t flat, const std::string& op) {
  int64_t off = 0;
  for (int64_t j = 0; j < g.q; ++j) off = off * g.dims[j] + gather_index(row[j], flat + j, g.dims[j], op);
  return off * g.slice;
}

// indices [b batch axes..., m..., q] against data: q components per row address data's axes
// b .. b + q − 1.
void check_nd(const InferCtx& c, const Shape& data, const Shape& idx, int64_t b) {
  if (idx.empty()) c.fail("indices must have at least one axis (its last holds the index components)");
  const int64_t q = idx.back();
  if (b < 0 || b >= static_cast<int64_t>(idx.size()) || b > static_cast<int64_t>(data.size()))
    c.fail("batch_dims=" + std::to_string(b) + " must be smaller than the rank of indices " + shape_str(idx));
  if (b + q > static_cast<int64_t>(data.size()))
    c.fail("indices " + shape_str(idx) + " address " + std::to_string(q) + " axes after " + std::to_string(b) +
               " batch axes, but data " + shape_str(data) + " has " + std::to_string(data.size()),
           "the last axis of indices holds one component per indexed axis of data");
  for (int64_t a = 0; a < b; ++a)
    if (idx[a] != data[a])
      c.fail("batch axis " + std::to_string(a) + " is " + std::to_string(idx[a]) + " in indices " + shape_str(idx) +
             " but " + std::to_string(data[a]) + " in data " + shape_str(data));
}

Shape gather_nd_shape(const Shape& data, const Shape& idx, int64_t b) {
  Shape s(idx.begin(), idx.end() - 1);
  s.insert(s.end(), data.begin() + b + idx.back(), data.end());
  return s;
}

template <class T> void gather_nd_cpu(const KernelCtx& k, const T* data, const int64_t* idx, T* y, const NdGeom& g) {
  for (int64_t bt = 0; bt < g.batches; ++bt)
    for (int64_t r = 0; r < g.rows; ++r) {
      const int64_t row = bt * g.rows + r;
      const int64_t off = nd_offset(g, idx + row * g.q, row * g.q, k.op.name);
      std::copy(data + bt * g.data_batch + off, data + bt * g.data_batch + off + g.slice, y + row * g.slice);
    }
}

// out = data, then each update slice written (none: the last of repeated rows wins, in order)
// or added (add).
template <class T>
void scatter_nd_cpu(const KernelCtx& k, const T* updates, const int64_t* idx, T* out, const NdGeom& g, bool add) {
  for (int64_t r = 0; r < g.rows; ++r) {
    const int64_t off = nd_offset(g, idx + r * g.q, r * g.q, k.op.name);
    T* dst = out + off;
    const T* src = updates + r * g.slice;
    for (int64_t i = 0; i < g.slice; ++i) dst[i] = add ? dst[i] + src[i] : src[i];
  }
}

// ---------------------------------------------------------------------------------------------
// topk along an axis: x seen as [outer, n, inner]; the k first of each line in the order
// "greater first" (largest) or "smaller first", ties by the lower index, NaN greatest (PyTorch).
template <class T> bool before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool na = a != a, nb = b != b;
  if (na || nb) {
    if (na && nb) return ia < ib;
    return largest ? na : nb;
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

template <class T> void topk_cpu(const T* x, T* vals, int64_t* idx, const GatherGeom& g, int64_t k, bool largest) {
  parallel_for(g.outer * g.inner, grain_for(4.0 * static_cast<double>(g.n)), [&](int64_t l0, int64_t l1) {
    std::vector<int64_t> order(static_cast<size_t>(g.n));
    for (int64_t l = l0; l < l1; ++l) {
      const int64_t o = l / g.inner, b = l % g.inner;
      const T* line = x + o * g.n * g.inner + b;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t i, int64_t j) {
        return before(line[i * g.inner], i, line[j * g.inner], j, largest);
      });
      for (int64_t j = 0; j < k; ++j) {
        vals[(o * k + j) * g.inner + b] = line[order[j] * g.inner];
        idx[(o * k + j) * g.inner + b] = order[j];
      }
    }
  });
}

template <class F> void visit_any(DType dt, F&& f) { visit_dtype(dt, std::forward<F>(f)); }

OpDef gather_elements_def() {
  OpDef d =
      OpDef::declare("gather_elements", "indexing",
                     "y[i, j, k] = x[index[i, j, k], j, k] along axis 0 (likewise any axis): one element of x per "
                     "index (torch.gather, ONNX GatherElements); y has index's shape",
                     {"x", "index"});
  d.attrs = {
      make_attr("axis", AttrType::integer, int64_t{0}, "the axis index points along (negative counts from the end)")};
  d.infer = [](const InferCtx& c) {
    expect_indices(c, 1);
    c.expect_rank(0, 1);
    const Shape &xs = c.inputs[0].shape, &is = c.inputs[1].shape;
    const int64_t axis = normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(xs.size()), "gather_elements");
    check_elements(c, xs, is, axis, "x");
    TensorMeta m = c.inputs[0];
    m.shape = is;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const int64_t axis = normalize_axis(k.attrs.i("axis"), k.in(0).dim(), "gather_elements");
    const ElementsGeom g = elements_geom(k.in(0).shape(), k.in(1).shape(), axis);
    visit_any(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      gather_elements_cpu<T>(k, k.in(0).data<T>(), k.in(1).data<int64_t>(), k.out().data<T>(), g);
    });
  });
  d.saves = {{SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    if (!g.needs_grad(0)) return {Val{}, Val{}};
    return {g.call("gather_elements_backward", {g.grad_output(0), g.input(1)},
                   {{"axis", g.attrs().i("axis")}, {"shape", V(g.input_meta(0).shape)}}),
            Val{}};
  };
  d.backward_note =
      "dx = gather_elements_backward(dy, index): zeros, then dx[index[e] along axis] += dy[e]; no gradient for index";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[1]) + cpu::meta_bytes(out[0]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  const InputSpec x34{{3, 4}}, i24{{2, 4}, Domain::index, 3, false}, i32{{3, 2}, Domain::index, 4, false};
  d.gradcheck = {gc({x34, i24}, {}, "axis 0, repeated rows"),
                 gc({x34, i32}, {{"axis", int64_t{-1}}}, "last axis, a narrower index"),
                 gc({InputSpec{{2, 3, 2}}, InputSpec{{2, 5, 2}, Domain::index, 3, false}}, {{"axis", int64_t{1}}},
                    "middle axis, more indices than x")};
  return d;
}

OpDef gather_elements_backward_def() {
  OpDef d =
      OpDef::declare("gather_elements_backward", "indexing",
                     "dx = zeros(shape); dx[index[i, j, k], j, k] += dy[i, j, k] along axis (repeated indices add up)",
                     {"dy", "index"});
  d.attrs = {make_attr("axis", AttrType::integer, int64_t{0}, "the forward's axis"),
             make_attr("shape", AttrType::int_list, V{}, "the forward input's shape", {}, {}, {}, true)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    expect_indices(c, 1);
    const Shape xs = c.attrs.ints("shape");
    if (c.inputs[0].shape != c.inputs[1].shape)
      c.fail("dy " + shape_str(c.inputs[0].shape) + " must have index's shape " + shape_str(c.inputs[1].shape));
    const int64_t axis = normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(xs.size()), "gather_elements_backward");
    check_elements(c, xs, c.inputs[1].shape, axis, "shape");
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const int64_t axis = normalize_axis(k.attrs.i("axis"), k.out().dim(), "gather_elements_backward");
    const ElementsGeom g = elements_geom(k.out().shape(), k.in(1).shape(), axis);
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const Tensor dy = cpu::as_dtype(k.in(0), k.out().dtype());
      scatter_add_elements_cpu<T>(k, dy.data<T>(), k.in(1).data<int64_t>(), k.out().data<T>(), g);
    });
  });
  d.differentiable = false;
  d.checked_via = "gather_elements";
  d.gradcheck = {gc({{{2, 4}}, {{2, 4}, Domain::index, 3, false}}, {{"shape", V{3, 4}}}, "repeated indices add up")};
  d.cost = cpu::elementwise_cost(1);
  return d;
}

OpDef gather_nd_def() {
  OpDef d =
      OpDef::declare("gather_nd", "indexing",
                     "y[m..., :] = data[batch..., indices[m..., 0], ..., indices[m..., q−1], :]: each row of q index "
                     "components selects a slice of data (ONNX GatherND)",
                     {"data", "indices"});
  d.attrs = {make_attr("batch_dims", AttrType::integer, int64_t{0}, "leading axes shared by data and indices", 0.0)};
  d.infer = [](const InferCtx& c) {
    expect_indices(c, 1);
    const Shape &ds = c.inputs[0].shape, &is = c.inputs[1].shape;
    check_nd(c, ds, is, c.attrs.i("batch_dims"));
    TensorMeta m = c.inputs[0];
    m.shape = gather_nd_shape(ds, is, c.attrs.i("batch_dims"));
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const NdGeom g = nd_geom(k.in(0).shape(), k.in(1).shape(), k.attrs.i("batch_dims"));
    visit_any(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      gather_nd_cpu<T>(k, k.in(0).data<T>(), k.in(1).data<int64_t>(), k.out().data<T>(), g);
    });
  });
  d.saves = {{SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    if (!g.needs_grad(0)) return {Val{}, Val{}};
    if (g.attrs().i("batch_dims") != 0)
      throw Error("gather_nd: the gradient with batch_dims > 0 is not implemented",
                  "gather per batch element (batch_dims=0) when a gradient is needed");
    const Shape& ds = g.input_meta(0).shape;
    Val zeros = g.call("expand", {g.scalar(0, g.grad_output(0).dtype())}, {{"shape", V(ds)}});
    return {g.call("scatter_nd", {zeros, g.input(1), g.grad_output(0)}, {{"reduction", std::string("add")}}), Val{}};
  };
  d.backward_note =
      "ddata = scatter_nd(zeros, indices, dy, reduction=\"add\") (repeated rows add up); no gradient for indices";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[1]) + cpu::meta_bytes(out[0]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  d.gradcheck = {gc({InputSpec{{3, 4, 2}}, InputSpec{{5, 2}, Domain::index, 3, false}}, {},
                    "rows of 2 components: slices of 2"),
                 gc({InputSpec{{3, 4}}, InputSpec{{2, 2, 1}, Domain::index, 3, false}}, {},
                    "one component: whole rows")};
  return d;
}

OpDef scatter_nd_def() {
  OpDef d = OpDef::declare(
      "scatter_nd", "indexing",
      "y = data, then y[indices[m..., :], :] = updates[m..., :] (reduction \"add\": +=) (ONNX ScatterND)",
      {"data", "indices", "updates"});
  d.attrs = {make_attr("reduction", AttrType::string, std::string("none"),
                       "\"none\": write (with repeated index rows the last wins on the CPU; ONNX leaves it undefined), "
                       "\"add\": add",
                       {}, {}, {"none", "add"})};
  d.infer = [](const InferCtx& c) {
    expect_indices(c, 1);
    const Shape &ds = c.inputs[0].shape, &is = c.inputs[1].shape, &us = c.inputs[2].shape;
    check_nd(c, ds, is, 0);
    if (us != gather_nd_shape(ds, is, 0))
      c.fail("updates " + shape_str(us) + " must be " + shape_str(gather_nd_shape(ds, is, 0)) + " for data " +
                 shape_str(ds) + " and indices " + shape_str(is),
             "updates.shape = indices.shape[:-1] + data.shape[q:], q = indices.shape[-1]");
    if (c.inputs[2].dtype != c.inputs[0].dtype)
      c.fail("updates are " + std::string(dtype_name(c.inputs[2].dtype)) + " but data is " +
             dtype_name(c.inputs[0].dtype));
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const NdGeom g = nd_geom(k.in(0).shape(), k.in(1).shape(), 0);
    k.out().copy_from(k.in(0));
    visit_any(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      scatter_nd_cpu<T>(k, k.in(2).data<T>(), k.in(1).data<int64_t>(), k.out().data<T>(), g,
                        k.attrs.s("reduction") == "add");
    });
  });
  d.saves = {{SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val dy = g.grad_output(0), ddata, dupdates;
    if (g.needs_grad(0)) {
      if (g.attrs().s("reduction") == "add") {
        ddata = dy;
      } else {  // the overwritten positions got their values from updates: no gradient to data there
        Val zeros = g.call("expand", {g.scalar(0, dy.dtype())}, {{"shape", V(g.input_meta(2).shape)}});
        ddata = g.call("scatter_nd", {dy, g.input(1), zeros});
      }
    }
    if (g.needs_grad(2)) dupdates = g.call("gather_nd", {dy, g.input(1)});
    return {ddata, Val{}, dupdates};
  };
  d.backward_note =
      "ddata = dy with the written positions zeroed (scatter_nd(dy, indices, 0); \"add\": dy itself), "
      "dupdates = gather_nd(dy, indices)";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]) + cpu::meta_bytes(in[2]);
    c.bytes_written = cpu::meta_bytes(out[0]) + cpu::meta_bytes(in[2]);
    c.flops = cpu::meta_numel(in[2]);
    return c;
  };
  // "none" with one row (random rows may repeat, and then which write wins is undefined);
  // "add" with repeats.
  d.gradcheck = {gc({InputSpec{{4, 3}}, InputSpec{{1, 1}, Domain::index, 4, false}, InputSpec{{1, 3}}}, {},
                    "one row written"),
                 gc({InputSpec{{4, 3}}, InputSpec{{3, 1}, Domain::index, 4, false}, InputSpec{{3, 3}}},
                    {{"reduction", std::string("add")}}, "rows added (repeats add up)"),
                 gc({InputSpec{{2, 3, 2}}, InputSpec{{2, 2}, Domain::index, 2, false}, InputSpec{{2, 2}}},
                    {{"reduction", std::string("add")}}, "two components: slices of 2")};
  return d;
}

OpDef topk_def() {
  OpDef d =
      OpDef::declare("topk", "indexing",
                     "values, indices = the k largest (or smallest) elements along axis, in order (ties: the lower "
                     "index first; NaN counts as the largest)",
                     {"x"});
  d.attrs = {make_attr("k", AttrType::integer, int64_t{1}, "how many to keep", 0.0, {}, {}, true),
             make_attr("axis", AttrType::integer, int64_t{-1}, "the axis searched (negative counts from the end)"),
             make_attr("largest", AttrType::boolean, true, "the largest (True) or the smallest (False)"),
             make_attr("sorted", AttrType::boolean, true,
                       "in order (opscope always sorts; False is accepted for ONNX)")};
  d.num_outputs = 2;
  d.output_names = {"values", "indices"};
  d.infer = [](const InferCtx& c) {
    c.expect_rank(0, 1);
    TensorMeta v = c.inputs[0];
    const int64_t axis = normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(v.shape.size()), "topk");
    const int64_t k = c.attrs.i("k");
    if (k > v.shape[axis])
      c.fail("k=" + std::to_string(k) + " but axis " + std::to_string(axis) + " of x " + shape_str(v.shape) + " has " +
                 std::to_string(v.shape[axis]) + " elements",
             "k can be at most the axis' length");
    v.shape[axis] = k;
    TensorMeta i = v;
    i.dtype = DType::i64;
    return std::vector<TensorMeta>{v, i};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const int64_t axis = normalize_axis(k.attrs.i("axis"), k.in(0).dim(), "topk"), kk = k.attrs.i("k");
    const GatherGeom g = gather_geom(k.in(0).shape(), axis, kk);
    if (k.out(0).numel() == 0) return;
    visit_any(k.in(0).dtype(), [&](auto z) {
      using T = decltype(z);
      topk_cpu<T>(k.in(0).data<T>(), k.out(0).data<T>(), k.out(1).data<int64_t>(), g, kk, k.attrs.b("largest"));
    });
  });
  d.saves = {{SavedRef::output, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& xs = g.input_meta(0).shape;
    const int64_t axis = normalize_axis(g.attrs().i("axis"), static_cast<int64_t>(xs.size()), "topk");
    return {g.call("gather_elements_backward", {g.grad_output(0), g.output(1)}, {{"axis", axis}, {"shape", V(xs)}})};
  };
  d.backward_note =
      "dx = gather_elements_backward(dvalues, indices): each value's gradient goes back where it was taken from";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a, std::string_view) {
    Cost c;
    c.bytes_read = cpu::meta_bytes(in[0]);
    c.bytes_written = cpu::meta_bytes(out[0]) + cpu::meta_bytes(out[1]);
    const double n = cpu::meta_numel(in[0]);
    c.flops = n * std::log2(std::max(2.0, static_cast<double>(a.i("k"))));  // comparisons of a partial sort
    return c;
  };
  const InputSpec x{{3, 5}, Domain::distinct};  // no ties: one answer on every device
  d.gradcheck = {gc({x}, {{"k", int64_t{2}}}, "the 2 largest of each row"),
                 gc({x}, {{"k", int64_t{3}}, {"axis", int64_t{0}}, {"largest", false}},
                    "the 3 smallest of each column"),
                 gc({InputSpec{{2, 4, 3}, Domain::distinct}}, {{"k", int64_t{4}}, {"axis", int64_t{1}}},
                    "k = the whole axis: a sort")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_scatter_ops) {
  registry.add(gather_elements_def());
  registry.add(gather_elements_backward_def());
  registry.add(gather_nd_def());
  registry.add(scatter_nd_def());
  registry.add(topk_def());
}

}  // namespace
}  // namespace opscope
