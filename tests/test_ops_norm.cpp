// Tests of ops/norm.cpp (layer_norm, batch_norm and their backward ops), ops/pool.cpp
// (max_pool2d, avg_pool2d, adaptive_avg_pool2d), ops/embedding.cpp (embedding) and ops/pad.cpp
// (pad, upsample_nearest2d): values against hand-computed numbers and naive loops written here,
// the algorithms against each other, Welford against cancellation, errors, and gradcheck.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "tests/helpers.h"

using namespace opscope;
using Catch::Contains;
using V = std::vector<int64_t>;

namespace {

void require_close(const Tensor& t, const std::vector<double>& expected, double tol) {
  REQUIRE(t.numel() == static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    INFO("element " << i << ": " << t.get(i) << " vs " << expected[static_cast<size_t>(i)]);
    REQUIRE(std::fabs(t.get(i) - expected[static_cast<size_t>(i)]) <= tol);
  }
}

std::vector<double> values(const Tensor& t) { return t.to_vector(); }

// Reference layer norm in double: rows of n elements, two-pass statistics.
std::vector<double> ref_layer_norm(const std::vector<double>& x, int64_t n, const std::vector<double>& w,
                                   const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
    mean /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) var += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    var /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      double v = (x[r * n + j] - mean) / std::sqrt(var + eps);
      if (!w.empty()) v *= w[j];
      if (!b.empty()) v += b[j];
      y[r * n + j] = v;
    }
  }
  return y;
}

// Per-channel mean and biased variance of x [N, C, S] in double.
void ref_channel_stats(const std::vector<double>& x, int64_t N, int64_t C, int64_t S, std::vector<double>& mean,
                       std::vector<double>& var) {
  mean.assign(C, 0);
  var.assign(C, 0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) mean[c] += x[(n * C + c) * S + s];
    mean[c] /= static_cast<double>(N * S);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) var[c] += std::pow(x[(n * C + c) * S + s] - mean[c], 2);
    var[c] /= static_cast<double>(N * S);
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// layer_norm

TEST_CASE("layer_norm: hand-computed row", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {1, 4});
  // mean 2.5, biased variance 1.25
  const double r = 1 / std::sqrt(1.25);
  for (const char* algo : {"welford", "two_pass", "naive"}) {
    INFO(algo);
    require_close(ws.call("layer_norm", {x}, {{"normalized_shape", int64_t{4}}, {"eps", 0.0}}, algo),
                  {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-12);
  }
  Tensor w = Tensor::from_vector<double>({1, 2, 3, 4}, {4}), b = Tensor::from_vector<double>({0, 0, 0, 1}, {4});
  require_close(ws.call("layer_norm", {x, w, b}, {{"normalized_shape", int64_t{4}}, {"eps", 0.0}}),
                {-1.5 * r, -1.0 * r, 1.5 * r, 6 * r + 1}, 1e-12);
}

TEST_CASE("layer_norm: every algorithm against a naive loop, odd sizes, float32 and float64", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  struct Case {
    Shape shape;
    int64_t k;
  };
  for (const Case& c :
       {Case{{3, 37}, 1}, Case{{2, 5, 7}, 2}, Case{{4, 1}, 1}, Case{{2, 3, 100}, 1}, Case{{1, 65}, 1}}) {
    for (DType dt : {DType::f64, DType::f32}) {
      const Shape ns(c.shape.end() - c.k, c.shape.end());
      Tensor x = test::randn(c.shape, 7, dt, 2.0);
      Tensor w = test::randn(ns, 8, dt), b = test::randn(ns, 9, dt);
      const int64_t n = shape_numel(ns);
      auto expected = ref_layer_norm(values(x), n, values(w), values(b), 1e-5);
      for (const char* algo : {"welford", "two_pass", "naive"}) {
        INFO(shape_str(c.shape) << " k=" << c.k << " " << dtype_name(dt) << " " << algo);
        Tensor y = ws.call("layer_norm", {x, w, b}, {{"normalized_shape", ns}}, algo);
        require_close(y, expected, dt == DType::f64 ? 1e-10 : 2e-4);
      }
      auto plain = ref_layer_norm(values(x), n, {}, {}, 1e-5);
      require_close(ws.call("layer_norm", {x}, {{"normalized_shape", ns}}), plain, dt == DType::f64 ? 1e-10 : 2e-4);
    }
  }
}

