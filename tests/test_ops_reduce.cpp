// Tests of ops/reduce.cpp (sum, mean, max, var, sum_to), ops/softmax.cpp (softmax,
// softmax_backward, log_softmax) and ops/loss.cpp (cross_entropy, mse_loss): values against
// hand-computed numbers and naive loops written here, shape errors, and gradcheck.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "core/gradcheck.h"
#include "core/op.h"
#include "core/workspace.h"

using namespace opscope;
using Catch::Contains;
using V = std::vector<int64_t>;

namespace {

Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype = DType::f64, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector<double>(v, shape, dtype);
}

void require_close(const Tensor& t, const std::vector<double>& expected, double tol) {
  REQUIRE(t.numel() == static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    INFO("element " << i << ": " << t.get(i) << " vs " << expected[static_cast<size_t>(i)]);
    REQUIRE(std::fabs(t.get(i) - expected[static_cast<size_t>(i)]) <= tol);
  }
}

// Row-major multi-index of flat index i.
std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

// Naive reference reduction: groups the elements of x by their kept indices.
// kind: 0 sum, 1 mean, 2 max, 3 var (unbiased), 4 var (biased).
std::vector<double> reference_reduce(const Tensor& x, const std::vector<int64_t>& axes, int kind) {
  const Shape& s = x.shape();
  std::vector<bool> reduced(s.size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  Shape kept;
  for (size_t d = 0; d < s.size(); ++d)
    if (!reduced[d]) kept.push_back(s[d]);
  std::vector<std::vector<double>> groups(static_cast<size_t>(shape_numel(kept)));
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto idx = unravel(i, s);
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (!reduced[d]) o = o * s[d] + idx[d];
    groups[static_cast<size_t>(o)].push_back(x.get(i));
  }
  std::vector<double> out;
  for (auto& g : groups) {
    double sum = 0, mx = -std::numeric_limits<double>::infinity();
    for (double v : g) sum += v, mx = std::max(mx, v);
    const double mean = sum / static_cast<double>(g.size());
    double ss = 0;
    for (double v : g) ss += (v - mean) * (v - mean);
    switch (kind) {
      case 0: out.push_back(sum); break;
      case 1: out.push_back(mean); break;
      case 2: out.push_back(mx); break;
      case 3: out.push_back(ss / static_cast<double>(g.size() - 1)); break;
      default: out.push_back(ss / static_cast<double>(g.size())); break;
    }
  }
  return out;
}

// Naive softmax of each row of a [N, C] tensor in double, stable form.
std::vector<double> reference_softmax_rows(const std::vector<double>& x, int64_t N, int64_t C) {
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < N; ++i) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t j = 0; j < C; ++j) m = std::max(m, x[i * C + j]);
    for (int64_t j = 0; j < C; ++j) s += std::exp(x[i * C + j] - m);
    for (int64_t j = 0; j < C; ++j) out[i * C + j] = std::exp(x[i * C + j] - m) / s;
  }
  return out;
}

void require_gradcheck(const char* name) {
  const OpDef& op = OpRegistry::instance().get(name);
  auto results = gradcheck_op(op);
  REQUIRE(!results.empty());
  for (const GradcheckResult& r : results) {
    INFO(r.op << " algo=" << r.algo << " case " << r.case_index << " (" << r.note << "): " << r.message
              << " max_abs_error=" << r.max_abs_error);
    CHECK(r.passed);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// reduce.cpp

TEST_CASE("sum, mean, max, var: hand-computed values", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});

  Tensor rows = ws.call("sum", {x}, {{"axes", V{1}}});
  REQUIRE(rows.shape() == Shape{2});
  require_close(rows, {6, 15}, 0);
  require_close(ws.call("sum", {x}, {{"axes", V{0}}}), {5, 7, 9}, 0);
  require_close(ws.call("sum", {x}, {{"axes", V{-1}}}), {6, 15}, 0);
  Tensor all = ws.call("sum", {x});
  REQUIRE(all.shape() == Shape{});
  REQUIRE(all.item() == 21);
  Tensor kept = ws.call("sum", {x}, {{"axes", V{1}}, {"keepdim", true}});
  REQUIRE(kept.shape() == Shape{2, 1});
  REQUIRE(ws.call("sum", {x}, {{"keepdim", true}}).shape() == Shape{1, 1});

  require_close(ws.call("mean", {x}, {{"axes", V{1}}}), {2, 5}, 1e-15);
  require_close(ws.call("mean", {x}), {3.5}, 1e-15);
  require_close(ws.call("max", {x}, {{"axes", V{0}}}), {4, 5, 6}, 0);
  require_close(ws.call("max", {x}), {6}, 0);
  // var of {1,2,3}: mean 2, squares 1+0+1 = 2; unbiased /2 = 1, biased /3.
  require_close(ws.call("var", {x}, {{"axes", V{1}}}), {1, 1}, 1e-15);
  require_close(ws.call("var", {x}, {{"axes", V{1}}, {"unbiased", false}}), {2.0 / 3, 2.0 / 3}, 1e-15);
  // var over axis 0 of columns {1,4}: mean 2.5, squares 4.5, unbiased 4.5.
  require_close(ws.call("var", {x}, {{"axes", V{0}}}), {4.5, 4.5, 4.5}, 1e-14);
}

