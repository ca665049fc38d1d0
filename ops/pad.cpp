// Padding and nearest upsampling: pad (modes "constant", "reflect" and "replicate", PyTorch
// F.pad order) with its backward pad_backward for the modes that read x more than once, and
// upsample_nearest2d (backward: reshape + sum).
//
// pads lists (left, right) pairs starting from the LAST axis: [left, right, top, bottom] pads
// W by left/right and H by top/bottom. Reflect mirrors around the edge without repeating it:
// x = [1 2 3 4], pad 2 each side -> [3 2 | 1 2 3 4 | 3 2], so a pad must be < the axis size.
// Replicate repeats the edge (ONNX's "edge"): [1 1 | 1 2 3 4 | 4 4].
#include <algorithm>

#include "ops/cpu_util.h"
#include "ops/geometry.h"

namespace opscope {
namespace {

using cpu::gc;

// Per-axis left pads for x of `rank` axes from the F.pad list (unpadded axes get 0).
std::vector<int64_t> left_pads(const std::vector<int64_t>& pads, size_t rank) {
  std::vector<int64_t> left(rank, 0);
  for (size_t p = 0; p < pads.size() / 2; ++p) left[rank - 1 - p] = pads[2 * p];
  return left;
}

Shape padded_shape(const Shape& x, const std::vector<int64_t>& pads) {
  Shape out = x;
  for (size_t p = 0; p < pads.size() / 2; ++p) out[x.size() - 1 - p] += pads[2 * p] + pads[2 * p + 1];
  return out;
}

// PadMode, pad_mode and pad_source_index (the source along one axis): ops/geometry.h, shared
// with the CUDA kernels.

// Calls f(out_flat, in_flat) for every output element (in_flat = -1 for a constant pad).
template <class F>
void for_each_padded(const Shape& in, const Shape& out, const std::vector<int64_t>& left, PadMode mode, F f) {
  const int64_t rank = static_cast<int64_t>(out.size());
  if (shape_numel(out) == 0) return;
  if (rank == 0) {
    f(0, 0);
    return;
  }
  const Strides is = contiguous_strides(in);
  const int64_t W = out[rank - 1], last_left = left[rank - 1], last_n = in[rank - 1];
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t row = 0, o = 0; o < shape_numel(out); ++row, o += W) {
    int64_t base = 0;
    bool inside = true;
    for (int64_t d = 0; d < rank - 1; ++d) {
      const int64_t s = pad_source_index(idx[d], left[d], in[d], mode);
      if (s < 0) inside = false;
      base += s * is[d];
    }
    for (int64_t j = 0; j < W; ++j) {
      const int64_t s = inside ? pad_source_index(j, last_left, last_n, mode) : -1;
      f(o + j, s < 0 ? -1 : base + s);
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
}

// Checks pads against x's shape (shared by pad and pad_backward).
void check_pads(const InferCtx& c, const Shape& xs, const std::vector<int64_t>& pads, PadMode mode) {
  if (pads.size() % 2 != 0 || pads.size() > 2 * xs.size())
    c.fail("pads=" + attr_value_str(pads) + " must be (left, right) pairs for at most the " +
               std::to_string(xs.size()) + " axes of x " + shape_str(xs),
           "F.pad order: [left, right] pads the last axis, [left, right, top, bottom] the last two");
  for (int64_t p : pads)
    if (p < 0) c.fail("pads=" + attr_value_str(pads) + " has a negative pad", "use slice to crop");
  if (mode == PadMode::constant) return;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const size_t axis = xs.size() - 1 - p;
    if (mode == PadMode::replicate && xs[axis] == 0 && std::max(pads[2 * p], pads[2 * p + 1]) > 0)
      c.fail("replicate padding of axis " + std::to_string(axis) + " of size 0 (x " + shape_str(xs) + ")",
             "an empty axis has no edge to repeat");
    if (mode == PadMode::reflect && std::max(pads[2 * p], pads[2 * p + 1]) >= xs[axis])
      c.fail("reflect padding of " + std::to_string(std::max(pads[2 * p], pads[2 * p + 1])) + " on axis " +
                 std::to_string(axis) + " of size " + std::to_string(xs[axis]) + " (x " + shape_str(xs) + ")",
             "reflect pads must be smaller than the axis they pad (the edge is not repeated)");
  }
}

OpDef pad_def() {
  OpDef d = OpDef::declare("pad", "shape",
                           "y = x with (left, right) pads on its last axes, last axis first (F.pad order); constant: "
                           "value, reflect: x mirrored around the edge, replicate: the edge repeated",
                           {"x"});
  d.attrs = {make_attr("pads", AttrType::int_list, std::vector<int64_t>{}, "[left, right, top, bottom, ...]", {}, {},
                       {}, true),
             make_attr("mode", AttrType::string, std::string("constant"), "what fills the border", {}, {},
                       {"constant", "reflect", "replicate"}),
             make_attr("value", AttrType::real, 0.0, "fill value for mode=constant")};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const auto& pads = c.attrs.ints("pads");
    check_pads(c, c.inputs[0].shape, pads, pad_mode(c.attrs.s("mode")));
    TensorMeta m = c.inputs[0];
    m.shape = padded_shape(m.shape, pads);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Tensor& x = k.in(0);
    const PadMode mode = pad_mode(k.attrs.s("mode"));
    const auto left = left_pads(k.attrs.ints("pads"), x.shape().size());
    cpu::visit_float(x.dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* px = x.data<T>();
      T* py = k.out().data<T>();
      const T value = static_cast<T>(k.attrs.f("value"));
      for_each_padded(x.shape(), k.out().shape(), left, mode,
                      [&](int64_t o, int64_t i) { py[o] = i < 0 ? value : px[i]; });
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const auto& pads = g.attrs().ints("pads");
    const Shape& xs = g.input_meta(0).shape;
    Val dy = g.grad_output(0);
    if (g.attrs().s("mode") != "constant")
      return {g.call("pad_backward", {dy}, {{"pads", pads}, {"shape", xs}, {"mode", g.attrs().s("mode")}})};
    for (size_t p = 0; p < pads.size() / 2; ++p) {  // constant: crop each padded axis back
      if (pads[2 * p] == 0 && pads[2 * p + 1] == 0) continue;
      const int64_t axis = static_cast<int64_t>(xs.size() - 1 - p);
      dy = g.call("slice", {dy}, {{"axis", axis}, {"start", pads[2 * p]}, {"stop", pads[2 * p] + xs[axis]}});
    }
    return {dy};
  };
  d.backward_note =
      "constant: dx = dy cropped (slice per padded axis); reflect, replicate: dx[i] = Σ dy over every "
      "output position that reads x[i] (pad_backward)";
  d.cost = cpu::elementwise_cost(0);
  const InputSpec x{{2, 3, 4, 5}}, x1{{7}};
  d.gradcheck = {gc({x}, {{"pads", std::vector<int64_t>{1, 2, 0, 1}}, {"value", 0.5}}, "constant, last two axes"),
                 gc({x}, {{"pads", std::vector<int64_t>{2, 3, 3, 1}}, {"mode", std::string("reflect")}},
                    "reflect, last two axes"),
                 gc({x1}, {{"pads", std::vector<int64_t>{3, 6}}, {"mode", std::string("reflect")}},
                    "reflect, 1-d, pads up to n - 1"),
                 gc({x}, {{"pads", std::vector<int64_t>{2, 6, 0, 3}}, {"mode", std::string("replicate")}},
                    "replicate: pads longer than the axis"),
                 gc({InputSpec{{2, 3, 4}}}, {{"pads", std::vector<int64_t>{1, 1, 1, 1, 1, 0}}},
                    "constant, three axes")};
  return d;
}

OpDef pad_backward_def() {
  OpDef d = OpDef::declare("pad_backward", "shape",
                           "dx[i] = Σ dy[o] over the output positions o that reflect- or replicate-pad reads from x[i]",
                           {"dy"});
  d.attrs = {make_attr("pads", AttrType::int_list, std::vector<int64_t>{}, "the forward pads", {}, {}, {}, true),
             make_attr("shape", AttrType::int_list, std::vector<int64_t>{}, "shape of the forward input x", {}, {}, {},
                       true),
             make_attr("mode", AttrType::string, std::string("reflect"), "the forward mode", {}, {},
                       {"reflect", "replicate"})};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const Shape xs = c.attrs.ints("shape");
    const auto& pads = c.attrs.ints("pads");
    check_pads(c, xs, pads, pad_mode(c.attrs.s("mode")));
    if (padded_shape(xs, pads) != c.inputs[0].shape)
      c.fail("dy has shape " + shape_str(c.inputs[0].shape) + " but padding x " + shape_str(xs) + " by " +
             attr_value_str(pads) + " gives " + shape_str(padded_shape(xs, pads)));
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Shape& xs = k.out().shape();
    const auto left = left_pads(k.attrs.ints("pads"), xs.size());
    k.out().fill(0);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* dy = k.in(0).data<T>();
      T* dx = k.out().data<T>();
      for_each_padded(xs, k.in(0).shape(), left, pad_mode(k.attrs.s("mode")),
                      [&](int64_t o, int64_t i) { dx[i] += dy[o]; });
    });
  });
  d.differentiable = false;
  d.checked_via = "pad";
  // Cases for the CUDA tests (gradchecked through pad): x [1, 2, 4, 5] padded (top, bottom, left, right).
  d.gradcheck = {gc({{{1, 2, 7, 8}}},
                    {{"pads", std::vector<int64_t>{1, 2, 2, 1}}, {"shape", std::vector<int64_t>{1, 2, 4, 5}}},
                    "reflected borders add")};
  d.cost = cpu::elementwise_cost(1);
  return d;
}

