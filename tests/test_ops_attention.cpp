// scaled_dot_product_attention (naive, flash) against an independent reference loop written
// here, across tile borders (T = 130), with causal and masks; attention_backward against
// reference gradients; fully masked rows; shape errors; the memory each algorithm holds.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "core/error.h"
#include "core/gradcheck.h"
#include "core/op.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "tests/helpers.h"

using namespace opscope;

namespace {

using opscope::test::require_gradcheck;

const std::vector<std::string> kAlgos = {"naive", "flash"};

Tensor uniform(const Shape& shape, DType dt, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector<double>(v, shape, dt);
}

Tensor mask01(const Shape& shape, uint64_t seed, double keep = 0.7) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution b(keep);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = b(rng) ? 1 : 0;
  return Tensor::from_vector<int64_t>(v, shape, DType::i64);
}

// Reference for one head, all in double and element by element (Tensor::get): q [B, T, D],
// k [B, S, D], v [B, S, Dv] with B the same for all (the tests broadcast by hand before calling),
// mask given as a function (b, i, j) -> additive value (−inf = masked).
struct Ref {
  std::vector<double> o, dq, dk, dv;
};

template <class MaskFn>
Ref reference(const Tensor& q, const Tensor& k, const Tensor& v, int64_t B, MaskFn mask, bool causal, double scale,
              const Tensor* dout = nullptr) {
  const int64_t T = q.shape()[q.dim() - 2], D = q.shape().back(), S = k.shape()[k.dim() - 2], Dv = v.shape().back();
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(D));
  const double inf = std::numeric_limits<double>::infinity();
  Ref r;
  r.o.assign(B * T * Dv, 0.0);
  r.dq.assign(B * T * D, 0.0);
  r.dk.assign(B * S * D, 0.0);
  r.dv.assign(B * S * Dv, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i) {
      std::vector<double> s(S), p(S, 0.0);
      double mx = -inf;
      for (int64_t j = 0; j < S; ++j) {
        double acc = 0;
        for (int64_t d = 0; d < D; ++d) acc += q.get((b * T + i) * D + d) * k.get((b * S + j) * D + d);
        s[j] = acc * scale + mask(b, i, j);
        if (causal && j > i) s[j] = -inf;
        mx = std::max(mx, s[j]);
      }
      if (mx == -inf) continue;  // fully masked row: output 0, no gradient
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += p[j] = std::exp(s[j] - mx);
      for (int64_t j = 0; j < S; ++j) p[j] /= sum;
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Dv; ++e) r.o[(b * T + i) * Dv + e] += p[j] * v.get((b * S + j) * Dv + e);
      if (!dout) continue;
      // dP[j] = dO·v_j; dS[j] = P[j]·(dP[j] − Σ_j' P[j']·dP[j']).
      std::vector<double> dp(S, 0.0);
      double dot = 0;
      for (int64_t j = 0; j < S; ++j) {
        for (int64_t e = 0; e < Dv; ++e) dp[j] += dout->get((b * T + i) * Dv + e) * v.get((b * S + j) * Dv + e);
        dot += p[j] * dp[j];
      }
      for (int64_t j = 0; j < S; ++j) {
        const double ds = p[j] * (dp[j] - dot) * scale;
        for (int64_t d = 0; d < D; ++d) {
          r.dq[(b * T + i) * D + d] += ds * k.get((b * S + j) * D + d);
          r.dk[(b * S + j) * D + d] += ds * q.get((b * T + i) * D + d);
        }
        for (int64_t e = 0; e < Dv; ++e) r.dv[(b * S + j) * Dv + e] += p[j] * dout->get((b * T + i) * Dv + e);
      }
    }
  return r;
}

auto no_mask = [](int64_t, int64_t, int64_t) { return 0.0; };

void require_close(const Tensor& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    REQUIRE(std::isfinite(got.get(i)));
    worst = std::max(worst, std::fabs(got.get(i) - want[i]));
  }
  INFO("max abs error " << worst);
  REQUIRE(worst <= tol);
}

}  // namespace

