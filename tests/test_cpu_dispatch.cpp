// The CPU kernels across kernel sets and thread counts: each dispatched kernel gives the same
// results built for the baseline and for AVX-512 (within a stated tolerance: vector widths
// change the order of sums), and the same bits for any number of threads. `blas` (OpenBLAS)
// against `naive`.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "ops/gemm.h"
#include "tests/helpers.h"

using namespace opscope;

namespace {

Tensor uniform(const Shape& shape, uint64_t seed, DType dt = DType::f32, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = u(rng);
  return Tensor::from_vector<double>(v, shape, dt);
}

// One op call: its inputs, attributes, algorithm, and how far two kernel sets may differ
// (relative to the output's largest magnitude).
struct Case {
  std::string op, algo;
  std::vector<Tensor> inputs;
  AttrMap attrs;
  double isa_rtol = 1e-5;
  std::string note;
};

std::vector<Tensor> run(const Case& c) {
  Workspace& ws = current_workspace();
  NoGradGuard ng;
  const OpDef& op = OpRegistry::instance().get(c.op);
  return ws.call_multi(op, c.inputs, op.resolve(c.attrs), c.algo);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.shape() == cb.shape() && ca.dtype() == cb.dtype() &&
         std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.nbytes())) == 0;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  double scale = 1, m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::fabs(a.get(i)));
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get(i), y = b.get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    m = std::max(m, std::fabs(x - y));
  }
  return m / scale;
}

// Same bits for 1, 2, 3 and 7 threads (more than the machine has is allowed, and shows more
// chunk interleavings).
void check_threads(const Case& c) {
  std::vector<Tensor> one;
  {
    NumThreadsScope nt(1);
    one = run(c);
  }
  for (int threads : {2, 3, 7}) {
    NumThreadsScope nt(threads);
    const std::vector<Tensor> many = run(c);
    for (size_t i = 0; i < one.size(); ++i) {
      INFO(c.op << " [" << c.algo << "] " << c.note << ": output " << i << " with " << threads << " threads");
      CHECK(same_bits(one[i], many[i]));
    }
  }
}

// The AVX-512 kernels against the baseline ones (skipped where the CPU has no AVX-512).
void check_isas(const Case& c) {
  if (detected_cpu_isa() != CpuIsa::avx512) return;
  std::vector<Tensor> base, wide;
  {
    CpuIsaScope s(CpuIsa::baseline);
    base = run(c);
  }
  {
    CpuIsaScope s(CpuIsa::avx512);
    wide = run(c);
  }
  for (size_t i = 0; i < base.size(); ++i) {
    INFO(c.op << " [" << c.algo << "] " << c.note << ": output " << i << ", AVX-512 vs baseline");
    CHECK(max_rel_diff(base[i], wide[i]) <= c.isa_rtol);
  }
}

void check_case(const Case& c) {
  check_isas(c);
  check_threads(c);
}

}  // namespace

TEST_CASE("matmul and linear: blas and eigen across kernel sets and thread counts", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = uniform({300, 200}, 1), b = uniform({200, 260}, 2);
  for (const char* algo : {"blas", "eigen"}) {
    check_case({"matmul", algo, {a, b}, {}, 1e-5, "300x200 @ 200x260 (split into panels)"});
    check_case(
        {"matmul", algo, {a.view_transpose(0, 1).contiguous().view_transpose(0, 1), b}, {}, 1e-5, "a transposed view"});
    check_case(
        {"matmul", algo, {uniform({12, 40, 24}, 3), uniform({12, 24, 36}, 4)}, {}, 1e-5, "a batch of small products"});
    check_case(
        {"matmul", algo, {uniform({64, 96}, 5, DType::f64), uniform({96, 80}, 6, DType::f64)}, {}, 1e-13, "float64"});
    check_case(
        {"linear", algo, {uniform({64, 784}, 7), uniform({256, 784}, 8), uniform({256}, 9)}, {}, 1e-5, "MLP layer"});
  }
}