TEST_CASE("layer_norm: Welford and two-pass survive a large mean, the naive E[x²] - E[x]² does not", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // float32 rows with mean 1e4 and unit variance: E[x²] = 1e8 has a float32 spacing of 8.
  const int64_t R = 8, N = 4096;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> nd(1e4, 1.0);
  std::vector<double> v(static_cast<size_t>(R * N));
  for (auto& e : v) e = static_cast<float>(nd(rng));  // the float32 values, exactly, in double
  Tensor x32 = Tensor::from_vector<double>(v, {R, N}, DType::f32);
  const auto expected = ref_layer_norm(v, N, {}, {}, 1e-5);

  auto worst = [&](const char* algo) {
    Tensor y = ws.call("layer_norm", {x32}, {{"normalized_shape", N}}, algo);
    double m = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double d = std::fabs(y.get(i) - expected[static_cast<size_t>(i)]);
      m = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(m, d);
    }
    return m;
  };
  const double e_welford = worst("welford"), e_two = worst("two_pass"), e_naive = worst("naive");
  INFO("max |y - y_ref|: welford " << e_welford << ", two_pass " << e_two << ", naive " << e_naive);
  CHECK(e_welford < 1e-2);
  CHECK(e_two < 1e-2);
  CHECK(e_naive > 0.1);  // wrong scale, or NaN where the variance came out negative

  // The variance itself, through batch_norm's running_var (momentum 1: the unbiased batch variance).
  Tensor xb = Tensor::from_vector<double>(v, {R, 1, N}, DType::f32);  // one channel of R·N values
  double ref_mean = 0, ref_var = 0;
  for (double e : v) ref_mean += e;
  ref_mean /= static_cast<double>(v.size());
  for (double e : v) ref_var += (e - ref_mean) * (e - ref_mean);
  ref_var /= static_cast<double>(v.size() - 1);
  auto running_var = [&](const char* algo) {
    Tensor rm = Tensor::zeros({1}, DType::f32), rv = Tensor::full({1}, 1.0, DType::f32);
    ws.call("batch_norm", {xb, rm, rv}, {{"momentum", 1.0}}, algo);
    return rv.get(0);
  };
  const double v_welford = running_var("welford"), v_two = running_var("two_pass"), v_naive = running_var("naive");
  INFO("variance: reference " << ref_var << ", welford " << v_welford << ", two_pass " << v_two << ", naive "
                              << v_naive);
  CHECK(std::fabs(v_welford - ref_var) < 1e-3);
  CHECK(std::fabs(v_two - ref_var) < 1e-3);
  CHECK(!(std::fabs(v_naive - ref_var) < 0.1));  // NaN-safe: a NaN counts as wrong
}

TEST_CASE("layer_norm: errors name the shapes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::randn({2, 3}, 1);
  CHECK_THAT(error_of([&] {
               ws.call("layer_norm", {x, test::randn({2}, 2)}, {{"normalized_shape", int64_t{3}}});
             }),
             Contains("weight has shape [2]") && Contains("normalized_shape is [3]"));
  // PyTorch's convention: the trailing sizes of x, not a count of axes.
  CHECK_THAT(error_of([&] {
               ws.call("layer_norm", {x}, {{"normalized_shape", std::vector<int64_t>{2}}});
             }),
             Contains("normalized_shape=[2] but x [2, 3] ends in [3]"));
  CHECK_THAT(error_of([&] {
               ws.call("layer_norm", {x}, {{"normalized_shape", std::vector<int64_t>{1, 2, 3}}});
             }),
             Contains("has only 2 axes"));
  CHECK_THAT(error_of([&] { ws.call("layer_norm", {x}); }), Contains("missing attribute 'normalized_shape'"));
  CHECK_THAT(error_of([&] {
               ws.call("layer_norm", {x}, {{"normalized_shape", std::vector<int64_t>{}}});
             }),
             Contains("normalized_shape is empty"));
}

TEST_CASE("layer_norm, layer_norm_backward, batch_norm, batch_norm_backward: gradcheck", "[op][grad]") {
  test::require_gradcheck("layer_norm");
  test::require_gradcheck("batch_norm");
}

