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
  for (int64_t i = 0; i < x.numel(); ++i) CHECK(std::fabs(y.get(i) - ref(x.get(i))) <= tol * std::max(1.0, std::fabs(ref(x.get(i)))));
}
}  // namespace

TEST_CASE("unary ops and activations match std:: math", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::randn({5, 7}, 11);
  Tensor pos = ws.call("abs", {x});
  check_unary(ws, "neg", [](double v) { return -v; }, x);
  check_unary(ws, "exp", [](double v) { return std::exp(v); }, x);
  check_unary(ws, "log", [](double v) { return std::log(v); }, pos);
  check_unary(ws, "sqrt", [](double v) { return std::sqrt(v); }, pos);
  check_unary(ws, "abs", [](double v) { return std::fabs(v); }, x);
  check_unary(ws, "sign", [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }, x);
  check_unary(ws, "relu", [](double v) { return v > 0 ? v : 0.0; }, x);
  check_unary(ws, "leaky_relu", [](double v) { return v > 0 ? v : 0.2 * v; }, x, {{"negative_slope", 0.2}});
  check_unary(ws, "sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, x);
  check_unary(ws, "tanh", [](double v) { return std::tanh(v); }, x);
  check_unary(ws, "erf", [](double v) { return std::erf(v); }, x);
  check_unary(ws, "clip", [](double v) { return std::clamp(v, -0.3, 0.5); }, x, {{"min", -0.3}, {"max", 0.5}});
  check_unary(ws, "clip", [](double v) { return std::max(v, 0.1); }, x, {{"min", 0.1}});
  check_unary(ws, "gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, x);
  check_unary(ws, "gelu",
              [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, x,
              {{"approximate", std::string("tanh")}});
  // softplus: PyTorch's log(1 + e^(βx))/β, and x itself once βx passes the threshold.
  check_unary(ws, "softplus", [](double v) { return std::log(1 + std::exp(v)); }, x);
  check_unary(ws, "softplus", [](double v) { return 2 * v > 1 ? v : std::log(1 + std::exp(2 * v)) / 2; }, x,
              {{"beta", 2.0}, {"threshold", 1.0}});
  Tensor big = ws.call("mul", {x, Tensor::scalar(100.0)});  // e^(βx) would overflow: softplus is x there
  check_unary(ws, "softplus", [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); }, big);
  // float32 kernels agree with the float64 reference to float precision.
  Tensor xf = x.cast(DType::f32);
  check_unary(ws, "gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, xf, {}, 1e-6);
  check_unary(ws, "exp", [](double v) { return std::exp(v); }, xf, {}, 1e-6);
  check_unary(ws, "erf", [](double v) { return std::erf(v); }, xf, {}, 1e-6);
  // clip keeps integers integers; infinite bounds saturate.
  Tensor ints = Tensor::from_vector<int64_t>({-5, 0, 7, 12}, {4}, DType::i64);
  Tensor clipped = ws.call("clip", {ints}, {{"min", -1.0}, {"max", 9.0}});
  CHECK(clipped.dtype() == DType::i64);
  CHECK(clipped.to_vector() == std::vector<double>{-1, 0, 7, 9});
  CHECK(ws.call("clip", {ints}).to_vector() == std::vector<double>{-5, 0, 7, 12});
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
  CHECK(ws.call("div", {a, Tensor::scalar(2.0, DType::f64)}).to_vector() == std::vector<double>{0.5, 1, 1.5, 2, 2.5, 3});
  CHECK(ws.call("pow", {a, Tensor::scalar(2.0, DType::f64)}).to_vector() == std::vector<double>{1, 4, 9, 16, 25, 36});
  CHECK(ws.call("maximum", {a, Tensor::scalar(3.5, DType::f64)}).to_vector() == std::vector<double>{3.5, 3.5, 3.5, 4, 5, 6});
  CHECK(ws.call("minimum", {a, Tensor::scalar(3.5, DType::f64)}).to_vector() == std::vector<double>{1, 2, 3, 3.5, 3.5, 3.5});
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
