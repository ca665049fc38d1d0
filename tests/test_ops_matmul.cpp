// matmul (naive, blocked, eigen) against an independent reference, batched and broadcast,
// transposed views read in place; linear against a hand computation; dropout's mask.
#include <Eigen/Core>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <random>

#include "core/error.h"
#include "core/gradcheck.h"
#include "core/op.h"
#include "core/workspace.h"
#include "ops/gemm.h"
#include "tests/helpers.h"

using namespace opscope;
using V = std::vector<int64_t>;

namespace {

using opscope::test::require_gradcheck;

const std::vector<std::string> kAlgos = {"naive", "blocked", "eigen", "blas"};

Tensor random_tensor(const Shape& shape, DType dt, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector<double>(v, shape, dt);
}

// Reference: batched matmul with NumPy broadcasting, in double, element by element through
// Tensor::get (independent of every kernel's stride handling).
std::vector<double> reference_matmul(const Tensor& a, const Tensor& b, Shape& out_shape) {
  const Shape &sa = a.shape(), &sb = b.shape();
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  const size_t nb = std::max(sa.size(), sb.size()) - 2;
  Shape batch(nb, 1);
  auto dim = [&](const Shape& s, size_t i) {  // batch axis i of s aligned right, 1 if missing
    const size_t own = s.size() - 2;
    return i < nb - own ? int64_t{1} : s[i - (nb - own)];
  };
  for (size_t i = 0; i < nb; ++i) batch[i] = std::max(dim(sa, i), dim(sb, i));
  out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  const int64_t count = shape_numel(batch);
  std::vector<double> out;
  for (int64_t bi = 0; bi < count; ++bi) {
    // Flat batch index of a and b (broadcast axes use index 0).
    int64_t rem = bi, fa = 0, fb = 0, ma = 1, mb = 1;
    for (size_t i = nb; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      fa += (dim(sa, i) == 1 ? 0 : idx) * ma;
      fb += (dim(sb, i) == 1 ? 0 : idx) * mb;
      ma *= dim(sa, i);
      mb *= dim(sb, i);
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += a.get(fa * M * K + i * K + k) * b.get(fb * K * N + k * N + j);
        out.push_back(acc);
      }
  }
  return out;
}

void require_close(const Tensor& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) worst = std::max(worst, std::fabs(got.get(i) - want[i]));
  INFO("max abs error " << worst);
  REQUIRE(worst <= tol);
}

void check_all_algos(Workspace& ws, const Tensor& a, const Tensor& b) {
  Shape shape;
  const std::vector<double> want = reference_matmul(a, b, shape);
  const double tol = a.dtype() == DType::f32 || b.dtype() == DType::f32 ? 1e-4 * std::sqrt(a.shape().back()) : 1e-11;
  for (const auto& algo : kAlgos) {
    INFO("algo " << algo << ": " << shape_str(a.shape()) << " @ " << shape_str(b.shape()));
    Tensor c = ws.call("matmul", {a, b}, {}, algo);
    REQUIRE(c.shape() == shape);
    require_close(c, want, tol);
  }
}

template <class F> double best_seconds(int reps, F f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

TEST_CASE("matmul: every algorithm matches the reference on odd sizes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (DType dt : {DType::f64, DType::f32}) {
    check_all_algos(ws, random_tensor({7, 13}, dt, 1), random_tensor({13, 5}, dt, 2));
    check_all_algos(ws, random_tensor({1, 1}, dt, 3), random_tensor({1, 9}, dt, 4));
    check_all_algos(ws, random_tensor({9, 1}, dt, 5), random_tensor({1, 1}, dt, 6));
    // Crosses the blocked kernel's tile edges (64 x 256 x 256).
    check_all_algos(ws, random_tensor({67, 259}, dt, 7), random_tensor({259, 261}, dt, 8));
  }
}

TEST_CASE("matmul: batched and broadcast batch axes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  check_all_algos(ws, random_tensor({3, 7, 13}, DType::f64, 1), random_tensor({3, 13, 5}, DType::f64, 2));
  check_all_algos(ws, random_tensor({2, 3, 4}, DType::f64, 3), random_tensor({4, 5}, DType::f64, 4));
  check_all_algos(ws, random_tensor({3, 4}, DType::f64, 5), random_tensor({2, 4, 5}, DType::f64, 6));
  check_all_algos(ws, random_tensor({1, 3, 4}, DType::f64, 7), random_tensor({2, 4, 5}, DType::f64, 8));
  check_all_algos(ws, random_tensor({2, 1, 4, 5}, DType::f32, 9), random_tensor({3, 5, 6}, DType::f32, 10));
  Tensor c = ws.call("matmul", {random_tensor({2, 1, 4, 5}, DType::f64, 1), random_tensor({3, 5, 6}, DType::f64, 2)});
  REQUIRE(c.shape() == Shape{2, 3, 4, 6});
}