TEST_CASE("layer_norm: backward matches the textbook formula, written out here", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t R = 3, N = 6;
  Tensor x = test::param(test::randn({R, N}, 11)), w = test::param(test::randn({N}, 12)),
         b = test::param(test::randn({N}, 13));
  Tensor dy = test::randn({R, N}, 14);
  ws.backward(ws.call("layer_norm", {x, w, b}, {{"normalized_shape", N}}), dy);
  auto xv = values(x), wv = values(w), dv = values(dy);
  std::vector<double> dx(R * N), dw(N, 0), db(N, 0);
  for (int64_t r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < N; ++j) mean += xv[r * N + j] / N;
    for (int64_t j = 0; j < N; ++j) var += std::pow(xv[r * N + j] - mean, 2) / N;
    const double rstd = 1 / std::sqrt(var + 1e-5);
    double mg = 0, mgx = 0;
    for (int64_t j = 0; j < N; ++j) {
      const double xh = (xv[r * N + j] - mean) * rstd, g = dv[r * N + j] * wv[j];
      mg += g / N, mgx += g * xh / N;
      dw[j] += dv[r * N + j] * xh, db[j] += dv[r * N + j];
    }
    for (int64_t j = 0; j < N; ++j) {
      const double xh = (xv[r * N + j] - mean) * rstd;
      dx[r * N + j] = rstd * (dv[r * N + j] * wv[j] - mg - xh * mgx);
    }
  }
  require_close(x.grad(), dx, 1e-10);
  require_close(w.grad(), dw, 1e-10);
  require_close(b.grad(), db, 1e-10);
}

// ---------------------------------------------------------------------------------------------
// batch_norm

// group_norm written here: for each image and group, the mean and biased variance of its C/G
// channels' elements, then the per-channel scale and shift.
std::vector<double> ref_group_norm(const Tensor& x, int64_t G, const Tensor* w, const Tensor* b, double eps) {
  const int64_t N = x.shape()[0], C = x.shape()[1], S = x.numel() / (N * C), Cg = C / G;
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      double sum = 0, sq = 0;
      const int64_t base = (n * C + g * Cg) * S, count = Cg * S;
      for (int64_t i = 0; i < count; ++i) sum += x.get(base + i);
      const double mean = sum / static_cast<double>(count);
      for (int64_t i = 0; i < count; ++i) sq += (x.get(base + i) - mean) * (x.get(base + i) - mean);
      const double rstd = 1 / std::sqrt(sq / static_cast<double>(count) + eps);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t c = g * Cg + i / S;
        y[static_cast<size_t>(base + i)] =
            (x.get(base + i) - mean) * rstd * (w ? w->get(c) : 1.0) + (b ? b->get(c) : 0.0);
      }
    }
  return y;
}

TEST_CASE("group_norm and instance_norm: against the loops, float32 and float64; errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = test::randn({3, 6, 4, 5}, 5, DType::f64, 3.0), w = test::randn({6}, 6), b = test::randn({6}, 7);
  for (int64_t G : {1, 2, 3, 6}) {
    INFO("groups " << G);
    require_close(ws.call("group_norm", {x, w, b}, {{"num_groups", G}}), ref_group_norm(x, G, &w, &b, 1e-5), 1e-12);
    require_close(ws.call("group_norm", {x.cast(DType::f32), w, b}, {{"num_groups", G}}),
                  ref_group_norm(x, G, &w, &b, 1e-5), 1e-4);
  }
  require_close(ws.call("group_norm", {x}, {{"num_groups", int64_t{2}}, {"eps", 0.5}}),
                ref_group_norm(x, 2, nullptr, nullptr, 0.5), 1e-12);
  // instance_norm is group_norm with one group per channel.
  require_close(ws.call("instance_norm", {x, w, b}), ref_group_norm(x, 6, &w, &b, 1e-5), 1e-12);
  require_close(ws.call("instance_norm", {test::randn({2, 3, 7}, 8)}),
                ref_group_norm(test::randn({2, 3, 7}, 8), 3, nullptr, nullptr, 1e-5), 1e-12);
  CHECK_THROWS_WITH(ws.call("group_norm", {x}, {{"num_groups", int64_t{4}}}),
                    Contains("x has 6 channels, which num_groups=4 does not divide"));
  CHECK_THROWS_WITH(ws.call("group_norm", {x, test::randn({4}, 1)}, {{"num_groups", int64_t{2}}}),
                    Contains("weight has shape [4] but x [3, 6, 4, 5] has 6 channels"));
  CHECK_THROWS_WITH(ws.call("group_norm", {x}), Contains("missing attribute 'num_groups'"));
}