TEST_CASE("the default GEMM: OpenBLAS unless its kernels are narrower than opscope's", "[op]") {
  using cpu::choose_default_gemm;
  using cpu::GemmAlgo;
  // No OPENBLAS_CORETYPE: opscope asks OpenBLAS for kernels as wide as its own.
  CHECK(choose_default_gemm(CpuIsa::avx512, nullptr, true) == GemmAlgo::blas);
  CHECK(choose_default_gemm(CpuIsa::baseline, nullptr, true) == GemmAlgo::blas);
  // The user's core type: AVX-512 cores keep OpenBLAS; AVX2 cores lose to Eigen's AVX-512 build.
  CHECK(choose_default_gemm(CpuIsa::avx512, "SkylakeX", true) == GemmAlgo::blas);
  CHECK(choose_default_gemm(CpuIsa::avx512, "cooperlake", true) == GemmAlgo::blas);
  CHECK(choose_default_gemm(CpuIsa::avx512, "Haswell", true) == GemmAlgo::eigen);
  CHECK(choose_default_gemm(CpuIsa::avx512, "Zen", true) == GemmAlgo::eigen);
  // With the baseline kernels Eigen is AVX2 too: OpenBLAS stays.
  CHECK(choose_default_gemm(CpuIsa::baseline, "Haswell", true) == GemmAlgo::blas);
  // A build without OpenBLAS: `blas` would run Eigen anyway, so the default says eigen.
  CHECK(choose_default_gemm(CpuIsa::avx512, nullptr, false) == GemmAlgo::eigen);
  // The ops follow the choice.
  const std::string name = cpu::gemm_algo_name(cpu::default_gemm());
  CHECK(OpRegistry::instance().get("matmul").default_algorithm() == name);
  CHECK(OpRegistry::instance().get("linear").default_algorithm() == name);
}

TEST_CASE("matmul blas against naive: shapes, layouts, batches, both dtypes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  struct Shapes {
    Shape a, b;
  };
  for (DType dt : {DType::f32, DType::f64}) {
    const double tol = dt == DType::f32 ? 2e-5 : 1e-12;
    for (const Shapes& s : std::vector<Shapes>{{{1, 1}, {1, 1}},
                                               {{7, 3}, {3, 5}},
                                               {{33, 65}, {65, 17}},
                                               {{130, 257}, {257, 129}},
                                               {{3, 31, 20}, {20, 9}},
                                               {{2, 1, 8, 5}, {3, 5, 6}}}) {
      Tensor a = uniform(s.a, 11, dt), b = uniform(s.b, 12, dt);
      const Tensor ref = ws.call("matmul", {a, b}, {}, "naive");
      const Tensor y = ws.call("matmul", {a, b}, {}, "blas");
      INFO(shape_str(s.a) << " @ " << shape_str(s.b) << " " << dtype_name(dt));
      CHECK(max_rel_diff(ref, y) <= tol);
      // Transposed views read in place (column-major operands).
      const int64_t r = a.dim();
      Tensor at = a.view_transpose(r - 2, r - 1).contiguous().view_transpose(r - 2, r - 1);
      Tensor bt = b.view_transpose(b.dim() - 2, b.dim() - 1).contiguous().view_transpose(b.dim() - 2, b.dim() - 1);
      CHECK(max_rel_diff(ref, ws.call("matmul", {at, bt}, {}, "blas")) <= tol);
    }
  }
  // An empty inner dimension gives zeros.
  Tensor z = ws.call("matmul", {Tensor::zeros({3, 0}), Tensor::zeros({0, 4})}, {}, "blas");
  for (double v : z.to_vector()) CHECK(v == 0.0);
}

TEST_CASE("elementwise ops and where: the same bits for any thread count (dense, scalar, broadcast rows)", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // 200 000 elements: several chunks of the flat range.
  Tensor x = uniform({400, 500}, 11, DType::f32, -3, 3), y = uniform({400, 500}, 12), row = uniform({500}, 13),
         col = uniform({400, 1}, 14), s = uniform({}, 15), xd = uniform({400, 500}, 16, DType::f64, -3, 3);
  for (const char* op : {"tanh", "exp", "relu", "gelu", "sigmoid"}) check_threads({op, "", {x}, {}, 0, "dense"});
  check_threads({"tanh", "", {xd}, {}, 0, "dense float64"});
  check_threads({"add", "", {x, y}, {}, 0, "dense"});
  check_threads({"mul", "", {x, s}, {}, 0, "tensor by a scalar"});
  check_threads({"sub", "", {s, x}, {}, 0, "scalar by a tensor"});
  check_threads({"mul", "", {x, row}, {}, 0, "rows broadcast"});
  check_threads({"div", "", {x, col}, {}, 0, "columns broadcast"});
  check_threads({"gt", "", {x, y}, {}, 0, "a comparison (int64 out)"});
  check_threads({"relu_backward", "", {x, y}, {}, 0, "dense"});
  check_threads({"tanh_backward", "", {x, y}, {}, 0, "dense"});
  Tensor mask;
  {
    NoGradGuard ng;
    mask = ws.call("gt", {x, s});
  }
  check_threads({"where", "", {mask, x, s}, {}, 0, "scalar else-branch"});
  check_threads({"where", "", {mask, row, y}, {}, 0, "broadcast then-branch"});
}

