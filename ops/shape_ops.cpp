// Shape operators: transpose, permute, reshape, flatten, slice (and slice_backward), concat,
// stack, expand. Most return views that share the input's storage (no copy, no memory); the
// course's pitfall is that reshape of a transposed (non-contiguous) tensor must copy.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();  // slice stop default: to the end

// Attribute specs (named fields, so the declarations below read as a table).
AttrSpec int_attr(std::string name, int64_t def, std::string doc, std::optional<double> min = {}) {
  return make_attr(std::move(name), AttrType::integer, def, std::move(doc), min);
}
AttrSpec ints_attr(std::string name, std::string doc) {  // required list of ints
  return make_attr(std::move(name), AttrType::int_list, std::vector<int64_t>{}, std::move(doc), {}, {}, {}, true);
}

// A view of `base`'s storage with explicit shape, strides and offset (elements).
Tensor strided_view(const Tensor& base, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

// The strides that let a strided tensor (shape `from`, strides `st`) be read as `to` in
// row-major order without a copy, as PyTorch's view computes them: each run of `from`'s axes
// that is contiguous in memory (a chunk) must be split or merged into whole axes of `to`.
// Splitting the last axis of a slice (qkv[:, :, 0:256] -> [8, 128, 4, 64]) is a view; merging
// a transposed pair of axes is not (nullopt: the elements are not in row-major order).
std::optional<Strides> view_strides(const Shape& from, const Strides& st, const Shape& to) {
  if (from.empty() || shape_numel(from) == 0) return std::nullopt;
  Strides out(to.size(), 0);
  int64_t view_d = static_cast<int64_t>(to.size()) - 1, chunk_stride = st.back(), chunk_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    chunk_numel *= from[d];
    const bool chunk_ends = d == 0 || (from[d - 1] != 1 && st[d - 1] != chunk_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < chunk_numel || to[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= to[view_d];
      --view_d;
    }
    if (view_numel != chunk_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = st[d - 1];
      chunk_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

// Sets output 0 to x reshaped: a view when x is contiguous or its strides allow one
// (view_strides), else a contiguous copy (the reshape/transpose pitfall: the elements are not
// in row-major order in memory).
void reshape_into(KernelCtx& k, const Shape& shape) {
  const Tensor& x = k.in(0);
  if (x.is_contiguous()) {
    k.outputs[0] = x.view_reshape(shape);
  } else if (std::optional<Strides> st = view_strides(x.shape(), x.strides(), shape)) {
    k.outputs[0] = strided_view(x, shape, std::move(*st), x.offset());
  } else {
    k.outputs[0] = x.clone(k.out_category).view_reshape(shape);
  }
}

// Python slice semantics: negative start/stop count from the end, both clamped to [0, n].
struct SliceRange {
  int64_t start, stop, len;
};
SliceRange slice_range(int64_t n, int64_t start, int64_t stop, int64_t step) {
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, 0, n);
  stop = std::clamp<int64_t>(stop, 0, n);
  const int64_t len = stop > start ? 1 + (stop - start - 1) / step : 0;  // no overflow for huge steps
  return {start, stop, len};
}

// Views cost nothing: no FLOPs, no bytes moved (a reshape of a strided input copies, which
// the memory panel shows).
Cost view_cost(const std::vector<TensorMeta>&, const std::vector<TensorMeta>&, const Attrs&, std::string_view) {
  return {};
}
// Copies: every input element read once, every output element written once.
Cost copy_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
  Cost c;
  for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
  for (auto& m : out) c.bytes_written += cpu::meta_bytes(m);
  return c;
}

OpDef shape_op(const std::string& name, const std::string& doc) {
  OpDef d = OpDef::declare(name, "shape", doc, {"x"});
  d.accepts_strided = true;
  d.makes_views = true;
  d.cost = view_cost;
  return d;
}

// Resolves one -1 in a requested shape against `n` elements.
Shape resolve_reshape(const InferCtx& c, const Shape& in, const Shape& want) {
  const int64_t n = shape_numel(in);
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == -1) {
      if (infer_at >= 0)
        c.fail("only one dimension can be -1, got " + shape_str(want), "give every size but one explicitly");
      infer_at = static_cast<int64_t>(i);
    } else if (want[i] < 0) {
      c.fail("invalid size " + std::to_string(want[i]) + " in " + shape_str(want),
             "sizes are >= 0, or -1 to infer one");
    } else {
      if (want[i] != 0 && known > INT64_MAX / want[i]) c.fail("shape " + shape_str(want) + " has too many elements");
      known *= want[i];
    }
  }
  Shape out = want;
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      c.fail("cannot reshape " + shape_str(in) + " (" + std::to_string(n) + " elements) into " + shape_str(want) +
                 ": " + std::to_string(n) + " is not a multiple of " + std::to_string(known),
             "the product of the given sizes must divide the number of elements");
    out[infer_at] = n / known;
  } else if (known != n) {
    c.fail("cannot reshape " + shape_str(in) + " (" + std::to_string(n) + " elements) into " + shape_str(want) + " (" +
               std::to_string(known) + " elements)",
           "reshape keeps the number of elements; use -1 for one size to have it computed");
  }
  return out;
}