TEST_CASE("attention: a hand-derived case", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // One query, two keys: scores [0, ln 3] (scale 1), weights [1/4, 3/4], O = 4/4 + 3·8/4 = 7.
  Tensor q = Tensor::from_vector<double>({1.0}, {1, 1}, DType::f64);
  Tensor k = Tensor::from_vector<double>({0.0, std::log(3.0)}, {2, 1}, DType::f64);
  Tensor v = Tensor::from_vector<double>({4.0, 8.0}, {2, 1}, DType::f64);
  for (auto& algo : kAlgos) {
    Tensor o = ws.call("scaled_dot_product_attention", {q, k, v}, {{"scale", 1.0}}, algo);
    REQUIRE(o.shape() == Shape{1, 1});
    REQUIRE(o.item() == Approx(7.0).epsilon(1e-12));
    // scale 0 means 1/sqrt(D) = 1 here, causal keeps only key 0: O = 4.
    Tensor oc = ws.call("scaled_dot_product_attention", {q, k, v}, {{"causal", true}}, algo);
    REQUIRE(oc.item() == Approx(4.0).epsilon(1e-12));
  }
}

TEST_CASE("attention: naive and flash match the reference on odd sizes and across tiles", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  struct Case {
    int64_t T, S, D, Dv;
  };
  for (Case c : {Case{1, 1, 1, 1}, Case{7, 9, 5, 3}, Case{130, 131, 17, 6}, Case{65, 200, 8, 9}, Case{130, 3, 4, 4}}) {
    for (DType dt : {DType::f64, DType::f32}) {
      Tensor q = uniform({2, c.T, c.D}, dt, 1), k = uniform({2, c.S, c.D}, dt, 2), v = uniform({2, c.S, c.Dv}, dt, 3);
      for (bool causal : {false, true}) {
        const Ref want = reference(q, k, v, 2, no_mask, causal, 0.0);
        for (auto& algo : kAlgos) {
          INFO(algo << " T=" << c.T << " S=" << c.S << " D=" << c.D << " Dv=" << c.Dv << " causal=" << causal << " "
                    << dtype_name(dt));
          Tensor o = ws.call("scaled_dot_product_attention", {q, k, v}, {{"causal", causal}}, algo);
          REQUIRE(o.shape() == Shape{2, c.T, c.Dv});
          REQUIRE(o.dtype() == dt);
          require_close(o, want.o, dt == DType::f64 ? 1e-12 : 2e-5);
        }
      }
    }
  }
}

TEST_CASE("attention: explicit scale and broadcast batch axes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // q [2, 3, T, D] against one k, v [T, ...] shared by every batch entry (broadcast).
  Tensor q = uniform({2, 3, 70, 5}, DType::f64, 4), k = uniform({67, 5}, DType::f64, 5),
         v = uniform({67, 4}, DType::f64, 6);
  Tensor kb = ws.call("expand", {k}, {{"shape", Shape{6, 67, 5}}}).contiguous();
  Tensor vb = ws.call("expand", {v}, {{"shape", Shape{6, 67, 4}}}).contiguous();
  const Ref want = reference(q, kb, vb, 6, no_mask, false, 0.3);
  for (auto& algo : kAlgos) {
    Tensor o = ws.call("scaled_dot_product_attention", {q, k, v}, {{"scale", 0.3}}, algo);
    REQUIRE(o.shape() == Shape{2, 3, 70, 4});
    require_close(o, want.o, 1e-12);
  }
}