TEST_CASE("group_norm and instance_norm: gradcheck, and the backward formula against central differences of the loops",
          "[op][grad]") {
  test::require_gradcheck("group_norm");
  test::require_gradcheck("instance_norm");
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = test::param(test::randn({2, 4, 3}, 9)), w = test::param(test::randn({4}, 10)),
               b = test::param(test::randn({4}, 11));
  const Tensor r = test::randn({2, 4, 3}, 12);
  ws.backward(ws.call("sum", {ws.call("mul", {ws.call("group_norm", {x, w, b}, {{"num_groups", int64_t{2}}}), r})}));
  auto loss = [&](const Tensor& xv, const Tensor& wv) {
    const std::vector<double> y = ref_group_norm(xv, 2, &wv, &b, 1e-5);
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += y[i] * r.get(static_cast<int64_t>(i));
    return s;
  };
  const double h = 1e-6;
  for (int64_t i : {0, 5, 11, 23}) {
    Tensor xp = x.clone(), xm = x.clone();
    xp.data<double>()[i] += h;
    xm.data<double>()[i] -= h;
    CHECK(x.grad().get(i) == Approx((loss(xp, w) - loss(xm, w)) / (2 * h)).epsilon(1e-6));
  }
  Tensor wp = w.clone(), wm = w.clone();
  wp.data<double>()[1] += h;
  wm.data<double>()[1] -= h;
  CHECK(w.grad().get(1) == Approx((loss(x, wp) - loss(x, wm)) / (2 * h)).epsilon(1e-6));
}

TEST_CASE("batch_norm: running statistics update and eval mode, hand-computed", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // x [2, 1, 2]: channel 0 holds 1, 2, 3, 4 (mean 2.5, biased var 1.25, unbiased 5/3).
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 1, 2});
  for (const char* algo : {"welford", "two_pass", "naive"}) {
    INFO(algo);
    Tensor rm = Tensor::zeros({1}, DType::f64), rv = Tensor::full({1}, 1.0, DType::f64);
    Tensor y = ws.call("batch_norm", {x, rm, rv}, {{"eps", 0.0}}, algo);
    const double r = 1 / std::sqrt(1.25);
    require_close(y, {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-12);
    require_close(rm, {0.25}, 1e-12);  // 0.9·0 + 0.1·2.5
    require_close(rv, {0.9 + 0.1 * 5.0 / 3.0}, 1e-12);  // 0.9·1 + 0.1·(5/3)
    ws.call("batch_norm", {x, rm, rv}, {{"eps", 0.0}, {"momentum", 0.5}}, algo);
    require_close(rm, {0.5 * 0.25 + 0.5 * 2.5}, 1e-12);
  }
  // eval: y = (x - running_mean) / sqrt(running_var + eps)·γ + β, and the running stats stay.
  Tensor rm = Tensor::from_vector<double>({1.0}, {1}), rv = Tensor::from_vector<double>({4.0}, {1});
  Tensor w = Tensor::from_vector<double>({3.0}, {1}), b = Tensor::from_vector<double>({-1.0}, {1});
  Tensor y = ws.call("batch_norm", {x, rm, rv, w, b}, {{"training", false}, {"eps", 0.0}});
  require_close(y, {-1, 0.5, 2, 3.5}, 1e-12);  // (x - 1) / 2 · 3 - 1
  require_close(rm, {1.0}, 0);
  require_close(rv, {4.0}, 0);
}