// gelu and gelu_backward in float32 run ops/cpu/gelu.cpp, built per kernel set (erf, exp and tanh
// as polynomial approximations): close to float64 (std::erf, std::tanh) on the same inputs in
// both kernel sets, and the same bits for any thread count. The tanh form's backward loses bits
// in 1 − t² where |t| nears 1: 3.1e-6 of the largest value, measured the same in both sets (the
// baseline set's expression is the generic path's).
TEST_CASE("gelu and gelu_backward in float32: each kernel set close to float64, any thread count", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = uniform({400, 500}, 21, DType::f32, -6, 6), dy = uniform({400, 500}, 22);
  const Tensor xd = x.cast(DType::f64), dyd = dy.cast(DType::f64);
  std::vector<CpuIsa> isas = {CpuIsa::baseline};
  if (detected_cpu_isa() == CpuIsa::avx512) isas.push_back(CpuIsa::avx512);
  for (const char* form : {"none", "tanh"}) {
    const AttrMap a = {{"approximate", std::string(form)}};
    const Tensor want = run({"gelu", "", {xd}, a})[0], want_dx = run({"gelu_backward", "", {xd, dyd}, a})[0];
    for (CpuIsa isa : isas) {
      CpuIsaScope s(isa);
      INFO("approximate=" << form << ", kernel set " << (isa == CpuIsa::avx512 ? "AVX-512" : "baseline"));
      CHECK(cpu::kernels_for(isa)->f32.gelu != nullptr);
      CHECK(max_rel_diff(want, run({"gelu", "", {x}, a})[0]) <= 1e-6);
      CHECK(max_rel_diff(want_dx, run({"gelu_backward", "", {x, dy}, a})[0]) <= (form[0] == 't' ? 4e-6 : 1e-6));
    }
    check_case({"gelu", "", {x}, a, 1e-6, form});
    check_case({"gelu_backward", "", {x, dy}, a, 1e-6, form});
  }
}

TEST_CASE("relu_backward is where(y > 0, dy, 0), the formula it replaced", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  const double nan = std::nan("");
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor y = Tensor::from_vector<double>({-1.5, 0.0, 2.0, nan, 1e-30, -0.0, 7.0, 3.0}, {2, 4}, dt);
    Tensor dy = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, dt);
    const Tensor got = ws.call("relu_backward", {y, dy});
    const Tensor want = ws.call("where", {ws.call("gt", {y, Tensor::scalar(0.0, dt)}), dy, Tensor::scalar(0.0, dt)});
    CHECK(same_bits(got, want));
    CHECK(got.get(2) == 3.0);
    CHECK(got.get(3) == 0.0);  // NaN in y: no gradient, as the mask said
  }
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  CHECK_THROWS_WITH(ws.call("relu_backward", {a, b}),
                    Catch::Contains("relu_backward") && Catch::Contains("[2, 3]") && Catch::Contains("[3, 2]"));
}

TEST_CASE("softmax, log_softmax and softmax_backward across kernel sets and thread counts", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = uniform({512, 300}, 21, DType::f32, -6, 6), dy = uniform({512, 300}, 22);
  for (const char* algo : {"stable", "naive"}) check_case({"softmax", algo, {x}, {}, 1e-6, "rows of 300"});
  check_case({"softmax",
              "stable",
              {uniform({64, 50, 40}, 23, DType::f32, -6, 6)},
              {{"axis", int64_t{1}}},
              1e-6,
              "middle axis"});
  check_case({"softmax", "stable", {uniform({256, 100}, 24, DType::f64, -6, 6)}, {}, 1e-14, "float64"});
  check_case({"log_softmax", "stable", {x}, {}, 1e-6, "rows of 300"});
  Tensor s;
  {
    NoGradGuard ng;
    s = ws.call("softmax", {x});
  }
  check_case({"softmax_backward", "default", {s, dy}, {}, 1e-6, "rows of 300"});
}

