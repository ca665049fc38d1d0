// How each opscope op becomes ONNX nodes (opset 17): one function per op, in one table. Where
// ONNX wants one dtype and opscope promotes, inputs are cast; where opscope has no single ONNX
// operator (gelu at opset 17, var, attention), the formula is spelt out in ONNX's.
#include <algorithm>
#include <cmath>

#include "app/onnx/exporter.h"

namespace opscope::interop {

namespace {

using In = const std::vector<std::string>&;

// Binary arithmetic: ONNX wants one dtype, opscope promotes; inputs are cast to the output's.
ExportFn arith(const char* op) {
  return [op](Exporter& e, const Node& n, In in, In out) {
    const DType dt = e.meta(n.outputs[0]).dtype;
    e.node(op, {e.cast(in[0], e.meta(n.inputs[0]).dtype, dt), e.cast(in[1], e.meta(n.inputs[1]).dtype, dt)}, out);
  };
}

// Comparisons: computed in the promoted dtype, the bool result cast to opscope's int64 mask.
ExportFn compare(const char* op, bool negate = false) {
  return [op, negate](Exporter& e, const Node& n, In in, In out) {
    const DType a = e.meta(n.inputs[0]).dtype, b = e.meta(n.inputs[1]).dtype, dt = promote(a, b);
    std::string r = e.temp(op, {e.cast(in[0], a, dt), e.cast(in[1], b, dt)}, out[0] + "_bool");
    if (negate) r = e.temp("Not", {r}, out[0] + "_not");
    Exporter::attr(e.node("Cast", {r}, out), "to", int64_t{onnx::TensorProto::INT64});
  };
}

ExportFn same(const char* op) {
  return [op](Exporter& e, const Node&, In in, In out) { e.node(op, in, out); };
}

// Floor, Ceil and Round take floats in ONNX; on opscope's int64 they are the identity.
ExportFn rounding(const char* op) {
  return [op](Exporter& e, const Node& n, In in, In out) {
    e.node(is_floating(e.meta(n.inputs[0]).dtype) ? op : "Identity", in, out);
  };
}

void export_gelu(Exporter& e, const Node& n, In in, In out) {
  const DType dt = e.meta(n.outputs[0]).dtype;
  const std::string& x = in[0];
  std::string inner;
  if (n.attrs.s("approximate") == "tanh") {  // √(2/π)·(x + 0.044715·x³)
    std::string x3 = e.temp("Mul", {x, e.temp("Mul", {x, x}, out[0] + "_x2")}, out[0] + "_x3");
    std::string u = e.temp("Add", {x, e.temp("Mul", {x3, e.scalar(0.044715, dt)}, out[0] + "_cx3")}, out[0] + "_u");
    inner = e.temp("Tanh", {e.temp("Mul", {u, e.scalar(0.7978845608028654, dt)}, out[0] + "_su")}, out[0] + "_tanh");
  } else {  // erf(x / √2)
    inner = e.temp("Erf", {e.temp("Div", {x, e.scalar(1.4142135623730951, dt)}, out[0] + "_scaled")}, out[0] + "_erf");
  }
  std::string half_x = e.temp("Mul", {x, e.scalar(0.5, dt)}, out[0] + "_half");
  e.node("Mul", {half_x, e.temp("Add", {inner, e.scalar(1, dt)}, out[0] + "_1p")}, out);
}

void export_clip(Exporter& e, const Node& n, In in, In out) {
  const DType dt = e.meta(n.outputs[0]).dtype;
  const double lo = n.attrs.f("min"), hi = n.attrs.f("max");
  e.node("Clip", {in[0], std::isinf(lo) ? "" : e.scalar(lo, dt, "min"), std::isinf(hi) ? "" : e.scalar(hi, dt, "max")},
         out);
}

// mish = x·tanh(softplus(x)) (ONNX's Mish comes at opset 18).
void export_mish(Exporter& e, const Node&, In in, In out) {
  const std::string t = e.temp("Tanh", {e.temp("Softplus", {in[0]}, out[0] + "_softplus")}, out[0] + "_tanh");
  e.node("Mul", {in[0], t}, out);
}

// fmod is ONNX's Mod with fmod=1. mod (the sign of b): Mod(fmod=0) for integers; for floats ONNX
// requires fmod=1, so fmod's remainder r is moved by b where r ≠ 0 and its sign differs from b's.
ExportFn export_mod(bool floor_q) {
  return [floor_q](Exporter& e, const Node& n, In in, In out) {
    const DType dt = e.meta(n.outputs[0]).dtype;
    const std::string a = e.cast(in[0], e.meta(n.inputs[0]).dtype, dt),
                      b = e.cast(in[1], e.meta(n.inputs[1]).dtype, dt);
    if (!floor_q || !is_floating(dt)) {
      Exporter::attr(e.node("Mod", {a, b}, out), "fmod", int64_t{floor_q ? 0 : 1});
      return;
    }
    auto& f = e.node("Mod", {a, b}, {e.fresh(out[0] + "_fmod")});
    Exporter::attr(f, "fmod", int64_t{1});
    const std::string r = f.output(0), zero = e.scalar(0, dt, "zero");
    const std::string nonzero = e.temp("Not", {e.temp("Equal", {r, zero}, out[0] + "_is0")}, out[0] + "_nonzero");
    const std::string differ =
        e.temp("Xor", {e.temp("Less", {r, zero}, out[0] + "_rneg"), e.temp("Less", {b, zero}, out[0] + "_bneg")},
               out[0] + "_signs");
    e.node("Where", {e.temp("And", {nonzero, differ}, out[0] + "_move"), e.temp("Add", {r, b}, out[0] + "_moved"), r},
           out);
  };
}

void export_cast(Exporter& e, const Node& n, In in, In out) {
  Exporter::attr(e.node("Cast", in, out), "to", int64_t{onnx_elem_type(e.meta(n.outputs[0]).dtype)});
}

void export_where(Exporter& e, const Node& n, In in, In out) {
  const DType dt = e.meta(n.outputs[0]).dtype;
  e.node("Where",
         {e.to_bool(in[0]), e.cast(in[1], e.meta(n.inputs[1]).dtype, dt), e.cast(in[2], e.meta(n.inputs[2]).dtype, dt)},
         out);
}

// Reductions: ReduceSum takes axes as an input from opset 13, ReduceMean/ReduceMax as an attribute until 18.
ExportFn reduce(const char* op, bool axes_input) {
  return [op, axes_input](Exporter& e, const Node& n, In in, In out) {
    const Ints& axes = n.attrs.ints("axes");
    std::vector<std::string> ins = {in[0]};
    if (axes_input && !axes.empty()) ins.push_back(e.ints(axes, "axes"));
    auto& node = e.node(op, ins, out);
    Exporter::attr(node, "keepdims", int64_t{n.attrs.b("keepdim")});
    if (!axes_input && !axes.empty()) Exporter::attr(node, "axes", axes);
  };
}

// var = mean((x - mean(x))²)·n/(n - 1) when unbiased.
void export_var(Exporter& e, const Node& n, In in, In out) {
  const Ints& axes = n.attrs.ints("axes");
  const DType dt = e.meta(n.outputs[0]).dtype;
  const Shape& xs = e.meta(n.inputs[0]).shape;
  int64_t count = 1;
  if (axes.empty()) count = shape_numel(xs);
  for (int64_t a : axes) count *= xs[normalize_axis(a, static_cast<int64_t>(xs.size()), "var")];
  auto mean = [&](const std::string& x, bool keep, const std::vector<std::string>& o) -> onnx::NodeProto& {
    auto& node = e.node("ReduceMean", {x}, o);
    Exporter::attr(node, "keepdims", int64_t{keep});
    if (!axes.empty()) Exporter::attr(node, "axes", axes);
    return node;
  };
  const std::string m = e.fresh(out[0] + "_mean");
  mean(in[0], true, {m});
  const std::string d = e.temp("Sub", {in[0], m}, out[0] + "_dev");
  const std::string sq = e.temp("Mul", {d, d}, out[0] + "_sq");
  if (!n.attrs.b("unbiased")) {
    mean(sq, n.attrs.b("keepdim"), out);
    return;
  }
  const std::string biased = e.fresh(out[0] + "_biased");
  mean(sq, n.attrs.b("keepdim"), {biased});
  e.node("Mul",
         {biased, e.scalar(static_cast<double>(count) / static_cast<double>(std::max<int64_t>(count - 1, 1)), dt)},
         out);
}

// linear: Gemm(transB=1) for a matrix input, else MatMul with Wᵀ and a broadcast bias.
void export_linear(Exporter& e, const Node& n, In in, In out) {
  if (e.meta(n.inputs[0]).shape.size() == 2) {
    Exporter::attr(e.node("Gemm", in, out), "transB", int64_t{1});
    return;
  }
  auto& t = e.node("Transpose", {in[1]}, {e.fresh(in[1] + "_T")});
  Exporter::attr(t, "perm", Ints{1, 0});
  if (in.size() < 3) {
    e.node("MatMul", {in[0], t.output(0)}, out);
    return;
  }
  e.node("Add", {e.temp("MatMul", {in[0], t.output(0)}, out[0] + "_matmul"), in[2]}, out);
}

void export_transpose(Exporter& e, const Node& n, In in, In out) {
  const int64_t r = static_cast<int64_t>(e.meta(n.inputs[0]).shape.size());
  Ints perm(static_cast<size_t>(r));
  for (int64_t a = 0; a < r; ++a) perm[a] = a;
  std::swap(perm[normalize_axis(n.attrs.i("dim0"), r, "transpose")],
            perm[normalize_axis(n.attrs.i("dim1"), r, "transpose")]);
  Exporter::attr(e.node("Transpose", in, out), "perm", perm);
}

// Reshapes to the output's shape (reshape, flatten, and the views that are reshapes).
void export_reshape(Exporter& e, const Node& n, In in, In out) {
  const Shape& s = e.meta(n.outputs[0]).shape;
  e.node("Reshape", {in[0], e.ints(Ints(s.begin(), s.end()), "shape")}, out);
}

void export_expand(Exporter& e, const Node& n, In in, In out) {
  const Shape& s = e.meta(n.outputs[0]).shape;
  e.node("Expand", {in[0], e.ints(Ints(s.begin(), s.end()), "shape")}, out);
}

void export_slice(Exporter& e, const Node& n, In in, In out) {
  const Shape& xs = e.meta(n.inputs[0]).shape;
  const int64_t axis = normalize_axis(n.attrs.i("axis"), static_cast<int64_t>(xs.size()), "slice"), dim = xs[axis];
  auto clamp = [dim](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + dim : v, 0, dim); };
  e.node("Slice",
         {in[0], e.ints({clamp(n.attrs.i("start"))}, "starts"), e.ints({clamp(n.attrs.i("stop"))}, "ends"),
          e.ints({axis}, "axes"), e.ints({n.attrs.i("step")}, "steps")},
         out);
}

void export_concat(Exporter& e, const Node& n, In in, In out) {
  const int64_t r = static_cast<int64_t>(e.meta(n.inputs[0]).shape.size());
  Exporter::attr(e.node("Concat", in, out), "axis", normalize_axis(n.attrs.i("axis"), r, "concat"));
}

void export_stack(Exporter& e, const Node& n, In in, In out) {
  const int64_t r = static_cast<int64_t>(e.meta(n.outputs[0]).shape.size());
  const int64_t axis = normalize_axis(n.attrs.i("axis"), r, "stack");
  std::vector<std::string> parts;
  for (auto& x : in) parts.push_back(e.temp("Unsqueeze", {x, e.ints({axis}, "axes")}, x + "_unsq"));
  Exporter::attr(e.node("Concat", parts, out), "axis", axis);
}

ExportFn softmax(const char* op) {
  return [op](Exporter& e, const Node& n, In in, In out) {
    const int64_t r = static_cast<int64_t>(e.meta(n.inputs[0]).shape.size());
    Exporter::attr(e.node(op, in, out), "axis", normalize_axis(n.attrs.i("axis"), r, op));
  };
}

// convNd, the pools and the adaptive pool of 1, 2 or 3 spatial axes: their attributes hold one
// value per axis once the op resolved them, as ONNX's do.
void export_conv(Exporter& e, const Node& n, In in, In out) {
  auto& c = e.node("Conv", in, out);
  Exporter::attr(c, "kernel_shape", spatial_dims(e.meta(n.inputs[1]).shape));
  Exporter::attr(c, "strides", n.attrs.ints("stride"));
  Exporter::attr(c, "pads", both_ends(n.attrs.ints("padding")));
  Exporter::attr(c, "dilations", n.attrs.ints("dilation"));
  Exporter::attr(c, "group", n.attrs.i("groups"));
}

ExportFn pool(const char* op) {
  return [op](Exporter& e, const Node& n, In in, In out) {
    const Ints& k = n.attrs.ints("kernel_size");
    Ints strides = n.attrs.ints("stride");
    for (size_t i = 0; i < strides.size(); ++i)
      if (strides[i] == 0) strides[i] = k[i];  // a stride of 0 along an axis means the window's size there
    auto& node = e.node(op, in, out);
    Exporter::attr(node, "kernel_shape", k);
    Exporter::attr(node, "strides", strides);
    Exporter::attr(node, "pads", both_ends(n.attrs.ints("padding")));
    Exporter::attr(node, "ceil_mode", int64_t{n.attrs.b("ceil_mode")});
    if (std::string(op) == "AveragePool")
      Exporter::attr(node, "count_include_pad", int64_t{n.attrs.b("count_include_pad")});
  };
}

// An adaptive average pool is an AveragePool when every axis splits into equal windows
// (GlobalAveragePool when the output is 1 along every axis); uneven windows have no ONNX form.
void export_adaptive_avg(Exporter& e, const Node& n, In in, In out) {
  const Ints size = spatial_dims(e.meta(n.inputs[0]).shape), o = n.attrs.ints("output_size");
  if (std::all_of(o.begin(), o.end(), [](int64_t v) { return v == 1; })) {
    e.node("GlobalAveragePool", in, out);
    return;
  }
  Ints k(o.size());
  for (size_t i = 0; i < o.size(); ++i) {
    if (size[i] % o[i] != 0) {
      e.refuse(n, ": uneven windows");
      return;
    }
    k[i] = size[i] / o[i];
  }
  auto& node = e.node("AveragePool", in, out);
  Exporter::attr(node, "kernel_shape", k);
  Exporter::attr(node, "strides", k);
}

void export_batch_norm(Exporter& e, const Node& n, In in, In out) {
  if (n.attrs.b("training")) {
    e.refuse(n, ": training mode");
    return;
  }
  const TensorMeta& x = e.meta(n.inputs[0]);
  const Shape c{x.shape[1]};
  const std::string scale = in.size() > 3 ? in[3] : e.full(c, 1, x.dtype, "scale");
  const std::string bias = in.size() > 4 ? in[4] : e.full(c, 0, x.dtype, "bias");
  auto& node = e.node("BatchNormalization", {in[0], scale, bias, in[1], in[2]}, out);
  Exporter::attr(node, "epsilon", n.attrs.f("eps"));
}

void export_layer_norm(Exporter& e, const Node& n, In in, In out) {
  const TensorMeta& x = e.meta(n.inputs[0]);
  const int64_t k = static_cast<int64_t>(n.attrs.ints("normalized_shape").size());
  const Shape normalized(x.shape.end() - k, x.shape.end());
  std::vector<std::string> ins = {in[0], in.size() > 1 ? in[1] : e.full(normalized, 1, x.dtype, "scale")};
  if (in.size() > 2) ins.push_back(in[2]);
  auto& node = e.node("LayerNormalization", ins, out);
  Exporter::attr(node, "axis", -k);
  Exporter::attr(node, "epsilon", n.attrs.f("eps"));
}

void export_embedding(Exporter& e, const Node&, In in, In out) { e.node("Gather", {in[1], in[0]}, out); }

void export_gather(Exporter& e, const Node& n, In in, In out) {
  const int64_t r = static_cast<int64_t>(e.meta(n.inputs[0]).shape.size());
  Exporter::attr(e.node("Gather", in, out), "axis", normalize_axis(n.attrs.i("axis"), r, "gather"));
}

void export_dropout(Exporter& e, const Node& n, In in, In out) {
  if (n.attrs.b("training") && n.attrs.f("p") > 0) {
    e.refuse(n, ": training mode draws a random mask");
    return;
  }
  e.node("Identity", in, out);
}

void export_pad(Exporter& e, const Node& n, In in, In out) {
  const Shape& xs = e.meta(n.inputs[0]).shape;
  const Ints& fp = n.attrs.ints("pads");
  const size_t r = xs.size();
  Ints pads(2 * r, 0);  // ONNX: [begin of each axis..., end of each axis...]
  for (size_t p = 0; p < fp.size() / 2; ++p) {
    pads[r - 1 - p] = fp[2 * p];
    pads[2 * r - 1 - p] = fp[2 * p + 1];
  }
  const std::string mode = n.attrs.s("mode") == "replicate" ? "edge" : n.attrs.s("mode");
  auto& node =
      e.node("Pad", {in[0], e.ints(pads, "pads"), e.scalar(n.attrs.f("value"), e.meta(n.inputs[0]).dtype, "value")},
             out);
  Exporter::attr(node, "mode", mode);
}

void export_mse(Exporter& e, const Node& n, In in, In out) {
  const std::string d = e.temp("Sub", {in[0], in[1]}, out[0] + "_diff");
  const std::string sq = e.temp("Mul", {d, d}, out[0] + "_sq");
  auto& r = e.node(n.attrs.s("reduction") == "sum" ? "ReduceSum" : "ReduceMean", {sq}, out);
  Exporter::attr(r, "keepdims", int64_t{0});
}

void export_cross_entropy(Exporter& e, const Node& n, In in, In out) {
  Exporter::attr(e.node("SoftmaxCrossEntropyLoss", in, out), "reduction", n.attrs.s("reduction"));
}

// softmax(Q·Kᵀ·scale + mask)·V, with an int64 mask as "keep where 1" and causal as -inf above the diagonal.
void export_attention(Exporter& e, const Node& n, In in, In out) {
  const TensorMeta& q = e.meta(n.inputs[0]);
  const Shape& ks = e.meta(n.inputs[1]).shape;
  const int64_t r = static_cast<int64_t>(ks.size()), T = q.shape[q.shape.size() - 2], S = ks[r - 2];
  Ints perm(static_cast<size_t>(r));
  for (int64_t a = 0; a < r; ++a) perm[a] = a;
  std::swap(perm[r - 1], perm[r - 2]);
  auto& kt = e.node("Transpose", {in[1]}, {e.fresh(out[0] + "_kT")});
  Exporter::attr(kt, "perm", perm);
  const double scale =
      n.attrs.f("scale") == 0 ? 1.0 / std::sqrt(static_cast<double>(q.shape.back())) : n.attrs.f("scale");
  std::string s = e.temp("Mul", {e.temp("MatMul", {in[0], kt.output(0)}, out[0] + "_qk"), e.scalar(scale, q.dtype)},
                         out[0] + "_scores");
  if (in.size() > 3) {
    if (e.meta(n.inputs[3]).dtype == DType::i64)
      s = e.temp("Where", {e.to_bool(in[3]), s, e.scalar(-INFINITY, q.dtype)}, out[0] + "_masked");
    else s = e.temp("Add", {s, e.cast(in[3], e.meta(n.inputs[3]).dtype, q.dtype)}, out[0] + "_masked");
  }
  if (n.attrs.b("causal")) {
    Tensor tri = Tensor::zeros({T, S}, DType::f64, MemCategory::temporary);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = i + 1; j < S; ++j) tri.data<double>()[i * S + j] = -INFINITY;
    tri = tri.cast(q.dtype, MemCategory::temporary);
    s = e.temp("Add", {s, e.constant(tri, "causal")}, out[0] + "_causal");
  }
  auto& p = e.node("Softmax", {s}, {e.fresh(out[0] + "_p")});
  Exporter::attr(p, "axis", int64_t{-1});
  e.node("MatMul", {p.output(0), in[2]}, out);
}

}  // namespace