TEST_CASE("batch_norm: every algorithm against a naive loop, odd sizes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (const Shape& s : {Shape{5, 3, 7, 3}, Shape{9, 4}, Shape{2, 2, 65}}) {
    for (DType dt : {DType::f64, DType::f32}) {
      const int64_t N = s[0], C = s[1], S = shape_numel(s) / (N * C);
      Tensor x = test::randn(s, 21, dt, 3.0), w = test::randn({C}, 22, dt), b = test::randn({C}, 23, dt);
      std::vector<double> mean, var;
      auto xv = values(x);
      ref_channel_stats(xv, N, C, S, mean, var);
      std::vector<double> expected(xv.size());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t k = 0; k < S; ++k) {
            const int64_t i = (n * C + c) * S + k;
            expected[i] = (xv[i] - mean[c]) / std::sqrt(var[c] + 1e-5) * w.get(c) + b.get(c);
          }
      std::vector<double> rm_expected(C), rv_expected(C);
      for (int64_t c = 0; c < C; ++c) {
        rm_expected[c] = 0.1 * mean[c];
        rv_expected[c] = 0.9 + 0.1 * var[c] * (N * S) / (N * S - 1);
      }
      for (const char* algo : {"welford", "two_pass", "naive"}) {
        INFO(shape_str(s) << " " << dtype_name(dt) << " " << algo);
        Tensor rm = Tensor::zeros({C}, dt), rv = Tensor::full({C}, 1.0, dt);
        require_close(ws.call("batch_norm", {x, rm, rv, w, b}, {}, algo), expected, dt == DType::f64 ? 1e-10 : 1e-4);
        require_close(rm, rm_expected, dt == DType::f64 ? 1e-12 : 1e-5);
        require_close(rv, rv_expected, dt == DType::f64 ? 1e-12 : 1e-5);
      }
    }
  }
}

TEST_CASE("batch_norm: errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::randn({4, 3, 2}, 1);
  CHECK_THAT(error_of([&] {
               ws.call("batch_norm", {x, Tensor::zeros({2}, DType::f64), Tensor::zeros({3}, DType::f64)});
             }),
             Contains("running_mean has shape [2]") && Contains("3 channels"));
  CHECK_THAT(
      error_of([&] {
        ws.call("batch_norm", {test::randn({1, 3}, 2), Tensor::zeros({3}, DType::f64), Tensor::zeros({3}, DType::f64)});
      }),
      Contains("more than one value per channel"));
  CHECK_THAT(error_of([&] {
               ws.call("batch_norm", {x, Tensor::zeros({3}, DType::f32), Tensor::zeros({3}, DType::f64)});
             }),
             Contains("running_mean is float32"));
}

// ---------------------------------------------------------------------------------------------
// pooling

TEST_CASE("max_pool2d: padding and stride, hand-computed; ties send the gradient to the first", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // 3×3 plane 1..9, kernel 2, stride 2, padding 1: windows start at -1 and 1.
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Tensor y = ws.call("max_pool2d", {x}, {{"kernel_size", int64_t{2}}, {"padding", int64_t{1}}});
  REQUIRE(y.shape() == Shape{1, 1, 2, 2});
  require_close(y, {1, 3, 7, 9}, 0);
  Tensor y2 = ws.call("max_pool2d", {x}, {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}});
  require_close(y2, {5, 6, 8, 9}, 0);

  // All equal: each window's gradient goes to its first (top-left) element.
  Tensor t = test::param(Tensor::full({1, 1, 2, 4}, 1.0, DType::f64));
  ws.backward(ws.call("max_pool2d", {t}, {{"kernel_size", int64_t{2}}}),
              Tensor::from_vector<double>({10, 20}, {1, 1, 1, 2}));
  require_close(t.grad(), {10, 0, 20, 0, 0, 0, 0, 0}, 0);
  // Overlapping windows add up at a shared max.
  Tensor u = test::param(Tensor::from_vector<double>({0, 9, 0, 0}, {1, 1, 1, 4}));
  ws.backward(ws.call("max_pool2d", {u}, {{"kernel_size", int64_t{1}}, {"stride", int64_t{1}}}),
              Tensor::from_vector<double>({1, 2, 3, 4}, {1, 1, 1, 4}));
  require_close(u.grad(), {1, 2, 3, 4}, 0);
  CHECK_THAT(error_of([&] {
               ws.call("max_pool2d", {x}, {{"kernel_size", int64_t{2}}, {"padding", int64_t{2}}});
             }),
             Contains("padding=2 is more than half of kernel_size=2"));
  CHECK_THAT(error_of([&] { ws.call("max_pool2d", {test::randn({3, 3}, 1)}); }), Contains("rank 4"));
}

