// ONNX shape operators as opscope ops: the reshape family (views), Concat, Split and Slice,
// Gather (an embedding lookup for a table, gather for the rest), Expand, Tile, Pad, Cast, and
// the constants PyTorch's exporter computes shapes with (Constant, Shape, ConstantOfShape,
// Range, Size), which are known at import and folded away.
#include <cmath>

#include "app/onnx/map_context.h"

namespace opscope::interop {
namespace {

using Ints = std::vector<int64_t>;

Tensor reshape(NodeCtx& c, const Tensor& x, const Shape& s) {
  if (s == x.shape()) return x;
  return c.call("reshape", {x}, {{"shape", Ints(s.begin(), s.end())}});
}

std::vector<Slot> reshaped(NodeCtx& c, const Shape& s) {
  if (s == c.in(0).shape()) return {c.slot(0)};
  return one(reshape(c, c.in(0), s));
}

std::vector<Slot> map_reshape(NodeCtx& c) {
  c.allow_attrs({"allowzero"});
  const Tensor& x = c.in(0);
  const Ints want = c.ints_input(1, "the new shape");
  const bool allow_zero = c.attr_int("allowzero", 0) != 0;
  Shape s;
  int64_t infer_at = -1, known_product = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    int64_t d = want[i];
    if (d == 0 && !allow_zero) {
      if (i >= x.shape().size())
        c.fail("shape " + attr_value_str(want) + " copies axis " + std::to_string(i) + " (a 0) that x " +
               shape_str(x.shape()) + " lacks");
      d = x.shape()[i];
    }
    if (d == -1) {
      if (infer_at >= 0) c.fail("shape " + attr_value_str(want) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (d < 0) {
      c.fail("shape " + attr_value_str(want) + " has the size " + std::to_string(d));
    } else {
      known_product *= std::max<int64_t>(d, 1);
    }
    s.push_back(d);
  }
  if (infer_at >= 0) {
    if (x.numel() % known_product != 0)
      c.fail("cannot reshape " + shape_str(x.shape()) + " into " + attr_value_str(want));
    s[infer_at] = x.numel() / known_product;
  }
  return reshaped(c, s);
}

std::vector<Slot> map_flatten(NodeCtx& c) {
  c.allow_attrs({"axis"});
  const Tensor& x = c.in(0);
  int64_t axis = c.attr_int("axis", 1);
  if (axis < -x.dim() || axis > x.dim())
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(x.dim()));
  if (axis < 0) axis += x.dim();
  int64_t outer = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= x.shape()[a];
  const int64_t inner = outer == 0 ? 0 : x.numel() / std::max<int64_t>(outer, 1);
  return reshaped(c, {outer, inner});
}

std::vector<Slot> map_transpose(NodeCtx& c) {
  c.allow_attrs({"perm"});
  const Tensor& x = c.in(0);
  Ints perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t a = x.dim() - 1; a >= 0; --a) perm.push_back(a);
  if (static_cast<int64_t>(perm.size()) != x.dim())
    c.fail("perm " + attr_value_str(perm) + " does not list the " + std::to_string(x.dim()) + " axes of x");
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return {c.slot(0)};
  return one(c.call("permute", {x}, {{"dims", perm}}));
}

// Squeeze and Unsqueeze: axes as an attribute before opset 13, an input after.
Ints axes_of(NodeCtx& c, bool required) {
  if (c.opset() >= 13) {
    c.allow_attrs({});
    if (!c.has(1)) {
      if (required) c.fail("the axes input is required");
      return {};
    }
    return c.ints_input(1, "axes");
  }
  c.allow_attrs({"axes"});
  return c.attr_ints("axes");
}

std::vector<Slot> map_squeeze(NodeCtx& c) {
  const Tensor& x = c.in(0);
  Ints axes = axes_of(c, false);
  std::vector<bool> drop(static_cast<size_t>(x.dim()), false);
  if (axes.empty()) {
    for (int64_t a = 0; a < x.dim(); ++a) drop[a] = x.shape()[a] == 1;
  } else {
    for (int64_t a : axes) {
      a = onnx_axis(c, a, x.dim());
      if (x.shape()[a] != 1)
        c.fail("axis " + std::to_string(a) + " of " + shape_str(x.shape()) + " has size " +
               std::to_string(x.shape()[a]) + ", not 1");
      drop[a] = true;
    }
  }
  Shape s;
  for (int64_t a = 0; a < x.dim(); ++a)
    if (!drop[a]) s.push_back(x.shape()[a]);
  return reshaped(c, s);
}

std::vector<Slot> map_unsqueeze(NodeCtx& c) {
  const Tensor& x = c.in(0);
  const Ints axes = axes_of(c, true);
  const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    a = onnx_axis(c, a, rank);
    if (inserted[a]) c.fail("axes " + attr_value_str(axes) + " name axis " + std::to_string(a) + " twice");
    inserted[a] = true;
  }
  Shape s;
  for (int64_t a = 0, k = 0; a < rank; ++a) s.push_back(inserted[a] ? 1 : x.shape()[k++]);
  return reshaped(c, s);
}

