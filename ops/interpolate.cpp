// interpolate (PyTorch's F.interpolate, also called upsample) of NCHW images in the modes
// "nearest", "nearest-exact" and "bilinear" (align_corners either way), to a size or by a
// scale factor, and its backward op interpolate_backward, which adds each output's gradient
// back to the one (nearest) or four (bilinear) inputs it was read from.
//
// Along H (likewise W), output row o reads (ops/geometry.h, shared with CUDA):
//   nearest        floor(o·r)                    r = 1/scale_factor, or H/OH when a size is given
//   nearest-exact  floor((o + ½)·r)
//   bilinear       src = (o + ½)·r − ½ (≥ 0), rows ⌊src⌋ and ⌊src⌋ + 1 weighted 1 − λ and λ
//                  (align_corners: src = o·(H − 1)/(OH − 1): the corner pixels' centres align)
// The output size is floor(H·scale_factor) or the size given.
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/cpu_util.h"
#include "ops/geometry.h"

namespace opscope {
namespace {

using cpu::gc;
using V = std::vector<int64_t>;

// The output's H and W: the size given, or floor(H·scale_factor) (PyTorch's rule).
Shape resized_shape(const InferCtx& c, const Shape& x) {
  const Attrs& a = c.attrs;
  const V& size = a.ints("size");
  const double sh = a.f("scale_factor"), sw = a.f("scale_factor_w") > 0 ? a.f("scale_factor_w") : sh;
  const bool has_size = size[0] > 0 || size[1] > 0, has_scale = sh > 0 || a.f("scale_factor_w") > 0;
  if (has_size == has_scale)
    c.fail(has_size ? "give size or scale_factor, not both" : "give the output size or a scale_factor",
           "interpolate(x, size=(OH, OW)) or interpolate(x, scale_factor=2) (scale_factor_w: another factor along W)");
  if (has_size && (size[0] <= 0 || size[1] <= 0)) c.fail("size " + shape_str(size) + " must be positive along H and W");
  if (has_scale && sh <= 0) c.fail("scale_factor must be positive, got " + std::to_string(sh));
  if (a.b("align_corners") && a.s("mode") != "bilinear")
    c.fail("align_corners applies to the interpolating mode \"bilinear\", not \"" + a.s("mode") + "\"",
           "leave align_corners out with nearest (as PyTorch, which raises the same error)");
  Shape out = x;
  out[2] = has_size ? size[0] : static_cast<int64_t>(std::floor(static_cast<double>(x[2]) * sh));
  out[3] = has_size ? size[1] : static_cast<int64_t>(std::floor(static_cast<double>(x[3]) * sw));
  if (out[2] <= 0 || out[3] <= 0)
    c.fail("the output would be empty: x " + shape_str(x) + " scaled by " + std::to_string(sh) + " gives " +
               shape_str(out),
           "the output size is floor(H·scale_factor): use a larger factor");
  return out;
}

void check_image(const InferCtx& c, const Shape& s, const char* what) {
  if (s.size() != 4)
    c.fail(std::string(what) + " must be 4-D [N, C, H, W], got " + shape_str(s) + " (rank " + std::to_string(s.size()) +
               ")",
           "interpolate resizes the last two axes of NCHW images; a single image needs its batch axis");
}

// Per output row or column: the sources and weights (computed once per axis, not per pixel).
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<double> l1;
};
Taps taps_of(const ResizeAxis& a, ResizeMode mode) {
  Taps t;
  for (int64_t o = 0; o < a.out; ++o) {
    int64_t i0, i1;
    double l1 = 0;
    if (mode == ResizeMode::bilinear) {
      linear_sources(a, o, i0, i1, l1);
    } else {
      i0 = i1 = nearest_source(a, o, mode);
    }
    t.i0.push_back(i0);
    t.i1.push_back(i1);
    t.l1.push_back(l1);
  }
  return t;
}

// forward: y[o, p] = Σ of the (up to) four taps; backward: each dy[o, p] added to those taps
// (one plane per task: the planes are independent, so the sums keep their order).
template <class T, bool Backward> void resize_planes(const ResizeGeom& g, const T* src, T* dst) {
  const Taps th = taps_of(g.h, g.mode), tw = taps_of(g.w, g.mode);
  const int64_t H = g.h.in, W = g.w.in, OH = g.h.out, OW = g.w.out;
  parallel_for(g.planes, grain_for(4.0 * static_cast<double>(OH * OW)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* in = Backward ? src + p * OH * OW : src + p * H * W;
      T* out = Backward ? dst + p * H * W : dst + p * OH * OW;
      if (Backward) std::fill(out, out + H * W, T(0));
      for (int64_t oh = 0; oh < OH; ++oh) {
        const T lh1 = static_cast<T>(th.l1[oh]), lh0 = T(1) - lh1;
        const int64_t r0 = th.i0[oh] * W, r1 = th.i1[oh] * W;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const T lw1 = static_cast<T>(tw.l1[ow]), lw0 = T(1) - lw1;
          const int64_t c0 = tw.i0[ow], c1 = tw.i1[ow];
          if (!Backward) {
            out[oh * OW + ow] = g.mode == ResizeMode::bilinear ? lh0 * (lw0 * in[r0 + c0] + lw1 * in[r0 + c1]) +
                                                                     lh1 * (lw0 * in[r1 + c0] + lw1 * in[r1 + c1])
                                                               : in[r0 + c0];
          } else if (g.mode == ResizeMode::bilinear) {
            const T d = in[oh * OW + ow];
            out[r0 + c0] += lh0 * lw0 * d;
            out[r0 + c1] += lh0 * lw1 * d;
            out[r1 + c0] += lh1 * lw0 * d;
            out[r1 + c1] += lh1 * lw1 * d;
          } else {
            out[r0 + c0] += in[oh * OW + ow];
          }
        }
      }
    }
  });
}

