// ONNX operators of segmentation and generative models as opscope ops: ConvTranspose
// (conv_transpose1d/2d/3d), InstanceNormalization, PyTorch's GroupNorm pattern once folded
// (onnx_fold.cpp: group_norm), Resize and Upsample (interpolate, in the coordinate modes PyTorch
// exports), DepthToSpace and SpaceToDepth (reshape, permute, reshape).
#include <algorithm>
#include <cmath>

#include "app/onnx/map_context.h"

namespace opscope::interop {
namespace {

using Ints = std::vector<int64_t>;

std::string list_str(const Ints& v) { return attr_value_str(v); }

// ConvTranspose: y is the transposed convolution with no padding (its "full" size
// (in − 1)·stride + (k − 1)·dilation + 1 along each axis), cropped by the pads at both ends and
// extended by output_padding at the end. It runs as conv_transposeNd of the input's rank;
// symmetric pads as its own padding, others (auto_pad, output_shape, asymmetric pads) crop a full
// one with slices.
std::vector<Slot> map_conv_transpose(NodeCtx& c) {
  c.allow_attrs(
      {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
  const Tensor &x = c.in(0), &w = c.in(1);
  const int64_t spatial = x.dim() - 2;
  if (spatial < 1 || spatial > 3)
    c.unsupported(std::to_string(spatial) +
                  "-D transposed convolution (opscope's conv_transpose1d/2d/3d take 1, 2 or 3 spatial axes)");
  if (w.dim() != x.dim())
    c.fail("weight " + shape_str(w.shape()) + " and input " + shape_str(x.shape()) + " need the same rank");
  const size_t n = static_cast<size_t>(spatial);
  Ints kernel(w.shape().begin() + 2, w.shape().end());
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape") != kernel)
    c.fail("kernel_shape " + list_str(c.attr_ints("kernel_shape")) + " does not match the weight " +
           shape_str(w.shape()));
  Ints strides = c.attr_ints("strides", Ints(n, 1)), dil = c.attr_ints("dilations", Ints(n, 1));
  Ints outpad = c.attr_ints("output_padding", Ints(n, 0)), pads = c.attr_ints("pads", Ints(2 * n, 0));
  if (strides.size() != n || dil.size() != n || outpad.size() != n || pads.size() != 2 * n)
    c.fail("strides, dilations, output_padding and pads must give " + std::to_string(n) +
           " spatial axes (pads twice that)");
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  Ints begin(pads.begin(), pads.begin() + static_cast<long>(n)), end(pads.begin() + static_cast<long>(n), pads.end()),
      out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x.shape()[2 + i], full = (in - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1;
    const bool fixed = c.has_attr("output_shape") || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (fixed) {  // the pads that give the requested size, split as ONNX's spec says
      const Ints& os = c.attr_ints("output_shape");
      out[i] = c.has_attr("output_shape") ? os.at(os.size() - n + i) : in * strides[i];
      const int64_t total = full + outpad[i] - out[i];
      begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    } else {
      if (auto_pad == "VALID") begin[i] = end[i] = 0;
      else if (auto_pad != "NOTSET")
        c.fail("auto_pad=\"" + auto_pad + "\" is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
      out[i] = full + outpad[i] - begin[i] - end[i];
    }
    if (begin[i] < 0)
      c.unsupported("output_shape " + list_str(c.attr_ints("output_shape")) +
                    " larger than the transposed convolution at its start");
  }
  const bool symmetric = begin == end && std::all_of(end.begin(), end.end(), [](int64_t p) { return p >= 0; });
  // The output padding conv_transposeNd adds: what the requested size needs past the crop.
  Ints op(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = x.shape()[2 + i], full = (in - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1;
    op[i] = symmetric ? outpad[i] : std::max<int64_t>(0, begin[i] + out[i] - full);
    if (op[i] >= strides[i])
      c.unsupported("output_padding " + list_str(op) + " not smaller than the strides " + list_str(strides) +
                    " (opscope's conv_transpose needs output_padding < stride)");
  }
  std::vector<Tensor> ins = {x, w};
  if (c.has(2)) ins.push_back(c.in(2));
  Tensor y = c.call("conv_transpose" + std::to_string(spatial) + "d", ins,
                    {{"stride", strides},
                     {"padding", symmetric ? begin : Ints(n, 0)},
                     {"output_padding", op},
                     {"dilation", dil},
                     {"groups", c.attr_int("group", 1)}});
  if (!symmetric)
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = static_cast<int64_t>(i) + 2;
      if (begin[i] != 0 || out[i] != y.shape()[a])
        y = c.call("slice", {y}, {{"axis", a}, {"start", begin[i]}, {"stop", begin[i] + out[i]}});
    }
  return one(y);
}

std::vector<Slot> map_instance_norm(NodeCtx& c) {
  c.allow_attrs({"epsilon"});
  const Tensor& x = c.in(0);
  if (x.dim() < 3) c.fail("expects [N, C, spatial...], got " + shape_str(x.shape()));
  return one(c.call("instance_norm", {x, c.in(1), c.in(2)}, {{"eps", c.attr_float("epsilon", 1e-5)}}));
}

// The node onnx_fold.cpp makes of PyTorch's GroupNorm pattern: inputs x, weight?, bias?.
std::vector<Slot> map_group_norm(NodeCtx& c) {
  c.allow_attrs({"num_groups", "epsilon"});
  std::vector<Tensor> ins = {c.in(0)};
  if (c.has(1)) ins.push_back(c.in(1));
  if (c.has(2)) ins.push_back(c.in(2));
  return one(
      c.call("group_norm", ins, {{"num_groups", c.attr_int("num_groups", 1)}, {"eps", c.attr_float("epsilon", 1e-5)}}));
}

// What interpolate does for the coordinate and nearest modes of a Resize, or why it cannot.
std::string resize_mode(NodeCtx& c, const std::string& mode, const std::string& coords, const std::string& nearest,
                        bool& align) {
  align = false;
  if (mode == "linear") {
    if (coords == "align_corners") align = true;
    else if (coords != "half_pixel" && coords != "pytorch_half_pixel")
      c.unsupported("linear resize with coordinate_transformation_mode \"" + coords +
                    "\" (opscope's bilinear interpolate is PyTorch's: half_pixel, or align_corners)");
    return "bilinear";
  }
  if (mode != "nearest") c.unsupported("mode \"" + mode + "\" (opscope's interpolate has nearest and bilinear)");
  if (coords == "asymmetric" && nearest == "floor") return "nearest";
  if (coords == "half_pixel" && nearest == "round_prefer_ceil") return "nearest-exact";
  c.unsupported(
      "nearest resize with coordinate_transformation_mode \"" + coords + "\" and nearest_mode \"" + nearest +
      "\" (opscope's: asymmetric + floor, PyTorch's nearest; half_pixel + round_prefer_ceil, its nearest-exact)");
}

// The scale factors or sizes of the last two axes (N and C must keep their sizes).
AttrMap resize_target(NodeCtx& c, const Tensor& x, const std::vector<double>& scales, const Ints& sizes) {
  if (x.dim() != 4)
    c.unsupported(std::to_string(x.dim() - 2) + "-D resize (opscope's interpolate resizes the H and W of NCHW images)");
  if (!sizes.empty()) {
    if (sizes.size() != 4 || sizes[0] != x.shape()[0] || sizes[1] != x.shape()[1])
      c.unsupported("sizes " + list_str(sizes) + " that resize N or C of " + shape_str(x.shape()));
    return {{"size", Ints{sizes[2], sizes[3]}}};
  }
  if (scales.size() != 4 || scales[0] != 1 || scales[1] != 1)
    c.unsupported("scales that resize N or C (or not one per axis of a 4-D input)");
  AttrMap a{{"scale_factor", scales[2]}};
  if (scales[3] != scales[2]) a.emplace_back("scale_factor_w", scales[3]);
  return a;
}

std::vector<double> double_values(const NodeCtx& c, size_t i, const char* what) {
  if (!c.known(i))
    throw Unsupported(
        std::string(what) + " is computed from the model's inputs, so it cannot be resolved at import",
        "opscope fixes every shape when it imports a model: give the inputs fixed sizes (--shape name=dims)");
  const Tensor& t = c.in(i);
  std::vector<double> v;
  for (int64_t k = 0; k < t.numel(); ++k) v.push_back(t.get(k));
  return v;
}

std::vector<Slot> map_resize(NodeCtx& c) {
  c.allow_attrs({"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "mode",
                 "nearest_mode", "antialias", "axes", "keep_aspect_ratio_policy"});
  if (c.attr_int("antialias", 0) != 0) c.unsupported("antialias=1");
  if (c.has_attr("axes")) c.unsupported("the axes attribute (opscope resizes H and W of NCHW)");
  if (c.has_attr("keep_aspect_ratio_policy") && c.attr_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    c.unsupported("keep_aspect_ratio_policy \"" + c.attr_string("keep_aspect_ratio_policy", "") + "\"");
  const Tensor& x = c.in(0);
  const std::string coords =
      c.attr_string("coordinate_transformation_mode", c.opset() >= 11 ? "half_pixel" : "asymmetric");
  bool align = false;
  const std::string mode =
      resize_mode(c, c.attr_string("mode", "nearest"), coords,
                  c.attr_string("nearest_mode", c.opset() >= 11 ? "round_prefer_floor" : "floor"), align);
  // Opset 10: (X, scales); 11 on: (X, roi, scales, sizes), empty scales meaning "use sizes".
  const size_t scales_at = c.opset() >= 11 ? 2 : 1;
  std::vector<double> scales;
  Ints sizes;
  if (c.opset() >= 11 && c.has(3)) sizes = c.ints_input(3, "sizes");
  if (sizes.empty() && c.has(scales_at)) scales = double_values(c, scales_at, "scales");
  if (sizes.empty() && scales.empty()) c.fail("neither scales nor sizes is given");
  AttrMap a = resize_target(c, x, scales, sizes);
  a.emplace_back("mode", mode);
  if (align) {
    for (size_t i = 2; i < scales.size(); ++i) {
      const double len = static_cast<double>(x.shape()[i]) * scales[i];
      if (len != std::floor(len))
        c.unsupported("align_corners with scales whose output length " + std::to_string(len) +
                      " is not whole (ONNX aligns "
                      "the corners of the unrounded length, PyTorch those of the pixels there are)");
    }
    a.emplace_back("align_corners", true);
  }
  Tensor y = c.call("interpolate", {x}, a);
  if (coords == "pytorch_half_pixel" && (y.shape()[2] == 1 || y.shape()[3] == 1))
    c.unsupported("pytorch_half_pixel to a size of 1 (it takes pixel 0 where half_pixel takes the centre)");
  return one(y);
}

// Upsample (opsets 7–9): the scales as an attribute (7) or an input (9), asymmetric coordinates.
std::vector<Slot> map_upsample(NodeCtx& c) {
  c.allow_attrs({"mode", "scales"});
  const std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest")
    c.unsupported("Upsample mode \"" + mode +
                  "\" (its asymmetric linear differs from PyTorch's bilinear; opscope maps nearest)");
  const std::vector<double> scales = c.has_attr("scales") ? c.attr_floats("scales") : double_values(c, 1, "scales");
  AttrMap a = resize_target(c, c.in(0), scales, {});
  a.emplace_back("mode", std::string("nearest"));
  return one(c.call("interpolate", {c.in(0)}, a));
}

// DepthToSpace: [N, C, H, W] → [N, C/b², H·b, W·b]; DCR reads the channels as (b, b, C/b²), CRD
// as (C/b², b, b). SpaceToDepth is DCR's inverse.
std::vector<Slot> map_depth_to_space(NodeCtx& c) {
  c.allow_attrs({"blocksize", "mode"});
  const Tensor& x = c.in(0);
  if (x.dim() != 4) c.fail("expects [N, C, H, W], got " + shape_str(x.shape()));
  const int64_t b = c.attr_int("blocksize", 0), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (b < 1 || C % (b * b) != 0)
    c.fail("blocksize " + std::to_string(b) + " must divide the " + std::to_string(C) + " channels by b²");
  const bool dcr = c.attr_string("mode", "DCR") == "DCR";
  Tensor t =
      c.call("reshape", {x}, {{"shape", dcr ? Ints{N, b, b, C / (b * b), H, W} : Ints{N, C / (b * b), b, b, H, W}}});
  t = c.call("permute", {t}, {{"dims", dcr ? Ints{0, 3, 4, 1, 5, 2} : Ints{0, 1, 4, 2, 5, 3}}});
  return one(c.call("reshape", {t}, {{"shape", Ints{N, C / (b * b), H * b, W * b}}}));
}

std::vector<Slot> map_space_to_depth(NodeCtx& c) {
  c.allow_attrs({"blocksize"});
  const Tensor& x = c.in(0);
  if (x.dim() != 4) c.fail("expects [N, C, H, W], got " + shape_str(x.shape()));
  const int64_t b = c.attr_int("blocksize", 0), N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (b < 1 || H % b != 0 || W % b != 0)
    c.fail("blocksize " + std::to_string(b) + " must divide H and W of " + shape_str(x.shape()));
  Tensor t = c.call("reshape", {x}, {{"shape", Ints{N, C, H / b, b, W / b, b}}});
  t = c.call("permute", {t}, {{"dims", Ints{0, 3, 5, 1, 2, 4}}});
  return one(c.call("reshape", {t}, {{"shape", Ints{N, C * b * b, H / b, W / b}}}));
}

}  // namespace

void add_vision_mappers(MapperTable& t) {
  t["ConvTranspose"] = map_conv_transpose;
  t["InstanceNormalization"] = map_instance_norm;
  t[kFoldedGroupNorm] = map_group_norm;
  t["Resize"] = map_resize;
  t["Upsample"] = map_upsample;
  t["DepthToSpace"] = map_depth_to_space;
  t["SpaceToDepth"] = map_space_to_depth;
}

}  // namespace opscope::interop
