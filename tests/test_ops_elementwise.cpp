// Elementwise ops against independent references: std:: math in plain loops.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <functional>

#include "core/random.h"
#include "tests/helpers.h"

using namespace opscope;

namespace {
void check_unary(Workspace& ws, const char* op, const std::function<double(double)>& ref, const Tensor& x,
                 const AttrMap& attrs = {}, double tol = 1e-12) {
  INFO(op);
  Tensor y = ws.call(op, {x}, attrs);
  REQUIRE(y.shape() == x.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    CHECK(std::fabs(y.get(i) - ref(x.get(i))) <= tol * std::max(1.0, std::fabs(ref(x.get(i)))));
}
}  // namespace

TEST_CASE("unary ops and activations match std:: math", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::randn({5, 7}, 11);
  Tensor pos = ws.call("abs", {x});
  check_unary(
      ws, "neg", [](double v) { return -v; }, x);
  check_unary(
      ws, "exp", [](double v) { return std::exp(v); }, x);
  check_unary(
      ws, "log", [](double v) { return std::log(v); }, pos);
  check_unary(
      ws, "sqrt", [](double v) { return std::sqrt(v); }, pos);
  check_unary(
      ws, "abs", [](double v) { return std::fabs(v); }, x);
  check_unary(
      ws, "sign", [](double v) { return v > 0   ? 1.0
                                        : v < 0 ? -1.0
                                                : 0.0; }, x);
  check_unary(
      ws, "relu", [](double v) { return v > 0 ? v : 0.0; }, x);
  check_unary(ws, "leaky_relu", [](double v) { return v > 0 ? v : 0.2 * v; }, x, {{"negative_slope", 0.2}});
  check_unary(
      ws, "sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, x);
  check_unary(
      ws, "tanh", [](double v) { return std::tanh(v); }, x);
  check_unary(
      ws, "erf", [](double v) { return std::erf(v); }, x);
  check_unary(ws, "clip", [](double v) { return std::clamp(v, -0.3, 0.5); }, x, {{"min", -0.3}, {"max", 0.5}});
  check_unary(ws, "clip", [](double v) { return std::max(v, 0.1); }, x, {{"min", 0.1}});
  check_unary(
      ws, "gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, x);
  check_unary(ws, "gelu",
              [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, x,
              {{"approximate", std::string("tanh")}});
  // softplus: PyTorch's log(1 + e^(βx))/β, and x itself once βx passes the threshold.
  check_unary(
      ws, "softplus", [](double v) { return std::log(1 + std::exp(v)); }, x);
  check_unary(ws, "softplus", [](double v) { return 2 * v > 1 ? v : std::log(1 + std::exp(2 * v)) / 2; }, x,
              {{"beta", 2.0}, {"threshold", 1.0}});
  Tensor big = ws.call("mul", {x, Tensor::scalar(100.0)});  // e^(βx) would overflow: softplus is x there
  check_unary(
      ws, "softplus", [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); }, big);
  // float32 kernels agree with the float64 reference to float precision.
  Tensor xf = x.cast(DType::f32);
  check_unary(
      ws, "gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, xf, {}, 1e-6);
  check_unary(
      ws, "exp", [](double v) { return std::exp(v); }, xf, {}, 1e-6);
  check_unary(
      ws, "erf", [](double v) { return std::erf(v); }, xf, {}, 1e-6);
  // clip keeps integers integers; infinite bounds saturate.
  Tensor ints = Tensor::from_vector<int64_t>({-5, 0, 7, 12}, {4}, DType::i64);
  Tensor clipped = ws.call("clip", {ints}, {{"min", -1.0}, {"max", 9.0}});
  CHECK(clipped.dtype() == DType::i64);
  CHECK(clipped.to_vector() == std::vector<double>{-1, 0, 7, 9});
  CHECK(ws.call("clip", {ints}).to_vector() == std::vector<double>{-5, 0, 7, 12});
}

// MobileNetV3's, SELU's and YOLOv4's activations and the rounding and trigonometric ops, on
// values that reach every piece of each formula (x from −6 to 6): the formulas as PyTorch's
// documentation writes them.
TEST_CASE("hardsigmoid, hardswish, elu, selu, mish, floor, ceil, round, sin, cos match their definitions", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::randn({6, 9}, 21, DType::f64, 3.0);
  const auto relu6 = [](double v) { return std::clamp(v, 0.0, 6.0); };
  check_unary(
      ws, "hardsigmoid", [&](double v) { return relu6(v + 3) / 6; }, x);
  check_unary(ws, "hardsigmoid", [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }, x, {{"alpha", 0.2}});
  check_unary(
      ws, "hardswish", [&](double v) { return v * relu6(v + 3) / 6; }, x);
  check_unary(
      ws, "elu", [](double v) { return v > 0 ? v : std::exp(v) - 1; }, x);
  check_unary(ws, "elu", [](double v) { return v > 0 ? v : 0.5 * (std::exp(v) - 1); }, x, {{"alpha", 0.5}});
  const double a = 1.6732632423543772848170429916717, s = 1.0507009873554804934193349852946;
  check_unary(
      ws, "selu", [&](double v) { return s * (std::max(0.0, v) + std::min(0.0, a * (std::exp(v) - 1))); }, x);
  check_unary(
      ws, "mish", [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }, x);
  check_unary(
      ws, "floor", [](double v) { return std::floor(v); }, x);
  check_unary(
      ws, "ceil", [](double v) { return std::ceil(v); }, x);
  check_unary(
      ws, "sin", [](double v) { return std::sin(v); }, x);
  check_unary(
      ws, "cos", [](double v) { return std::cos(v); }, x);
  // round: halves go to the even neighbour, as NumPy's and PyTorch's.
  Tensor halves = Tensor::from_vector<double>({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6, -2.4}, {8});
  CHECK(ws.call("round", {halves}).to_vector() == std::vector<double>{-2, -2, -0, 0, 2, 2, 3, -2});
  // On integers the rounding ops are the identity.
  Tensor ints = Tensor::from_vector<int64_t>({-3, 0, 5}, {3}, DType::i64);
  for (const char* op : {"floor", "ceil", "round"}) {
    INFO(op);
    CHECK(ws.call(op, {ints}).dtype() == DType::i64);
    CHECK(ws.call(op, {ints}).to_vector() == std::vector<double>{-3, 0, 5});
  }
  // Large inputs: mish is x, elu and selu keep their asymptotes.
  Tensor big = Tensor::from_vector<double>({50, -50}, {2});
  CHECK(ws.call("mish", {big}).to_vector()[0] == 50);
  CHECK(std::fabs(ws.call("mish", {big}).to_vector()[1]) < 1e-18);
  CHECK(ws.call("elu", {big}).to_vector()[1] == -1);
}

// The backward ops of the piecewise activations on every piece, against the derivative written
// out (PyTorch's choices at the kinks), and through autograd.
TEST_CASE("the piecewise activations' backward ops give the derivative on every piece", "[grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({-4, -3, -2, -0.5, 0.5, 2, 3, 4}, {8});
  Tensor dy = Tensor::full({8}, 2.0, DType::f64);
  CHECK(ws.call("hardswish_backward", {x, dy}).to_vector() ==
        std::vector<double>{0, 2 * (-1 + 0.5), 2 * (-2.0 / 3 + 0.5), 2 * (-0.5 / 3 + 0.5), 2 * (0.5 / 3 + 0.5),
                            2 * (2.0 / 3 + 0.5), 2 * 1.5, 2});
  CHECK(ws.call("hardsigmoid_backward", {x, dy}).to_vector() ==
        std::vector<double>{0, 0, 2.0 / 6, 2.0 / 6, 2.0 / 6, 2.0 / 6, 0, 0});
  Tensor xp = test::param(x.clone());
  ws.backward(ws.call("sum", {ws.call("elu", {xp}, {{"alpha", 0.5}})}));
  for (int64_t i = 0; i < 8; ++i) CHECK(xp.grad().get(i) == Approx(x.get(i) > 0 ? 1.0 : 0.5 * std::exp(x.get(i))));
  test::require_gradcheck("hardswish");
  test::require_gradcheck("mish");
  test::require_gradcheck("selu");
}

// mod takes the sign of the divisor (Python's %), fmod that of the dividend (C's fmod), for
// floats and integers alike; integer division by 0 gives 0 instead of trapping.
TEST_CASE("mod and fmod: the sign of the remainder, floats and integers, and their gradients", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<double>({7, -7, 7, -7, 5.5, -0.5}, {6});
  Tensor b = Tensor::from_vector<double>({3, 3, -3, -3, 2, 2}, {6});
  CHECK(ws.call("mod", {a, b}).to_vector() == std::vector<double>{1, 2, -2, -1, 1.5, 1.5});
  CHECK(ws.call("fmod", {a, b}).to_vector() == std::vector<double>{1, -1, 1, -1, 1.5, -0.5});
  Tensor ai = a.cast(DType::i64), bi = b.cast(DType::i64);  // 5.5 → 5, −0.5 → 0
  CHECK(ws.call("mod", {ai, bi}).dtype() == DType::i64);
  CHECK(ws.call("mod", {ai, bi}).to_vector() == std::vector<double>{1, 2, -2, -1, 1, 0});
  CHECK(ws.call("fmod", {ai, bi}).to_vector() == std::vector<double>{1, -1, 1, -1, 1, 0});
  Tensor zero = Tensor::from_vector<int64_t>({0, -1}, {2}, DType::i64);
  Tensor big = Tensor::from_vector<int64_t>({5, INT64_MIN}, {2}, DType::i64);
  CHECK(ws.call("mod", {big, zero}).to_vector() == std::vector<double>{0, 0});
  // db = −dc·⌊a/b⌋ (mod) or −dc·trunc(a/b) (fmod).
  Tensor ap = test::param(Tensor::from_vector<double>({7, -7}, {2})),
         bp = test::param(Tensor::from_vector<double>({2, 2}, {2}));
  ws.backward(ws.call("sum", {ws.call("mod", {ap, bp})}));
  CHECK(bp.grad().to_vector() == std::vector<double>{-3, 4});
  CHECK(ap.grad().to_vector() == std::vector<double>{1, 1});
  bp.set_grad(Tensor());
  ws.backward(ws.call("sum", {ws.call("fmod", {ap, bp})}));
  CHECK(bp.grad().to_vector() == std::vector<double>{-3, 3});
}

TEST_CASE("gelu's two forms differ by less than 1e-3", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::randn({100}, 3, DType::f64, 2.0);
  Tensor a = ws.call("gelu", {x}), b = ws.call("gelu", {x}, {{"approximate", std::string("tanh")}});
  CHECK(test::max_diff(a, b) < 1e-3);
  CHECK(test::max_diff(a, b) > 0);
}

TEST_CASE("binary ops broadcast like NumPy", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = Tensor::from_vector<double>({10, 20, 30}, {3});
  Tensor col = Tensor::from_vector<double>({100, 200}, {2, 1});
  CHECK(ws.call("add", {a, row}).to_vector() == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(ws.call("sub", {a, col}).to_vector() == std::vector<double>{-99, -98, -97, -196, -195, -194});
  CHECK(ws.call("mul", {row, col}).to_vector() == std::vector<double>{1000, 2000, 3000, 2000, 4000, 6000});
  CHECK(ws.call("div", {a, Tensor::scalar(2.0, DType::f64)}).to_vector() ==
        std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3});
  CHECK(ws.call("pow", {a, Tensor::scalar(2.0, DType::f64)}).to_vector() == std::vector<double>{1, 4, 9, 16, 25, 36});
  CHECK(ws.call("maximum", {a, Tensor::scalar(3.5, DType::f64)}).to_vector() ==
        std::vector<double>{3.5, 3.5, 3.5, 4, 5, 6});
  CHECK(ws.call("minimum", {a, Tensor::scalar(3.5, DType::f64)}).to_vector() ==
        std::vector<double>{1, 2, 3, 3.5, 3.5, 3.5});
  // A strided (transposed) operand.
  Tensor at = a.view_transpose(0, 1);  // [[1,4],[2,5],[3,6]]
  CHECK(ws.call("add", {at, col.view_reshape({2})}).to_vector() == std::vector<double>{101, 204, 102, 205, 103, 206});
}

TEST_CASE("comparisons give int64 masks; where selects; dtypes promote", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<double>({1, 2, 3}, {3});
  Tensor b = Tensor::from_vector<double>({3, 2, 1}, {3});
  Tensor gt = ws.call("gt", {a, b});
  CHECK(gt.dtype() == DType::i64);
  CHECK(gt.to_vector() == std::vector<double>{0, 0, 1});
  CHECK(ws.call("eq", {a, b}).to_vector() == std::vector<double>{0, 1, 0});
  CHECK(ws.call("ne", {a, b}).to_vector() == std::vector<double>{1, 0, 1});
  CHECK(ws.call("lt", {a, b}).to_vector() == std::vector<double>{1, 0, 0});
  CHECK(ws.call("le", {a, b}).to_vector() == std::vector<double>{1, 1, 0});
  CHECK(ws.call("ge", {a, b}).to_vector() == std::vector<double>{0, 1, 1});
  CHECK(ws.call("where", {gt, a, b}).to_vector() == std::vector<double>{3, 2, 3});
  Tensor i = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  Tensor f = Tensor::from_vector<float>({0.5f, 0.5f, 0.5f}, {3});
  CHECK(ws.call("add", {i, f}).dtype() == DType::f32);
  CHECK(ws.call("add", {i, i}).dtype() == DType::i64);
  CHECK(ws.call("div", {i, i}).dtype() == DType::f32);  // true division
  CHECK(ws.call("add", {f, a}).dtype() == DType::f64);
  CHECK(ws.call("cast", {a}, {{"dtype", std::string("int64")}}).dtype() == DType::i64);
}

TEST_CASE("mixed-dtype gradients come back in each input's dtype", "[grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = test::param(Tensor::from_vector<float>({1, 2}, {2}));
  Tensor b = test::param(Tensor::from_vector<double>({3, 4}, {2}));
  ws.backward(ws.call("sum", {ws.call("mul", {a, b})}));
  CHECK(a.grad().dtype() == DType::f32);
  CHECK(b.grad().dtype() == DType::f64);
  CHECK(a.grad().to_vector() == std::vector<double>{3, 4});
  CHECK(b.grad().to_vector() == std::vector<double>{1, 2});
}

// The fused kernel runs the same formulas (ops/pointwise.h) as each op's own kernel: for every
// fusible op (floating output), one instruction of fused_elementwise equals the op itself.
TEST_CASE("every pointwise op gives the same values through fused_elementwise as through its own kernel", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard no_grad;
  const OpDef& fused = OpRegistry::instance().get("fused_elementwise");
  size_t checked = 0;
  for (const OpDef* op : OpRegistry::instance().all()) {
    if (!op->is_pointwise() || op->gradcheck.empty()) continue;
    const GradcheckCase& c = op->gradcheck[0];
    const std::vector<Tensor> ins = make_case_inputs(c, 5);
    const Attrs attrs = op->resolve(c.attrs);
    const Tensor direct = ws.call_multi(*op, ins, attrs)[0];
    if (!is_floating(direct.dtype())) continue;  // comparisons: int64 masks are not fused
    std::string chain = op->name;
    for (double v : op->formula_params(attrs)) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "/%.17g", v);
      chain += buf;
    }
    chain += op->pointwise.arity == 2 ? " i0 i1" : " i0";
    INFO(op->name << ": " << chain);
    const Tensor y = ws.call_multi(fused, ins, fused.resolve({{"chain", chain}, {"shape", direct.shape()}}))[0];
    CHECK(test::max_diff(y, direct) <= 1e-12);
    ++checked;
  }
  CHECK(checked >= 20);
}