const std::map<std::string, ExportFn>& export_table() {
  static const std::map<std::string, ExportFn> t = [] {
    std::map<std::string, ExportFn> m = {
        {"add", arith("Add")},
        {"sub", arith("Sub")},
        {"mul", arith("Mul")},
        {"div", arith("Div")},
        {"pow",
         [](Exporter& e, const Node& n, In in, In out) {  // the base keeps its type in ONNX
           const DType dt = e.meta(n.outputs[0]).dtype;
           e.node("Pow", {e.cast(in[0], e.meta(n.inputs[0]).dtype, dt), in[1]}, out);
         }},
        {"maximum", arith("Max")},
        {"minimum", arith("Min")},
        {"eq", compare("Equal")},
        {"ne", compare("Equal", true)},
        {"lt", compare("Less")},
        {"le", compare("LessOrEqual")},
        {"gt", compare("Greater")},
        {"ge", compare("GreaterOrEqual")},
        {"where", export_where},
        {"neg", same("Neg")},
        {"exp", same("Exp")},
        {"log", same("Log")},
        {"sqrt", same("Sqrt")},
        {"abs", same("Abs")},
        {"sign", same("Sign")},
        {"erf", same("Erf")},
        {"relu", same("Relu")},
        {"sigmoid", same("Sigmoid")},
        {"tanh", same("Tanh")},
        {"leaky_relu",
         [](Exporter& e, const Node& n, In in, In out) {
           Exporter::attr(e.node("LeakyRelu", in, out), "alpha", n.attrs.f("negative_slope"));
         }},
        {"gelu", export_gelu},
        {"clip", export_clip},
        {"cast", export_cast},
        {"hardsigmoid",
         [](Exporter& e, const Node& n, In in, In out) {
           auto& h = e.node("HardSigmoid", in, out);
           Exporter::attr(h, "alpha", n.attrs.f("alpha"));
           Exporter::attr(h, "beta", n.attrs.f("beta"));
         }},
        {"hardswish", same("HardSwish")},
        {"elu", [](Exporter& e, const Node& n, In in,
                   In out) { Exporter::attr(e.node("Elu", in, out), "alpha", n.attrs.f("alpha")); }},
        {"selu",
         [](Exporter& e, const Node& n, In in, In out) {
           auto& h = e.node("Selu", in, out);
           Exporter::attr(h, "alpha", n.attrs.f("alpha"));
           Exporter::attr(h, "gamma", n.attrs.f("scale"));
         }},
        {"mish", export_mish},
        {"floor", rounding("Floor")},
        {"ceil", rounding("Ceil")},
        {"round", rounding("Round")},
        {"sin", same("Sin")},
        {"cos", same("Cos")},
        {"mod", export_mod(true)},
        {"fmod", export_mod(false)},
        {"sum", reduce("ReduceSum", true)},
        {"mean", reduce("ReduceMean", false)},
        {"max", reduce("ReduceMax", false)},
        {"var", export_var},
        {"matmul", same("MatMul")},
        {"linear", export_linear},
        {"transpose", export_transpose},
        {"permute", [](Exporter& e, const Node& n, In in,
                       In out) { Exporter::attr(e.node("Transpose", in, out), "perm", n.attrs.ints("dims")); }},
        {"reshape", export_reshape},
        {"flatten", export_reshape},
        {"expand", export_expand},
        {"slice", export_slice},
        {"concat", export_concat},
        {"stack", export_stack},
        {"softmax", softmax("Softmax")},
        {"log_softmax", softmax("LogSoftmax")},
        {"batch_norm", export_batch_norm},
        {"layer_norm", export_layer_norm},
        {"embedding", export_embedding},
        {"gather", export_gather},
        {"dropout", export_dropout},
        {"pad", export_pad},
        {"mse_loss", export_mse},
        {"cross_entropy", export_cross_entropy},
        {"scaled_dot_product_attention", export_attention},
    };
    for (const std::string rank : {"1d", "2d", "3d"}) {
      m["conv" + rank] = export_conv;
      m["max_pool" + rank] = pool("MaxPool");
      m["avg_pool" + rank] = pool("AveragePool");
      m["adaptive_avg_pool" + rank] = export_adaptive_avg;
    }
    add_layer_exports(m);
    return m;
  }();
  return t;
}