std::vector<Slot> map_concat(NodeCtx& c) {
  c.allow_attrs({"axis"});
  if (!c.has_attr("axis")) c.fail("the axis attribute is required");
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
  if (xs.size() == 1) return {c.slot(0)};
  return one(c.call("concat", xs, {{"axis", onnx_axis(c, c.attr_int("axis", 0), xs[0].dim())}}));
}

std::vector<Slot> map_split(NodeCtx& c) {
  const bool sizes_as_input = c.opset() >= 13;
  if (c.opset() >= 18) c.allow_attrs({"axis", "num_outputs"});
  else if (sizes_as_input) c.allow_attrs({"axis"});
  else c.allow_attrs({"axis", "split"});
  const Tensor& x = c.in(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.dim()), n = x.shape()[axis];
  const int64_t parts = static_cast<int64_t>(c.num_outputs());
  Ints sizes = sizes_as_input ? (c.has(1) ? c.ints_input(1, "split") : Ints{}) : c.attr_ints("split");
  if (sizes.empty()) {
    const int64_t chunk = c.has_attr("num_outputs") ? (n + parts - 1) / parts : n / parts;
    if (!c.has_attr("num_outputs") && n % parts != 0)
      c.fail("axis " + std::to_string(axis) + " of size " + std::to_string(n) + " does not split into " +
             std::to_string(parts) + " equal parts");
    for (int64_t i = 0, left = n; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, std::max<int64_t>(left, 0)));
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (static_cast<int64_t>(sizes.size()) != parts || total != n)
    c.fail("split sizes " + attr_value_str(sizes) + " must be " + std::to_string(parts) + " sizes adding up to " +
           std::to_string(n));
  std::vector<Slot> outs;
  for (int64_t i = 0, start = 0; i < parts; start += sizes[i], ++i)
    outs.push_back(Slot{c.call("slice", {x}, {{"axis", axis}, {"start", start}, {"stop", start + sizes[i]}}), false});
  return outs;
}