TEST_CASE("attention: float additive masks, broadcast masks and int64 0/1 masks", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t T = 130, S = 77, D = 7;
  Tensor q = uniform({2, T, D}, DType::f64, 7), k = uniform({2, S, D}, DType::f64, 8),
         v = uniform({2, S, D}, DType::f64, 9);
  const double inf = std::numeric_limits<double>::infinity();

  // Float [T, S] with some −inf entries (row 0 keeps at least key 0).
  Tensor fm = uniform({T, S}, DType::f64, 10, -2.0, 2.0);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 1; j < S; j += 5) fm.data<double>()[i * S + j] = -inf;
  // Int64 [2, 1, S] (per batch, same for every query) and [T, S].
  Tensor im_bs = mask01({2, 1, S}, 11);
  im_bs.data<int64_t>()[0] = 1;
  im_bs.data<int64_t>()[S] = 1;
  Tensor im = mask01({T, S}, 12);
  for (int64_t i = 0; i < T; ++i) im.data<int64_t>()[i * S] = 1;
  // Float [S] broadcast over queries and batches.
  Tensor fs = uniform({S}, DType::f64, 13, -3.0, 3.0);

  struct MaskCase {
    std::string name;
    Tensor mask;
    std::function<double(int64_t, int64_t, int64_t)> fn;
  };
  std::vector<MaskCase> cases = {
      {"float [T, S]", fm, [&](int64_t, int64_t i, int64_t j) { return fm.get(i * S + j); }},
      {"float [S]", fs, [&](int64_t, int64_t, int64_t j) { return fs.get(j); }},
      {"int64 [T, S]", im, [&](int64_t, int64_t i, int64_t j) { return im.get(i * S + j) == 0 ? -inf : 0.0; }},
      {"int64 [2, 1, S]", im_bs, [&](int64_t b, int64_t, int64_t j) { return im_bs.get(b * S + j) == 0 ? -inf : 0.0; }},
  };
  for (auto& mc : cases)
    for (bool causal : {false, true}) {
      const Ref want = reference(q, k, v, 2, mc.fn, causal, 0.0);
      for (auto& algo : kAlgos) {
        INFO(algo << " mask " << mc.name << " causal=" << causal);
        Tensor o = ws.call("scaled_dot_product_attention", {q, k, v, mc.mask}, {{"causal", causal}}, algo);
        require_close(o, want.o, 1e-12);
        // float32 inputs with the same mask (a float64 mask is cast to the inputs' dtype).
        Tensor o32 =
            ws.call("scaled_dot_product_attention",
                    {q.cast(DType::f32), k.cast(DType::f32), v.cast(DType::f32), mc.mask}, {{"causal", causal}}, algo);
        require_close(o32, want.o, 2e-5);
      }
    }
}

TEST_CASE("attention: a fully masked row gives 0 (not NaN) in both algorithms, and no gradient", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t T = 5, S = 70, D = 3;
  Tensor mask = mask01({T, S}, 14);
  for (int64_t j = 0; j < S; ++j) mask.data<int64_t>()[2 * S + j] = 0;  // query 2 sees nothing
  Tensor fmask = Tensor::full({T, S}, 0.0, DType::f64);
  for (int64_t j = 0; j < S; ++j) fmask.data<double>()[4 * S + j] = -std::numeric_limits<double>::infinity();
  Tensor qv = uniform({T, D}, DType::f64, 15), kv = uniform({S, D}, DType::f64, 16),
         vv = uniform({S, D}, DType::f64, 17);
  for (const Tensor& m : {mask, fmask}) {
    const int64_t row = m.dtype() == DType::i64 ? 2 : 4;
    for (auto& algo : kAlgos) {
      INFO(algo << " " << dtype_name(m.dtype()) << " mask");
      Tensor q = test::param(qv.clone(MemCategory::input)), k = test::param(kv.clone(MemCategory::input)),
             v = test::param(vv.clone(MemCategory::input));
      Tensor o = ws.call("scaled_dot_product_attention", {q, k, v, m}, {}, algo);
      for (int64_t i = 0; i < o.numel(); ++i) REQUIRE(std::isfinite(o.get(i)));
      for (int64_t e = 0; e < D; ++e) REQUIRE(o.get(row * D + e) == 0.0);
      ws.backward(o, Tensor::full(o.shape(), 1.0, DType::f64));
      for (int64_t i = 0; i < q.numel(); ++i) REQUIRE(std::isfinite(q.grad().get(i)));
      for (int64_t e = 0; e < D; ++e) REQUIRE(q.grad().get(row * D + e) == 0.0);
      for (int64_t i = 0; i < k.numel(); ++i) REQUIRE(std::isfinite(k.grad().get(i)));
      for (int64_t i = 0; i < v.numel(); ++i) REQUIRE(std::isfinite(v.grad().get(i)));
    }
  }
}