TEST_CASE("matmul: a batch against one B is one tall product, other layouts one per matrix", "[op]") {
  // [N, T, K] @ [K, N'] runs as one [N·T, K] product (the rows of the batch follow each other);
  // a batch whose matrices do not follow each other at one row stride (a slice of rows, a
  // transposed batch) or a B that differs per matrix takes the per-matrix path. All against
  // the reference, large enough to be cut into panels.
  Workspace ws;
  WorkspaceScope scope(ws);
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor b = random_tensor({67, 130}, dt, 21);
    check_all_algos(ws, random_tensor({5, 41, 67}, dt, 22), b);
    check_all_algos(ws, random_tensor({2, 3, 41, 67}, dt, 23), b);
    check_all_algos(ws, random_tensor({5, 41, 67}, dt, 24), random_tensor({1, 67, 130}, dt, 25));
    Tensor tall = random_tensor({5, 50, 67}, dt, 26);
    check_all_algos(ws, ws.call("slice", {tall}, {{"axis", int64_t{1}}, {"stop", int64_t{41}}}),
                    b);  // gaps between matrices
    Tensor wide = random_tensor({5, 41, 80}, dt, 27);
    check_all_algos(ws, ws.call("slice", {wide}, {{"axis", int64_t{2}}, {"stop", int64_t{67}}}), b);  // rows 80 apart
    check_all_algos(ws, ws.call("transpose", {random_tensor({5, 67, 41}, dt, 28)}), b);  // column-major
    Tensor bt = ws.call("transpose", {random_tensor({130, 67}, dt, 29)});  // B read transposed
    check_all_algos(ws, random_tensor({5, 41, 67}, dt, 30), bt);
  }
}

TEST_CASE("matmul: transposed views are read in place, other strides copied", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor at = random_tensor({13, 7}, dt, 11), bt = random_tensor({5, 13}, dt, 12);
    Tensor a = ws.call("transpose", {at}), b = ws.call("transpose", {bt});  // [7, 13], [13, 5]
    Tensor ac = a.contiguous(MemCategory::input), bc = b.contiguous(MemCategory::input);
    check_all_algos(ws, a, b);
    check_all_algos(ws, a, bc);
    check_all_algos(ws, ac, b);
    // Batched transposed view: [2, 13, 7] -> [2, 7, 13].
    Tensor a3 = ws.call("transpose", {random_tensor({2, 13, 7}, dt, 13)});
    check_all_algos(ws, a3, random_tensor({13, 5}, dt, 14));
    // A step-2 slice of the last axis: neither stride is 1, so it is copied first.
    Tensor wide = random_tensor({7, 26}, dt, 15);
    Tensor s = ws.call("slice", {wide}, {{"axis", int64_t{1}}, {"step", int64_t{2}}});
    REQUIRE(s.shape() == Shape{7, 13});
    check_all_algos(ws, s, b);
    // Rows of a sliced matrix (row stride larger than the row): read in place.
    Tensor rows = ws.call("slice", {wide}, {{"axis", int64_t{1}}, {"stop", int64_t{13}}});
    check_all_algos(ws, rows, bc);
    // A broadcast (stride 0) operand.
    Tensor e = ws.call("expand", {random_tensor({1, 13}, dt, 16)}, {{"shape", V{7, 13}}});
    check_all_algos(ws, e, b);
  }
}

TEST_CASE("matmul eigen: no copy for contiguous or transposed operands", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor at = random_tensor({40, 30}, DType::f32, 1), b = random_tensor({40, 20}, DType::f32, 2);
  Tensor a = ws.call("transpose", {at});  // [30, 40]
  for (const char* algo : {"eigen", "naive"}) {
    const int64_t before = ws.tracker().live_total();
    ws.tracker().reset_peak();
    Tensor c = ws.call("matmul", {a, b}, {}, algo);
    INFO(algo);
    REQUIRE(ws.tracker().peak_total() - before == c.nbytes());  // only the output
  }
}

