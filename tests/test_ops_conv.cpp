// conv2d (naive, im2col, winograd, fft) against an independent loop written here, a hand-computed
// case, shape errors, the winograd constraint, workspace accounting, the cost's multiplication
// counts, and gradients: conv2d's registry cases are the ones winograd can run (3×3, stride 1,
// dilation 1); stride, dilation and other kernel sizes are gradchecked here for the algorithms
// that support them, one (case, algorithm) at a time.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>

#include "core/error.h"
#include "core/gradcheck.h"
#include "core/op.h"
#include "core/workspace.h"
#include "tests/helpers.h"

using namespace opscope;
using V = std::vector<int64_t>;

namespace {

const std::vector<std::string> kAlgos = {"naive", "im2col", "winograd", "fft"};

struct Conf {
  V x, w;
  bool bias;
  int64_t stride = 1, pad = 0, dil = 1, groups = 1;
  int64_t stride_w = -1, pad_w = -1, dil_w = -1;  // along W when it differs from H (PyTorch's pairs)
  int64_t sw() const { return stride_w < 0 ? stride : stride_w; }
  int64_t pw() const { return pad_w < 0 ? pad : pad_w; }
  int64_t dw() const { return dil_w < 0 ? dil : dil_w; }
  bool winograd_ok() const { return w[2] == 3 && w[3] == 3 && stride == 1 && sw() == 1 && dil == 1 && dw() == 1; }
  AttrMap attrs() const {
    return {{"stride", V{stride, sw()}}, {"padding", V{pad, pw()}}, {"dilation", V{dil, dw()}}, {"groups", groups}};
  }
};

using test::uniform;

// Reference written independently of ops/conv.cpp: for every output element, walk the padded
// input window through Tensor::get, in double.
std::vector<double> reference_conv(const Tensor& x, const Tensor& w, const Tensor* b, const Conf& cf, Shape& out) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t K = w.shape()[0], R = w.shape()[2], S = w.shape()[3];
  const int64_t Cg = C / cf.groups, Kg = K / cf.groups;
  const int64_t OH = (H + 2 * cf.pad - cf.dil * (R - 1) - 1) / cf.stride + 1;
  const int64_t OW = (W + 2 * cf.pw() - cf.dw() * (S - 1) - 1) / cf.sw() + 1;
  out = {N, K, OH, OW};
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = b ? b->get(k) : 0.0;
          const int64_t c0 = (k / Kg) * Cg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                const int64_t h = i * cf.stride + r * cf.dil - cf.pad, v = j * cf.sw() + s * cf.dw() - cf.pw();
                if (h >= 0 && h < H && v >= 0 && v < W)
                  acc += x.get(((n * C + c0 + c) * H + h) * W + v) * w.get(((k * Cg + c) * R + r) * S + s);
              }
          y.push_back(acc);
        }
  return y;
}

