// Activations: relu, leaky_relu, gelu (erf and tanh forms) with its backward op, sigmoid,
// softplus, tanh, and the ones of MobileNetV3 and friends: hardsigmoid, hardswish, elu, selu,
// mish. All bandwidth-bound and pointwise: one pass over the data, kernels from the formulas of
// ops/pointwise.h; where the derivative is a formula of x, one backward op (x, dy) -> dx.
#include "ops/cpu_util.h"
#include "ops/pointwise_cpu.h"

namespace opscope {
namespace {

using cpu::gc;
using pointwise::Formula;

OpDef activation(const std::string& name, const std::string& doc) {
  OpDef d = OpDef::declare(name, "activation", doc, {"x"});
  d.infer = cpu::float_like_input0;
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({{{3, 4}}}), gc({{{2, 3, 2}}})};
  return d;
}

// An activation's backward op of (v, dy), v the forward's input or output: both one shape.
auto infer_like_dy(std::string v) {
  return [v](const InferCtx& c) {
    c.expect_float(0);
    if (c.inputs[0].shape != c.inputs[1].shape)
      c.fail(v + " " + shape_str(c.inputs[0].shape) + " and dy " + shape_str(c.inputs[1].shape) +
             " must have one shape");
    return std::vector<TensorMeta>{c.inputs[0]};
  };
}

// The backward of an activation written in its output y: dx = f(y, dy), not differentiable
// again (as gelu_backward), checked through the forward op.
OpDef output_backward_op(const std::string& name, const std::string& doc, Formula f, const std::string& forward,
                         int flops_per_element) {
  OpDef d = OpDef::declare(name, "activation", doc, {"y", "dy"});
  d.infer = infer_like_dy("y");
  cpu::make_pointwise(d, f);
  d.differentiable = false;
  d.checked_via = forward;
  d.gradcheck = {gc({{{3, 4}}, {{3, 4}}})};  // for the CUDA tests and the saved-tensor check
  d.cost = cpu::elementwise_cost(flops_per_element);
  return d;
}

// The backward of an activation written in its input x: dx = f(x, dy; params), not
// differentiable again, checked through the forward op.
OpDef input_backward_op(const std::string& name, const std::string& doc, Formula f, const std::string& forward,
                        int flops_per_element, std::vector<AttrSpec> attrs = {}) {
  OpDef d = OpDef::declare(name, "activation", doc, {"x", "dy"});
  d.attrs = std::move(attrs);
  d.infer = infer_like_dy("x");
  std::vector<std::string> params;
  for (auto& a : d.attrs) params.push_back(a.name);
  cpu::make_pointwise(d, f, params);
  d.differentiable = false;
  d.checked_via = forward;
  d.gradcheck = {gc({{{3, 4}}, {{3, 4}}})};  // for the CUDA tests and the saved-tensor check
  d.cost = cpu::elementwise_cost(flops_per_element);
  return d;
}

// Attributes of hardsigmoid and its backward: PyTorch's relu6(x + 3)/6 by default.
std::vector<AttrSpec> hardsigmoid_attrs() {
  return {make_attr("alpha", AttrType::real, 1.0 / 6.0, "slope of the ramp (ONNX's HardSigmoid uses 0.2)"),
          make_attr("beta", AttrType::real, 0.5, "the ramp's value at x = 0")};
}
// SELU's constants (Klambauer et al. 2017), as PyTorch's selu.
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;
std::vector<AttrSpec> elu_backward_attrs() {
  return {make_attr("alpha", AttrType::real, 1.0, "alpha of the forward elu"),
          make_attr("scale", AttrType::real, 1.0, "the forward's factor (selu's scale; 1 for elu)")};
}

OpDef relu_def() {
  OpDef d = activation("relu", "y = max(x, 0)");
  cpu::make_pointwise(d, Formula::relu);
  d.saves = {{SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("relu_backward", {g.output(0), g.grad_output(0)})};
  };
  d.backward_note = "dx = relu_backward(y, dy) = dy where y > 0, else 0";
  d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {}, "kink at 0 avoided")};
  return d;
}

OpDef leaky_relu_def() {
  OpDef d = activation("leaky_relu", "y = x if x > 0 else negative_slope * x");
  d.attrs = {make_attr("negative_slope", AttrType::real, 0.01, "slope for x < 0", 0.0)};
  cpu::make_pointwise(d, Formula::leaky_relu, {"negative_slope"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val x = g.input(0), dy = g.grad_output(0);
    return {g.call("where", {g.call("gt", {x, g.scalar_like(0, x)}), dy, dy * g.attrs().f("negative_slope")})};
  };
  d.backward_note = "dx = dy where x > 0, else negative_slope * dy";
  d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {{"negative_slope", 0.1}}, "kink at 0 avoided")};
  return d;
}

