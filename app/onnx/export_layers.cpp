// How the layers of segmentation, generative and sequence models become ONNX nodes (opset 17):
// conv_transpose1d/2d/3d, group_norm (spelt out as PyTorch's exporter does before GroupNormalization
// existed, the pattern the importer folds back), instance_norm, interpolate and
// upsample_nearest2d (Resize), and the indexing and scan ops.
#include "app/onnx/exporter.h"

namespace opscope::interop {

namespace {

using In = const std::vector<std::string>&;

// conv_transpose1d/2d/3d: every attribute already holds one value per spatial axis.
void export_conv_transpose(Exporter& e, const Node& n, In in, In out) {
  auto& c = e.node("ConvTranspose", in, out);
  Exporter::attr(c, "kernel_shape", spatial_dims(e.meta(n.inputs[1]).shape));
  Exporter::attr(c, "strides", n.attrs.ints("stride"));
  Exporter::attr(c, "pads", both_ends(n.attrs.ints("padding")));
  Exporter::attr(c, "output_padding", n.attrs.ints("output_padding"));
  Exporter::attr(c, "dilations", n.attrs.ints("dilation"));
  Exporter::attr(c, "group", n.attrs.i("groups"));
}

// A per-channel tensor [C] as [C, 1, ...] against x of rank r (Unsqueeze, as PyTorch writes it).
std::string per_channel(Exporter& e, const std::string& v, size_t rank) {
  Ints axes;
  for (int64_t a = 1; a + 1 < static_cast<int64_t>(rank); ++a) axes.push_back(a);
  return e.temp("Unsqueeze", {v, e.ints(axes, "axes")}, v + "_per_channel");
}

void export_instance_norm(Exporter& e, const Node& n, In in, In out) {
  const TensorMeta& x = e.meta(n.inputs[0]);
  const Shape c{x.shape[1]};
  auto& node = e.node("InstanceNormalization",
                      {in[0], in.size() > 1 ? in[1] : e.full(c, 1, x.dtype, "scale"),
                       in.size() > 2 ? in[2] : e.full(c, 0, x.dtype, "bias")},
                      out);
  Exporter::attr(node, "epsilon", n.attrs.f("eps"));
}

// Reshape(x, [N, G, -1]) → InstanceNormalization(1, 0) → Reshape(Shape(x)) → ·weight + bias, as
// PyTorch exports GroupNorm (the importer folds it back into one group_norm).
void export_group_norm(Exporter& e, const Node& n, In in, In out) {
  const TensorMeta& x = e.meta(n.inputs[0]);
  const int64_t G = n.attrs.i("num_groups");
  const std::string grouped = e.temp("Reshape", {in[0], e.ints({0, G, -1}, "groups")}, out[0] + "_grouped");
  auto& norm =
      e.node("InstanceNormalization", {grouped, e.full({G}, 1, x.dtype, "ones"), e.full({G}, 0, x.dtype, "zeros")},
             {e.fresh(out[0] + "_normalized")});
  Exporter::attr(norm, "epsilon", n.attrs.f("eps"));
  const std::string shape = e.temp("Shape", {in[0]}, out[0] + "_shape");
  if (in.size() == 1) {
    e.node("Reshape", {norm.output(0), shape}, out);
    return;
  }
  const std::string back = e.temp("Reshape", {norm.output(0), shape}, out[0] + "_reshaped");
  if (in.size() == 2) {
    e.node("Mul", {back, per_channel(e, in[1], x.shape.size())}, out);
    return;
  }
  const std::string scaled = e.temp("Mul", {back, per_channel(e, in[1], x.shape.size())}, out[0] + "_scaled");
  e.node("Add", {scaled, per_channel(e, in[2], x.shape.size())}, out);
}

// Resize as PyTorch exports F.interpolate: nearest (asymmetric, floor), nearest-exact
// (half_pixel, round_prefer_ceil), bilinear (half_pixel or align_corners); scales or sizes.
void resize(Exporter& e, const Node& n, In in, In out, const std::string& mode, bool align,
            const std::vector<double>& scales) {
  const TensorMeta& x = e.meta(n.inputs[0]);
  std::vector<std::string> ins = {in[0], ""};
  if (!scales.empty()) {
    Tensor s = Tensor::from_vector<double>({1, 1, scales[0], scales[1]}, {4}, DType::f32, MemCategory::temporary);
    ins.push_back(e.constant(s, "scales"));
  } else {
    const Shape& y = e.meta(n.outputs[0]).shape;
    ins.push_back("");
    ins.push_back(e.ints({x.shape[0], x.shape[1], y[2], y[3]}, "sizes"));
  }
  auto& r = e.node("Resize", ins, out);
  Exporter::attr(r, "mode", std::string(mode == "bilinear" ? "linear" : "nearest"));
  Exporter::attr(r, "coordinate_transformation_mode",
                 std::string(mode == "nearest" ? "asymmetric"
                             : align           ? "align_corners"
                                               : "half_pixel"));
  if (mode != "bilinear")
    Exporter::attr(r, "nearest_mode", std::string(mode == "nearest" ? "floor" : "round_prefer_ceil"));
}

void export_interpolate(Exporter& e, const Node& n, In in, In out) {
  std::vector<double> scales;
  if (n.attrs.ints("size")[0] == 0) {
    const double sh = n.attrs.f("scale_factor"),
                 sw = n.attrs.f("scale_factor_w") > 0 ? n.attrs.f("scale_factor_w") : sh;
    scales = {sh, sw};
  }
  resize(e, n, in, out, n.attrs.s("mode"), n.attrs.b("align_corners"), scales);
}

void export_upsample(Exporter& e, const Node& n, In in, In out) {
  const double s = static_cast<double>(n.attrs.i("scale_factor"));
  resize(e, n, in, out, "nearest", false, {s, s});
}

int64_t axis_of(Exporter& e, const Node& n, int input, const char* attr, const char* op) {
  return normalize_axis(n.attrs.i(attr), static_cast<int64_t>(e.meta(n.inputs[input]).shape.size()), op);
}

}  // namespace

void add_layer_exports(std::map<std::string, ExportFn>& t) {
  for (const char* rank : {"1d", "2d", "3d"}) t[std::string("conv_transpose") + rank] = export_conv_transpose;
  t["instance_norm"] = export_instance_norm;
  t["group_norm"] = export_group_norm;
  t["interpolate"] = export_interpolate;
  t["upsample_nearest2d"] = export_upsample;
  t["gather_elements"] = [](Exporter& e, const Node& n, In in, In out) {
    Exporter::attr(e.node("GatherElements", in, out), "axis", axis_of(e, n, 0, "axis", "gather_elements"));
  };
  t["gather_nd"] = [](Exporter& e, const Node& n, In in, In out) {
    Exporter::attr(e.node("GatherND", in, out), "batch_dims", n.attrs.i("batch_dims"));
  };
  t["scatter_nd"] = [](Exporter& e, const Node& n, In in, In out) {
    auto& s = e.node("ScatterND", in, out);
    if (n.attrs.s("reduction") != "none") Exporter::attr(s, "reduction", n.attrs.s("reduction"));
  };
  t["topk"] = [](Exporter& e, const Node& n, In in, In out) {
    auto& k = e.node("TopK", {in[0], e.ints({n.attrs.i("k")}, "k")}, out);
    Exporter::attr(k, "axis", axis_of(e, n, 0, "axis", "topk"));
    Exporter::attr(k, "largest", int64_t{n.attrs.b("largest")});
    Exporter::attr(k, "sorted", int64_t{1});
  };
  t["cumsum"] = [](Exporter& e, const Node& n, In in, In out) {
    const std::string axis = e.scalar(static_cast<double>(axis_of(e, n, 0, "axis", "cumsum")), DType::i64, "axis");
    auto& c = e.node("CumSum", {in[0], axis}, out);
    Exporter::attr(c, "exclusive", int64_t{n.attrs.b("exclusive")});
    Exporter::attr(c, "reverse", int64_t{n.attrs.b("reverse")});
  };
  for (const char* op : {"triu", "tril"}) {
    const bool upper = std::string(op) == "triu";
    t[op] = [upper](Exporter& e, const Node& n, In in, In out) {
      auto& tr = e.node("Trilu", {in[0], e.scalar(static_cast<double>(n.attrs.i("diagonal")), DType::i64, "k")}, out);
      Exporter::attr(tr, "upper", int64_t{upper});
    };
  }
  t["einsum"] = [](Exporter& e, const Node& n, In in, In out) {  // one element type for every operand
    const DType dt = e.meta(n.outputs[0]).dtype;
    std::vector<std::string> ins;
    for (size_t i = 0; i < in.size(); ++i) ins.push_back(e.cast(in[i], e.meta(n.inputs[i]).dtype, dt));
    Exporter::attr(e.node("Einsum", ins, out), "equation", n.attrs.s("equation"));
  };
}

}  // namespace opscope::interop
