// conv2d's `onednn` algorithm (oneDNN's primitives, in libopscope_onednn.so): forward and both
// backward ops against `naive` in float32 over the ops' own cases (the one list on each OpDef)
// and the geometries of the conv tests (stride, padding, dilation, groups, non-square, pairs);
// results at one and at two threads; the float64 error; its workspace counted by the memory
// tracker. Without the module the tests print
// "SKIPPED: no oneDNN module" and ctest counts them as skipped.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <random>

#include "core/error.h"
#include "core/gradcheck.h"
#include "core/parallel.h"
#include "core/random.h"
#include "core/workspace.h"
#include "ops/onednn_conv.h"
#include "tests/helpers.h"

using namespace opscope;
using V = std::vector<int64_t>;

namespace {

bool skip_without_onednn() {
  if (cpu::onednn_available()) return false;
  std::cout << "SKIPPED: no oneDNN module (" << cpu::onednn_description() << ")\n";
  return true;
}

using test::uniform;

// max |a − b| / max(1, max |b|): float32 sums of Cg·R·S terms in another order.
double scaled_diff(const Tensor& a, const Tensor& b) {
  double m = 1;
  for (int64_t i = 0; i < b.numel(); ++i) m = std::max(m, std::fabs(b.get(i)));
  return test::max_diff(a, b) / m;
}
constexpr double kTol = 2e-6;  // relative to the largest |value|, float32

// One geometry: x, w and the attributes (every pair may differ along H and W).
struct Geometry {
  V x, w;
  V stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  bool bias = true;
  const char* note;
  AttrMap attrs() const {
    return {{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}};
  }
};

const std::vector<Geometry> kGeometries = {
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, "odd sizes, padding 1"},
    {{2, 3, 9, 9}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true, "stride 2"},
    {{2, 3, 10, 10}, {4, 3, 3, 3}, {2, 2}, {0, 0}, {1, 1}, 1, false, "stride 2: the last row is read by no output"},
    {{1, 2, 11, 10}, {3, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, true, "dilation 2"},
    {{2, 4, 6, 7}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, true, "groups 2"},
    {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, false, "depthwise"},
    {{2, 4, 8, 9}, {4, 2, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 2, true, "5×5, stride 2, groups 2"},
    {{1, 3, 6, 6}, {5, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true, "1×1"},
    {{3, 2, 4, 4}, {2, 2, 2, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true, "non-square kernel 2×3"},
    {{1, 2, 10, 9}, {3, 2, 3, 2}, {2, 1}, {0, 1}, {1, 1}, 1, true, "3×2 kernel, stride (2, 1), padding (0, 1)"},
    {{2, 2, 8, 11}, {2, 2, 2, 3}, {1, 3}, {1, 0}, {2, 1}, 1, false, "stride (1, 3), padding (1, 0), dilation (2, 1)"},
    {{1, 4, 7, 12}, {4, 2, 1, 3}, {3, 2}, {0, 2}, {1, 3}, 2, true, "1×3 kernel, groups 2, every pair different"},
    {{2, 16, 12, 12}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, "16→32 channels (oneDNN's blocked layouts)"},
};

// conv2d and both backward ops of one geometry in `algo`, float32.
struct Passes {
  Tensor y, dx, dw;
};
Passes run_passes(Workspace& ws, const Geometry& g, const std::string& algo, uint64_t seed) {
  Tensor x = uniform(g.x, DType::f32, seed), w = uniform(g.w, DType::f32, seed + 1),
         b = uniform({g.w[0]}, DType::f32, seed + 2);
  std::vector<Tensor> in = {x, w};
  if (g.bias) in.push_back(b);
  Passes p;
  p.y = ws.call("conv2d", in, g.attrs(), algo);
  Tensor dy = uniform(p.y.shape(), DType::f32, seed + 3);
  AttrMap ai = g.attrs(), aw = g.attrs();
  ai.emplace_back("input_shape", g.x);
  aw.emplace_back("weight_shape", g.w);
  p.dx = ws.call("conv2d_backward_input", {dy, w}, ai, algo);
  p.dw = ws.call("conv2d_backward_weight", {x, dy}, aw, algo);
  return p;
}

}  // namespace

TEST_CASE("conv2d onednn: forward and both backward ops match naive on stride, padding, dilation, groups", "[op]") {
  if (skip_without_onednn()) return;
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  uint64_t seed = 1;
  for (const Geometry& g : kGeometries) {
    INFO(g.note << ": x " << shape_str(g.x) << " w " << shape_str(g.w));
    const Passes ref = run_passes(ws, g, "naive", seed), got = run_passes(ws, g, "onednn", seed);
    seed += 4;
    REQUIRE(got.y.shape() == ref.y.shape());
    CHECK(scaled_diff(got.y, ref.y) < kTol);
    CHECK(scaled_diff(got.dx, ref.dx) < kTol);
    CHECK(scaled_diff(got.dw, ref.dw) < kTol);
    ws.reset_graph();
  }
}

TEST_CASE("conv2d onednn: every case of the three conv ops matches naive in float32", "[op]") {
  if (skip_without_onednn()) return;
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  size_t checked = 0;
  for (const char* name : {"conv2d", "conv2d_backward_input", "conv2d_backward_weight"}) {
    const OpDef& op = OpRegistry::instance().get(name);
    REQUIRE(op.find_kernel(Device::cpu, "onednn") != nullptr);
    for (size_t i = 0; i < op.gradcheck.size(); ++i) {
      const GradcheckCase& c = op.gradcheck[i];
      const std::vector<Tensor> in = make_case_inputs(c, 40 + i, DType::f32);
      const Attrs attrs = op.resolve(c.attrs);
      INFO(name << " case " << i << " (" << c.note << ")");
      const Tensor ref = ws.call_multi(op, in, attrs, "naive")[0], got = ws.call_multi(op, in, attrs, "onednn")[0];
      CHECK(scaled_diff(got, ref) < kTol);
      ++checked;
    }
  }
  CHECK(checked >= 10);
}

TEST_CASE("conv2d onednn: one thread and two agree within float32 rounding", "[op]") {
  if (skip_without_onednn()) return;
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  // Large enough that oneDNN splits every pass over the threads (dw sums images per thread).
  const Geometry g{{8, 16, 20, 20}, {32, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, "8×16×20×20"};
  Passes one, two;
  {
    NumThreadsScope t(1);
    one = run_passes(ws, g, "onednn", 7);
  }
  {
    NumThreadsScope t(2);
    two = run_passes(ws, g, "onednn", 7);
  }
  // oneDNN's sums may be split differently per thread count: not bitwise, within float32 rounding.
  CHECK(scaled_diff(two.y, one.y) < kTol);
  CHECK(scaled_diff(two.dx, one.dx) < kTol);
  CHECK(scaled_diff(two.dw, one.dw) < kTol);
}

TEST_CASE("conv2d onednn: float64 is refused with the algorithm to use; gradcheck leaves it out", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = uniform({1, 2, 5, 5}, DType::f64, 1), w = uniform({3, 2, 3, 3}, DType::f64, 2);
  try {
    ws.call("conv2d", {x, w}, {}, "onednn");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("onednn computes in float32 only"));
    CHECK_THAT(e.hint(), Catch::Contains("algo=\"im2col\""));
  }
  for (const char* name : {"conv2d", "conv2d_backward_input", "conv2d_backward_weight"}) {
    const OpDef& op = OpRegistry::instance().get(name);
    CHECK(std::find(op.float32_only.begin(), op.float32_only.end(), "onednn") != op.float32_only.end());
  }
  for (const GradcheckResult& r : gradcheck_op(OpRegistry::instance().get("conv2d"))) CHECK(r.algo != "onednn");
}

TEST_CASE("conv2d onednn: its layouts and scratchpad are workspace memory, freed after the call", "[op]") {
  if (skip_without_onednn()) return;
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  const OpDef& op = OpRegistry::instance().get("conv2d");
  Tensor x = uniform({2, 16, 12, 12}, DType::f32, 1), w = uniform({32, 16, 3, 3}, DType::f32, 2);
  const AttrMap a = {{"padding", int64_t{1}}};
  ws.tracker().reset_peak();
  ws.call("conv2d", {x, w}, a, "onednn");
  const std::vector<TensorMeta> in = {{x.shape(), DType::f32}, {w.shape(), DType::f32}};
  const double claimed = op.cost(in, {{{2, 32, 12, 12}, DType::f32}}, op.resolve(a), "onednn").workspace_bytes;
  CHECK(claimed > 0);  // x and y in oneDNN's blocked layout at least
  CHECK(static_cast<double>(ws.tracker().peak(MemCategory::workspace)) >= claimed);
  CHECK(ws.tracker().live(MemCategory::workspace) == 0);
}