const std::vector<Conf> kConfs = {
    {{1, 1, 5, 5}, {1, 1, 3, 3}, false},
    {{2, 3, 7, 6}, {4, 3, 3, 3}, true, 1, 1},  // odd sizes, padding
    {{1, 2, 9, 8}, {3, 2, 3, 3}, true, 1, 2},  // padding 2
    {{2, 4, 6, 7}, {6, 2, 3, 3}, true, 1, 1, 1, 2},  // groups 2
    {{1, 6, 5, 5}, {6, 1, 3, 3}, false, 1, 1, 1, 6},  // depthwise
    {{2, 3, 9, 9}, {4, 3, 3, 3}, true, 2, 1},  // stride 2
    {{1, 2, 11, 10}, {3, 2, 3, 3}, true, 1, 2, 2},  // dilation 2
    {{2, 4, 8, 9}, {4, 2, 5, 5}, true, 2, 2, 1, 2},  // 5×5, stride 2, groups
    {{1, 3, 6, 6}, {5, 3, 1, 1}, true},  // 1×1
    {{1, 2, 12, 13}, {2, 2, 7, 7}, false, 3, 3, 2},  // 7×7, stride 3, dilation 2
    {{3, 2, 4, 4}, {2, 2, 2, 3}, true, 1, 0},  // non-square kernel
    {{3, 2, 23, 25}, {2, 2, 3, 3}, true, 1, 1},  // 468 winograd tiles: 2 blocks, odd output
    // Pairs (h, w), as PyTorch takes them: each axis its own stride, padding and dilation.
    {{2, 3, 9, 8}, {4, 3, 3, 3}, true, 1, 1, 1, 1, -1, 0},  // padding (1, 0): winograd too
    {{1, 2, 10, 9}, {3, 2, 3, 2}, true, 2, 0, 1, 1, 1},  // 3×2 kernel, stride (2, 1)
    {{2, 2, 8, 11}, {2, 2, 2, 3}, false, 1, 1, 2, 1, 3, 0, 1},  // stride (1, 3), padding (1, 0), dilation (2, 1)
    {{1, 4, 7, 12}, {4, 2, 1, 3}, true, 3, 0, 1, 2, 2, 2, 3},  // 1×3 kernel, groups 2, every pair different
};

}  // namespace

TEST_CASE("conv2d: every algorithm matches an independent loop", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  uint64_t seed = 1;
  for (DType dt : {DType::f64, DType::f32}) {
    for (const Conf& cf : kConfs) {
      Tensor x = uniform(cf.x, dt, seed++), w = uniform(cf.w, dt, seed++), b = uniform({cf.w[0]}, dt, seed++);
      Shape out_shape;
      const std::vector<double> ref = reference_conv(x, w, cf.bias ? &b : nullptr, cf, out_shape);
      for (const auto& algo : kAlgos) {
        if (algo == "winograd" && !cf.winograd_ok()) continue;
        INFO("algo " << algo << " x " << shape_str(cf.x) << " w " << shape_str(cf.w) << " stride " << cf.stride << ","
                     << cf.sw() << " pad " << cf.pad << "," << cf.pw() << " dil " << cf.dil << "," << cf.dw()
                     << " groups " << cf.groups << " " << dtype_name(dt));
        std::vector<Tensor> in = {x, w};
        if (cf.bias) in.push_back(b);
        Tensor y = ws.call("conv2d", in, cf.attrs(), algo);
        REQUIRE(y.shape() == out_shape);
        REQUIRE(y.dtype() == dt);
        const bool fft = algo == "fft";  // spectra sum many terms: a looser bound
        CHECK(test::max_diff(y, ref) < (dt == DType::f64 ? (fft ? 1e-11 : 1e-12) : (fft ? 1e-4 : 2e-5)));
      }
    }
  }
}

TEST_CASE("conv2d: hand-computed tiny cases", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // x = 1..9 as 3×3; w = [[1, 0], [0, -1]]: y[i, j] = x[i, j] − x[i+1, j+1] = −4 everywhere, + bias 0.5.
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Tensor w = Tensor::from_vector<double>({1, 0, 0, -1}, {1, 1, 2, 2});
  Tensor b = Tensor::from_vector<double>({0.5}, {1});
  // 2×2 ones, stride 2, padding 1: windows {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
  Tensor ones = Tensor::from_vector<double>({1, 1, 1, 1}, {1, 1, 2, 2});
  for (const auto& algo : {"naive", "im2col", "fft"}) {
    INFO(algo);
    Tensor y = ws.call("conv2d", {x, w, b}, {}, algo);
    REQUIRE(y.shape() == Shape{1, 1, 2, 2});
    CHECK(test::max_diff(y, {-3.5, -3.5, -3.5, -3.5}) < 1e-12);
    Tensor z = ws.call("conv2d", {x, ones}, {{"stride", int64_t{2}}, {"padding", int64_t{1}}}, algo);
    REQUIRE(z.shape() == Shape{1, 1, 2, 2});
    CHECK(test::max_diff(z, {1, 5, 11, 28}) < 1e-12);
  }
  // 3×3 Laplacian-like kernel with padding 1 (winograd too): centre 4·x − the 4 neighbours.
  Tensor lap = Tensor::from_vector<double>({0, -1, 0, -1, 4, -1, 0, -1, 0}, {1, 1, 3, 3});
  const std::vector<double> expect = {4 - 2 - 4,      8 - 1 - 3 - 5, 12 - 2 - 6,     16 - 1 - 5 - 7, 20 - 2 - 4 - 6 - 8,
                                      24 - 3 - 5 - 9, 28 - 4 - 8,    32 - 7 - 9 - 5, 36 - 8 - 6};
  for (const auto& algo : kAlgos) {
    INFO(algo);
    Tensor y = ws.call("conv2d", {x, lap}, {{"padding", int64_t{1}}}, algo);
    CHECK(test::max_diff(y, expect) < 1e-12);
  }
}