TEST_CASE("sum of int64 stays int64; 0-d and empty inputs", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor xi = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = ws.call("sum", {xi}, {{"axes", V{0}}});
  REQUIRE(s.dtype() == DType::i64);
  require_close(s, {5, 7, 9}, 0);

  Tensor scalar = Tensor::scalar(2.5, DType::f64);
  REQUIRE(ws.call("sum", {scalar}).item() == 2.5);
  REQUIRE(ws.call("mean", {scalar}).item() == 2.5);

  Tensor empty = Tensor::zeros({0, 3}, DType::f64);
  Tensor se = ws.call("sum", {empty}, {{"axes", V{0}}});
  REQUIRE(se.shape() == Shape{3});
  require_close(se, {0, 0, 0}, 0);
  REQUIRE(ws.call("sum", {empty}, {{"axes", V{1}}}).shape() == Shape{0});
}

TEST_CASE("reductions over any axis set match a naive loop", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const std::vector<std::vector<int64_t>> axis_sets = {{}, {0}, {3}, {1, 2}, {0, 2}, {1, 3}, {0, 1, 3}, {0, 1, 2, 3}};
  const char* names[] = {"sum", "mean", "max", "var", "var"};
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor x = random_tensor({2, 3, 4, 5}, 7, dt);
    const double tol = dt == DType::f64 ? 1e-12 : 2e-5;
    for (const auto& axes : axis_sets) {
      for (int kind = 0; kind < 5; ++kind) {
        INFO(names[kind] << " axes=" << attr_value_str(axes) << " dtype=" << dtype_name(dt));
        AttrMap attrs{{"axes", axes}};
        if (kind == 4) attrs.push_back({"unbiased", false});
        Tensor y = ws.call(names[kind], {x}, attrs);
        REQUIRE(y.dtype() == dt);
        require_close(y, reference_reduce(x, axes, kind), tol);
      }
    }
  }
  // The same reduction given with negative axes and in another order.
  Tensor x = random_tensor({2, 3, 4, 5}, 8);
  Tensor a = ws.call("sum", {x}, {{"axes", V{-1, 1}}});
  REQUIRE(a.shape() == Shape{2, 4});
  require_close(a, reference_reduce(x, {1, 3}, 0), 1e-12);
  Tensor k = ws.call("max", {x}, {{"axes", V{0, 2}}, {"keepdim", true}});
  REQUIRE(k.shape() == Shape{1, 3, 1, 5});
  require_close(k, reference_reduce(x, {0, 2}, 2), 0);
}

TEST_CASE("max propagates NaN", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::from_vector<double>({1, nan, 3, 4, 5, 6}, {2, 3});
  Tensor rows = ws.call("max", {x}, {{"axes", V{1}}});
  REQUIRE(std::isnan(rows.get(0)));
  REQUIRE(rows.get(1) == 6);
  Tensor cols = ws.call("max", {x}, {{"axes", V{0}}});
  REQUIRE(cols.get(0) == 4);
  REQUIRE(std::isnan(cols.get(1)));
  REQUIRE(cols.get(2) == 6);
}