OpDef gelu_def() {
  OpDef d = activation("gelu", "y = x·Φ(x) = x/2·(1 + erf(x/√2)); tanh form: x/2·(1 + tanh(√(2/π)(x + 0.044715x³)))");
  d.attrs = {make_attr("approximate", AttrType::string, std::string("none"), "\"none\" (erf) or \"tanh\"", {}, {},
                       {"none", "tanh"})};
  cpu::make_pointwise(d, Formula::gelu, {"approximate"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("gelu_backward", {g.input(0), g.grad_output(0)}, {{"approximate", g.attrs().s("approximate")}})};
  };
  d.backward_note = "dx = gelu_backward(x, dy) = dy·(Φ(x) + x·φ(x))";
  d.cost = cpu::elementwise_cost(20);
  d.gradcheck = {gc({{{3, 4}}}), gc({{{3, 4}}}, {{"approximate", std::string("tanh")}}, "tanh form")};
  return d;
}

OpDef gelu_backward_def() {
  OpDef d = OpDef::declare("gelu_backward", "activation",
                           "dx = dy·(Φ(x) + x·φ(x)) (erf form) or the derivative of the tanh form", {"x", "dy"});
  d.attrs = {make_attr("approximate", AttrType::string, std::string("none"), "\"none\" (erf) or \"tanh\"", {}, {},
                       {"none", "tanh"})};
  d.infer = infer_like_dy("x");
  cpu::make_pointwise(d, Formula::gelu_backward, {"approximate"});
  d.differentiable = false;
  d.checked_via = "gelu";
  // Cases for the CUDA tests and the saved-tensor check (it is gradchecked through gelu).
  d.gradcheck = {gc({{{3, 4}}, {{3, 4}}}),
                 gc({{{3, 4}}, {{3, 4}}}, {{"approximate", std::string("tanh")}}, "tanh form")};
  d.cost = cpu::elementwise_cost(30);
  return d;
}

OpDef sigmoid_def() {
  OpDef d = activation("sigmoid", "y = 1 / (1 + e^-x)");
  cpu::make_pointwise(d, Formula::sigmoid);
  d.saves = {{SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("sigmoid_backward", {g.output(0), g.grad_output(0)})};
  };
  d.backward_note = "dx = sigmoid_backward(y, dy) = dy · y · (1 - y)";
  d.cost = cpu::elementwise_cost(12);
  return d;
}

OpDef softplus_def() {
  OpDef d = activation("softplus", "y = log(1 + e^(beta·x)) / beta; y = x where beta·x > threshold (a smooth relu)");
  d.attrs = {make_attr("beta", AttrType::real, 1.0, "sharpness: the larger, the closer to relu", 1e-6),
             make_attr("threshold", AttrType::real, 20.0,
                       "above it beta·x gives x itself (e^(beta·x) would overflow)")};
  cpu::make_pointwise(d, Formula::softplus, {"beta", "threshold"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    Val x = g.input(0), dy = g.grad_output(0), bx = x * g.attrs().f("beta");
    Val linear = g.call("gt", {bx, g.scalar_like(g.attrs().f("threshold"), bx)});
    return {g.call("where", {linear, dy, dy * g.call("sigmoid", {bx})})};
  };
  d.backward_note = "dx = dy · sigmoid(beta·x), dy where beta·x > threshold";
  d.cost = cpu::elementwise_cost(20);
  d.gradcheck = {gc({{{3, 4}}}), gc({{{2, 3, 2}}}, {{"beta", 2.5}}, "beta 2.5"),
                 gc({{{3, 4}, Domain::away_zero}}, {{"threshold", 0.1}}, "linear above the threshold (jump avoided)")};
  return d;
}

OpDef tanh_def() {
  OpDef d = activation("tanh", "y = tanh(x)");
  cpu::make_pointwise(d, Formula::tanh);
  d.saves = {{SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("tanh_backward", {g.output(0), g.grad_output(0)})};
  };
  d.backward_note = "dx = tanh_backward(y, dy) = dy · (1 - y²)";
  d.cost = cpu::elementwise_cost(12);
  return d;
}

OpDef hardsigmoid_def() {
  OpDef d = activation("hardsigmoid", "y = clamp(alpha·x + beta, 0, 1) = relu6(x + 3)/6 with the defaults");
  d.attrs = hardsigmoid_attrs();
  cpu::make_pointwise(d, Formula::hardsigmoid, {"alpha", "beta"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("hardsigmoid_backward", {g.input(0), g.grad_output(0)},
                   {{"alpha", g.attrs().f("alpha")}, {"beta", g.attrs().f("beta")}})};
  };
  d.backward_note = "dx = hardsigmoid_backward(x, dy) = alpha·dy where 0 < alpha·x + beta < 1, else 0";
  d.cost = cpu::elementwise_cost(4);
  d.gradcheck = {gc({{{3, 4}}}, {}, "the ramp (|x| < 3)"),
                 gc({{{3, 4}, Domain::away_zero}}, {{"alpha", 1.0}, {"beta", 0.25}},
                    "alpha 1, beta 0.25: both flat parts")};
  return d;
}

OpDef hardswish_def() {
  OpDef d = activation("hardswish", "y = x·relu6(x + 3)/6: 0 below −3, x above 3, x·(x + 3)/6 between");
  cpu::make_pointwise(d, Formula::hardswish);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("hardswish_backward", {g.input(0), g.grad_output(0)})};
  };
  d.backward_note = "dx = hardswish_backward(x, dy) = 0, dy·(2x + 3)/6, dy below −3, between, above 3";
  d.cost = cpu::elementwise_cost(5);
  return d;
}