OpDef upsample_nearest2d_def() {
  OpDef d = OpDef::declare("upsample_nearest2d", "shape",
                           "y[n, c, i, j] = x[n, c, i / s, j / s] (integer division; y is [N, C, H·s, W·s])", {"x"});
  d.attrs = {make_attr("scale_factor", AttrType::integer, int64_t{2}, "s, the integer upscaling factor", 1.0)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const Shape& xs = c.inputs[0].shape;
    if (xs.size() != 4) c.fail("expected x of rank 4 [N, C, H, W], got " + shape_str(xs));
    const int64_t s = c.attrs.i("scale_factor");
    TensorMeta m = c.inputs[0];
    m.shape = {xs[0], xs[1], xs[2] * s, xs[3] * s};
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    const Shape& xs = k.in(0).shape();
    const int64_t s = k.attrs.i("scale_factor"), H = xs[2], W = xs[3];
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const T* px = k.in(0).data<T>();
      T* py = k.out().data<T>();
      const int64_t OW = W * s;
      for (int64_t r = 0; r < xs[0] * xs[1] * H; ++r) {  // each input row makes s output rows
        T* first = py + r * s * OW;
        for (int64_t j = 0; j < OW; ++j) first[j] = px[r * W + j / s];
        for (int64_t t = 1; t < s; ++t) std::copy(first, first + OW, first + t * OW);
      }
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& xs = g.input_meta(0).shape;
    const int64_t s = g.attrs().i("scale_factor");
    Val blocks =
        g.call("reshape", {g.grad_output(0)}, {{"shape", std::vector<int64_t>{xs[0], xs[1], xs[2], s, xs[3], s}}});
    return {g.call("sum", {blocks}, {{"axes", std::vector<int64_t>{3, 5}}, {"keepdim", false}})};
  };
  d.backward_note =
      "dx[n, c, i, j] = Σ of the s×s block of dy it was copied to (reshape to [N, C, H, s, W, s], sum axes 3, 5)";
  d.cost = cpu::elementwise_cost(0);
  d.gradcheck = {gc({InputSpec{{1, 2, 3, 4}}}, {}, "scale 2"),
                 gc({InputSpec{{2, 1, 2, 3}}}, {{"scale_factor", int64_t{3}}}, "scale 3"),
                 gc({InputSpec{{1, 1, 2, 2}}}, {{"scale_factor", int64_t{1}}}, "scale 1: identity")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_pad_ops) {
  registry.add(pad_def());
  registry.add(pad_backward_def());
  registry.add(upsample_nearest2d_def());
}

}  // namespace
}  // namespace opscope