TEST_CASE("reduction errors name the shape and the rule", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::zeros({2, 3}, DType::f64);
  REQUIRE_THROWS_WITH(ws.call("sum", {x}, {{"axes", V{1, -1}}}), Contains("sum: axis 1 appears more than once"));
  REQUIRE_THROWS_WITH(ws.call("mean", {x}, {{"axes", V{2}}}), Contains("axis 2 is out of range"));
  REQUIRE_THROWS_WITH(ws.call("max", {x}, {{"axes", V{-3}}}), Contains("[2, 3]"));
  Tensor xi = Tensor::from_vector<int64_t>({1, 2}, {2});
  REQUIRE_THROWS_WITH(ws.call("mean", {xi}), Contains("mean: expected a floating-point tensor"));
  REQUIRE_THROWS_WITH(ws.call("var", {xi}), Contains("floating-point"));
  REQUIRE_THROWS_WITH(ws.call("max", {Tensor::zeros({0, 3}, DType::f64)}, {{"axes", V{0}}}),
                      Contains("axis 0 of size 0"));
  REQUIRE_THROWS_AS(ws.call("sum", {x}, {{"axes", V{5}}}), Error);
}

TEST_CASE("sum_to sums broadcast axes away", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor cols = ws.call("sum_to", {x}, {{"shape", V{3}}});
  REQUIRE(cols.shape() == Shape{3});
  require_close(cols, {5, 7, 9}, 0);
  Tensor rows = ws.call("sum_to", {x}, {{"shape", V{2, 1}}});
  REQUIRE(rows.shape() == Shape{2, 1});
  require_close(rows, {6, 15}, 0);
  Tensor row1 = ws.call("sum_to", {x}, {{"shape", V{1, 3}}});
  REQUIRE(row1.shape() == Shape{1, 3});
  require_close(row1, {5, 7, 9}, 0);
  require_close(ws.call("sum_to", {x}, {{"shape", V{}}}), {21}, 0);
  require_close(ws.call("sum_to", {x}, {{"shape", V{1, 1}}}), {21}, 0);
  require_close(ws.call("sum_to", {x}, {{"shape", V{2, 3}}}), {1, 2, 3, 4, 5, 6}, 0);

  // [2, 3, 4] -> [3, 1]: a leading axis and a trailing one (not one block: a permuted copy).
  Tensor y = random_tensor({2, 3, 4}, 3);
  Tensor z = ws.call("sum_to", {y}, {{"shape", V{3, 1}}});
  REQUIRE(z.shape() == Shape{3, 1});
  require_close(z, reference_reduce(y, {0, 2}, 0), 1e-12);

  REQUIRE_THROWS_WITH(ws.call("sum_to", {x}, {{"shape", V{2}}}), Contains("cannot sum [2, 3] down to [2]"));
  REQUIRE_THROWS_WITH(ws.call("sum_to", {x}, {{"shape", V{1, 2, 3}}}), Contains("sum_to"));
  REQUIRE_THROWS_WITH(ws.call("sum_to", {x}, {{"shape", V{4, 3}}}), Contains("must broadcast"));
  REQUIRE_THROWS(ws.call("sum_to", {x}));  // shape is required
}

TEST_CASE("max backward splits the gradient among ties", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 3, 3, 2, 0, -1}, {2, 3});
  x.set_requires_grad(true);
  Tensor m = ws.call("max", {x}, {{"axes", V{1}}});
  Tensor loss = ws.call("sum", {m});
  ws.backward(loss);
  REQUIRE(x.grad().defined());
  require_close(x.grad(), {0, 0.5, 0.5, 1, 0, 0}, 1e-15);
}

TEST_CASE("broadcast gradients are reduced by sum_to", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Tensor::from_vector<double>({10, 20, 30}, {3});
  b.set_requires_grad(true);
  Tensor c = ws.call("mul", {a, b});
  ws.backward(ws.call("sum", {c}));
  require_close(b.grad(), {5, 7, 9}, 0);
}

TEST_CASE("reductions pass gradcheck", "[op][grad]") {
  for (const char* name : {"sum", "mean", "max", "var", "sum_to"}) {
    INFO(name);
    require_gradcheck(name);
  }
}

// ---------------------------------------------------------------------------------------------
// softmax.cpp