TEST_CASE("conv2d: shape errors name the shapes and the rule", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  auto err = [&](const V& xs, const V& wsz, const AttrMap& a, const std::string& algo = {}) {
    try {
      ws.call("conv2d", {Tensor::zeros(xs, DType::f32), Tensor::zeros(wsz, DType::f32)}, a, algo);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(err({1, 3, 8, 8}, {8, 4, 3, 3}, {}),
             Catch::Contains("input") || Catch::Contains("x has 3 channels but weight expects 4"));
  CHECK_THAT(err({1, 3, 8, 8}, {8, 4, 3, 3}, {}), Catch::Contains("weight [8, 4, 3, 3], groups=1"));
  CHECK_THAT(err({1, 6, 8, 8}, {8, 2, 3, 3}, {{"groups", int64_t{4}}}), Catch::Contains("groups=4 does not divide"));
  CHECK_THAT(err({1, 4, 8, 8}, {6, 1, 3, 3}, {{"groups", int64_t{4}}}),
             Catch::Contains("6 output channels, which groups=4 does not divide"));
  CHECK_THAT(err({1, 1, 4, 4}, {1, 1, 3, 3}, {{"dilation", int64_t{2}}}), Catch::Contains("output would be empty"));
  CHECK_THAT(err({3, 8, 8}, {1, 3, 3, 3}, {}), Catch::Contains("must be 4-D [N, C, H, W], got [3, 8, 8]"));
  CHECK_THAT(err({1, 3, 8, 8}, {3, 3, 3}, {}), Catch::Contains("weight must be 4-D"));
  CHECK_THAT(err({1, 3, 8, 8}, {2, 3, 3, 3}, {{"stride", int64_t{0}}}), Catch::Contains("stride"));
  // bias of the wrong length
  try {
    ws.call("conv2d", {Tensor::zeros({1, 3, 8, 8}), Tensor::zeros({2, 3, 3, 3}), Tensor::zeros({3})});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bias must be [2]"));
  }
  // winograd: a clear error naming the constraint, not a silent fallback.
  CHECK_THAT(err({1, 1, 8, 8}, {1, 1, 5, 5}, {{"stride", int64_t{2}}}, "winograd"),
             Catch::Contains("winograd: needs a 3×3 kernel with stride 1 and dilation 1, got 5×5 stride 2"));
  CHECK_THAT(err({1, 1, 8, 8}, {1, 1, 3, 3}, {{"dilation", int64_t{2}}}, "winograd"),
             Catch::Contains("got 3×3 stride 1 dilation 2"));
  CHECK(err({1, 1, 8, 8}, {1, 1, 3, 3}, {}, "winograd") == "no error");
  // Non-square: padding may differ per axis in winograd; kernels, strides and dilations may not.
  CHECK(err({1, 1, 8, 8}, {1, 1, 3, 3}, {{"padding", V{1, 0}}}, "winograd") == "no error");
  CHECK_THAT(err({1, 1, 8, 8}, {1, 1, 3, 2}, {}, "winograd"), Catch::Contains("got 3×2 stride 1"));
  CHECK_THAT(err({1, 1, 8, 8}, {1, 1, 3, 3}, {{"stride", V{1, 2}}}, "winograd"),
             Catch::Contains("got 3×3 stride (1, 2)"));
  CHECK_THAT(err({1, 1, 8, 8}, {1, 1, 3, 3}, {{"dilation", V{2, 1}}}, "winograd"), Catch::Contains("dilation (2, 1)"));
  // A pair is two sizes: three is an error that says what is accepted.
  CHECK_THAT(err({1, 1, 8, 8}, {1, 1, 3, 3}, {{"stride", V{1, 2, 3}}}),
             Catch::Contains("must be an int or a pair (h, w)"));
}

TEST_CASE("conv2d: im2col buffer is workspace memory, freed after the call", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  const OpDef& op = OpRegistry::instance().get("conv2d");
  Tensor x = uniform({2, 4, 10, 9}, DType::f32, 1), w = uniform({6, 4, 3, 3}, DType::f32, 2);
  const Attrs attrs = op.resolve({{"padding", int64_t{1}}});
  const std::vector<TensorMeta> in = {{x.shape(), DType::f32}, {w.shape(), DType::f32}};
  const std::vector<TensorMeta> out = {{{2, 6, 10, 9}, DType::f32}};
  REQUIRE(ws.tracker().live(MemCategory::workspace) == 0);
  REQUIRE(ws.tracker().peak(MemCategory::workspace) == 0);
  ws.call("conv2d", {x, w}, {{"padding", int64_t{1}}}, "im2col");
  const double col_bytes = 4.0 * 9 * 10 * 9 * 4;  // Cg·R·S × OH·OW floats
  CHECK(op.cost(in, out, attrs, "im2col").workspace_bytes == col_bytes);
  CHECK(static_cast<double>(ws.tracker().peak(MemCategory::workspace)) >= col_bytes);
  CHECK(ws.tracker().live(MemCategory::workspace) == 0);
  // naive needs none; winograd and fft report theirs and free it too.
  CHECK(op.cost(in, out, attrs, "naive").workspace_bytes == 0);
  for (const char* algo : {"winograd", "fft"}) {
    ws.tracker().reset_peak();
    ws.call("conv2d", {x, w}, {{"padding", int64_t{1}}}, algo);
    const double claimed = op.cost(in, out, attrs, algo).workspace_bytes;
    INFO(algo);
    CHECK(claimed > 0);
    CHECK(static_cast<double>(ws.tracker().peak(MemCategory::workspace)) >= claimed);
    CHECK(ws.tracker().live(MemCategory::workspace) == 0);
  }
}

TEST_CASE("conv2d: winograd F(2x2, 3x3) does 2.25x fewer multiplications", "[op]") {
  const OpDef& op = OpRegistry::instance().get("conv2d");
  const Attrs attrs = op.resolve({{"padding", int64_t{1}}});
  const std::vector<TensorMeta> in = {{{8, 64, 56, 56}, DType::f32}, {{64, 64, 3, 3}, DType::f32}};
  const std::vector<TensorMeta> out = {{{8, 64, 56, 56}, DType::f32}};
  const Cost im = op.cost(in, out, attrs, "im2col"), wg = op.cost(in, out, attrs, "winograd");
  const Cost nv = op.cost(in, out, attrs, "naive");
  CHECK(im.multiplications == 8.0 * 64 * 56 * 56 * 64 * 9);
  CHECK(im.flops == 2 * im.multiplications);
  CHECK(nv.multiplications == im.multiplications);
  CHECK(im.multiplications / wg.multiplications == Approx(2.25).epsilon(1e-12));
  CHECK(op.cost(in, out, attrs, "fft").multiplications > 0);
}

TEST_CASE("conv2d backward ops: naive and im2col agree, dy·x adjoint identity", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  uint64_t seed = 100;
  for (const Conf& cf : kConfs) {
    Tensor x = uniform(cf.x, DType::f64, seed++), w = uniform(cf.w, DType::f64, seed++);
    Shape ys;
    reference_conv(x, w, nullptr, cf, ys);
    Tensor dy = uniform(ys, DType::f64, seed++);
    AttrMap ai = cf.attrs(), aw = cf.attrs();
    ai.emplace_back("input_shape", cf.x);
    aw.emplace_back("weight_shape", cf.w);
    Tensor dx_n = ws.call("conv2d_backward_input", {dy, w}, ai, "naive");
    Tensor dx_i = ws.call("conv2d_backward_input", {dy, w}, ai, "im2col");
    Tensor dw_n = ws.call("conv2d_backward_weight", {x, dy}, aw, "naive");
    Tensor dw_i = ws.call("conv2d_backward_weight", {x, dy}, aw, "im2col");
    INFO("x " << shape_str(cf.x) << " w " << shape_str(cf.w));
    CHECK(test::max_diff(dx_n, dx_i) < 1e-12);
    CHECK(test::max_diff(dw_n, dw_i) < 1e-12);
    // <dy, conv(x, w)> = <dx, x> = <dw, w> (conv is linear in x and in w).
    Tensor y = ws.call("conv2d", {x, w}, cf.attrs(), "naive");
    double lhs = 0, rx = 0, rw = 0;
    for (int64_t i = 0; i < y.numel(); ++i) lhs += dy.get(i) * y.get(i);
    for (int64_t i = 0; i < x.numel(); ++i) rx += dx_n.get(i) * x.get(i);
    for (int64_t i = 0; i < w.numel(); ++i) rw += dw_n.get(i) * w.get(i);
    CHECK(rx == Approx(lhs).epsilon(1e-10));
    CHECK(rw == Approx(lhs).epsilon(1e-10));
  }
}

TEST_CASE("conv2d backward ops reject a dy of the wrong shape", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  try {
    ws.call("conv2d_backward_input", {Tensor::zeros({1, 2, 4, 4}), Tensor::zeros({2, 3, 3, 3})},
            {{"input_shape", V{1, 3, 8, 8}}});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("dy has shape [1, 2, 4, 4] but conv2d of x [1, 3, 8, 8] gives [1, 2, 6, 6]"));
  }
}

TEST_CASE("conv2d gradcheck: registry cases (winograd-compatible) for every algorithm", "[op][grad]") {
  test::require_gradcheck("conv2d");
}

TEST_CASE("conv2d gradcheck: stride, dilation, groups, other kernels per compatible algorithm", "[op][grad]") {
  const OpDef& op = OpRegistry::instance().get("conv2d");
  auto c = [](std::vector<InputSpec> in, AttrMap a, std::string note) {
    GradcheckCase g;
    g.inputs = std::move(in);
    g.attrs = std::move(a);
    g.note = std::move(note);
    return g;
  };
  const InputSpec x{{1, 2, 5, 5}}, w{{3, 2, 3, 3}}, b{{3}};
  const std::vector<std::pair<GradcheckCase, bool>> cases = {
      {c({x, w, b}, {{"stride", int64_t{2}}}, "stride 2, bias"), false},
      {c({x, w}, {{"stride", int64_t{2}}, {"padding", int64_t{1}}}, "stride 2, padding 1, no bias"), false},
      {c({{{1, 2, 6, 6}}, w, b}, {{"dilation", int64_t{2}}, {"padding", int64_t{1}}}, "dilation 2, padding 1"), false},
      {c({{{1, 4, 5, 5}}, {{4, 2, 3, 3}}}, {{"groups", int64_t{2}}, {"stride", int64_t{2}}}, "groups 2, stride 2"),
       false},
      {c({{{2, 2, 4, 5}}, {{3, 2, 2, 2}}, b}, {{"padding", int64_t{1}}}, "2×2 kernel, batch 2"), false},
      {c({{{1, 2, 6, 6}}, {{2, 2, 5, 5}}, {{2}}}, {{"padding", int64_t{2}}, {"stride", int64_t{3}}}, "5×5, stride 3"),
       false},
      {c({{{1, 3, 4, 4}}, {{2, 3, 1, 1}}}, {}, "1×1"), false},
      {c({x, w, b}, {{"padding", int64_t{2}}}, "3×3, padding 2"), true},
      {c({{{1, 2, 6, 7}}, w, b}, {{"stride", V{2, 1}}, {"padding", V{0, 1}}}, "stride (2, 1), padding (0, 1)"), false},
      {c({{{1, 2, 7, 6}}, {{2, 2, 3, 2}}}, {{"dilation", V{2, 1}}, {"padding", V{1, 0}}},
         "3×2 kernel, dilation (2, 1)"),
       false},
      {c({x, w}, {{"padding", V{2, 1}}}, "3×3, padding (2, 1)"), true},
  };
  for (size_t i = 0; i < cases.size(); ++i)
    for (const auto& algo : kAlgos) {
      if (algo == "winograd" && !cases[i].second) continue;
      const GradcheckResult r = gradcheck_case(op, cases[i].first, algo, i);
      INFO(algo << " case " << i << " (" << cases[i].first.note << "): " << r.message);
      CHECK(r.passed);
    }
}

TEST_CASE("conv2d autograd: db = Σ dy over N, H, W and the backward graph uses the dedicated ops", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::param(uniform({2, 2, 5, 5}, DType::f64, 7));
  Tensor w = test::param(uniform({3, 2, 3, 3}, DType::f64, 8));
  Tensor b = test::param(uniform({3}, DType::f64, 9));
  Tensor y = ws.call("conv2d", {x, w, b}, {{"padding", int64_t{1}}});
  Tensor dy = uniform(y.shape(), DType::f64, 10);
  ws.backward(y, dy);
  REQUIRE(b.grad().defined());
  for (int64_t k = 0; k < 3; ++k) {
    double s = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < 25; ++i) s += dy.get((n * 3 + k) * 25 + i);
    CHECK(b.grad().get(k) == Approx(s).epsilon(1e-12));
  }
  bool saw_input = false, saw_weight = false;
  for (const auto& node : ws.graph().nodes()) {
    saw_input |= node.op->name == "conv2d_backward_input";
    saw_weight |= node.op->name == "conv2d_backward_weight";
  }
  CHECK(saw_input);
  CHECK(saw_weight);
}