OpDef transpose_op() {
  OpDef d = shape_op("transpose", "y = x with axes dim0 and dim1 swapped (a view: strides swapped, no copy)");
  d.output_name_suffix = ".T";  // backward's dA = matmul(dC, B.T)
  d.attrs = {int_attr("dim0", -2, "first axis"), int_attr("dim1", -1, "second axis")};
  d.infer = [](const InferCtx& c) {
    const int64_t r = static_cast<int64_t>(c.inputs[0].shape.size());
    if (r == 0) c.fail("cannot transpose a 0-d tensor (it has no axes)");
    const int64_t a = normalize_axis(c.attrs.i("dim0"), r, "transpose"),
                  b = normalize_axis(c.attrs.i("dim1"), r, "transpose");
    TensorMeta m = c.inputs[0];
    std::swap(m.shape[a], m.shape[b]);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const int64_t r = k.in(0).dim();
    k.outputs[0] = k.in(0).view_transpose(normalize_axis(k.attrs.i("dim0"), r, "transpose"),
                                          normalize_axis(k.attrs.i("dim1"), r, "transpose"));
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("transpose", {g.grad_output(0)}, {{"dim0", g.attrs().i("dim0")}, {"dim1", g.attrs().i("dim1")}})};
  };
  d.backward_note = "dx = transpose(dy, dim0, dim1)";
  d.gradcheck = {gc({{{3, 4}}}, {}, "matrix"),
                 gc({{{2, 3, 4}}}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}, "outer axes"),
                 gc({{{2, 3, 4}}}, {{"dim0", int64_t{1}}, {"dim1", int64_t{-3}}}, "negative axis")};
  return d;
}

OpDef permute_op() {
  OpDef d = shape_op("permute", "y = x with axes reordered: y.shape[i] = x.shape[dims[i]] (a view)");
  d.attrs = {ints_attr("dims", "new order of the axes (a permutation)")};
  d.infer = [](const InferCtx& c) {
    const Shape& s = c.inputs[0].shape;
    const int64_t r = static_cast<int64_t>(s.size());
    const auto& dims = c.attrs.ints("dims");
    std::vector<char> seen(static_cast<size_t>(r), 0);
    bool ok = static_cast<int64_t>(dims.size()) == r;
    for (size_t i = 0; ok && i < dims.size(); ++i) {
      if (dims[i] < -r || dims[i] >= r) ok = false;
      else {
        const int64_t a = dims[i] < 0 ? dims[i] + r : dims[i];
        ok = !seen[a];
        seen[a] = 1;
      }
    }
    if (!ok)
      c.fail("dims " + shape_str(dims) + " is not a permutation of the " + std::to_string(r) +
                 " axes of a tensor of shape " + shape_str(s),
             "list every axis 0.." + std::to_string(r - 1) + " exactly once");
    TensorMeta m = c.inputs[0];
    for (int64_t i = 0; i < r; ++i) m.shape[i] = s[dims[i] < 0 ? dims[i] + r : dims[i]];
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const int64_t r = k.in(0).dim();
    std::vector<int64_t> dims = k.attrs.ints("dims");
    for (auto& a : dims) a = a < 0 ? a + r : a;
    k.outputs[0] = k.in(0).view_permute(dims);
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    // The inverse permutation puts every axis back: inv[dims[i]] = i.
    const auto& dims = g.attrs().ints("dims");
    const int64_t r = static_cast<int64_t>(dims.size());
    std::vector<int64_t> inv(dims.size());
    for (int64_t i = 0; i < r; ++i) inv[dims[i] < 0 ? dims[i] + r : dims[i]] = i;
    return {g.call("permute", {g.grad_output(0)}, {{"dims", inv}})};
  };
  d.backward_note = "dx = permute(dy, inverse(dims))";
  d.gradcheck = {gc({{{2, 3, 4}}}, {{"dims", std::vector<int64_t>{2, 0, 1}}}, "rotate"),
                 gc({{{2, 3, 4}}}, {{"dims", std::vector<int64_t>{1, -1, 0}}}, "negative axis"),
                 gc({{{3, 4}}}, {{"dims", std::vector<int64_t>{1, 0}}}, "matrix transpose")};
  return d;
}

