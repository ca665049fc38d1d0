// ONNX elementwise arithmetic, activations (those without an opscope op of their own spelt out:
// Celu, Softsign, PRelu, Shrink, ...), comparisons and logic, reductions, ArgMax/ArgMin, MatMul
// and Gemm as opscope ops. Booleans are int64 0/1 in opscope, so And is a product and Not a comparison.
#include <cmath>

#include "app/onnx/map_context.h"

namespace opscope::interop {
namespace {

Tensor scalar_like(double v, const Tensor& like) { return Tensor::scalar(v, like.dtype(), MemCategory::input); }

// Before opset 7, binary ops broadcast only with broadcast=1, and then b's axes line up with
// a's from `axis` on (not from the right, as NumPy's do): b is given a's rank for NumPy.
Tensor legacy_broadcast(NodeCtx& c, const Tensor& a, const Tensor& b) {
  if (c.opset() >= 7) return b;
  if (c.attr_int("broadcast", 0) == 0) {
    if (a.shape() != b.shape())
      c.fail("shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
             " differ without broadcast=1 (opset < 7)");
    return b;
  }
  const int64_t axis = c.has_attr("axis") ? onnx_axis(c, c.attr_int("axis", 0), a.dim()) : a.dim() - b.dim();
  if (axis < 0 || axis + b.dim() > a.dim())
    c.fail("b " + shape_str(b.shape()) + " does not fit a " + shape_str(a.shape()) + " at axis " +
           std::to_string(axis));
  Shape s(static_cast<size_t>(axis), 1);
  s.insert(s.end(), b.shape().begin(), b.shape().end());
  s.resize(static_cast<size_t>(a.dim()), 1);
  return s == b.shape() ? b : c.call("reshape", {b}, {{"shape", std::vector<int64_t>(s.begin(), s.end())}});
}

void allow_binary_attrs(const NodeCtx& c) {
  if (c.opset() < 7) c.allow_attrs({"broadcast", "axis"});
  else c.allow_attrs({});
}

MapperFn binary(const char* op) {
  return [op](NodeCtx& c) {
    allow_binary_attrs(c);
    return one(c.call(op, {c.in(0), legacy_broadcast(c, c.in(0), c.in(1))}));
  };
}

MapperFn unary(const char* op) {
  return [op](NodeCtx& c) {
    c.allow_attrs({});
    return one(c.call(op, {c.in(0)}));
  };
}

// ONNX Div of integers truncates toward zero; opscope's div is true division (float), so the
// quotient is computed in float64 (exact below 2^53) and cast back.
std::vector<Slot> map_div(NodeCtx& c) {
  allow_binary_attrs(c);
  const Tensor& a = c.in(0);
  const Tensor b = legacy_broadcast(c, a, c.in(1));
  if (is_floating(a.dtype()) || is_floating(b.dtype())) return one(c.call("div", {a, b}));
  AttrMap f64{{"dtype", std::string("float64")}}, i64{{"dtype", std::string("int64")}};
  Tensor q = c.call("div", {c.call("cast", {a}, f64), c.call("cast", {b}, f64)});
  return one(c.call("cast", {q}, i64));
}

// Pow's result has the base's type (the exponent may be another type).
std::vector<Slot> map_pow(NodeCtx& c) {
  allow_binary_attrs(c);
  const Tensor& a = c.in(0);
  const Tensor b = legacy_broadcast(c, a, c.in(1));
  if (is_floating(a.dtype())) {
    Tensor e = b.dtype() == a.dtype() ? b : c.call("cast", {b}, {{"dtype", std::string(dtype_name(a.dtype()))}});
    return one(c.call("pow", {a, e}));
  }
  AttrMap f64{{"dtype", std::string("float64")}};
  Tensor y = c.call("pow", {c.call("cast", {a}, f64), c.call("cast", {b}, f64)});
  return one(c.call("cast", {y}, {{"dtype", std::string("int64")}}));
}

// Sum, Max, Min, Mean: any number of inputs, folded pairwise.
MapperFn variadic(const char* op, bool mean = false) {
  return [op, mean](NodeCtx& c) {
    c.allow_attrs({});
    Tensor acc = c.in(0);
    for (size_t i = 1; i < c.num_inputs(); ++i) acc = c.call(op, {acc, c.in(i)});
    if (mean && c.num_inputs() > 1) acc = c.call("div", {acc, scalar_like(static_cast<double>(c.num_inputs()), acc)});
    if (c.num_inputs() == 1) return std::vector<Slot>{c.slot(0)};
    return one(acc);
  };
}

std::vector<Slot> map_relu(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  if (!is_floating(x.dtype())) return one(c.call("maximum", {x, scalar_like(0, x)}));
  return one(c.call("relu", {x}));
}

std::vector<Slot> map_leaky_relu(NodeCtx& c) {
  c.allow_attrs({"alpha"});
  const double alpha = c.attr_float("alpha", 0.01);
  const Tensor& x = c.in(0);
  if (alpha >= 0) return one(c.call("leaky_relu", {x}, {{"negative_slope", alpha}}));
  // opscope's leaky_relu takes slopes >= 0; a negative one is the same formula spelt out.
  Tensor positive = c.call("gt", {x, scalar_like(0, x)});
  return one(c.call("where", {positive, x, c.call("mul", {x, scalar_like(alpha, x)})}));
}

std::vector<Slot> map_gelu(NodeCtx& c) {
  c.allow_attrs({"approximate"});
  const std::string a = c.attr_string("approximate", "none");
  if (a != "none" && a != "tanh") c.unsupported("approximate=\"" + a + "\" (opscope's gelu has \"none\" and \"tanh\")");
  return one(c.call("gelu", {c.in(0)}, {{"approximate", a}}));
}

// Clip: bounds are attributes before opset 11, optional inputs after. Known bounds become the
// clip op's attributes; bounds computed in the graph become maximum/minimum.
std::vector<Slot> map_clip(NodeCtx& c) {
  const Tensor& x = c.in(0);
  double lo = -INFINITY, hi = INFINITY;
  if (c.opset() < 11) {
    c.allow_attrs({"min", "max"});
    lo = c.attr_float("min", -INFINITY);
    hi = c.attr_float("max", INFINITY);
    return one(c.call("clip", {x}, {{"min", lo}, {"max", hi}}));
  }
  c.allow_attrs({});
  if ((!c.has(1) || c.known(1)) && (!c.has(2) || c.known(2))) {
    if (c.has(1)) lo = c.scalar_input(1, "min");
    if (c.has(2)) hi = c.scalar_input(2, "max");
    return one(c.call("clip", {x}, {{"min", lo}, {"max", hi}}));
  }
  Tensor y = x;
  if (c.has(1)) y = c.call("maximum", {y, c.in(1)});
  if (c.has(2)) y = c.call("minimum", {y, c.in(2)});
  return one(y);
}

// HardSigmoid: clamp(alpha·x + beta, 0, 1), ONNX's default alpha 0.2 (PyTorch exports 1/6).
std::vector<Slot> map_hard_sigmoid(NodeCtx& c) {
  c.allow_attrs({"alpha", "beta"});
  return one(
      c.call("hardsigmoid", {c.in(0)}, {{"alpha", c.attr_float("alpha", 0.2)}, {"beta", c.attr_float("beta", 0.5)}}));
}

std::vector<Slot> map_elu(NodeCtx& c) {
  c.allow_attrs({"alpha"});
  return one(c.call("elu", {c.in(0)}, {{"alpha", c.attr_float("alpha", 1.0)}}));
}

// ONNX's Selu defaults are SELU's constants rounded to float32, which the file may not state.
std::vector<Slot> map_selu(NodeCtx& c) {
  c.allow_attrs({"alpha", "gamma"});
  return one(c.call("selu", {c.in(0)},
                    {{"alpha", c.attr_float("alpha", 1.67326319217681884765625)},
                     {"scale", c.attr_float("gamma", 1.05070102214813232421875)}}));
}

// Celu(x) = max(0, x) + min(0, alpha·(e^(x/alpha) − 1)) = alpha·elu(x/alpha).
std::vector<Slot> map_celu(NodeCtx& c) {
  c.allow_attrs({"alpha"});
  const double alpha = c.attr_float("alpha", 1.0);
  const Tensor& x = c.in(0);
  if (alpha == 1.0) return one(c.call("elu", {x}));
  if (alpha <= 0) c.fail("alpha must be positive, got " + std::to_string(alpha));
  Tensor e = c.call("elu", {c.call("div", {x, scalar_like(alpha, x)})});
  return one(c.call("mul", {e, scalar_like(alpha, x)}));
}

// Mod: fmod=1 is C's fmod (the sign of a), fmod=0 Python's remainder (the sign of b).
std::vector<Slot> map_mod(NodeCtx& c) {
  c.allow_attrs({"fmod"});
  return one(c.call(c.attr_int("fmod", 0) != 0 ? "fmod" : "mod", {c.in(0), c.in(1)}));
}

std::vector<Slot> map_softplus(NodeCtx& c) {
  c.allow_attrs({});
  return one(c.call("softplus", {c.in(0)}));
}

// Softsign: x / (1 + |x|).
std::vector<Slot> map_softsign(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  return one(c.call("div", {x, c.call("add", {c.call("abs", {x}), scalar_like(1, x)})}));
}

// ThresholdedRelu: x where x > alpha, else 0.
std::vector<Slot> map_thresholded_relu(NodeCtx& c) {
  c.allow_attrs({"alpha"});
  const Tensor& x = c.in(0);
  Tensor keep = c.call("gt", {x, scalar_like(c.attr_float("alpha", 1.0), x)});
  return one(c.call("where", {keep, x, scalar_like(0, x)}));
}

// PRelu: x where x > 0, slope·x elsewhere. The slope broadcasts to x as NumPy's do; before
// opset 7, a slope of C values is one per channel (axis 1), as PyTorch's multi-parameter PReLU.
std::vector<Slot> map_prelu(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  Tensor slope = c.in(1);
  if (c.opset() < 7 && slope.dim() == 1 && x.dim() > 2 && slope.shape()[0] == x.shape()[1] && slope.shape()[0] > 1) {
    Shape s(static_cast<size_t>(x.dim() - 1), 1);
    s[0] = slope.shape()[0];
    slope = c.call("reshape", {slope}, {{"shape", std::vector<int64_t>(s.begin(), s.end())}});
  }
  Tensor positive = c.call("gt", {x, scalar_like(0, x)});
  return one(c.call("where", {positive, x, c.call("mul", {x, slope})}));
}

// Shrink: x + bias below −lambd, x − bias above lambd, 0 between.
std::vector<Slot> map_shrink(NodeCtx& c) {
  c.allow_attrs({"bias", "lambd"});
  const Tensor& x = c.in(0);
  const double bias = c.attr_float("bias", 0.0), lambd = c.attr_float("lambd", 0.5);
  Tensor above = c.call("where", {c.call("gt", {x, scalar_like(lambd, x)}), c.call("sub", {x, scalar_like(bias, x)}),
                                  scalar_like(0, x)});
  return one(
      c.call("where", {c.call("lt", {x, scalar_like(-lambd, x)}), c.call("add", {x, scalar_like(bias, x)}), above}));
}

// IsNaN: NaN is the one value unequal to itself. IsInf: |x| = inf, or one sign of it.
std::vector<Slot> map_is_nan(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  return one(c.call("ne", {x, x}));
}

std::vector<Slot> map_is_inf(NodeCtx& c) {
  c.allow_attrs({"detect_negative", "detect_positive"});
  const Tensor& x = c.in(0);
  const bool neg = c.attr_int("detect_negative", 1) != 0, pos = c.attr_int("detect_positive", 1) != 0;
  if (neg && pos) return one(c.call("eq", {c.call("abs", {x}), scalar_like(INFINITY, x)}));
  if (!neg && !pos) return {c.constant(Tensor::full(x.shape(), 0, DType::i64, MemCategory::input))};
  return one(c.call("eq", {x, scalar_like(pos ? INFINITY : -INFINITY, x)}));
}

std::vector<Slot> map_not(NodeCtx& c) {
  c.allow_attrs({});
  return one(c.call("eq", {c.in(0), Tensor::scalar(0, DType::i64, MemCategory::input)}));
}

std::vector<Slot> map_or(NodeCtx& c) {
  c.allow_attrs({});
  return one(c.call("ne", {c.call("add", {c.in(0), c.in(1)}), Tensor::scalar(0, DType::i64, MemCategory::input)}));
}

std::vector<Slot> map_reciprocal(NodeCtx& c) {
  c.allow_attrs({});
  const Tensor& x = c.in(0);
  return one(c.call("div", {scalar_like(1, x), x}));
}

// --- reductions ----------------------------------------------------------------------------------

// The axes of a Reduce* node: an attribute before `input_since`, the optional input 2 after.
// Returns false for "reduce nothing" (empty axes with noop_with_empty_axes=1).
bool reduce_axes(NodeCtx& c, int64_t input_since, std::vector<int64_t>& axes) {
  const bool as_input = c.opset() >= input_since;
  if (as_input) c.allow_attrs({"keepdims", "noop_with_empty_axes"});
  else c.allow_attrs({"keepdims", "axes"});
  axes = as_input ? (c.has(1) ? c.ints_input(1, "axes") : std::vector<int64_t>{}) : c.attr_ints("axes");
  const int64_t rank = c.in(0).dim();
  for (auto& a : axes) a = onnx_axis(c, a, rank);
  if (axes.empty() && as_input && c.attr_int("noop_with_empty_axes", 0) == 1) return false;
  return true;
}

// ReduceX as `op` applied to pre(x), then post(y): ReduceL2 = sqrt(sum(x·x)).
MapperFn reduce(const char* op, int64_t input_since, const char* pre = nullptr, const char* post = nullptr) {
  return [=](NodeCtx& c) {
    std::vector<int64_t> axes;
    if (!reduce_axes(c, input_since, axes)) return std::vector<Slot>{c.slot(0)};
    const bool keep = c.attr_int("keepdims", 1) != 0;
    Tensor x = c.in(0);
    if (pre && std::string(pre) == "square") x = c.call("mul", {x, x});
    else if (pre) x = c.call(pre, {x});
    Tensor y = c.call(op, {x}, {{"axes", axes}, {"keepdim", keep}});
    if (post) y = c.call(post, {y});
    return one(y);
  };
}

// ReduceMin: opscope has max; min(x) = -max(-x).
// ArgMax/ArgMin along one axis; select_last_index=1 takes the last of tied elements: the first
// one of x reversed along the axis, counted back from the end.
MapperFn arg_reduce(const char* op) {
  return [op](NodeCtx& c) {
    c.allow_attrs({"axis", "keepdims", "select_last_index"});
    Tensor x = c.in(0);
    const int64_t axis = onnx_axis(c, c.attr_int("axis", 0), x.dim());
    const bool keep = c.attr_int("keepdims", 1) != 0, last = c.attr_int("select_last_index", 0) != 0;
    const int64_t n = x.shape()[axis];
    if (last) {
      std::vector<int64_t> reversed;
      for (int64_t k = n - 1; k >= 0; --k) reversed.push_back(k);
      x = c.call("gather", {x, int_tensor(reversed)}, {{"axis", axis}});
    }
    Tensor i = c.call(op, {x}, {{"axes", std::vector<int64_t>{axis}}, {"keepdim", keep}});
    if (last) i = c.call("sub", {Tensor::scalar(static_cast<double>(n - 1), DType::i64, MemCategory::input), i});
    return one(i);
  };
}

std::vector<Slot> map_reduce_min(NodeCtx& c) {
  std::vector<int64_t> axes;
  if (!reduce_axes(c, 18, axes)) return {c.slot(0)};
  const bool keep = c.attr_int("keepdims", 1) != 0;
  Tensor m = c.call("max", {c.call("neg", {c.in(0)})}, {{"axes", axes}, {"keepdim", keep}});
  return one(c.call("neg", {m}));
}

// --- MatMul and Gemm ----------------------------------------------------------------------------

// NumPy matmul: a 1-D operand is a row (left) or a column (right) whose axis is dropped after.
std::vector<Slot> map_matmul(NodeCtx& c) {
  c.allow_attrs({});
  Tensor a = c.in(0), b = c.in(1);
  if (a.dim() == 0 || b.dim() == 0)
    c.fail("MatMul needs tensors of rank >= 1, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
  const bool row = a.dim() == 1, col = b.dim() == 1;
  if (row) a = c.call("reshape", {a}, {{"shape", std::vector<int64_t>{1, a.shape()[0]}}});
  if (col) b = c.call("reshape", {b}, {{"shape", std::vector<int64_t>{b.shape()[0], 1}}});
  Tensor y = c.call("matmul", {a, b});
  if (row || col) {
    Shape s = y.shape();
    if (col) s.pop_back();
    if (row) s.erase(s.end() - (col ? 1 : 2));
    y = c.call("reshape", {y}, {{"shape", s}});
  }
  return one(y);
}

// Y = alpha·op(A)·op(B) + beta·C. PyTorch's nn.Linear (transB=1, alpha = beta = 1, a bias of
// N values) is opscope's linear op; everything else is spelt out with matmul.
std::vector<Slot> map_gemm(NodeCtx& c) {
  if (c.opset() < 7) c.allow_attrs({"alpha", "beta", "transA", "transB", "broadcast"});  // C broadcasts either way
  else c.allow_attrs({"alpha", "beta", "transA", "transB"});
  const double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  const bool ta = c.attr_int("transA", 0) != 0, tb = c.attr_int("transB", 0) != 0;
  Tensor a = c.in(0), b = c.in(1);
  if (a.dim() != 2 || b.dim() != 2)
    c.fail("Gemm takes matrices, got " + shape_str(a.shape()) + " and " + shape_str(b.shape()));
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  const bool bias_is_row = c.has(2) && c.in(2).shape() == Shape{n};
  if (!ta && tb && alpha == 1.0 && (!c.has(2) || (beta == 1.0 && bias_is_row))) {
    std::vector<Tensor> ins = {a, b};
    if (c.has(2)) ins.push_back(c.in(2));
    return one(c.call("linear", ins));
  }
  AttrMap swap{{"dim0", int64_t{0}}, {"dim1", int64_t{1}}};
  if (ta) a = c.call("transpose", {a}, swap);
  if (tb) b = c.call("transpose", {b}, swap);
  Tensor y = c.call("matmul", {a, b});
  if (alpha != 1.0) y = c.call("mul", {y, scalar_like(alpha, y)});
  if (c.has(2) && beta != 0.0) {
    Tensor bias = c.in(2);
    if (beta != 1.0) bias = c.call("mul", {bias, scalar_like(beta, bias)});
    y = c.call("add", {y, bias});
  }
  return one(y);
}

}  // namespace

void add_math_mappers(MapperTable& t) {
  t["Add"] = binary("add");
  t["Sub"] = binary("sub");
  t["Mul"] = binary("mul");
  t["Div"] = map_div;
  t["Pow"] = map_pow;
  t["Sum"] = variadic("add");
  t["Mean"] = variadic("add", true);
  t["Max"] = variadic("maximum");
  t["Min"] = variadic("minimum");
  t["Neg"] = unary("neg");
  t["Abs"] = unary("abs");
  t["Sqrt"] = unary("sqrt");
  t["Exp"] = unary("exp");
  t["Log"] = unary("log");
  t["Sign"] = unary("sign");
  t["Erf"] = unary("erf");
  t["Sigmoid"] = unary("sigmoid");
  t["Tanh"] = unary("tanh");
  t["Reciprocal"] = map_reciprocal;
  t["Relu"] = map_relu;
  t["LeakyRelu"] = map_leaky_relu;
  t["Gelu"] = map_gelu;
  t["Clip"] = map_clip;
  t["HardSigmoid"] = map_hard_sigmoid;
  t["HardSwish"] = unary("hardswish");
  t["Elu"] = map_elu;
  t["Selu"] = map_selu;
  t["Celu"] = map_celu;
  t["Mish"] = unary("mish");
  t["Softplus"] = map_softplus;
  t["Softsign"] = map_softsign;
  t["ThresholdedRelu"] = map_thresholded_relu;
  t["PRelu"] = map_prelu;
  t["Shrink"] = map_shrink;
  t["Floor"] = unary("floor");
  t["Ceil"] = unary("ceil");
  t["Round"] = unary("round");
  t["Sin"] = unary("sin");
  t["Cos"] = unary("cos");
  t["Mod"] = map_mod;
  t["IsNaN"] = map_is_nan;
  t["IsInf"] = map_is_inf;
  t["ArgMax"] = arg_reduce("argmax");
  t["ArgMin"] = arg_reduce("argmin");
  t["Equal"] = binary("eq");
  t["Less"] = binary("lt");
  t["LessOrEqual"] = binary("le");
  t["Greater"] = binary("gt");
  t["GreaterOrEqual"] = binary("ge");
  t["And"] = binary("mul");
  t["Or"] = map_or;
  t["Xor"] = binary("ne");
  t["Not"] = map_not;
  t["Where"] = [](NodeCtx& c) {
    c.allow_attrs({});
    return one(c.call("where", {c.in(0), c.in(1), c.in(2)}));
  };
  t["ReduceSum"] = reduce("sum", 13);
  t["ReduceMean"] = reduce("mean", 18);
  t["ReduceMax"] = reduce("max", 18);
  t["ReduceMin"] = map_reduce_min;
  t["ReduceSumSquare"] = reduce("sum", 18, "square");
  t["ReduceL1"] = reduce("sum", 18, "abs");
  t["ReduceL2"] = reduce("sum", 18, "square", "sqrt");
  t["MatMul"] = map_matmul;
  t["Gemm"] = map_gemm;
}

}  // namespace opscope::interop