TEST_CASE("softmax: hand-computed values and rows that sum to 1", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 0, 0, 0}, {2, 3});
  const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), z = e1 + e2 + e3;
  const std::vector<double> expected{e1 / z, e2 / z, e3 / z, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  require_close(ws.call("softmax", {x}), expected, 1e-15);
  require_close(ws.call("softmax", {x}, {{"axis", int64_t{1}}}, "naive"), expected, 1e-15);

  // Along axis 0: columns {1,0}, {2,0}, {3,0}.
  Tensor s0 = ws.call("softmax", {x}, {{"axis", int64_t{0}}});
  for (int64_t j = 0; j < 3; ++j) {
    const double v = static_cast<double>(j + 1), p = std::exp(v) / (std::exp(v) + 1);
    REQUIRE(std::fabs(s0.get(j) - p) < 1e-15);
    REQUIRE(std::fabs(s0.get(3 + j) - (1 - p)) < 1e-15);
  }
}

TEST_CASE("softmax along any axis matches a naive loop", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (DType dt : {DType::f64, DType::f32}) {
    const double tol = dt == DType::f64 ? 1e-14 : 1e-6;
    Tensor x = random_tensor({3, 4, 5}, 11, dt, -5, 5);
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      INFO("axis " << axis << " dtype " << dtype_name(dt));
      const int64_t ax = axis < 0 ? axis + 3 : axis;
      // Reference: move the axis last with index arithmetic, softmax rows, move back.
      const Shape& s = x.shape();
      const int64_t C = s[ax], N = x.numel() / C;
      std::vector<double> rows(static_cast<size_t>(x.numel()));
      std::vector<int64_t> pos(static_cast<size_t>(x.numel()));
      std::vector<int64_t> row_count(static_cast<size_t>(N), 0);
      for (int64_t i = 0; i < x.numel(); ++i) {
        auto idx = unravel(i, s);
        int64_t r = 0;
        for (int64_t d = 0; d < 3; ++d)
          if (d != ax) r = r * s[d] + idx[d];
        pos[i] = r * C + idx[ax];
        rows[static_cast<size_t>(pos[i])] = x.get(i);
      }
      auto ref = reference_softmax_rows(rows, N, C);
      Tensor y = ws.call("softmax", {x}, {{"axis", axis}});
      Tensor ly = ws.call("log_softmax", {x}, {{"axis", axis}});
      REQUIRE(y.dtype() == dt);
      for (int64_t i = 0; i < x.numel(); ++i) {
        REQUIRE(std::fabs(y.get(i) - ref[static_cast<size_t>(pos[i])]) <= tol);
        REQUIRE(std::fabs(ly.get(i) - std::log(ref[static_cast<size_t>(pos[i])])) <= 10 * tol);
      }
    }
  }
}

TEST_CASE("naive softmax overflows at 1000, stable softmax does not", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = Tensor::from_vector<double>({1000, 1000, 999}, {1, 3}, dt);
    Tensor naive = ws.call("softmax", {x}, {}, "naive");
    bool broken = false;
    for (int64_t i = 0; i < 3; ++i) broken = broken || !std::isfinite(naive.get(i));
    REQUIRE(broken);  // exp(1000) = inf, and inf / inf = nan

    Tensor stable = ws.call("softmax", {x});
    const double z = 2 + std::exp(-1.0);
    require_close(stable, {1 / z, 1 / z, std::exp(-1.0) / z}, 1e-6);
    Tensor ls = ws.call("log_softmax", {x});
    require_close(ls, {-std::log(z), -std::log(z), -1 - std::log(z)}, 1e-4);
  }
}

TEST_CASE("softmax_backward computes s * (dy - sum(dy * s))", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (int64_t axis : {1, 0, -1}) {
    Tensor x = random_tensor({3, 4}, 5);
    Tensor dy = random_tensor({3, 4}, 6);
    Tensor s = ws.call("softmax", {x}, {{"axis", axis}});
    Tensor dx = ws.call("softmax_backward", {s, dy}, {{"axis", axis}});
    const int64_t ax = axis < 0 ? 1 : axis;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < (ax == 1 ? 4 : 3); ++c) {
          const int64_t e = ax == 1 ? i * 4 + c : c * 4 + j;
          dot += s.get(e) * dy.get(e);
        }
        const int64_t e = i * 4 + j;
        REQUIRE(std::fabs(dx.get(e) - s.get(e) * (dy.get(e) - dot)) < 1e-14);
      }
  }
  Tensor a = Tensor::zeros({2, 3}, DType::f64), b = Tensor::zeros({3, 2}, DType::f64);
  REQUIRE_THROWS_WITH(ws.call("softmax_backward", {a, b}), Contains("softmax_backward: s has shape [2, 3]"));
}