OpDef reshape_op() {
  OpDef d = shape_op("reshape",
                     "y = x with a new shape, same elements in row-major order (a view when x's strides allow "
                     "it, e.g. x contiguous or a slice split along an axis; else a copy); one size may be -1");
  d.attrs = {ints_attr("shape", "the new shape; one size may be -1")};
  d.infer = [](const InferCtx& c) {
    TensorMeta m = c.inputs[0];
    m.shape = resolve_reshape(c, c.inputs[0].shape, c.attrs.ints("shape"));
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) { reshape_into(k, k.out_meta[0].shape); });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("reshape", {g.grad_output(0)}, {{"shape", g.input_meta(0).shape}})};
  };
  d.backward_note = "dx = reshape(dy, x.shape)";
  d.gradcheck = {gc({{{2, 3, 4}}}, {{"shape", std::vector<int64_t>{6, 4}}}, "merge axes"),
                 gc({{{2, 3, 4}}}, {{"shape", std::vector<int64_t>{-1, 2}}}, "inferred size"),
                 gc({{{6}}}, {{"shape", std::vector<int64_t>{2, 1, 3}}}, "split axis")};
  return d;
}

OpDef flatten_op() {
  OpDef d = shape_op("flatten", "y = x with axes start_dim..end_dim merged into one (reshape)");
  d.attrs = {int_attr("start_dim", 0, "first axis to merge"),
             int_attr("end_dim", -1, "last axis to merge (inclusive)")};
  d.infer = [](const InferCtx& c) {
    const Shape& s = c.inputs[0].shape;
    const int64_t r = static_cast<int64_t>(s.size());
    TensorMeta m = c.inputs[0];
    if (r == 0) {
      m.shape = {1};
      return std::vector<TensorMeta>{m};
    }
    const int64_t a = normalize_axis(c.attrs.i("start_dim"), r, "flatten"),
                  b = normalize_axis(c.attrs.i("end_dim"), r, "flatten");
    if (a > b)
      c.fail("start_dim (" + std::to_string(a) + ") comes after end_dim (" + std::to_string(b) + ") for shape " +
             shape_str(s));
    m.shape.assign(s.begin(), s.begin() + a);
    int64_t merged = 1;
    for (int64_t i = a; i <= b; ++i) merged *= s[i];
    m.shape.push_back(merged);
    m.shape.insert(m.shape.end(), s.begin() + b + 1, s.end());
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) { reshape_into(k, k.out_meta[0].shape); });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("reshape", {g.grad_output(0)}, {{"shape", g.input_meta(0).shape}})};
  };
  d.backward_note = "dx = reshape(dy, x.shape)";
  d.gradcheck = {gc({{{2, 3, 4}}}, {}, "all axes"), gc({{{2, 3, 4}}}, {{"start_dim", int64_t{1}}}, "keep batch"),
                 gc({{{2, 3, 4}}}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{-2}}}, "leading axes")};
  return d;
}