TEST_CASE("avg_pool2d: padding counts as zeros (count_include_pad); adaptive windows as PyTorch", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  require_close(ws.call("avg_pool2d", {x}, {{"kernel_size", int64_t{2}}, {"padding", int64_t{1}}}),
                {1.0 / 4, 5.0 / 4, 11.0 / 4, 28.0 / 4}, 1e-15);
  require_close(ws.call("avg_pool2d", {x},
                        {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}}),
                {12.0 / 9, 21.0 / 9, 16.0 / 9, 27.0 / 9, 45.0 / 9, 33.0 / 9, 24.0 / 9, 39.0 / 9, 28.0 / 9}, 1e-14);

  // adaptive: H = 5 -> 3 windows [0, 2), [1, 4), [3, 5); W = 7 -> 4 windows [0, 2), [1, 4), [3, 6), [5, 7).
  Tensor a = test::randn({2, 3, 5, 7}, 5);
  Tensor y = ws.call("adaptive_avg_pool2d", {a}, {{"output_size", V{3, 4}}});
  REQUIRE(y.shape() == Shape{2, 3, 3, 4});
  const int64_t hs[3][2] = {{0, 2}, {1, 4}, {3, 5}}, wsz[4][2] = {{0, 2}, {1, 4}, {3, 6}, {5, 7}};
  std::vector<double> expected;
  for (int64_t p = 0; p < 6; ++p)
    for (auto& h : hs)
      for (auto& w : wsz) {
        double s = 0;
        for (int64_t i = h[0]; i < h[1]; ++i)
          for (int64_t j = w[0]; j < w[1]; ++j) s += a.get(p * 35 + i * 7 + j);
        expected.push_back(s / static_cast<double>((h[1] - h[0]) * (w[1] - w[0])));
      }
  require_close(y, expected, 1e-12);
  // output_size = input size: identity; 1×1: global average.
  CHECK(test::max_diff(ws.call("adaptive_avg_pool2d", {a}, {{"output_size", V{5, 7}}}), a) == 0);
  Tensor g = ws.call("adaptive_avg_pool2d", {a}, {{"output_size", V{1, 1}}});
  CHECK(std::fabs(g.get(0) -
                  ws.call("mean",
                          {ws.call("slice", {a}, {{"axis", int64_t{1}}, {"start", int64_t{0}}, {"stop", int64_t{1}}})},
                          {{"axes", V{1, 2, 3}}})
                      .get(0)) < 1e-12);
}

TEST_CASE("max_pool2d, avg_pool2d: non-square windows, strides and padding (pairs, as PyTorch) against a loop",
          "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t H = 7, W = 6;
  Tensor x = test::randn({2, 3, H, W}, 21);
  struct Case {
    V kernel, stride, padding;
  };
  for (const Case& c : {Case{{3, 2}, {1, 2}, {1, 0}}, Case{{2, 3}, {2, 1}, {0, 1}}, Case{{1, 3}, {0, 0}, {0, 1}}}) {
    const int64_t KH = c.kernel[0], KW = c.kernel[1];
    const int64_t SH = c.stride[0] ? c.stride[0] : KH, SW = c.stride[1] ? c.stride[1] : KW;  // 0: the kernel size
    const int64_t PH = c.padding[0], PW = c.padding[1];
    const int64_t OH = (H + 2 * PH - KH) / SH + 1, OW = (W + 2 * PW - KW) / SW + 1;
    std::vector<double> mx, av;
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double m = -INFINITY, sum = 0;
          for (int64_t r = 0; r < KH; ++r)
            for (int64_t q = 0; q < KW; ++q) {
              const int64_t h = i * SH - PH + r, w = j * SW - PW + q;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;  // padding: -inf for max, 0 for the average
              m = std::max(m, x.get(p * H * W + h * W + w));
              sum += x.get(p * H * W + h * W + w);
            }
          mx.push_back(m);
          av.push_back(sum / static_cast<double>(KH * KW));
        }
    const AttrMap a = {{"kernel_size", c.kernel}, {"stride", c.stride}, {"padding", c.padding}};
    INFO("kernel " << shape_str(c.kernel) << " stride " << shape_str(c.stride) << " padding " << shape_str(c.padding));
    Tensor ym = ws.call("max_pool2d", {x}, a), ya = ws.call("avg_pool2d", {x}, a);
    REQUIRE(ym.shape() == Shape{2, 3, OH, OW});
    require_close(ym, mx, 0);
    require_close(ya, av, 1e-14);
  }
  // An int is the same along both axes; the error names both sizes when they differ.
  CHECK(ws.call("max_pool2d", {x}, {{"kernel_size", int64_t{2}}}).shape() == Shape{2, 3, 3, 3});
  CHECK_THAT(error_of([&] {
               ws.call("max_pool2d", {x}, {{"kernel_size", V{2, 3}}, {"padding", V{0, 2}}});
             }),
             Contains("padding=(0, 2) is more than half of kernel_size=(2, 3)"));
  CHECK_THAT(error_of([&] {
               ws.call("avg_pool2d", {x}, {{"kernel_size", V{8, 1}}});
             }),
             Contains("the 8×1 window does not fit in x [2, 3, 7, 6]"));
}