TEST_CASE("matmul: mixed float32 @ float64 gives float64", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = random_tensor({3, 4}, DType::f32, 1), b = random_tensor({4, 2}, DType::f64, 2);
  for (const auto& algo : kAlgos) REQUIRE(ws.call("matmul", {a, b}, {}, algo).dtype() == DType::f64);
  check_all_algos(ws, a, b);
}

TEST_CASE("matmul: empty dimensions", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (const auto& algo : kAlgos) {
    Tensor c = ws.call("matmul", {Tensor::zeros({3, 0}, DType::f64), Tensor::zeros({0, 2}, DType::f64)}, {}, algo);
    REQUIRE(c.shape() == Shape{3, 2});
    REQUIRE(c.to_vector() == std::vector<double>(6, 0.0));
    REQUIRE(ws.call("matmul", {Tensor::zeros({0, 4}), Tensor::zeros({4, 2})}, {}, algo).shape() == Shape{0, 2});
  }
}

TEST_CASE("matmul: shape and dtype errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  REQUIRE_THROWS_WITH(ws.call("matmul", {a, b}), "matmul: inner dimensions differ: [2, 3] @ [4, 5] (3 != 4)");
  try {
    ws.call("matmul", {Tensor::zeros({2, 3}), Tensor::zeros({4, 3})});
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Contains("inner dimensions differ"));
    REQUIRE_THAT(e.hint(), Catch::Contains("transpose(b, 0, 1)"));
  }
  REQUIRE_THROWS_WITH(ws.call("matmul", {Tensor::zeros({3}), a}), Catch::Contains("rank >= 2"));
  try {
    ws.call("matmul", {a, Tensor::zeros({3})});
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Contains("1-D vector"));
    REQUIRE_THAT(e.hint(), Catch::Contains("reshape(b, [3, 1])"));
  }
  REQUIRE_THROWS_WITH(ws.call("matmul", {Tensor::zeros({2, 3}, DType::i64), Tensor::zeros({3, 2}, DType::i64)}),
                      Catch::Contains("floating-point"));
  REQUIRE_THROWS_WITH(ws.call("matmul", {Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 4})}),
                      Catch::Contains("batch dimensions [2] and [3] cannot be broadcast"));
  REQUIRE_THROWS_WITH(ws.call("matmul", {a, Tensor::zeros({3, 2})}, {}, "winograd"),
                      Catch::Contains("unknown algorithm"));
}

TEST_CASE("matmul: backward dA = dC·Bᵀ, dB = Aᵀ·dC", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}), b = Tensor::from_vector<double>({5, 6, 7, 8}, {2, 2});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor c = ws.call("matmul", {a, b});
  REQUIRE(c.to_vector() == std::vector<double>{19, 22, 43, 50});
  ws.backward(c, Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2}));
  REQUIRE(a.grad().to_vector() == std::vector<double>{5, 7, 6, 8});  // Bᵀ
  REQUIRE(b.grad().to_vector() == std::vector<double>{1, 3, 2, 4});  // Aᵀ
  const OpDef& d = OpRegistry::instance().get("matmul");
  REQUIRE(d.backward_note == "dA = dC·Bᵀ, dB = Aᵀ·dC");
  REQUIRE(d.default_algorithm() == cpu::gemm_algo_name(cpu::default_gemm()));
  Cost cost = d.cost({{{2, 3, 4}, DType::f32}, {{4, 5}, DType::f32}}, {{{2, 3, 5}, DType::f32}}, {}, "eigen");
  REQUIRE(cost.flops == 2 * 3 * 5 * 4 * 2);
  REQUIRE(cost.bytes_read == (24 + 20) * 4);
  REQUIRE(cost.bytes_written == 30 * 4);
}

TEST_CASE("matmul passes gradcheck for every algorithm", "[op][grad]") { require_gradcheck("matmul"); }