// Slice: starts/ends/axes/steps are attributes before opset 10 and inputs after. ONNX clamps
// like Python; a negative step takes the elements in reverse, which opscope's slice (a strided
// view) cannot, so it becomes a gather of the indices.
std::vector<Slot> map_slice(NodeCtx& c) {
  Tensor x = c.in(0);
  Ints starts, ends, axes, steps;
  if (c.opset() < 10) {
    c.allow_attrs({"starts", "ends", "axes"});
    starts = c.attr_ints("starts");
    ends = c.attr_ints("ends");
    axes = c.attr_ints("axes");
  } else {
    c.allow_attrs({});
    starts = c.ints_input(1, "starts");
    ends = c.ints_input(2, "ends");
    if (c.has(3)) axes = c.ints_input(3, "axes");
    if (c.has(4)) steps = c.ints_input(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.fail("starts, ends, axes and steps must have one length");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = onnx_axis(c, axes[i], x.dim()), dim = x.shape()[axis], step = steps[i];
    if (step == 0) c.fail("a step of 0");
    auto clamp_index = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += dim;  // below -dim stays below 0 and clamps to lo
      return std::clamp(v, lo, hi);
    };
    if (step > 0) {
      const int64_t start = clamp_index(starts[i], 0, dim), stop = clamp_index(ends[i], 0, dim);
      if (start == 0 && stop == dim && step == 1) continue;
      x = c.call("slice", {x}, {{"axis", axis}, {"start", start}, {"stop", std::max(start, stop)}, {"step", step}});
    } else {
      const int64_t start = clamp_index(starts[i], 0, dim - 1);
      const int64_t stop = ends[i] < -dim ? -1 : clamp_index(ends[i], -1, dim - 1);
      Ints idx;
      for (int64_t k = start; k > stop; k += step) idx.push_back(k);
      x = c.call("gather", {x, int_tensor(idx)}, {{"axis", axis}});
    }
  }
  if (x.impl() == c.in(0).impl()) return {c.slot(0)};
  return one(x);
}

// Gather along axis 0 of a [V, D] float table is an embedding lookup (named so in the graph);
// any other is opscope's gather. Known negative indices are made positive for the lookup.
std::vector<Slot> map_gather(NodeCtx& c) {
  c.allow_attrs({"axis"});
  const Tensor& x = c.in(0);
  Tensor idx = c.in(1);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.dim());
  if (idx.dtype() != DType::i64) c.fail("indices must be integers");
  if (axis == 0 && x.dim() == 2 && is_floating(x.dtype()) && !c.folding()) {
    if (c.known(1)) {
      Tensor fixed = idx.clone(MemCategory::input);
      for (int64_t i = 0; i < fixed.numel(); ++i)
        if (fixed.data<int64_t>()[i] < 0) fixed.data<int64_t>()[i] += x.shape()[0];
      idx = fixed;
    }
    return one(c.call("embedding", {idx, x}));
  }
  return one(c.call("gather", {x, idx}, {{"axis", axis}}));
}

std::vector<Slot> map_expand(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  const Ints want = c.ints_input(1, "the shape");
  Shape out;
  if (!try_broadcast_shapes(x.shape(), Shape(want.begin(), want.end()), out))
    c.fail("x " + shape_str(x.shape()) + " does not broadcast with the shape " + attr_value_str(want));
  if (out == x.shape()) return {c.slot(0)};
  return one(c.call("expand", {x}, {{"shape", Ints(out.begin(), out.end())}}));
}

std::vector<Slot> map_tile(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  const Ints reps = c.ints_input(1, "repeats");
  if (static_cast<int64_t>(reps.size()) != x.dim())
    c.fail("repeats " + attr_value_str(reps) + " must give one count per axis of " + shape_str(x.shape()));
  // x [d0, d1] -> [1, d0, 1, d1] -> broadcast to [r0, d0, r1, d1] -> [r0·d0, r1·d1].
  Shape spread, wide, out;
  for (int64_t a = 0; a < x.dim(); ++a) {
    if (reps[a] < 0) c.fail("a negative repeat count");
    spread.insert(spread.end(), {1, x.shape()[a]});
    wide.insert(wide.end(), {reps[a], x.shape()[a]});
    out.push_back(reps[a] * x.shape()[a]);
  }
  if (out == x.shape()) return {c.slot(0)};
  Tensor y = c.call("expand", {reshape(c, x, spread)}, {{"shape", Ints(wide.begin(), wide.end())}});
  return one(c.call("reshape", {y}, {{"shape", Ints(out.begin(), out.end())}}));
}