OpDef slice_op() {
  OpDef d = shape_op("slice", "y = x[start:stop:step] along axis (Python semantics; a view with a larger stride)");
  d.attrs = {int_attr("axis", 0, "axis to slice"), int_attr("start", 0, "first index (negative counts from the end)"),
             int_attr("stop", kEnd, "one past the last index (negative counts from the end; default: the end)"),
             int_attr("step", 1, "stride between taken elements", 1.0)};
  d.infer = [](const InferCtx& c) {
    const int64_t r = static_cast<int64_t>(c.inputs[0].shape.size());
    if (r == 0) c.fail("cannot slice a 0-d tensor (it has no axes)");
    const int64_t ax = normalize_axis(c.attrs.i("axis"), r, "slice");
    TensorMeta m = c.inputs[0];
    m.shape[ax] = slice_range(m.shape[ax], c.attrs.i("start"), c.attrs.i("stop"), c.attrs.i("step")).len;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const Tensor& x = k.in(0);
    const int64_t ax = normalize_axis(k.attrs.i("axis"), x.dim(), "slice"), step = k.attrs.i("step");
    const SliceRange s = slice_range(x.shape()[ax], k.attrs.i("start"), k.attrs.i("stop"), step);
    k.outputs[0] = x.view_slice(ax, s.start, s.stop, step);
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Attrs& a = g.attrs();
    return {g.call("slice_backward", {g.grad_output(0)},
                   {{"shape", g.input_meta(0).shape},
                    {"axis", a.i("axis")},
                    {"start", a.i("start")},
                    {"stop", a.i("stop")},
                    {"step", a.i("step")}})};
  };
  d.backward_note =
      "dx = zeros(x.shape) with dx[start:stop:step] = dy (slice_backward); when slices of one tensor tile an axis "
      "(q, k, v = qkv[..., 0:256], [256:512], [512:768]), dx = concat(dq, dk, dv) along it";
  d.gradient_window = [](const Attrs& a, const TensorMeta& x) -> std::optional<AxisWindow> {
    const int64_t r = static_cast<int64_t>(x.shape.size());
    if (r == 0 || a.i("step") != 1) return std::nullopt;
    const int64_t ax = normalize_axis(a.i("axis"), r, "slice");
    const SliceRange s = slice_range(x.shape[static_cast<size_t>(ax)], a.i("start"), a.i("stop"), 1);
    return AxisWindow{ax, s.start, s.len};
  };
  auto sl = [](int64_t axis, int64_t start, int64_t stop, int64_t step) {
    return AttrMap{{"axis", axis}, {"start", start}, {"stop", stop}, {"step", step}};
  };
  d.gradcheck = {gc({{{5, 4}}}, sl(0, 1, 4, 1), "rows 1..3"),
                 gc({{{5, 4}}}, sl(1, -3, 100, 2), "negative start, stop clamped, step 2"),
                 gc({{{2, 7, 3}}}, sl(-2, 0, -1, 3), "negative stop, step 3"),
                 gc({{{4, 3}}}, {{"start", int64_t{2}}}, "to the end")};
  return d;
}

OpDef slice_backward_op() {
  OpDef d = OpDef::declare("slice_backward", "shape",
                           "dx = zeros(shape); dx[start:stop:step] along axis = dy (the backward of slice)", {"dy"});
  d.accepts_strided = true;
  d.differentiable = false;
  d.checked_via = "slice";
  // Cases for the CUDA tests (gradchecked through slice).
  d.gradcheck = {
      gc({{{2, 3}}},
         {{"shape", std::vector<int64_t>{5, 3}}, {"start", int64_t{1}}, {"stop", int64_t{5}}, {"step", int64_t{2}}})};
  d.attrs = {ints_attr("shape", "shape of the sliced input"), int_attr("axis", 0, "sliced axis"),
             int_attr("start", 0, "first index"), int_attr("stop", kEnd, "one past the last index"),
             int_attr("step", 1, "stride", 1.0)};
  d.infer = [](const InferCtx& c) {
    const Shape& shape = c.attrs.ints("shape");
    const int64_t r = static_cast<int64_t>(shape.size());
    if (r == 0) c.fail("shape must have at least one axis");
    const int64_t ax = normalize_axis(c.attrs.i("axis"), r, "slice_backward");
    Shape sliced = shape;
    sliced[ax] = slice_range(shape[ax], c.attrs.i("start"), c.attrs.i("stop"), c.attrs.i("step")).len;
    if (c.inputs[0].shape != sliced)
      c.fail("dy has shape " + shape_str(c.inputs[0].shape) + " but slicing " + shape_str(shape) + " gives " +
             shape_str(sliced));
    TensorMeta m = c.inputs[0];
    m.shape = shape;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    Tensor& out = k.out();
    const int64_t ax = normalize_axis(k.attrs.i("axis"), out.dim(), "slice_backward"), step = k.attrs.i("step");
    const int64_t n = out.shape()[ax];
    const SliceRange s = slice_range(n, k.attrs.i("start"), k.attrs.i("stop"), step);
    // Each element is written once: zeros only around a step-1 window (before it and after
    // it), not zeros everywhere and then the window again.
    if (step == 1 && s.len > 0) {
      out.view_slice(ax, 0, s.start, 1).fill(0.0);
      out.view_slice(ax, s.start + s.len, n, 1).fill(0.0);
    } else {
      out.fill(0.0);
    }
    Tensor window = out.view_slice(ax, s.start, s.stop, step);
    window.copy_from(k.in(0));
  });
  d.cost = copy_cost;
  return d;
}