TEST_CASE("layer_norm, batch_norm and their backward across kernel sets and thread counts", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = uniform({512, 256}, 31, DType::f32, -3, 5), dy = uniform({512, 256}, 32);
  Tensor w = uniform({256}, 33), b = uniform({256}, 34);
  for (const char* algo : {"welford", "two_pass", "naive"})
    check_case({"layer_norm", algo, {x, w, b}, {{"normalized_shape", std::vector<int64_t>{256}}}, 1e-5, "rows of 256"});
  check_case({"layer_norm",
              "welford",
              {uniform({300, 70}, 35, DType::f64), uniform({70}, 36, DType::f64)},
              {{"normalized_shape", std::vector<int64_t>{70}}},
              1e-13,
              "float64"});
  check_case({"layer_norm_backward",
              "default",
              {x, dy, w},
              {{"normalized_shape", std::vector<int64_t>{256}}},
              1e-5,
              "rows of 256"});
  check_case({"layer_norm_backward",
              "default",
              {uniform({1000, 33}, 37), uniform({1000, 33}, 38)},
              {{"normalized_shape", std::vector<int64_t>{33}}},
              1e-5,
              "no weight"});
  Tensor xb = uniform({16, 24, 14, 14}, 41, DType::f32, -2, 3), dyb = uniform({16, 24, 14, 14}, 42);
  Tensor wc = uniform({24}, 43), bc = uniform({24}, 44);
  for (const char* algo : {"welford", "two_pass", "naive"}) {
    // Fresh running statistics per call: training updates them in place.
    Case c{"batch_norm", algo, {xb, Tensor::zeros({24}), Tensor::full({24}, 1.0), wc, bc}, {}, 1e-5, "training"};
    check_isas(c);
    std::vector<Tensor> one, two;
    {
      NumThreadsScope nt(1);
      c.inputs[1] = Tensor::zeros({24});
      c.inputs[2] = Tensor::full({24}, 1.0);
      one = run(c);
      one.push_back(c.inputs[1]);
      one.push_back(c.inputs[2]);
    }
    {
      NumThreadsScope nt(3);
      c.inputs[1] = Tensor::zeros({24});
      c.inputs[2] = Tensor::full({24}, 1.0);
      two = run(c);
      two.push_back(c.inputs[1]);
      two.push_back(c.inputs[2]);
    }
    for (size_t i = 0; i < one.size(); ++i) CHECK(same_bits(one[i], two[i]));  // y and both running statistics
  }
  check_case({"batch_norm",
              "welford",
              {xb, uniform({24}, 45), uniform({24}, 46, DType::f32, 0.5, 2)},
              {{"training", false}},
              1e-5,
              "eval"});
  check_case({"batch_norm_backward",
              "default",
              {xb, dyb, Tensor::zeros({24}), Tensor::full({24}, 1.0), wc},
              {},
              1e-5,
              "training"});
}