std::vector<Slot> map_pad(NodeCtx& c) {
  Tensor x = c.in(0);
  std::string mode;
  Ints pads;
  double value = 0;
  if (c.opset() < 11) {
    c.allow_attrs({"mode", "pads", "value"});
    pads = c.attr_ints("pads");
    value = c.attr_float("value", 0.0);
  } else {
    c.allow_attrs({"mode"});
    pads = c.ints_input(1, "pads");
    if (c.has(2)) value = c.scalar_input(2, "constant_value");
  }
  mode = c.attr_string("mode", "constant");
  const int64_t rank = x.dim();
  Ints axes;
  if (c.opset() >= 18 && c.has(3)) {
    for (int64_t a : c.ints_input(3, "axes")) axes.push_back(onnx_axis(c, a, rank));
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size())
    c.fail("pads " + attr_value_str(pads) + " must give a begin and an end for each of " + std::to_string(axes.size()) +
           " axes");
  if (mode == "edge") mode = "replicate";
  else if (mode != "constant" && mode != "reflect")
    c.unsupported("mode \"" + mode + "\" (opscope pads constant, reflect and edge)");
  // F.pad's list: (begin, end) pairs from the last axis; negative ONNX pads crop, after padding.
  Ints fpad(2 * static_cast<size_t>(rank), 0);
  std::vector<std::pair<int64_t, int64_t>> crop(static_cast<size_t>(rank), {0, 0});
  bool any = false;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k], b = pads[k], e = pads[k + axes.size()];
    const size_t p = static_cast<size_t>(rank - 1 - a);
    fpad[2 * p] = std::max<int64_t>(b, 0);
    fpad[2 * p + 1] = std::max<int64_t>(e, 0);
    crop[a] = {std::max<int64_t>(-b, 0), std::max<int64_t>(-e, 0)};
    any = any || b > 0 || e > 0;
  }
  const DType dt = x.dtype();
  if (any) {
    // opscope's pad takes floats: integers go through float64 (exact below 2^53).
    if (!is_floating(dt)) x = c.call("cast", {x}, {{"dtype", std::string("float64")}});
    x = c.call("pad", {x}, {{"pads", fpad}, {"mode", mode}, {"value", value}});
    if (!is_floating(dt)) x = c.call("cast", {x}, {{"dtype", std::string("int64")}});
  }
  for (int64_t a = 0; a < rank; ++a) {
    if (crop[a].first == 0 && crop[a].second == 0) continue;
    const int64_t dim = x.shape()[a];
    x = c.call("slice", {x},
               {{"axis", a}, {"start", crop[a].first}, {"stop", std::max(crop[a].first, dim - crop[a].second)}});
  }
  if (x.impl() == c.in(0).impl()) return {c.slot(0)};
  return one(x);
}

// Cast: float, double and int64 are opscope dtypes; bool is a comparison with 0; the narrower
// integers compute as int64 (values beyond the narrow type's range are not wrapped).
Tensor cast_to(NodeCtx& c, const Tensor& x, int32_t to) {
  if (to == kOnnxBool) return c.call("ne", {x, Tensor::scalar(0, x.dtype(), MemCategory::input)});
  const DType dt = dtype_for_onnx(to, "Cast's target");
  if (dt == x.dtype()) return x;
  return c.call("cast", {x}, {{"dtype", std::string(dtype_name(dt))}});
}

std::vector<Slot> map_cast(NodeCtx& c) {
  c.allow_attrs({"to", "saturate"});
  if (!c.has_attr("to")) c.fail("the 'to' attribute is required");
  Tensor y = cast_to(c, c.in(0), static_cast<int32_t>(c.attr_int("to", 0)));
  if (y.impl() == c.in(0).impl()) return {c.slot(0)};
  return one(y);
}

std::vector<Slot> map_cast_like(NodeCtx& c) {
  c.allow_attrs({"saturate"});
  const Tensor &x = c.in(0), &like = c.in(1);
  if (x.dtype() == like.dtype()) return {c.slot(0)};
  return one(c.call("cast", {x}, {{"dtype", std::string(dtype_name(like.dtype()))}}));
}

// --- constants: known at import ------------------------------------------------------------------