TEST_CASE("matmul speed: blocked >= 5x naive, eigen >= 90% of direct Eigen", "[.perf]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t n = 512;
  Tensor a = random_tensor({n, n}, DType::f32, 1), b = random_tensor({n, n}, DType::f32, 2);
  NoGradGuard ng;
  const double naive = best_seconds(2, [&] { ws.call("matmul", {a, b}, {}, "naive"); });
  const double blocked = best_seconds(5, [&] { ws.call("matmul", {a, b}, {}, "blocked"); });
  Tensor c = Tensor::empty({n, n});
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const M> A(a.data<float>(), n, n), B(b.data<float>(), n, n);
  Eigen::Map<M> C(c.data<float>(), n, n);
  // Interleaved, best of many: other processes on a shared machine slow both alike.
  double eigen = 1e30, direct = 1e30;
  for (int r = 0; r < 15; ++r) {
    eigen = std::min(eigen, best_seconds(1, [&] { ws.call("matmul", {a, b}, {}, "eigen"); }));
    direct = std::min(direct, best_seconds(1, [&] { C.noalias() = A * B; }));
  }
  const double gf = 2.0 * n * n * n * 1e-9;
  WARN("512^3 float32 GFLOP/s: naive " << gf / naive << ", blocked " << gf / blocked << ", eigen " << gf / eigen
                                       << ", direct Eigen " << gf / direct);
  CHECK(naive / blocked >= 5.0);
  CHECK(direct / eigen >= 0.9);
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("linear: y = x·Wᵀ + b by hand", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = random_tensor({2, 3, 4}, DType::f64, 1), w = random_tensor({5, 4}, DType::f64, 2),
         b = random_tensor({5}, DType::f64, 3);
  Tensor y = ws.call("linear", {x, w, b});
  REQUIRE(y.shape() == Shape{2, 3, 5});
  Tensor y0 = ws.call("linear", {x, w});
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t o = 0; o < 5; ++o) {
      double acc = 0;
      for (int64_t i = 0; i < 4; ++i) acc += x.get(r * 4 + i) * w.get(o * 4 + i);
      REQUIRE(y0.get(r * 5 + o) == Approx(acc).margin(1e-12));
      REQUIRE(y.get(r * 5 + o) == Approx(acc + b.get(o)).margin(1e-12));
    }
  // 1-D x and float32.
  Tensor x1 = random_tensor({4}, DType::f32, 4), w1 = random_tensor({3, 4}, DType::f32, 5);
  Tensor y1 = ws.call("linear", {x1, w1});
  REQUIRE(y1.shape() == Shape{3});
  REQUIRE(y1.dtype() == DType::f32);
  for (int64_t o = 0; o < 3; ++o) {
    double acc = 0;
    for (int64_t i = 0; i < 4; ++i) acc += x1.get(i) * w1.get(o * 4 + i);
    REQUIRE(y1.get(o) == Approx(acc).margin(1e-5));
  }
  // A transposed (strided) x.
  Tensor xt = ws.call("transpose", {random_tensor({4, 3}, DType::f64, 6)});
  Tensor yt = ws.call("linear", {xt, w});
  Tensor yc = ws.call("linear", {xt.contiguous(MemCategory::input), w});
  REQUIRE(yt.to_vector() == yc.to_vector());
}

TEST_CASE("linear: shape errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::zeros({2, 4});
  try {
    ws.call("linear", {x, Tensor::zeros({4, 3})});
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Contains("input features differ"));
    REQUIRE_THAT(e.hint(), Catch::Contains("transposed"));
  }
  REQUIRE_THROWS_WITH(ws.call("linear", {x, Tensor::zeros({3, 4}), Tensor::zeros({4})}),
                      Catch::Contains("bias has shape [4]"));
  REQUIRE_THROWS_WITH(ws.call("linear", {x, Tensor::zeros({4})}), Catch::Contains("weight must be 2-D"));
  REQUIRE_THROWS_WITH(ws.call("linear", {x}), Catch::Contains("expects 2 or 3 inputs"));
}

TEST_CASE("linear backward matches the composite formulas", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}),
         w = Tensor::from_vector<double>({1, 0, 2, 1, 0, 3}, {3, 2});
  w.set_requires_grad(true);
  x.set_requires_grad(true);
  Tensor y = ws.call("linear", {x, w});
  REQUIRE(y.to_vector() == std::vector<double>{1, 4, 6, 3, 10, 12});
  Tensor dy = Tensor::from_vector<double>({1, 0, 1, 0, 1, 0}, {2, 3});
  ws.backward(y, dy);
  // dx = dy·W = [[1, 3], [2, 1]]; dW = dyᵀ·x = [[1, 2], [3, 4], [1, 2]]
  REQUIRE(x.grad().to_vector() == std::vector<double>{1, 3, 2, 1});
  REQUIRE(w.grad().to_vector() == std::vector<double>{1, 2, 3, 4, 1, 2});
}