TEST_CASE("pooling: vectorized against direct (every window shape, NaN and ties), kernel sets, threads", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  struct Geometry {
    Shape x;
    int64_t k, s, p;
  };
  const std::vector<Geometry> shapes = {{{4, 3, 28, 28}, 2, 2, 0}, {{2, 3, 7, 9}, 2, 2, 0},   {{2, 2, 5, 40}, 2, 2, 0},
                                        {{2, 3, 11, 11}, 3, 2, 1}, {{1, 2, 8, 8}, 2, 1, 0},   {{3, 2, 9, 10}, 3, 3, 1},
                                        {{1, 1, 2, 2}, 2, 2, 0},   {{2, 1, 33, 34}, 2, 2, 0}, {{2, 2, 9, 36}, 2, 2, 0}};
  for (DType dt : {DType::f32, DType::f64})
    for (const Geometry& g : shapes) {
      // Small integers: many ties inside a window; a few NaN.
      Tensor x = uniform(g.x, 51, dt, -3, 3);
      {
        Tensor r = Tensor::empty(g.x, dt, MemCategory::input);
        for (int64_t i = 0; i < x.numel(); ++i) {
          const double v = std::round(x.get(i));
          visit_dtype(dt, [&](auto z) { r.data<decltype(z)>()[i] = static_cast<decltype(z)>(i % 97 == 5 ? NAN : v); });
        }
        x = r;
      }
      const AttrMap a = {{"kernel_size", g.k}, {"stride", g.s}, {"padding", g.p}};
      INFO(shape_str(g.x) << " K=" << g.k << " S=" << g.s << " P=" << g.p << " " << dtype_name(dt));
      for (const char* op : {"max_pool2d", "avg_pool2d"}) {
        const Tensor ref = ws.call(op, {x}, a, "direct"), y = ws.call(op, {x}, a, "vectorized");
        INFO(op);
        CHECK(same_bits(ref, y));  // max: the same element; avg: the same sums in the same order
      }
      const Tensor dy = uniform(ws.call("max_pool2d", {x}, a).shape(), 52, dt);
      CHECK(same_bits(ws.call("max_pool2d_backward", {x, dy}, a, "direct"),
                      ws.call("max_pool2d_backward", {x, dy}, a, "vectorized")));
      AttrMap ab = a;
      ab.push_back({"shape", std::vector<int64_t>(g.x.begin(), g.x.end())});
      const Tensor ra = ws.call("avg_pool2d_backward", {dy}, ab, "direct"),
                   va = ws.call("avg_pool2d_backward", {dy}, ab, "vectorized");
      CHECK(max_rel_diff(ra, va) <= (dt == DType::f32 ? 1e-6 : 1e-15));  // overlapping windows add in another order
    }
  Tensor x = uniform({64, 16, 28, 28}, 53), dy = uniform({64, 16, 14, 14}, 54);
  const AttrMap a = {{"kernel_size", int64_t{2}}};
  check_case({"max_pool2d", "vectorized", {x}, a, 0, "64x16x28x28"});
  check_case({"max_pool2d_backward", "vectorized", {x, dy}, a, 0, "64x16x28x28"});
  check_case({"avg_pool2d", "vectorized", {x}, a, 1e-7, "64x16x28x28"});
  check_case({"max_pool2d",
              "vectorized",
              {x},
              {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}},
              0,
              "3x3/2 pad 1"});
  // Per-axis sizes (kernel_size, stride, padding as pairs) take the plain loop: the same bits as direct.
  Tensor xr = uniform({2, 3, 9, 10}, 55);
  const AttrMap pair = {{"kernel_size", std::vector<int64_t>{3, 2}},
                        {"stride", std::vector<int64_t>{1, 2}},
                        {"padding", std::vector<int64_t>{1, 0}}};
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    INFO(op << " 3x2 window, stride (1, 2), padding (1, 0)");
    CHECK(same_bits(ws.call(op, {xr}, pair, "direct"), ws.call(op, {xr}, pair, "vectorized")));
  }
  const Tensor dyr = uniform(ws.call("max_pool2d", {xr}, pair).shape(), 56);
  CHECK(same_bits(ws.call("max_pool2d_backward", {xr, dyr}, pair, "direct"),
                  ws.call("max_pool2d_backward", {xr, dyr}, pair, "vectorized")));
}

TEST_CASE("conv2d (im2col + blas) and attention across kernel sets and thread counts", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = uniform({4, 16, 20, 20}, 61), w = uniform({24, 16, 3, 3}, 62), b = uniform({24}, 63);
  const AttrMap pad1 = {{"padding", int64_t{1}}};
  check_case({"conv2d", "im2col", {x, w, b}, pad1, 1e-5, "3x3 pad 1"});
  check_case({"conv2d", "winograd", {x, w, b}, pad1, 1e-5, "winograd"});
  check_case({"conv2d",
              "im2col",
              {x, uniform({24, 4, 3, 3}, 64)},
              {{"stride", int64_t{2}}, {"groups", int64_t{4}}},
              1e-5,
              "stride 2, groups 4"});
  Tensor dy = uniform({4, 24, 20, 20}, 65);
  AttrMap bi = pad1;
  bi.push_back({"input_shape", std::vector<int64_t>{4, 16, 20, 20}});
  check_case({"conv2d_backward_input", "im2col", {dy, w}, bi, 1e-5, "col2im"});
  AttrMap bw = pad1;
  bw.push_back({"weight_shape", std::vector<int64_t>{24, 16, 3, 3}});
  check_case({"conv2d_backward_weight", "im2col", {x, dy}, bw, 1e-5, "dW"});
  Tensor q = uniform({4, 2, 150, 32}, 71), k = uniform({4, 2, 130, 32}, 72), v = uniform({4, 2, 130, 24}, 73);
  for (const char* algo : {"flash", "naive"}) {
    check_case({"scaled_dot_product_attention", algo, {q, k, v}, {}, 1e-5, "batched heads"});
    check_case({"scaled_dot_product_attention", algo, {q, q, q}, {{"causal", true}}, 1e-5, "causal"});
  }
  Tensor o, d = uniform({4, 2, 150, 24}, 74);
  {
    NoGradGuard ng;
    o = ws.call("scaled_dot_product_attention", {q, k, v});
  }
  check_case({"attention_backward", "flash", {q, k, v, o, d}, {}, 1e-5, "batched heads"});
  check_case({"attention_backward", "flash", {q, k, v, o, d, uniform({150, 130}, 75)}, {}, 1e-5, "float mask"});
}