std::vector<AttrSpec> resize_attrs() {
  return {make_pair_attr("size", 0, "the output's (OH, OW); leave out to scale instead", 0),
          make_attr("scale_factor", AttrType::real, 0.0,
                    "OH = floor(H·scale_factor) (and OW likewise unless scale_factor_w)", 0.0),
          make_attr("scale_factor_w", AttrType::real, 0.0,
                    "a factor of its own along W (PyTorch's scale_factor=(h, w))", 0.0),
          make_attr("mode", AttrType::string, std::string("nearest"),
                    "\"nearest\" (floor(o·r)), \"nearest-exact\" (pixel "
                    "centres) or \"bilinear\"",
                    {}, {}, {"nearest", "nearest-exact", "bilinear"}),
          make_attr("align_corners", AttrType::boolean, false,
                    "bilinear only: align the corner pixels' centres, not their edges")};
}

AttrMap resize_attr_map(const Attrs& a) {
  return {{"size", a.ints("size")},
          {"scale_factor", a.f("scale_factor")},
          {"scale_factor_w", a.f("scale_factor_w")},
          {"mode", a.s("mode")},
          {"align_corners", a.b("align_corners")}};
}

// Bilinear: 11 flops per forward output pixel (four products and their weights); nearest copies.
CostFn resize_cost(bool forward) {
  return [forward](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
                   std::string_view) {
    Cost c = cpu::elementwise_cost(0)(in, out, a, {});
    if (a.s("mode") == "bilinear") c.flops = 11 * cpu::meta_numel(forward ? out[0] : in[0]);
    return c;
  };
}