// conv_transpose2d written here as the scatter PyTorch's documentation describes: every input
// element x[n, c, i, j] adds x·w[c, k, r, s] at y[n, g·Kg + k, i·stride − pad + r·dil, ...]
// (positions outside y dropped: the padding crops).
std::vector<double> reference_conv_transpose(const Tensor& x, const Tensor& w, const Tensor* b, const Conf& cf, V op,
                                             Shape& out) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t Kg = w.shape()[1], R = w.shape()[2], S = w.shape()[3], K = Kg * cf.groups, Cg = C / cf.groups;
  const int64_t OH = (H - 1) * cf.stride - 2 * cf.pad + cf.dil * (R - 1) + op[0] + 1;
  const int64_t OW = (W - 1) * cf.sw() - 2 * cf.pw() + cf.dw() * (S - 1) + op[1] + 1;
  out = {N, K, OH, OW};
  std::vector<double> y(static_cast<size_t>(N * K * OH * OW), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < OH * OW; ++i) y[static_cast<size_t>((n * K + k) * OH * OW + i)] = b ? b->get(k) : 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j)
          for (int64_t kk = 0; kk < Kg; ++kk)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                const int64_t h = i * cf.stride - cf.pad + r * cf.dil, v = j * cf.sw() - cf.pw() + s * cf.dw();
                if (h < 0 || h >= OH || v < 0 || v >= OW) continue;
                const int64_t k = (c / Cg) * Kg + kk;
                y[static_cast<size_t>(((n * K + k) * OH + h) * OW + v)] +=
                    x.get(((n * C + c) * H + i) * W + j) * w.get(((c * Kg + kk) * R + r) * S + s);
              }
  return y;
}