std::vector<Slot> map_constant(NodeCtx& c) {
  c.allow_attrs({"value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings",
                 "sparse_value"});
  if (const Tensor* t = c.attr_tensor("value")) return {c.constant(*t)};
  if (c.has_attr("value_float"))
    return {c.constant(Tensor::scalar(c.attr_float("value_float", 0), DType::f32, MemCategory::input))};
  if (c.has_attr("value_int"))
    return {
        c.constant(Tensor::scalar(static_cast<double>(c.attr_int("value_int", 0)), DType::i64, MemCategory::input))};
  if (c.has_attr("value_ints")) return {c.constant(int_tensor(c.attr_ints("value_ints")))};
  if (c.has_attr("value_floats")) {
    const auto f = c.attr_floats("value_floats");
    return {
        c.constant(Tensor::from_vector<double>(f, {static_cast<int64_t>(f.size())}, DType::f32, MemCategory::input))};
  }
  c.unsupported("a Constant of strings or a sparse tensor");
}

std::vector<Slot> map_constant_of_shape(NodeCtx& c) {
  c.allow_attrs({"value"});
  const Ints dims = c.ints_input(0, "the shape");
  for (int64_t d : dims)
    if (d < 0) c.fail("the shape " + attr_value_str(dims) + " has a negative size");
  double v = 0;
  DType dt = DType::f32;
  if (const Tensor* t = c.attr_tensor("value")) {
    if (t->numel() != 1) c.fail("value must hold one element, got shape " + shape_str(t->shape()));
    v = t->get(0);
    dt = t->dtype();
  }
  return {c.constant(Tensor::full(Shape(dims.begin(), dims.end()), v, dt, MemCategory::input))};
}

std::vector<Slot> map_shape(NodeCtx& c) {
  c.allow_attrs({"start", "end"});
  const Shape& s = c.in(0).shape();
  const int64_t r = static_cast<int64_t>(s.size());
  auto clamp_axis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r); };
  const int64_t start = clamp_axis(c.attr_int("start", 0)), end = clamp_axis(c.attr_int("end", r));
  return {c.constant(int_tensor(Ints(s.begin() + start, s.begin() + std::max(start, end))))};
}

std::vector<Slot> map_size(NodeCtx& c) {
  c.allow_attrs({});
  return {c.constant(int_tensor({c.in(0).numel()}, true))};
}

std::vector<Slot> map_range(NodeCtx& c) {
  c.allow_attrs({});
  const double start = c.scalar_input(0, "start"), limit = c.scalar_input(1, "limit"),
               delta = c.scalar_input(2, "delta");
  if (delta == 0) c.fail("delta is 0");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (count > 1e9) c.fail("a range of " + std::to_string(count) + " values");
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i) * delta;
  return {c.constant(
      Tensor::from_vector<double>(v, {static_cast<int64_t>(v.size())}, c.in(0).dtype(), MemCategory::input))};
}

}  // namespace

void add_shape_mappers(MapperTable& t) {
  t["Identity"] = [](NodeCtx& c) {
    c.allow_attrs({});
    return std::vector<Slot>{c.slot(0)};
  };
  t["Reshape"] = map_reshape;
  t["Flatten"] = map_flatten;
  t["Transpose"] = map_transpose;
  t["Squeeze"] = map_squeeze;
  t["Unsqueeze"] = map_unsqueeze;
  t["Concat"] = map_concat;
  t["Split"] = map_split;
  t["Slice"] = map_slice;
  t["Gather"] = map_gather;
  t["Expand"] = map_expand;
  t["Tile"] = map_tile;
  t["Pad"] = map_pad;
  t["Cast"] = map_cast;
  t["CastLike"] = map_cast_like;
  t["Constant"] = map_constant;
  t["ConstantOfShape"] = map_constant_of_shape;
  t["Shape"] = map_shape;
  t["Size"] = map_size;
  t["Range"] = map_range;
}

}  // namespace opscope::interop