TEST_CASE("attention_backward matches reference gradients across tile borders", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t T = 130, S = 131, D = 9, Dv = 5;
  Tensor qv = uniform({2, T, D}, DType::f64, 20), kv = uniform({2, S, D}, DType::f64, 21),
         vv = uniform({2, S, Dv}, DType::f64, 22), dout = uniform({2, T, Dv}, DType::f64, 23);
  Tensor fm = uniform({T, S}, DType::f64, 24, -1.0, 1.0);
  auto fm_fn = [&](int64_t, int64_t i, int64_t j) { return fm.get(i * S + j); };
  for (bool causal : {false, true})
    for (bool with_mask : {false, true}) {
      const Ref want = with_mask ? reference(qv, kv, vv, 2, fm_fn, causal, 0.0, &dout)
                                 : reference(qv, kv, vv, 2, no_mask, causal, 0.0, &dout);
      for (auto& algo : kAlgos) {
        INFO(algo << " causal=" << causal << " mask=" << with_mask);
        Tensor q = test::param(qv.clone(MemCategory::input)), k = test::param(kv.clone(MemCategory::input)),
               v = test::param(vv.clone(MemCategory::input));
        std::vector<Tensor> ins = {q, k, v};
        if (with_mask) ins.push_back(fm);
        Tensor o = ws.call("scaled_dot_product_attention", ins, {{"causal", causal}}, algo);
        require_close(o, want.o, 1e-12);
        ws.backward(o, dout);
        require_close(q.grad(), want.dq, 1e-11);
        require_close(k.grad(), want.dk, 1e-11);
        require_close(v.grad(), want.dv, 1e-11);
      }
    }
}

TEST_CASE("attention: gradient reaches broadcast k and v (summed over the batch)", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor q = test::param(uniform({3, 6, 4}, DType::f64, 30)), k = test::param(uniform({7, 4}, DType::f64, 31)),
         v = test::param(uniform({1, 7, 2}, DType::f64, 32));
  Tensor o = ws.call("scaled_dot_product_attention", {q, k, v}, {}, "flash");
  REQUIRE(o.shape() == Shape{3, 6, 2});
  Tensor dout = uniform({3, 6, 2}, DType::f64, 33);
  ws.backward(o, dout);
  REQUIRE(k.grad().shape() == Shape{7, 4});
  REQUIRE(v.grad().shape() == Shape{1, 7, 2});
  Tensor kb = ws.call("expand", {k}, {{"shape", Shape{3, 7, 4}}}).contiguous();
  Tensor vb = ws.call("expand", {v}, {{"shape", Shape{3, 7, 2}}}).contiguous();
  const Ref want = reference(q, kb, vb, 3, no_mask, false, 0.0, &dout);
  std::vector<double> dk(7 * 4, 0.0), dv(7 * 2, 0.0);
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t i = 0; i < 28; ++i) dk[i] += want.dk[b * 28 + i];
    for (int64_t i = 0; i < 14; ++i) dv[i] += want.dv[b * 14 + i];
  }
  require_close(q.grad(), want.dq, 1e-12);
  require_close(k.grad(), dk, 1e-12);
  require_close(v.grad(), dv, 1e-12);
}

static void require_same(const Tensor& a, const Tensor& b, DType, const std::string&) {
  REQUIRE(a.to_vector() == b.to_vector());
}

TEST_CASE("attention: heads read in place from a projection give the dense inputs' bits", "[op][grad]") {
  // q, k, v as a Transformer block makes them: slices of one [N, T, 3·H·D] projection split
  // into heads ([N, H, T, D] views, rows 3·H·D apart), a strided mask, and an expanded
  // (stride-0 rows) k that must be copied; against the same values made dense first.
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t N = 2, T = 70, H = 3, D = 5;
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor qkv = uniform({N, T, 3 * H * D}, dt, 40), dout = uniform({N, H, T, D}, dt, 41);
    Tensor mask_wide = uniform({T, 2 * T}, dt, 42);
    auto head = [&](int64_t part) {
      Tensor s = ws.call("slice", {qkv}, {{"axis", int64_t{2}}, {"start", part * H * D}, {"stop", (part + 1) * H * D}});
      Tensor r = ws.call("reshape", {s}, {{"shape", Shape{N, T, H, D}}});
      REQUIRE(&r.storage() == &qkv.storage());  // a view: no copy made for the heads
      return ws.call("permute", {r}, {{"dims", std::vector<int64_t>{0, 2, 1, 3}}});
    };
    Tensor mask = ws.call("slice", {mask_wide}, {{"axis", int64_t{1}}, {"step", int64_t{2}}});  // [T, T], strided
    Tensor k_rows = ws.call("expand", {uniform({N, H, 1, D}, dt, 43)}, {{"shape", Shape{N, H, T, D}}});
    for (auto& algo : kAlgos)
      for (bool causal : {false, true}) {
        INFO(algo << " causal=" << causal << " " << dtype_name(dt));
        for (bool expanded_k : {false, true}) {
          std::vector<Tensor> strided = {head(0), expanded_k ? k_rows : head(1), head(2), mask};
          std::vector<Tensor> dense;
          for (const Tensor& t : strided) dense.push_back(t.contiguous(MemCategory::input));
          Tensor a = ws.call("scaled_dot_product_attention", strided, {{"causal", causal}}, algo);
          Tensor b = ws.call("scaled_dot_product_attention", dense, {{"causal", causal}}, algo);
          require_same(a, b, dt, algo);
          std::vector<Tensor> bs = {strided[0], strided[1], strided[2], b, dout, mask};
          std::vector<Tensor> bd = {dense[0], dense[1], dense[2], b, dout, dense[3]};
          const OpDef& backward = OpRegistry::instance().get("attention_backward");
          const Attrs attrs = backward.resolve({{"causal", causal}});
          std::vector<Tensor> ga = ws.call_multi(backward, bs, attrs), gd = ws.call_multi(backward, bd, attrs);
          for (size_t i = 0; i < 3; ++i) REQUIRE(ga[i].to_vector() == gd[i].to_vector());
        }
      }
  }
}