OpDef concat_op() {
  OpDef d = OpDef::declare("concat", "shape", "y = [x1, x2, ...] joined along axis (every other dimension must match)",
                           {"xs..."});
  d.accepts_strided = true;  // each input is copied straight into its window of y
  d.attrs = {int_attr("axis", 0, "axis to join along")};
  d.infer = [](const InferCtx& c) {
    const Shape& s0 = c.inputs[0].shape;
    const int64_t r = static_cast<int64_t>(s0.size());
    if (r == 0) c.fail("cannot concatenate 0-d tensors (they have no axis to join)", "use stack to make a new axis");
    const int64_t ax = normalize_axis(c.attrs.i("axis"), r, "concat");
    TensorMeta m = c.inputs[0];
    for (size_t i = 1; i < c.inputs.size(); ++i) {
      const Shape& s = c.inputs[i].shape;
      bool ok = static_cast<int64_t>(s.size()) == r;
      for (int64_t d = 0; ok && d < r; ++d) ok = d == ax || s[d] == s0[d];
      if (!ok)
        c.fail("input " + std::to_string(i + 1) + " has shape " + shape_str(s) + " but input 1 has shape " +
                   shape_str(s0) + "; all dimensions except axis " + std::to_string(ax) + " must match",
               "concat joins along an existing axis; check the axis or reshape the inputs");
      m.shape[ax] += s[ax];
      m.dtype = promote(m.dtype, c.inputs[i].dtype);
    }
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    Tensor& out = k.out();
    const int64_t ax = normalize_axis(k.attrs.i("axis"), out.dim(), "concat");
    int64_t at = 0;
    for (const Tensor& x : k.inputs) {
      const int64_t n = x.shape()[ax];
      Tensor window = out.view_slice(ax, at, at + n, 1);
      window.copy_from(x);
      at += n;
    }
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const int64_t r = static_cast<int64_t>(g.input_meta(0).shape.size());
    const int64_t ax = normalize_axis(g.attrs().i("axis"), r, "concat");
    Val dy = g.grad_output(0);
    std::vector<Val> dxs;
    int64_t at = 0;
    for (size_t i = 0; i < g.num_inputs(); ++i) {
      const int64_t n = g.input_meta(i).shape[ax];
      dxs.push_back(g.needs_grad(i) ? g.call("slice", {dy}, {{"axis", ax}, {"start", at}, {"stop", at + n}}) : Val{});
      at += n;
    }
    return dxs;
  };
  d.backward_note = "dx_i = slice(dy, axis, offset_i, offset_i + x_i.shape[axis])";
  d.cost = copy_cost;
  d.gradcheck = {gc({{{2, 3}}, {{4, 3}}}, {}, "rows"),
                 gc({{{2, 3}}, {{2, 1}}, {{2, 2}}}, {{"axis", int64_t{-1}}}, "three inputs, last axis"),
                 gc({{{2, 3, 2}}, {{2, 1, 2}}}, {{"axis", int64_t{1}}}, "middle axis"),
                 gc({{{3, 2}}}, {}, "one input")};
  return d;
}