TEST_CASE("pooling: gradcheck", "[op][grad]") {
  test::require_gradcheck("max_pool2d");
  test::require_gradcheck("avg_pool2d");
  test::require_gradcheck("adaptive_avg_pool2d");
}

// ---------------------------------------------------------------------------------------------
// embedding

TEST_CASE("embedding: lookup, repeated-index gradient, padding_idx, range error", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor w = test::param(Tensor::from_vector<double>({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}));
  Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2, 3, 2, 1}, {2, 3}, DType::i64);
  Tensor y = ws.call("embedding", {idx, w}, {{"padding_idx", int64_t{3}}});
  REQUIRE(y.shape() == Shape{2, 3, 2});
  require_close(y, {20, 21, 0, 1, 20, 21, 30, 31, 20, 21, 10, 11}, 0);  // the padding row is still looked up
  ws.backward(y, Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 3, 2}));
  // row 0: lookup 1; row 1: lookup 5; row 2: lookups 0, 2, 4 add up; row 3 is padding_idx: none.
  require_close(w.grad(), {3, 4, 11, 12, 1 + 5 + 9, 2 + 6 + 10, 0, 0}, 0);

  Tensor bad = Tensor::from_vector<int64_t>({1, 7, 0}, {3}, DType::i64);
  CHECK_THAT(error_of([&] { ws.call("embedding", {bad, w}); }), Contains("index 7") && Contains("V=4"));
  Tensor neg = Tensor::from_vector<int64_t>({-1}, {1}, DType::i64);
  CHECK_THAT(error_of([&] { ws.call("embedding", {neg, w}); }), Contains("index -1"));
  CHECK_THAT(error_of([&] { ws.call("embedding", {test::randn({3}, 1), w}); }), Contains("indices must be int64"));
  CHECK_THAT(error_of([&] {
               ws.call("embedding", {idx, w}, {{"padding_idx", int64_t{4}}});
             }),
             Contains("padding_idx=4"));
}

TEST_CASE("embedding: gradcheck", "[op][grad]") { test::require_gradcheck("embedding"); }

// gather against NumPy's take written as loops: y[a, i, b] = x[a, idx[i], b].
TEST_CASE("gather: NumPy take along any axis, negative indices, scatter-add backward", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::param(test::randn({3, 4, 2}, 9));
  Tensor idx = Tensor::from_vector<int64_t>({3, -4, 1, 3, 0, -1}, {2, 3}, DType::i64);
  Tensor y = ws.call("gather", {x, idx}, {{"axis", int64_t{1}}});
  REQUIRE(y.shape() == Shape{3, 2, 3, 2});
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t b = 0; b < 2; ++b) {
        const int64_t k = static_cast<int64_t>(idx.get(i)), at = k < 0 ? k + 4 : k;
        CHECK(y.get((a * 6 + i) * 2 + b) == x.get((a * 4 + at) * 2 + b));
      }
  CHECK(ws.call("gather", {x, Tensor::scalar(1, DType::i64)}, {{"axis", int64_t{-1}}}).shape() ==
        Shape{3, 4});  // a 0-d index drops the axis
  // Backward: index 3 is taken twice, 2 never.
  Tensor dy = Tensor::full({3, 2, 3, 2}, 1.0, DType::f64);
  ws.backward(y, dy);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 2; ++b) {
      CHECK(x.grad().get((a * 4 + 0) * 2 + b) == 2);  // 0 and -4
      CHECK(x.grad().get((a * 4 + 1) * 2 + b) == 1);
      CHECK(x.grad().get((a * 4 + 2) * 2 + b) == 0);
      CHECK(x.grad().get((a * 4 + 3) * 2 + b) == 3);  // 3, 3 and -1
    }
  CHECK_THAT(error_of([&] {
               ws.call("gather", {x, Tensor::from_vector<int64_t>({4}, {1}, DType::i64)}, {{"axis", int64_t{1}}});
             }),
             Contains("index 4") && Contains("axis of size 4"));
  CHECK_THAT(error_of([&] { ws.call("gather", {x, test::randn({2}, 1)}); }), Contains("indices must be int64"));
  test::require_gradcheck("gather");
}