TEST_CASE("attention: gradcheck (naive and flash, causal, masks, batch)", "[op][grad]") {
  require_gradcheck("scaled_dot_product_attention");
}

TEST_CASE("attention: shape and dtype errors", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor q = Tensor::zeros({2, 4, 3}), k = Tensor::zeros({2, 5, 3}), v = Tensor::zeros({2, 5, 6});
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {q, Tensor::zeros({2, 5, 4}), v}),
                      Catch::Contains("scaled_dot_product_attention: q has head size D=3 but k has D=4") &&
                          Catch::Contains("k [2, 5, 4]"));
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {q, k, Tensor::zeros({2, 6, 6})}),
                      Catch::Contains("k has S=5 keys but v has 6 values") && Catch::Contains("v [2, 6, 6]"));
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {q, k, v, Tensor::zeros({4, 6})}),
                      Catch::Contains("mask of shape [4, 6] cannot be broadcast to the scores [2, 4, 5]"));
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {q, Tensor::zeros({3, 5, 3}), v}),
                      Catch::Contains("cannot be broadcast"));
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {Tensor::zeros({3}), k, v}),
                      Catch::Contains("rank >= 2"));
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {Tensor::zeros({4, 3}, DType::i64), k, v}),
                      Catch::Contains("expected a floating-point"));
  REQUIRE_THROWS_WITH(ws.call("scaled_dot_product_attention", {q, k, v}, {{"scale", -1.0}}), Catch::Contains("scale"));
}

TEST_CASE("attention: naive holds T×S workspace, flash one tile", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  const int64_t T = 300, S = 260, D = 16;
  Tensor q = uniform({T, D}, DType::f32, 40), k = uniform({S, D}, DType::f32, 41), v = uniform({S, D}, DType::f32, 42);
  auto peak_ws = [&](const std::string& algo) {
    ws.tracker().reset_peak();
    const int64_t before = ws.tracker().live(MemCategory::workspace);
    ws.call("scaled_dot_product_attention", {q, k, v}, {}, algo);
    return ws.tracker().peak(MemCategory::workspace) - before;
  };
  REQUIRE(peak_ws("naive") >= T * S * 4);
  const int64_t tiles = (64 * 64 + D * 64) * 4 + 4096;  // a score tile and a key tile (Kᵀ, D × 64), and stats
  {
    NumThreadsScope one(1);
    REQUIRE(peak_ws("flash") <= tiles);
  }
  REQUIRE(peak_ws("flash") <= num_threads() * tiles);  // one pair of tiles per thread
  REQUIRE(ws.tracker().live(MemCategory::workspace) == 0);
}

TEST_CASE("attention: empty sizes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  for (auto& algo : kAlgos) {
    // No keys: every row is fully masked, so the output is 0.
    Tensor o = ws.call("scaled_dot_product_attention",
                       {Tensor::full({3, 2}, 1.0), Tensor::zeros({0, 2}), Tensor::zeros({0, 4})}, {}, algo);
    REQUIRE(o.shape() == Shape{3, 4});
    for (int64_t i = 0; i < o.numel(); ++i) REQUIRE(o.get(i) == 0.0);
    // No queries: an empty output.
    Tensor e = ws.call("scaled_dot_product_attention",
                       {Tensor::zeros({0, 2}), Tensor::zeros({5, 2}), Tensor::zeros({5, 4})}, {}, algo);
    REQUIRE(e.shape() == Shape{0, 4});
  }
}