OpDef stack_op() {
  OpDef d = OpDef::declare("stack", "shape", "y = tensors of one shape stacked along a new axis: y[..., i, ...] = x_i",
                           {"xs..."});
  d.accepts_strided = true;
  d.attrs = {int_attr("axis", 0, "position of the new axis in the result")};
  d.infer = [](const InferCtx& c) {
    const Shape& s0 = c.inputs[0].shape;
    const int64_t r = static_cast<int64_t>(s0.size());
    const int64_t ax = normalize_axis(c.attrs.i("axis"), r + 1, "stack");
    TensorMeta m = c.inputs[0];
    for (size_t i = 1; i < c.inputs.size(); ++i) {
      if (c.inputs[i].shape != s0)
        c.fail("input " + std::to_string(i + 1) + " has shape " + shape_str(c.inputs[i].shape) +
                   " but input 1 has shape " + shape_str(s0) + "; stacked tensors must have the same shape",
               "to join along an existing axis with different sizes, use concat");
      m.dtype = promote(m.dtype, c.inputs[i].dtype);
    }
    m.shape.insert(m.shape.begin() + ax, static_cast<int64_t>(c.inputs.size()));
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    Tensor& out = k.out();
    const int64_t ax = normalize_axis(k.attrs.i("axis"), out.dim(), "stack");
    // Window i of y: y's shape and strides without the new axis, shifted by i along it.
    Shape shape = out.shape();
    Strides strides = out.strides();
    const int64_t step = strides[ax];
    shape.erase(shape.begin() + ax);
    strides.erase(strides.begin() + ax);
    for (size_t i = 0; i < k.inputs.size(); ++i) {
      Tensor window = strided_view(out, shape, strides, out.offset() + static_cast<int64_t>(i) * step);
      window.copy_from(k.in(i));
    }
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& s = g.input_meta(0).shape;
    const int64_t ax = normalize_axis(g.attrs().i("axis"), static_cast<int64_t>(s.size()) + 1, "stack");
    Val dy = g.grad_output(0);
    std::vector<Val> dxs;
    for (size_t i = 0; i < g.num_inputs(); ++i) {
      if (!g.needs_grad(i)) {
        dxs.emplace_back();
        continue;
      }
      const int64_t at = static_cast<int64_t>(i);
      Val part = g.call("slice", {dy}, {{"axis", ax}, {"start", at}, {"stop", at + 1}});
      dxs.push_back(g.call("reshape", {part}, {{"shape", s}}));
    }
    return dxs;
  };
  d.backward_note = "dx_i = reshape(slice(dy, axis, i, i + 1), x_i.shape)";
  d.cost = copy_cost;
  d.gradcheck = {gc({{{2, 3}}, {{2, 3}}}, {}, "new first axis"),
                 gc({{{2, 3}}, {{2, 3}}, {{2, 3}}}, {{"axis", int64_t{-1}}}, "new last axis"),
                 gc({{{2, 3}}, {{2, 3}}}, {{"axis", int64_t{1}}}, "new middle axis"), gc({{{4}}}, {}, "one input")};
  return d;
}

OpDef expand_op() {
  OpDef d = shape_op("expand",
                     "y = x broadcast to shape (a view with stride 0 along broadcast axes: no copy); -1 keeps a size");
  d.attrs = {ints_attr("shape", "target shape; -1 keeps x's size")};
  d.infer = [](const InferCtx& c) {
    const Shape& s = c.inputs[0].shape;
    Shape want = c.attrs.ints("shape");
    if (want.size() < s.size())
      c.fail("cannot expand " + shape_str(s) + " to " + shape_str(want) + ": the target has fewer axes",
             "expand only adds leading axes and stretches axes of size 1");
    const size_t off = want.size() - s.size();
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] == -1) {
        if (i < off)
          c.fail("cannot expand " + shape_str(s) + " to " + shape_str(c.attrs.ints("shape")) +
                 ": -1 is only allowed for existing axes");
        want[i] = s[i - off];
      } else if (want[i] < 0) {
        c.fail("invalid size " + std::to_string(want[i]) + " in " + shape_str(want));
      } else if (i >= off && s[i - off] != 1 && s[i - off] != want[i]) {
        c.fail("cannot expand " + shape_str(s) + " to " + shape_str(c.attrs.ints("shape")) + ": dimension " +
                   std::to_string(i) + " has size " + std::to_string(s[i - off]) + ", which is neither 1 nor " +
                   std::to_string(want[i]),
               "only axes of size 1 can be stretched");
      }
    }
    TensorMeta m = c.inputs[0];
    m.shape = want;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) { k.outputs[0] = k.in(0).view_expand(k.out_meta[0].shape); });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("sum_to", {g.grad_output(0)}, {{"shape", g.input_meta(0).shape}})};
  };
  d.backward_note = "dx = sum_to(dy, x.shape) (sum over the broadcast axes)";
  d.gradcheck = {gc({{{3, 1}}}, {{"shape", std::vector<int64_t>{2, 3, 4}}}, "stretch and new axis"),
                 gc({{{4}}}, {{"shape", std::vector<int64_t>{3, 4}}}, "rows"),
                 gc({{{}}}, {{"shape", std::vector<int64_t>{2, 2}}}, "scalar"),
                 gc({{{3, 1}}}, {{"shape", std::vector<int64_t>{-1, 5}}}, "-1 keeps a size")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_shape_ops) {
  for (OpDef (*make)() :
       {transpose_op, permute_op, reshape_op, flatten_op, slice_op, slice_backward_op, concat_op, stack_op, expand_op})
    registry.add(make());
}

}  // namespace
}  // namespace opscope