OpDef interpolate_def() {
  OpDef d =
      OpDef::declare("interpolate", "shape",
                     "y[n, c, o, p] = x at the source of (o, p): the nearest pixel (floor(o·r), or the pixel centre's "
                     "floor((o + ½)·r)), or bilinear: the four around src = (o + ½)·r − ½ weighted by distance "
                     "(F.interpolate; r = 1/scale_factor or H/OH)",
                     {"x"});
  d.attrs = resize_attrs();
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    check_image(c, c.inputs[0].shape, "x");
    TensorMeta m = c.inputs[0];
    m.shape = resized_shape(c, m.shape);
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    if (k.out().numel() == 0) return;
    const ResizeGeom g = resize_geom(k.in(0).shape(), k.out().shape(), k.attrs);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      resize_planes<T, false>(g, k.in(0).data<T>(), k.out().data<T>());
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    AttrMap a = resize_attr_map(g.attrs());
    a.emplace_back("input_shape", V(g.input_meta(0).shape));
    return {g.call("interpolate_backward", {g.grad_output(0)}, a)};
  };
  d.backward_note =
      "dx = interpolate_backward(dy): each dy[o, p] added to the pixels it was read from, times their weights";
  d.cost = resize_cost(true);
  const InputSpec x{{1, 2, 3, 4}}, x2{{2, 1, 5, 4}};
  d.gradcheck = {gc({x}, {{"scale_factor", 2.0}}, "nearest ×2"),
                 gc({x}, {{"size", V{5, 7}}, {"mode", std::string("bilinear")}}, "bilinear to 5×7"),
                 gc({x}, {{"size", V{5, 7}}, {"mode", std::string("bilinear")}, {"align_corners", true}},
                    "bilinear, align_corners"),
                 gc({x2}, {{"scale_factor", 0.6}, {"mode", std::string("bilinear")}}, "bilinear ×0.6 (downsampling)"),
                 gc({x2}, {{"scale_factor", 1.5}, {"scale_factor_w", 2.5}, {"mode", std::string("nearest-exact")}},
                    "nearest-exact, ×1.5 along H, ×2.5 along W"),
                 gc({x2}, {{"size", V{3, 3}}}, "nearest to 3×3")};
  d.lab = {"N C H W S: x N×C×H×W scaled by S, bilinear",
           {8, 32, 64, 64, 2},
           4,
           [](const std::vector<int64_t>& s) {
             return cpu::lab_case({{s[0], s[1], s[2], s[3]}},
                                  {{"scale_factor", static_cast<double>(cpu::size_or(s, 4, 2))},
                                   {"mode", std::string("bilinear")}});
           },
           {}};
  return d;
}

OpDef interpolate_backward_def() {
  OpDef d = OpDef::declare(
      "interpolate_backward", "shape",
      "dx[n, c, i, j] = Σ over the outputs (o, p) that read pixel (i, j) of dy[n, c, o, p]·(its weight there)", {"dy"});
  d.attrs = resize_attrs();
  d.attrs.push_back(
      make_attr("input_shape", AttrType::int_list, V{}, "the forward input's shape [N, C, H, W]", {}, {}, {}, true));
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    const Shape xs = c.attrs.ints("input_shape");
    check_image(c, xs, "input_shape");
    const Shape expect = resized_shape(c, xs);
    if (c.inputs[0].shape != expect)
      c.fail("dy has shape " + shape_str(c.inputs[0].shape) + " but interpolate of x " + shape_str(xs) + " gives " +
                 shape_str(expect),
             "dy must have the shape of the forward output");
    TensorMeta m = c.inputs[0];
    m.shape = xs;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "direct", [](KernelCtx& k) {
    if (k.out().numel() == 0) return;
    const ResizeGeom g = resize_geom(k.out().shape(), k.in(0).shape(), k.attrs);
    cpu::visit_float(k.out().dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      resize_planes<T, true>(g, k.in(0).data<T>(), k.out().data<T>());
    });
  });
  d.differentiable = false;
  d.checked_via = "interpolate";
  // Cases for the CUDA tests (gradchecked through interpolate).
  d.gradcheck = {gc({{{1, 2, 6, 8}}}, {{"scale_factor", 2.0}, {"input_shape", V{1, 2, 3, 4}}}, "nearest ×2"),
                 gc({{{1, 2, 5, 7}}},
                    {{"size", V{5, 7}}, {"mode", std::string("bilinear")}, {"input_shape", V{1, 2, 3, 4}}},
                    "bilinear")};
  d.cost = resize_cost(false);
  return d;
}

OPSCOPE_REGISTER_OPS(register_interpolate_ops) {
  registry.add(interpolate_def());
  registry.add(interpolate_backward_def());
}

}  // namespace
}  // namespace opscope