TEST_CASE("softmax errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::zeros({2, 3}, DType::f64);
  REQUIRE_THROWS_WITH(ws.call("softmax", {x}, {{"axis", int64_t{2}}}), Contains("out of range"));
  REQUIRE_THROWS_WITH(ws.call("log_softmax", {Tensor::from_vector<int64_t>({1, 2}, {2})}), Contains("floating-point"));
}

TEST_CASE("softmax, log_softmax pass gradcheck (softmax_backward through softmax)", "[op][grad]") {
  require_gradcheck("softmax");
  require_gradcheck("log_softmax");
  const OpDef& sb = OpRegistry::instance().get("softmax_backward");
  REQUIRE(!sb.differentiable);
  REQUIRE(sb.checked_via == "softmax");
  REQUIRE(OpRegistry::instance().get("softmax").algorithms == std::vector<std::string>{"stable", "naive"});
}

TEST_CASE("float32 softmax and log_softmax on long rows match a float64 loop", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t N = 64, C = 1027;  // C not a multiple of the vector width: the tail is handled
  Tensor x = random_tensor({N, C}, 9, DType::f32, -30, 30);
  std::vector<double> xv = x.to_vector();  // the float32 values, exactly
  auto ref = reference_softmax_rows(xv, N, C);
  Tensor y = ws.call("softmax", {x});
  Tensor ly = ws.call("log_softmax", {x});
  for (int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (int64_t j = 0; j < C; ++j) {
      const int64_t e = i * C + j;
      s += y.get(e);
      // x - max is rounded to float32 first: relative error up to |x - max| · 2^-24 from that alone.
      const double tol = (1e-6 + std::fabs(std::log(ref[e])) * 1.2e-7) * ref[e];
      INFO("row " << i << " col " << j << ": " << y.get(e) << " vs " << ref[e]);
      REQUIRE(std::fabs(y.get(e) - ref[e]) <= tol);
      REQUIRE(std::fabs(ly.get(e) - std::log(ref[e])) <= 1e-5 * std::max(1.0, std::fabs(std::log(ref[e]))));
    }
    REQUIRE(std::fabs(s - 1) < 1e-5);
  }
}

TEST_CASE("softmax: -inf entries (masks) give exactly 0, NaN propagates", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::f32, DType::f64}) {
    INFO(dtype_name(dt));
    std::vector<double> v(2 * 20, 0.5);
    v[3] = -inf;
    v[17] = -inf;
    v[18] = -200;  // far below the max: underflows to 0 in float32
    v[25] = nan;
    Tensor x = Tensor::from_vector<double>(v, {2, 20}, dt);
    Tensor y = ws.call("softmax", {x});
    REQUIRE(y.get(3) == 0);
    REQUIRE(y.get(17) == 0);
    REQUIRE(y.get(18) < 1e-80);
    const double p = 1.0 / (17 + std::exp(-200.5 + 0.5));
    REQUIRE(y.get(0) == Approx(p).epsilon(1e-6));
    for (int64_t j = 20; j < 40; ++j) REQUIRE(std::isnan(y.get(j)));
  }
}

// ---------------------------------------------------------------------------------------------
// loss.cpp

TEST_CASE("cross_entropy: hand-computed values", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor logits = Tensor::from_vector<double>({1, 2, 3, 0, 0, 0}, {2, 3});
  Tensor targets = Tensor::from_vector<int64_t>({2, 0}, {2});
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3, l1 = std::log(3.0);
  Tensor mean = ws.call("cross_entropy", {logits, targets});
  REQUIRE(mean.shape() == Shape{});
  REQUIRE(mean.item() == Approx((l0 + l1) / 2).epsilon(1e-14));
  Tensor sum = ws.call("cross_entropy", {logits, targets}, {{"reduction", std::string("sum")}});
  REQUIRE(sum.item() == Approx(l0 + l1).epsilon(1e-14));

  // Large logits: computed via log-sum-exp, so nothing overflows.
  Tensor big = Tensor::from_vector<double>({1000, 0, 0, 1000}, {2, 2}, DType::f32);
  Tensor t = Tensor::from_vector<int64_t>({1, 1}, {2});
  REQUIRE(ws.call("cross_entropy", {big, t}).item() == Approx(500).epsilon(1e-6));
}