// The transposed convolutions of kConfs' convolutions: x has the convolution's output shape, w
// its weight read as [Cin, Cout/groups, R, S]; output_padding where the stride allows one.
TEST_CASE("conv_transpose2d: both algorithms match the scatter loop, and it is conv2d's adjoint", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  uint64_t seed = 700;
  for (const Conf& cf : kConfs) {
    Shape ys;
    reference_conv(uniform(cf.x, DType::f64, 1), uniform(cf.w, DType::f64, 2), nullptr, cf, ys);
    const V op = {cf.stride > 1 ? 1 : 0, cf.sw() > 1 ? cf.sw() - 1 : 0};
    Tensor x = uniform(ys, DType::f64, seed++), w = uniform(cf.w, DType::f64, seed++);
    Tensor b = uniform({cf.w[1] * cf.groups}, DType::f64, seed++);
    AttrMap a = cf.attrs();
    a.emplace_back("output_padding", op);
    Shape out;
    const std::vector<double> expect = reference_conv_transpose(x, w, cf.bias ? &b : nullptr, cf, op, out);
    INFO("x " << shape_str(x.shape()) << " w " << shape_str(cf.w) << " output_padding " << shape_str(op));
    for (const char* algo : {"naive", "im2col"}) {
      INFO(algo);
      std::vector<Tensor> ins = {x, w};
      if (cf.bias) ins.push_back(b);
      Tensor y = ws.call("conv_transpose2d", ins, a, algo);
      REQUIRE(y.shape() == out);
      CHECK(test::max_diff(y, expect) < 1e-12);
    }
    // <conv_transpose2d(x, w), g> = <x, conv2d(g, w)>: the two are each other's adjoint.
    Tensor y = ws.call("conv_transpose2d", {x, w}, a);
    Tensor g = uniform(y.shape(), DType::f64, seed++);
    Tensor cg = ws.call("conv2d", {g, w}, cf.attrs());
    REQUIRE(cg.shape() == x.shape());
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < y.numel(); ++i) lhs += y.get(i) * g.get(i);
    for (int64_t i = 0; i < x.numel(); ++i) rhs += x.get(i) * cg.get(i);
    CHECK(lhs == Approx(rhs).epsilon(1e-10));
  }
}