TEST_CASE("linear passes gradcheck", "[op][grad]") { require_gradcheck("linear"); }

// ---------------------------------------------------------------------------------------------
TEST_CASE("dropout: deterministic, keeps about 1 - p, preserves the expectation", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t n = 200000;
  Tensor x = Tensor::full({n}, 1.0, DType::f64);
  for (double p : {0.1, 0.5, 0.8}) {
    INFO("p = " << p);
    Tensor y = ws.call("dropout", {x}, {{"p", p}, {"seed", int64_t{42}}});
    Tensor y2 = ws.call("dropout", {x}, {{"p", p}, {"seed", int64_t{42}}});
    REQUIRE(y.to_vector() == y2.to_vector());
    int64_t kept = 0;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = y.get(i);
      REQUIRE((v == 0.0 || v == Approx(1.0 / (1.0 - p))));
      kept += v != 0.0;
      sum += v;
    }
    REQUIRE(static_cast<double>(kept) / n == Approx(1.0 - p).margin(0.01));
    REQUIRE(sum / n == Approx(1.0).margin(0.03));
  }
  // Another seed, another mask.
  Tensor a = ws.call("dropout", {x}, {{"seed", int64_t{1}}}), b = ws.call("dropout", {x}, {{"seed", int64_t{2}}});
  REQUIRE(a.to_vector() != b.to_vector());
  // The mask depends on the element index only: a prefix of x gets the prefix of the mask.
  Tensor head = ws.call("slice", {x}, {{"stop", int64_t{1000}}});
  Tensor ah = ws.call("dropout", {head}, {{"seed", int64_t{1}}});
  for (int64_t i = 0; i < 1000; ++i) REQUIRE(ah.get(i) == a.get(i));
  // Same for float32.
  Tensor xf = Tensor::full({1000}, 1.0, DType::f32);
  Tensor af = ws.call("dropout", {xf}, {{"seed", int64_t{1}}});
  for (int64_t i = 0; i < 1000; ++i) REQUIRE((af.get(i) == 0) == (a.get(i) == 0));
}

TEST_CASE("dropout: identity when not training or p = 0; p < 1", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, -2, 3, 4}, {2, 2});
  REQUIRE(ws.call("dropout", {x}, {{"training", false}}).to_vector() == x.to_vector());
  REQUIRE(ws.call("dropout", {x}, {{"p", 0.0}}).to_vector() == x.to_vector());
  REQUIRE_THROWS_WITH(ws.call("dropout", {x}, {{"p", 1.0}}), Catch::Contains("p must be < 1"));
  REQUIRE_THROWS_WITH(ws.call("dropout", {x}, {{"p", -0.1}}), Catch::Contains("'p' must be"));
  REQUIRE_THROWS_WITH(ws.call("dropout", {Tensor::zeros({2}, DType::i64)}), Catch::Contains("floating-point"));
}

TEST_CASE("dropout backward uses the forward mask", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::full({64}, 1.0, DType::f64);
  x.set_requires_grad(true);
  Tensor y = ws.call("dropout", {x}, {{"p", 0.3}, {"seed", int64_t{9}}});
  const int64_t saved_nodes =
      static_cast<int64_t>(ws.graph().node(static_cast<int>(ws.graph().num_nodes()) - 1).saved.size());
  REQUIRE(saved_nodes == 0);
  ws.backward(y, Tensor::full({64}, 1.0, DType::f64));
  REQUIRE(x.grad().to_vector() == y.to_vector());  // dy = 1: dx = mask / (1 - p) = y / x
}

TEST_CASE("dropout passes gradcheck", "[op][grad]") { require_gradcheck("dropout"); }

TEST_CASE("linear with zero input features back-propagates", "[op][grad]") {
  opscope::Workspace ws;
  opscope::WorkspaceScope scope(ws);
  using opscope::Tensor;
  Tensor x = opscope::test::param(Tensor::zeros({2, 3, 0}, opscope::DType::f64));
  Tensor w = opscope::test::param(Tensor::zeros({5, 0}, opscope::DType::f64));
  Tensor y = ws.call("linear", {x, w});
  CHECK(y.shape() == opscope::Shape{2, 3, 5});
  ws.backward(ws.call("sum", {y}));
  CHECK(x.grad().shape() == opscope::Shape{2, 3, 0});
  CHECK(w.grad().shape() == opscope::Shape{5, 0});
}