TEST_CASE("reductions: the same bits for any thread count; blocks of axes reduced in stages", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  using V = std::vector<int64_t>;
  Tensor x = uniform({64, 16, 28, 28}, 81, DType::f32, -1, 2);
  Tensor big = uniform({1 << 20}, 82), wide = uniform({300, 1500}, 83);
  for (const char* op : {"sum", "mean", "max", "var"}) {
    check_threads({op, "default", {x}, {{"axes", V{0, 2, 3}}}, 0, "bias-gradient axes"});
    check_threads({op, "default", {big}, {}, 0, "one long row"});
    check_threads({op, "default", {wide}, {{"axes", V{0}}}, 0, "columns"});
    check_threads({op, "default", {wide}, {{"axes", V{1}}}, 0, "rows"});
  }
  // The staged reduction over axes 0, 2, 3 against float64 sums of the same values.
  NoGradGuard ng;
  const Tensor xd = x.cast(DType::f64);
  const Tensor ref = ws.call("sum", {xd}, {{"axes", V{0, 2, 3}}});
  CHECK(max_rel_diff(ref, ws.call("sum", {x}, {{"axes", V{0, 2, 3}}})) <= 1e-6);
  CHECK(max_rel_diff(ws.call("mean", {xd}, {{"axes", V{0, 2, 3}}}), ws.call("mean", {x}, {{"axes", V{0, 2, 3}}})) <=
        1e-6);
  // A long cancelling sum: its float32 error is relative to Σ|x|, not to the (small) total.
  const double sum_abs = ws.call("sum", {ws.call("abs", {big.cast(DType::f64)})}).item();
  CHECK(std::fabs(ws.call("sum", {big.cast(DType::f64)}).item() - ws.call("sum", {big}).item()) <= 1e-6 * sum_abs);
  // max: NaN anywhere wins, in every path.
  Tensor with_nan = big.clone(MemCategory::input);
  with_nan.data<float>()[777777] = NAN;
  CHECK(std::isnan(ws.call("max", {with_nan}).item()));
  Tensor x4 = x.clone(MemCategory::input);
  x4.data<float>()[12345] = NAN;
  const Tensor m = ws.call("max", {x4}, {{"axes", V{0, 2, 3}}});
  int nans = 0;
  for (int64_t i = 0; i < m.numel(); ++i) nans += std::isnan(m.get(i));
  CHECK(nans == 1);
}

// The GEMM tally bench_vs_torch reads the block's GEMM time from (ops/gemm.h): it counts
// 2·M·N·K of every product run while it is on, panels of a cut product included, and nothing
// once it is stopped.
TEST_CASE("the GEMM tally counts the products run while it is on, and only those", "[op]") {
  std::vector<float> A(300 * 200, 0.5f), B(200 * 100, 0.25f), C(300 * 100);
  auto product = [&](int64_t M, int64_t N, int64_t K) {
    cpu::gemm<float>(cpu::default_gemm(), false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N);
  };
  product(30, 10, 20);  // before the tally: not counted
  cpu::gemm_tally_start();
  product(300, 100, 200);
  product(7, 5, 3);
  const cpu::GemmTally t = cpu::gemm_tally_stop();
  product(30, 10, 20);  // after: not counted
  CHECK(t.flops == 2.0 * (300 * 100 * 200 + 7 * 5 * 3));
  CHECK(t.calls >= 2);
  CHECK(t.seconds > 0);
  cpu::gemm_tally_start();
  CHECK(cpu::gemm_tally_stop().calls == 0);  // restarting zeroes it
}