// ---------------------------------------------------------------------------------------------
// pad and upsample_nearest2d

TEST_CASE("pad: reflect and constant values, F.pad order", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {4});
  require_close(ws.call("pad", {x}, {{"pads", V{2, 2}}, {"mode", std::string("reflect")}}), {3, 2, 1, 2, 3, 4, 3, 2},
                0);
  require_close(ws.call("pad", {x}, {{"pads", V{1, 3}}, {"value", -1.0}}), {-1, 1, 2, 3, 4, -1, -1, -1}, 0);

  // [left, right, top, bottom]: W gets 1 left, H gets 1 on top.
  Tensor m = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3});
  Tensor c = ws.call("pad", {m}, {{"pads", V{1, 0, 1, 0}}});
  REQUIRE(c.shape() == Shape{1, 1, 3, 4});
  require_close(c, {0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6}, 0);
  Tensor r = ws.call("pad", {m}, {{"pads", V{2, 1, 1, 1}}, {"mode", std::string("reflect")}});
  REQUIRE(r.shape() == Shape{1, 1, 4, 6});
  // rows reflect as [4 5 6], [1 2 3], [4 5 6], [1 2 3]; each row as [c b | a b c | b]
  require_close(r, {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2}, 0);

  // Reflect backward: every output position that read x[i] adds into dx[i].
  Tensor p = test::param(Tensor::from_vector<double>({1, 2, 3}, {3}));
  ws.backward(ws.call("pad", {p}, {{"pads", V{1, 1}}, {"mode", std::string("reflect")}}),
              Tensor::full({5}, 1.0, DType::f64));
  require_close(p.grad(), {1, 3, 1}, 0);  // [2 | 1 2 3 | 2]: x[1] is read three times
  Tensor q = test::param(Tensor::from_vector<double>({1, 2, 3}, {3}));
  ws.backward(ws.call("pad", {q}, {{"pads", V{2, 1}}}), Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {6}));
  require_close(q.grad(), {3, 4, 5}, 0);

  CHECK_THAT(error_of([&] {
               ws.call("pad", {x}, {{"pads", V{4, 0}}, {"mode", std::string("reflect")}});
             }),
             Contains("reflect padding of 4 on axis 0 of size 4"));
  // Replicate repeats the edge, as far as asked (ONNX's "edge"); its backward adds the copies.
  require_close(ws.call("pad", {x}, {{"pads", V{2, 5}}, {"mode", std::string("replicate")}}),
                {1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4}, 0);
  require_close(ws.call("pad", {m}, {{"pads", V{1, 0, 0, 2}}, {"mode", std::string("replicate")}}),
                {1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6, 4, 4, 5, 6}, 0);
  Tensor e = test::param(Tensor::from_vector<double>({1, 2, 3}, {3}));
  ws.backward(ws.call("pad", {e}, {{"pads", V{2, 1}}, {"mode", std::string("replicate")}}),
              Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {6}));
  require_close(e.grad(), {1 + 2 + 3, 4, 5 + 6}, 0);
  CHECK_THAT(error_of([&] { ws.call("pad", {x}, {{"pads", V{1, 1, 1}}}); }), Contains("pairs"));
  CHECK_THAT(error_of([&] {
               ws.call("pad", {x}, {{"pads", V{1, 1}}, {"mode", std::string("wrap")}});
             }),
             Contains("wrap"));
}

TEST_CASE("upsample_nearest2d: values and block-sum backward", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::param(Tensor::from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2}));
  Tensor y = ws.call("upsample_nearest2d", {x});
  REQUIRE(y.shape() == Shape{1, 1, 4, 4});
  require_close(y, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0);
  std::vector<double> g(16);
  for (int i = 0; i < 16; ++i) g[i] = i;
  ws.backward(y, Tensor::from_vector<double>(g, {1, 1, 4, 4}));
  require_close(x.grad(), {0 + 1 + 4 + 5, 2 + 3 + 6 + 7, 8 + 9 + 12 + 13, 10 + 11 + 14 + 15}, 0);
}

TEST_CASE("pad, upsample_nearest2d: gradcheck", "[op][grad]") {
  test::require_gradcheck("pad");
  test::require_gradcheck("upsample_nearest2d");
}