OpDef elu_def() {
  OpDef d = activation("elu", "y = x for x > 0, alpha·(e^x − 1) below");
  d.attrs = {make_attr("alpha", AttrType::real, 1.0, "the value elu tends to is −alpha")};
  cpu::make_pointwise(d, Formula::elu, {"alpha"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("elu_backward", {g.input(0), g.grad_output(0)}, {{"alpha", g.attrs().f("alpha")}})};
  };
  d.backward_note = "dx = elu_backward(x, dy) = dy for x > 0, alpha·e^x·dy below";
  d.cost = cpu::elementwise_cost(10);
  d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {}, "kink at 0 avoided"),
                 gc({{{2, 3, 2}, Domain::away_zero}}, {{"alpha", 0.5}}, "alpha 0.5")};
  return d;
}

OpDef selu_def() {
  OpDef d = activation("selu", "y = scale·(x for x > 0, alpha·(e^x − 1) below), alpha ≈ 1.6733, scale ≈ 1.0507");
  d.attrs = {make_attr("alpha", AttrType::real, kSeluAlpha, "SELU's alpha (the self-normalising constant)"),
             make_attr("scale", AttrType::real, kSeluScale, "SELU's scale, lambda (ONNX's gamma)")};
  cpu::make_pointwise(d, Formula::selu, {"alpha", "scale"});
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("elu_backward", {g.input(0), g.grad_output(0)},
                   {{"alpha", g.attrs().f("alpha")}, {"scale", g.attrs().f("scale")}})};
  };
  d.backward_note = "dx = elu_backward(x, dy, alpha, scale) = scale·dy for x > 0, scale·alpha·e^x·dy below";
  d.cost = cpu::elementwise_cost(11);
  d.gradcheck = {gc({{{3, 4}, Domain::away_zero}}, {}, "kink at 0 avoided")};
  return d;
}

OpDef mish_def() {
  OpDef d = activation("mish", "y = x·tanh(softplus(x)) = x·tanh(log(1 + e^x))");
  cpu::make_pointwise(d, Formula::mish);
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.call("mish_backward", {g.input(0), g.grad_output(0)})}; };
  d.backward_note = "dx = mish_backward(x, dy) = dy·(t + x·sigmoid(x)·(1 − t²)), t = tanh(softplus(x))";
  d.cost = cpu::elementwise_cost(30);
  return d;
}

OPSCOPE_REGISTER_OPS(register_activation_ops) {
  registry.add(relu_def());
  registry.add(leaky_relu_def());
  registry.add(gelu_def());
  registry.add(gelu_backward_def());
  registry.add(sigmoid_def());
  registry.add(softplus_def());
  registry.add(tanh_def());
  registry.add(hardsigmoid_def());
  registry.add(input_backward_op("hardsigmoid_backward", "dx = alpha·dy where 0 < alpha·x + beta < 1, else 0",
                                 Formula::hardsigmoid_backward, "hardsigmoid", 4, hardsigmoid_attrs()));
  registry.add(hardswish_def());
  registry.add(input_backward_op("hardswish_backward", "dx = 0 (x < −3), dy·(x/3 + 1/2) (x <= 3), dy (x > 3)",
                                 Formula::hardswish_backward, "hardswish", 4));
  registry.add(elu_def());
  registry.add(selu_def());
  registry.add(input_backward_op("elu_backward", "dx = scale·dy for x > 0, scale·alpha·e^x·dy below (elu and selu)",
                                 Formula::elu_backward, "elu", 10, elu_backward_attrs()));
  registry.add(mish_def());
  registry.add(input_backward_op("mish_backward", "dx = dy·(t + x·sigmoid(x)·(1 − t²)), t = tanh(softplus(x))",
                                 Formula::mish_backward, "mish", 40));
  // One op, one pass, for each of these backward formulas (as PyTorch's tanh_backward,
  // sigmoid_backward and threshold_backward): gradchecked through the forward op they differentiate.
  registry.add(
      output_backward_op("tanh_backward", "dx = dy · (1 - y²), y = tanh(x)", Formula::tanh_backward, "tanh", 3));
  registry.add(output_backward_op("sigmoid_backward", "dx = dy · y · (1 - y), y = sigmoid(x)",
                                  Formula::sigmoid_backward, "sigmoid", 3));
  // One pass where where(gt(y, 0), dy, 0) was two and an int64 mask as large as y.
  registry.add(output_backward_op("relu_backward", "dx = dy where y > 0, else 0; y = relu(x)", Formula::relu_backward,
                                  "relu", 1));
}

}  // namespace
}  // namespace opscope