TEST_CASE("conv_transpose2d: its backward is a conv2d and a weight gradient, and it is gradchecked", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = test::param(uniform({1, 2, 3, 3}, DType::f64, 5)), w = test::param(uniform({2, 3, 3, 3}, DType::f64, 6));
  Tensor y = ws.call("conv_transpose2d", {x, w},
                     {{"stride", int64_t{2}}, {"padding", int64_t{1}}, {"output_padding", int64_t{1}}});
  CHECK(y.shape() == Shape{1, 3, 6, 6});
  ws.backward(ws.call("sum", {y}));
  std::vector<std::string> backward_ops;
  for (const Node& n : ws.graph().nodes())
    if (n.phase == Phase::backward) backward_ops.push_back(n.op->name);
  CHECK(std::find(backward_ops.begin(), backward_ops.end(), "conv2d") != backward_ops.end());
  CHECK(std::find(backward_ops.begin(), backward_ops.end(), "conv2d_backward_weight") != backward_ops.end());
  test::require_gradcheck("conv_transpose2d");
  // Shape errors name the rule.
  CHECK_THROWS_WITH(ws.call("conv_transpose2d", {Tensor::zeros({1, 4, 3, 3}), Tensor::zeros({2, 3, 3, 3})}),
                    Catch::Contains("x has 4 channels but weight [2, 3, 3, 3] expects 2"));
  CHECK_THROWS_WITH(ws.call("conv_transpose2d", {Tensor::zeros({1, 2, 3, 3}), Tensor::zeros({2, 3, 3, 3})},
                            {{"stride", int64_t{2}}, {"output_padding", int64_t{2}}}),
                    Catch::Contains("output_padding [2, 2] must be smaller than the stride [2, 2]"));
}