TEST_CASE("cross_entropy_backward is softmax minus one-hot", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor logits = random_tensor({4, 5}, 21);
  Tensor targets = Tensor::from_vector<int64_t>({0, 4, 2, 2}, {4});
  Tensor dl = Tensor::scalar(3.0, DType::f64);
  std::vector<double> lv = logits.to_vector();
  auto p = reference_softmax_rows(lv, 4, 5);
  for (const char* reduction : {"mean", "sum"}) {
    Tensor d = ws.call("cross_entropy_backward", {logits, targets, dl}, {{"reduction", std::string(reduction)}});
    const double scale = std::string(reduction) == "mean" ? 3.0 / 4 : 3.0;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        const double onehot = targets.get(i) == static_cast<double>(j) ? 1 : 0;
        REQUIRE(std::fabs(d.get(i * 5 + j) - (p[i * 5 + j] - onehot) * scale) < 1e-14);
      }
  }
}

TEST_CASE("cross_entropy errors: target out of range, shape mismatch", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor logits = Tensor::zeros({3, 5}, DType::f64);
  REQUIRE_THROWS_WITH(ws.call("cross_entropy", {logits, Tensor::from_vector<int64_t>({0, 7, 1}, {3})}),
                      Contains("target 7 at index 1 is out of range [0, 5)"));
  REQUIRE_THROWS_WITH(ws.call("cross_entropy", {logits, Tensor::from_vector<int64_t>({0, -1, 1}, {3})}),
                      Contains("target -1"));
  REQUIRE_THROWS_WITH(ws.call("cross_entropy", {logits, Tensor::from_vector<int64_t>({0, 1}, {2})}),
                      Contains("targets have shape [2]"));
  REQUIRE_THROWS_WITH(ws.call("cross_entropy", {logits, Tensor::zeros({3}, DType::f64)}), Contains("int64"));
  REQUIRE_THROWS_WITH(ws.call("cross_entropy", {Tensor::zeros({5}, DType::f64), Tensor::zeros({5}, DType::i64)}),
                      Contains("rank 2"));
  REQUIRE_THROWS(
      ws.call("cross_entropy", {logits, Tensor::zeros({3}, DType::i64)}, {{"reduction", std::string("max")}}));
}

TEST_CASE("mse_loss: values and shape errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor p = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2});
  Tensor t = Tensor::from_vector<double>({0, 2, 5, 1}, {2, 2});
  // errors 1, 0, -2, 3: squares 1 + 0 + 4 + 9 = 14.
  REQUIRE(ws.call("mse_loss", {p, t}).item() == Approx(3.5).epsilon(1e-15));
  REQUIRE(ws.call("mse_loss", {p, t}, {{"reduction", std::string("sum")}}).item() == 14);
  REQUIRE_THROWS_WITH(ws.call("mse_loss", {Tensor::zeros({4, 1}, DType::f64), Tensor::zeros({4}, DType::f64)}),
                      Contains("pred has shape [4, 1] but target has shape [4]"));
}

TEST_CASE("losses pass gradcheck (cross_entropy_backward through cross_entropy)", "[op][grad]") {
  require_gradcheck("cross_entropy");
  require_gradcheck("mse_loss");
  const OpDef& cb = OpRegistry::instance().get("cross_entropy_backward");
  REQUIRE(!cb.differentiable);
  REQUIRE(cb.checked_via == "cross_entropy");
}

TEST_CASE("a small classifier step: cross_entropy gradient reaches the logits", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor logits = random_tensor({3, 4}, 31);
  logits.set_requires_grad(true);
  Tensor targets = Tensor::from_vector<int64_t>({3, 0, 1}, {3});
  Tensor loss = ws.call("cross_entropy", {logits, targets});
  ws.backward(loss);
  REQUIRE(logits.grad().defined());
  // Each row of (softmax - onehot) / N sums to zero.
  for (int64_t i = 0; i < 3; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 4; ++j) s += logits.grad().get(i * 4 + j);
    REQUIRE(std::fabs(s) < 1e-15);
  }
}