namespace {

// The registered operators that save_onnx refuses, and why. An operator is in export_table()
// or here: tests/test_onnx_export.cpp fails on one that is neither.
std::vector<std::pair<std::string, std::string>> ops_without_onnx_form() {
  std::vector<std::pair<std::string, std::string>> r;
  const std::string backward = "a backward op: save_onnx writes forward graphs (a model's outputs or its loss)";
  for (const char* op : {"adaptive_avg_pool1d_backward",
                         "adaptive_avg_pool2d_backward",
                         "adaptive_avg_pool3d_backward",
                         "attention_backward",
                         "avg_pool1d_backward",
                         "avg_pool2d_backward",
                         "avg_pool3d_backward",
                         "batch_norm_backward",
                         "conv1d_backward_input",
                         "conv1d_backward_weight",
                         "conv2d_backward_input",
                         "conv2d_backward_weight",
                         "conv3d_backward_input",
                         "conv3d_backward_weight",
                         "cross_entropy_backward",
                         "elu_backward",
                         "embedding_backward",
                         "gather_backward",
                         "gather_elements_backward",
                         "gelu_backward",
                         "group_norm_backward",
                         "hardsigmoid_backward",
                         "hardswish_backward",
                         "interpolate_backward",
                         "layer_norm_backward",
                         "max_pool1d_backward",
                         "max_pool2d_backward",
                         "max_pool3d_backward",
                         "mish_backward",
                         "pad_backward",
                         "relu_backward",
                         "sigmoid_backward",
                         "slice_backward",
                         "softmax_backward",
                         "tanh_backward"})
    r.emplace_back(op, backward);
  const std::string update = "an optimizer's update (phase update): a training step, not part of a model";
  for (const char* op : {"adam_update", "adamw_update", "sgd_update", "sgd_matmul_update"}) r.emplace_back(op, update);
  r.emplace_back("fused_elementwise", "made by compile's elementwise fusion, which ONNX has no node for");
  r.emplace_back("sum_to", "not exported yet (a ReduceSum over the broadcast axes would do)");
  r.emplace_back("argmax", "not exported yet (ONNX's ArgMax, which the importer maps, would do)");
  r.emplace_back("argmin", "not exported yet (ONNX's ArgMin, which the importer maps, would do)");
  r.emplace_back("softplus", "not exported yet (ONNX's Softplus has no beta or threshold)");
  return r;
}

}  // namespace

ExportCoverage export_coverage() {
  ExportCoverage c;
  for (const auto& [op, fn] : export_table()) c.exported.push_back(op);
  c.without_form = ops_without_onnx_form();
  return c;
}

}  // namespace opscope::interop
