// ONNX Conv, pooling, normalizations, Softmax and Dropout as opscope ops. Convolutions and pools
// over 1, 2 or 3 spatial axes run as the opscope op of that rank (conv1d, max_pool3d, ...), which
// takes a window, stride, padding and dilation per axis; asymmetric pads become a pad op first.
#include <algorithm>
#include <cmath>
#include <limits>

#include "app/onnx/map_context.h"

namespace opscope::interop {
namespace {

std::string list_str(const std::vector<int64_t>& v) { return attr_value_str(v); }

// Kernel, strides, dilations and begin/end pads of a Conv or pool over `spatial` axes, with
// auto_pad resolved (SAME_UPPER/SAME_LOWER: output = ceil(input / stride)).
struct Window {
  std::vector<int64_t> kernel, strides, dilations, begin, end;
};

Window window_attrs(const NodeCtx& c, const Shape& x, std::vector<int64_t> kernel) {
  const size_t n = kernel.size();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = c.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = c.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n || pads.size() != 2 * n)
    c.fail("strides " + list_str(w.strides) + ", dilations " + list_str(w.dilations) + " and pads " + list_str(pads) +
           " must give " + std::to_string(n) + " spatial axes (pads twice that)");
  for (size_t i = 0; i < n; ++i) {
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1)
      c.fail("kernel " + list_str(w.kernel) + ", strides " + list_str(w.strides) + " and dilations " +
             list_str(w.dilations) + " must be positive");
    if (pads[i] < 0 || pads[i + n] < 0) c.fail("negative pads " + list_str(pads));
  }
  w.begin.assign(pads.begin(), pads.begin() + static_cast<long>(n));
  w.end.assign(pads.begin() + static_cast<long>(n), pads.end());
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    std::fill(w.begin.begin(), w.begin.end(), 0);
    std::fill(w.end.begin(), w.end.end(), 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = x[2 + i], out = (in + w.strides[i] - 1) / w.strides[i];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
      w.begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.end[i] = total - w.begin[i];
    }
  } else if (auto_pad != "NOTSET") {
    c.fail("auto_pad=\"" + auto_pad + "\" is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }
  return w;
}

// F.pad's list for the spatial axes, last axis first: [left, right, top, bottom, front, back].
std::vector<int64_t> fpad(const Window& w) {
  std::vector<int64_t> pads;
  for (size_t i = w.begin.size(); i-- > 0;) {
    pads.push_back(w.begin[i]);
    pads.push_back(w.end[i]);
  }
  return pads;
}

bool padded(const Window& w) {
  auto positive = [](const std::vector<int64_t>& v) {
    return std::any_of(v.begin(), v.end(), [](int64_t p) { return p > 0; });
  };
  return positive(w.begin) || positive(w.end);
}

// The opscope op of a rank: "conv" + "3d".
std::string ranked(const std::string& stem, int64_t spatial) { return stem + std::to_string(spatial) + "d"; }

std::vector<Slot> map_conv(NodeCtx& c) {
  c.allow_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  Tensor x = c.in(0);
  const Tensor& w = c.in(1);
  const int64_t spatial = x.dim() - 2;
  if (spatial < 1 || spatial > 3)
    c.unsupported(std::to_string(spatial) + "-D convolution (opscope convolves 1, 2 or 3 spatial axes)");
  if (w.dim() != x.dim())
    c.fail("weight " + shape_str(w.shape()) + " and input " + shape_str(x.shape()) + " need the same rank");
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  if (c.has_attr("kernel_shape") && c.attr_ints("kernel_shape") != kernel)
    c.fail("kernel_shape " + list_str(c.attr_ints("kernel_shape")) + " does not match the weight " +
           shape_str(w.shape()));
  const Window win = window_attrs(c, x.shape(), kernel);
  // convNd pads both ends alike: asymmetric pads run as a pad op first.
  std::vector<int64_t> padding = win.begin;
  if (win.begin != win.end) {
    x = c.call("pad", {x}, {{"pads", fpad(win)}});
    padding.assign(padding.size(), 0);
  }
  std::vector<Tensor> ins = {x, w};
  if (c.has(2)) ins.push_back(c.in(2));
  return one(c.call(ranked("conv", spatial), ins,
                    {{"stride", win.strides},
                     {"padding", padding},
                     {"dilation", win.dilations},
                     {"groups", c.attr_int("group", 1)}}));
}

// The window of a pool: undilated over 1, 2 or 3 axes; ceil_mode as extra end pads.
Window pool_window(NodeCtx& c, const Tensor& x, bool ceil_mode) {
  if (x.dim() < 3 || x.dim() > 5)
    c.unsupported(std::to_string(x.dim() - 2) + "-D pooling (opscope pools 1, 2 or 3 spatial axes)");
  if (!c.has_attr("kernel_shape")) c.fail("kernel_shape is required");
  Window w = window_attrs(c, x.shape(), c.attr_ints("kernel_shape"));
  if (std::any_of(w.dilations.begin(), w.dilations.end(), [](int64_t d) { return d != 1; }))
    c.unsupported("dilations " + list_str(w.dilations) + " (opscope's pools are undilated)");
  if (ceil_mode)
    for (size_t i = 0; i < w.kernel.size(); ++i) {
      // ceil((in + pads - k) / s) + 1 windows, the last starting inside the input or its begin pad.
      const int64_t in = x.shape()[2 + i], span = in + w.begin[i] + w.end[i];
      if (span < w.kernel[i]) continue;
      int64_t out = (span - w.kernel[i] + w.strides[i] - 1) / w.strides[i] + 1;
      if ((out - 1) * w.strides[i] >= in + w.begin[i]) --out;
      w.end[i] += std::max<int64_t>(0, (out - 1) * w.strides[i] + w.kernel[i] - span);
    }
  return w;
}

// Pools x with the pool of its rank after an explicit pad with `fill`, for the pads the op's own
// padding cannot say (asymmetric, above half the window; ceil_mode's extra end included in w).
Tensor pool(NodeCtx& c, const std::string& stem, const Tensor& x, const Window& w, double fill) {
  const Tensor in = padded(w) ? c.call("pad", {x}, {{"pads", fpad(w)}, {"value", fill}}) : x;
  const std::vector<int64_t> no_padding(w.kernel.size(), 0);
  return c.call(ranked(stem, x.dim() - 2), {in},
                {{"kernel_size", w.kernel}, {"stride", w.strides}, {"padding", no_padding}});
}

// The op's own padding, ceil_mode and count_include_pad say the node exactly when its pads are
// the same at both ends and at most half the window (PyTorch's pools, and what they export).
bool op_pads_fit(const Window& w) {
  bool fit = w.begin == w.end;
  for (size_t i = 0; i < w.kernel.size(); ++i) fit = fit && 2 * w.begin[i] <= w.kernel[i];
  return fit;
}

AttrMap op_window_attrs(const Window& w, bool ceil_mode) {
  return {{"kernel_size", w.kernel}, {"stride", w.strides}, {"padding", w.begin}, {"ceil_mode", ceil_mode}};
}

std::vector<Slot> map_max_pool(NodeCtx& c) {
  c.allow_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  if (c.output_used(1)) c.unsupported("the Indices output (opscope's max_pool2d gives the values)");
  const Tensor& x = c.in(0);
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  const Window plain = pool_window(c, x, false);
  if (op_pads_fit(plain)) return one(c.call(ranked("max_pool", x.dim() - 2), {x}, op_window_attrs(plain, ceil_mode)));
  const Window w = pool_window(c, x, ceil_mode);
  return one(pool(c, "max_pool", x, w, -std::numeric_limits<double>::infinity()));
}

// How many elements each window averages over, divided by the window's size (a known constant
// [1, 1, O...]): the input's own elements, plus the explicit pads when count_include_pad (never
// ceil_mode's).
Tensor window_fraction(const Shape& x, const Window& w, const std::vector<int64_t>& explicit_end, bool include_pad,
                       const Shape& y) {
  const size_t n = w.kernel.size();
  std::vector<std::vector<double>> per_axis(n);  // the counted fraction of each window, per axis
  for (size_t a = 0; a < n; ++a)
    for (int64_t o = 0; o < y[2 + a]; ++o) {
      const int64_t start = o * w.strides[a] - w.begin[a], k = w.kernel[a];
      const int64_t lo = include_pad ? -w.begin[a] : 0, hi = x[2 + a] + (include_pad ? explicit_end[a] : 0);
      per_axis[a].push_back(static_cast<double>(std::max<int64_t>(0, std::min(start + k, hi) - std::max(start, lo))) /
                            static_cast<double>(k));
    }
  Shape fs = {1, 1};
  fs.insert(fs.end(), y.begin() + 2, y.end());
  Tensor f = Tensor::empty(fs, DType::f64, MemCategory::input);
  for (int64_t i = 0; i < f.numel(); ++i) {  // the product of the axes' fractions, last axis fastest
    double v = 1;
    for (int64_t a = static_cast<int64_t>(n) - 1, rest = i; a >= 0; rest /= y[2 + a], --a)
      v *= per_axis[static_cast<size_t>(a)][static_cast<size_t>(rest % y[2 + a])];
    f.data<double>()[i] = v;
  }
  return f;
}

std::vector<Slot> map_average_pool(NodeCtx& c) {
  c.allow_attrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"});
  const Tensor& x = c.in(0);
  const bool include_pad = c.attr_int("count_include_pad", 0) != 0, ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  const Window explicit_w = pool_window(c, x, false);
  if (op_pads_fit(explicit_w)) {
    AttrMap a = op_window_attrs(explicit_w, ceil_mode);
    a.push_back({"count_include_pad", include_pad});
    return one(c.call(ranked("avg_pool", x.dim() - 2), {x}, a));
  }
  // Asymmetric or wide pads: an explicit pad, and the average rescaled where it counted wrongly.
  const Window w = pool_window(c, x, ceil_mode);
  // avg_pool divides by the window size: exact when every window lies in what is counted; else the
  // average is scaled by the counted fraction, computed here once from the geometry.
  Tensor y = pool(c, "avg_pool", x, w, 0.0);
  const bool extra = w.end != explicit_w.end;
  if (extra || (padded(explicit_w) && !include_pad)) {
    Tensor f = window_fraction(x.shape(), w, explicit_w.end, include_pad, y.shape());
    y = c.call("div", {y, f.dtype() == y.dtype() ? f : f.cast(y.dtype(), MemCategory::input)});
  }
  return one(y);
}

MapperFn global_pool(const char* op) {
  return [op](NodeCtx& c) {
    c.allow_attrs({});
    const Tensor& x = c.in(0);
    if (x.dim() < 3) c.fail("expects [N, C, spatial...], got " + shape_str(x.shape()));
    std::vector<int64_t> axes;
    for (int64_t a = 2; a < x.dim(); ++a) axes.push_back(a);
    return one(c.call(op, {x}, {{"axes", axes}, {"keepdim", true}}));
  };
}

std::vector<Slot> map_batch_norm(NodeCtx& c) {
  c.allow_attrs({"epsilon", "momentum", "training_mode", "spatial", "is_test"});
  if (c.attr_int("training_mode", 0) != 0 ||
      (c.opset() < 7 && c.attr_int("is_test", 0) == 0 && (c.output_used(1) || c.output_used(2))))
    c.unsupported(
        "training_mode=1 (batch statistics and updated running statistics as outputs)",
        "export the model in eval mode: model.eval(), torch.onnx.export(..., training=TrainingMode.EVAL or PRESERVE)");
  if (c.attr_int("spatial", 1) != 1) c.unsupported("spatial=0 (statistics per element, not per channel)");
  for (size_t o = 1; o < c.num_outputs(); ++o)
    if (c.output_used(o)) c.unsupported("the running statistics outputs of a training-mode BatchNormalization");
  const Tensor& x = c.in(0);
  if (x.dim() < 2) c.fail("expects [N, C, ...], got " + shape_str(x.shape()));
  return one(c.call("batch_norm", {x, c.in(3), c.in(4), c.in(1), c.in(2)},
                    {{"training", false}, {"eps", c.attr_float("epsilon", 1e-5)}}));
}

std::vector<Slot> map_layer_norm(NodeCtx& c) {
  c.allow_attrs({"axis", "epsilon", "stash_type"});
  const Tensor& x = c.in(0);
  const int64_t axis = onnx_axis(c, c.attr_int("axis", -1), x.dim());
  const double eps = c.attr_float("epsilon", 1e-5);
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  // Scale and B broadcast to the normalized axes in ONNX; opscope's layer_norm takes them whole.
  auto whole = [&](size_t i) {
    const Tensor& t = c.in(i);
    return t.shape() == normalized
               ? t
               : c.call("expand", {t}, {{"shape", std::vector<int64_t>(normalized.begin(), normalized.end())}});
  };
  std::vector<Tensor> ins = {x, whole(1)};
  if (c.has(2)) ins.push_back(whole(2));
  std::vector<Slot> outs =
      one(c.call("layer_norm", ins,
                 {{"normalized_shape", std::vector<int64_t>(normalized.begin(), normalized.end())}, {"eps", eps}}));
  // Mean and InvStdDev, when the graph reads them: the same statistics, spelt out.
  if (c.output_used(1) || c.output_used(2)) {
    std::vector<int64_t> axes;
    for (int64_t a = axis; a < x.dim(); ++a) axes.push_back(a);
    AttrMap over{{"axes", axes}, {"keepdim", true}};
    outs.push_back(Slot{c.call("mean", {x}, over), false});
    if (c.output_used(2)) {
      AttrMap biased = over;
      biased.emplace_back("unbiased", false);
      Tensor var = c.call("var", {x}, biased);
      Tensor std = c.call("sqrt", {c.call("add", {var, Tensor::scalar(eps, x.dtype(), MemCategory::input)})});
      outs.push_back(Slot{c.call("div", {Tensor::scalar(1, x.dtype(), MemCategory::input), std}), false});
    }
  }
  return outs;
}

// Softmax and LogSoftmax: along `axis` from opset 13; before, over the 2-D view
// [prod(dims[:axis]), prod(dims[axis:])] with axis 1 by default.
MapperFn softmax(const char* op) {
  return [op](NodeCtx& c) {
    c.allow_attrs({"axis"});
    const Tensor& x = c.in(0);
    if (c.opset() >= 13) return one(c.call(op, {x}, {{"axis", onnx_axis(c, c.attr_int("axis", -1), x.dim())}}));
    const int64_t axis = onnx_axis(c, c.attr_int("axis", 1), x.dim());
    if (axis == x.dim() - 1) return one(c.call(op, {x}, {{"axis", int64_t{-1}}}));
    int64_t rows = 1;
    for (int64_t a = 0; a < axis; ++a) rows *= x.shape()[a];
    Tensor flat = c.call("reshape", {x}, {{"shape", std::vector<int64_t>{rows, -1}}});
    Tensor y = c.call(op, {flat}, {{"axis", int64_t{-1}}});
    return one(c.call("reshape", {y}, {{"shape", std::vector<int64_t>(x.shape().begin(), x.shape().end())}}));
  };
}

// Dropout at inference is the identity (its mask all ones). Training-mode dropout draws from
// ONNX's generator, which opscope cannot reproduce: refused unless the ratio is 0.
std::vector<Slot> map_dropout(NodeCtx& c) {
  c.allow_attrs({"ratio", "seed", "is_test"});
  bool training = false;  // before opset 7, is_test=0 meant training, but exporters ran it as inference
  double ratio = c.attr_float("ratio", 0.5);
  if (c.opset() >= 12) {
    if (c.has(1)) ratio = c.scalar_input(1, "ratio");
    if (c.has(2)) training = c.scalar_input(2, "training_mode") != 0;
  }
  if (training && ratio > 0)
    c.unsupported("training-mode Dropout (its random mask comes from ONNX's generator)",
                  "export the model in eval mode; opscope's own dropout op trains with its seeded masks");
  std::vector<Slot> outs = {c.slot(0)};
  if (c.output_used(1)) outs.push_back(c.constant(Tensor::full(c.in(0).shape(), 1, DType::i64, MemCategory::input)));
  return outs;
}

// SoftmaxCrossEntropyLoss of [N, C] scores and N class labels: opscope's cross_entropy.
std::vector<Slot> map_softmax_cross_entropy(NodeCtx& c) {
  c.allow_attrs({"reduction", "ignore_index"});
  const std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "mean" && reduction != "sum")
    c.unsupported("reduction=\"" + reduction + "\" (opscope's cross_entropy gives the mean or the sum)");
  if (c.has_attr("ignore_index")) c.unsupported("ignore_index (opscope's cross_entropy counts every sample)");
  if (c.has(2)) c.unsupported("class weights (opscope's cross_entropy weighs every class alike)");
  if (c.output_used(1)) c.unsupported("the log_prob output");
  const Tensor& scores = c.in(0);
  if (scores.dim() != 2)
    c.unsupported(std::to_string(scores.dim()) + "-D scores (opscope's cross_entropy takes [N, C])");
  return one(c.call("cross_entropy", {scores, c.in(1)}, {{"reduction", reduction}}));
}

}  // namespace

void add_nn_mappers(MapperTable& t) {
  t["SoftmaxCrossEntropyLoss"] = map_softmax_cross_entropy;
  t["Conv"] = map_conv;
  t["MaxPool"] = map_max_pool;
  t["AveragePool"] = map_average_pool;
  t["GlobalAveragePool"] = global_pool("mean");
  t["GlobalMaxPool"] = global_pool("max");
  t["BatchNormalization"] = map_batch_norm;
  t["LayerNormalization"] = map_layer_norm;
  t["Softmax"] = softmax("softmax");
  t["LogSoftmax"] = softmax("log_softmax");
  t["Dropout"] = map_dropout;
}

}  // namespace opscope::interop
