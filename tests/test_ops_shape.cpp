// Shape operators: views share storage and allocate nothing, strided inputs work, Python
// slice semantics, clear shape errors, and every op's gradcheck.
#include <catch2/catch.hpp>
#include <numeric>

#include "core/gradcheck.h"
#include "core/op.h"
#include "core/workspace.h"
#include "tests/helpers.h"

using namespace opscope;
using V = std::vector<int64_t>;

namespace {

using opscope::test::require_gradcheck;

// 0, 1, 2, ... as float64 of `shape`.
Tensor iota(const Shape& shape) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::from_vector<double>(v, shape);
}

}  // namespace

TEST_CASE("transpose is a view with swapped strides", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 3});
  const int64_t before = ws.tracker().live_total();
  Tensor y = ws.call("transpose", {x});
  REQUIRE(ws.tracker().live_total() == before);
  REQUIRE(&y.storage() == &x.storage());
  REQUIRE(y.shape() == Shape{3, 2});
  REQUIRE(y.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});
  REQUIRE_FALSE(y.is_contiguous());

  Tensor z = ws.call("transpose", {iota({2, 3, 4})}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}});
  REQUIRE(z.shape() == Shape{4, 3, 2});
  REQUIRE(z.get(1) == 12);  // z[0][0][1] = x[1][0][0]

  REQUIRE_THROWS_WITH(ws.call("transpose", {Tensor::scalar(1.0)}), Catch::Contains("0-d"));
  REQUIRE_THROWS_WITH(ws.call("transpose", {x}, {{"dim0", int64_t{5}}}), Catch::Contains("out of range"));
}

TEST_CASE("permute reorders axes as a view", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 3, 4});
  const int64_t before = ws.tracker().live_total();
  Tensor y = ws.call("permute", {x}, {{"dims", V{2, 0, 1}}});
  REQUIRE(ws.tracker().live_total() == before);
  REQUIRE(&y.storage() == &x.storage());
  REQUIRE(y.shape() == Shape{4, 2, 3});
  // y[i][j][k] = x[j][k][i]
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) REQUIRE(y.get((i * 2 + j) * 3 + k) == x.get((j * 3 + k) * 4 + i));
  Tensor w = ws.call("permute", {x}, {{"dims", V{-1, 0, 1}}});
  REQUIRE(w.to_vector() == y.to_vector());
  REQUIRE_THROWS_WITH(ws.call("permute", {x}, {{"dims", V{0, 0, 1}}}), Catch::Contains("not a permutation"));
  REQUIRE_THROWS_WITH(ws.call("permute", {x}, {{"dims", V{0, 1}}}), Catch::Contains("not a permutation"));
  REQUIRE_THROWS_WITH(ws.call("permute", {x}), Catch::Contains("missing attribute 'dims'"));
}

TEST_CASE("reshape: a view when contiguous, a copy after a transpose", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 3});
  const int64_t before = ws.tracker().live_total();
  Tensor y = ws.call("reshape", {x}, {{"shape", V{3, 2}}});
  REQUIRE(ws.tracker().live_total() == before);
  REQUIRE(&y.storage() == &x.storage());
  REQUIRE(y.shape() == Shape{3, 2});
  REQUIRE(y.to_vector() == x.to_vector());

  REQUIRE(ws.call("reshape", {x}, {{"shape", V{-1}}}).shape() == Shape{6});
  REQUIRE(ws.call("reshape", {x}, {{"shape", V{3, -1, 1}}}).shape() == Shape{3, 2, 1});

  // The course's pitfall: transpose then reshape reads elements in the transposed order.
  Tensor t = ws.call("transpose", {x});
  Tensor r = ws.call("reshape", {t}, {{"shape", V{6}}});
  REQUIRE(&r.storage() != &x.storage());
  REQUIRE(r.is_contiguous());
  REQUIRE(r.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5});

  REQUIRE_THROWS_WITH(ws.call("reshape", {x}, {{"shape", V{4, 2}}}),
                      "reshape: cannot reshape [2, 3] (6 elements) into [4, 2] (8 elements)");
  REQUIRE_THROWS_WITH(ws.call("reshape", {x}, {{"shape", V{4, -1}}}), Catch::Contains("not a multiple of 4"));
  REQUIRE_THROWS_WITH(ws.call("reshape", {x}, {{"shape", V{-1, -1}}}), Catch::Contains("only one dimension can be -1"));
}

TEST_CASE("reshape: a view of a strided tensor whenever its strides allow one", "[op]") {
  // PyTorch's view rule: axes may be split or merged only within a run that is contiguous in
  // memory. Each result is compared with reshaping a dense copy (the definition).
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 3, 12});
  auto check = [&](const Tensor& t, const Shape& to, bool view) {
    INFO(shape_str(t.shape()) << " strides " << shape_str(t.strides()) << " -> " << shape_str(to));
    const int64_t before = ws.tracker().live_total();
    Tensor r = ws.call("reshape", {t}, {{"shape", to}});
    REQUIRE(r.shape() == to);
    REQUIRE((&r.storage() == &x.storage()) == view);
    REQUIRE((ws.tracker().live_total() == before) == view);
    REQUIRE(r.to_vector() == t.contiguous().view_reshape(to).to_vector());
  };
  auto sl = [&](const Tensor& t, int64_t axis, int64_t start, int64_t stop, int64_t step) {
    return ws.call("slice", {t}, {{"axis", axis}, {"start", start}, {"stop", stop}, {"step", step}});
  };
  Tensor cols = sl(x, 2, 4, 10, 1);  // [2, 3, 6], rows 12 apart
  check(cols, {2, 3, 2, 3}, true);  // split the sliced axis: heads of a projection
  check(cols, {6, 6}, true);  // merge the two outer axes (they are one run)
  check(cols, {2, 1, 3, 6, 1}, true);
  check(cols, {36}, false);  // across the gap between rows
  check(cols, {2, 18}, false);
  Tensor steps = sl(x, 2, 0, 12, 2);  // last axis stride 2: one run of stride 2 through all axes
  check(steps, {2, 3, 3, 2}, true);
  check(steps, {36}, true);
  Tensor gaps = sl(x, 2, 0, 11, 2);  // [2, 3, 6] stride 2, rows 12 apart: the same
  check(gaps, {2, 18}, true);
  Tensor short_rows = sl(x, 2, 0, 10, 2);  // [2, 3, 5] stride 2, rows 12 apart (not 10)
  check(short_rows, {2, 15}, false);
  check(short_rows, {6, 5}, true);
  Tensor perm = ws.call("permute", {ws.call("reshape", {x}, {{"shape", V{2, 3, 4, 3}}})}, {{"dims", V{0, 2, 1, 3}}});
  check(perm, {2, 4, 3, 3}, true);  // strides [36, 3, 12, 1]: unchanged shape
  check(perm, {2, 2, 2, 3, 3}, true);  // an axis split in place
  check(perm, {8, 3, 3}, false);  // 36 != 4·3: the permuted axes are separate runs
  check(perm, {2, 4, 9}, false);
  Tensor one = sl(x, 1, 1, 2, 1);  // [2, 1, 12]: the size-1 axis does not break the run
  check(one, {24}, false);
  check(one, {2, 12}, true);
  check(one, {2, 2, 6}, true);
}

TEST_CASE("flatten merges a range of axes", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 3, 4});
  REQUIRE(ws.call("flatten", {x}).shape() == Shape{24});
  REQUIRE(ws.call("flatten", {x}, {{"start_dim", int64_t{1}}}).shape() == Shape{2, 12});
  REQUIRE(ws.call("flatten", {x}, {{"end_dim", int64_t{-2}}}).shape() == Shape{6, 4});
  REQUIRE(ws.call("flatten", {Tensor::scalar(3.0)}).shape() == Shape{1});
  Tensor f = ws.call("flatten", {x}, {{"start_dim", int64_t{1}}});
  REQUIRE(&f.storage() == &x.storage());
  // Strided input: flatten of a permuted view copies in the view's order.
  Tensor p = ws.call("permute", {x}, {{"dims", V{2, 1, 0}}});
  Tensor pf = ws.call("flatten", {p});
  REQUIRE(pf.to_vector() == p.to_vector());
  REQUIRE_THROWS_WITH(ws.call("flatten", {x}, {{"start_dim", int64_t{2}}, {"end_dim", int64_t{0}}}),
                      Catch::Contains("comes after end_dim"));
}

TEST_CASE("slice follows Python semantics and is a view", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({10});
  auto sl = [&](const Tensor& t, int64_t axis, int64_t start, int64_t stop, int64_t step) {
    return ws.call("slice", {t}, {{"axis", axis}, {"start", start}, {"stop", stop}, {"step", step}});
  };
  const int64_t before = ws.tracker().live_total();
  Tensor y = sl(x, 0, 2, 8, 3);
  REQUIRE(ws.tracker().live_total() == before);
  REQUIRE(&y.storage() == &x.storage());
  REQUIRE(y.to_vector() == std::vector<double>{2, 5});
  REQUIRE(sl(x, 0, -3, 100, 1).to_vector() == std::vector<double>{7, 8, 9});  // stop clamped
  REQUIRE(sl(x, 0, 0, -8, 1).to_vector() == std::vector<double>{0, 1});
  REQUIRE(sl(x, 0, -100, 2, 1).to_vector() == std::vector<double>{0, 1});  // start clamped
  REQUIRE(sl(x, 0, 6, 3, 1).numel() == 0);  // empty
  REQUIRE(sl(x, 0, 0, 10, 4).to_vector() == std::vector<double>{0, 4, 8});
  REQUIRE(ws.call("slice", {x}, {{"start", int64_t{8}}}).to_vector() == std::vector<double>{8, 9});

  // A slice of a transposed (strided) view.
  Tensor m = iota({3, 4});
  Tensor mt = ws.call("transpose", {m});  // [4, 3]
  Tensor s = sl(mt, 1, 1, 3, 1);  // columns 1..2 of mᵀ = rows 1..2 of m
  REQUIRE(s.shape() == Shape{4, 2});
  REQUIRE(s.to_vector() == std::vector<double>{4, 8, 5, 9, 6, 10, 7, 11});
  REQUIRE_THROWS_WITH(sl(x, 0, 0, 5, 0), Catch::Contains("'step' must be"));
  REQUIRE_THROWS_WITH(sl(x, 1, 0, 5, 1), Catch::Contains("out of range"));
}

TEST_CASE("slice backward scatters into zeros", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 5});
  x.set_requires_grad(true);
  Tensor y = ws.call("slice", {x}, {{"axis", int64_t{1}}, {"start", int64_t{-4}}, {"step", int64_t{2}}});
  REQUIRE(y.shape() == Shape{2, 2});
  REQUIRE(y.to_vector() == std::vector<double>{1, 3, 6, 8});
  ws.backward(y, Tensor::from_vector<double>({10, 20, 30, 40}, {2, 2}));
  REQUIRE(x.grad().to_vector() == std::vector<double>{0, 10, 0, 20, 0, 0, 30, 0, 40, 0});

  Tensor direct = ws.call("slice_backward", {Tensor::from_vector<double>({1, 2}, {2})},
                          {{"shape", V{5}}, {"start", int64_t{1}}, {"step", int64_t{3}}});
  REQUIRE(direct.to_vector() == std::vector<double>{0, 1, 0, 0, 2});
  REQUIRE_THROWS_WITH(ws.call("slice_backward", {Tensor::from_vector<double>({1, 2, 3}, {3})},
                              {{"shape", V{5}}, {"step", int64_t{3}}}),
                      Catch::Contains("dy has shape [3]"));
}

TEST_CASE("slice_backward writes zeros around the window and dy into it", "[op]") {
  // Against the definition zeros(shape) with dx[start:stop:step] = dy, element by element, for
  // windows at the start, middle and end of an inner axis, steps 1 and 3, a strided dy.
  Workspace ws;
  WorkspaceScope scope(ws);
  const Shape shape{3, 7, 4};
  for (auto [start, stop, step] : {std::tuple{0, 3, 1}, {2, 5, 1}, {4, 7, 1}, {0, 7, 1}, {1, 7, 3}, {3, 3, 1}}) {
    INFO("start " << start << " stop " << stop << " step " << step);
    const int64_t len = stop > start ? 1 + (stop - start - 1) / step : 0;
    Tensor dy = ws.call("transpose", {iota({3, 4, len})}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}});  // [3, len, 4]
    Tensor dx = ws.call("slice_backward", {dy},
                        {{"shape", shape},
                         {"axis", int64_t{1}},
                         {"start", int64_t{start}},
                         {"stop", int64_t{stop}},
                         {"step", int64_t{step}}});
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t i = 0; i < 7; ++i)
        for (int64_t c = 0; c < 4; ++c) {
          const bool inside = i >= start && i < stop && (i - start) % step == 0;
          const double want = inside ? dy.get(a * len * 4 + (i - start) / step * 4 + c) : 0.0;
          REQUIRE(dx.get((a * 7 + i) * 4 + c) == want);
        }
  }
}

TEST_CASE("concat joins along an axis, strided inputs included", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = iota({2, 2});
  Tensor b = Tensor::from_vector<double>({10, 11, 12, 13, 14, 15}, {2, 3});
  Tensor c = ws.call("concat", {a, b}, {{"axis", int64_t{1}}});
  REQUIRE(c.shape() == Shape{2, 5});
  REQUIRE(c.to_vector() == std::vector<double>{0, 1, 10, 11, 12, 2, 3, 13, 14, 15});
  Tensor bt = ws.call("transpose", {b});  // [3, 2], strided
  Tensor d = ws.call("concat", {a, bt});
  REQUIRE(d.shape() == Shape{5, 2});
  REQUIRE(d.to_vector() == std::vector<double>{0, 1, 2, 3, 10, 13, 11, 14, 12, 15});
  REQUIRE(ws.call("concat", {a}).to_vector() == a.to_vector());
  // int64 with float64 promotes.
  Tensor i = Tensor::from_vector<int64_t>({7, 8}, {1, 2});
  Tensor e = ws.call("concat", {a, i});
  REQUIRE(e.dtype() == DType::f64);
  REQUIRE(e.to_vector() == std::vector<double>{0, 1, 2, 3, 7, 8});
  REQUIRE_THROWS_WITH(ws.call("concat", {a, b}),
                      Catch::Contains("input 2 has shape [2, 3] but input 1 has shape [2, 2]"));
  REQUIRE_THROWS_WITH(ws.call("concat", {Tensor::scalar(1.0), Tensor::scalar(2.0)}), Catch::Contains("0-d"));
}

TEST_CASE("concat backward gives each input its slice of dy", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = iota({2, 1}), b = iota({2, 2});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor c = ws.call("concat", {a, b}, {{"axis", int64_t{-1}}});
  ws.backward(c, Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  REQUIRE(a.grad().to_vector() == std::vector<double>{1, 4});
  REQUIRE(b.grad().to_vector() == std::vector<double>{2, 3, 5, 6});
}

TEST_CASE("stack makes a new axis", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = iota({2, 3});
  Tensor b = Tensor::from_vector<double>({10, 11, 12, 13, 14, 15}, {2, 3});
  Tensor s0 = ws.call("stack", {a, b});
  REQUIRE(s0.shape() == Shape{2, 2, 3});
  REQUIRE(s0.to_vector() == std::vector<double>{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  Tensor s2 = ws.call("stack", {a, b}, {{"axis", int64_t{-1}}});
  REQUIRE(s2.shape() == Shape{2, 3, 2});
  REQUIRE(s2.to_vector() == std::vector<double>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15});
  Tensor s1 = ws.call("stack", {a, b}, {{"axis", int64_t{1}}});
  REQUIRE(s1.shape() == Shape{2, 2, 3});
  REQUIRE(s1.to_vector() == std::vector<double>{0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15});
  // Strided inputs: transposed views.
  Tensor at = ws.call("transpose", {a}), bt = ws.call("transpose", {b});
  Tensor st = ws.call("stack", {at, bt});
  REQUIRE(st.shape() == Shape{2, 3, 2});
  REQUIRE(st.to_vector() == std::vector<double>{0, 3, 1, 4, 2, 5, 10, 13, 11, 14, 12, 15});
  REQUIRE(ws.call("stack", {Tensor::scalar(1.0), Tensor::scalar(2.0)}).shape() == Shape{2});
  REQUIRE_THROWS_WITH(ws.call("stack", {a, at}), Catch::Contains("same shape"));
  REQUIRE_THROWS_WITH(ws.call("stack", {a, b}, {{"axis", int64_t{3}}}), Catch::Contains("out of range"));
}

TEST_CASE("stack backward", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = iota({2, 2}), b = iota({2, 2});
  a.set_requires_grad(true);
  b.set_requires_grad(true);
  Tensor s = ws.call("stack", {a, b}, {{"axis", int64_t{1}}});  // [2, 2, 2]
  ws.backward(s, Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}));
  REQUIRE(a.grad().to_vector() == std::vector<double>{1, 2, 5, 6});
  REQUIRE(b.grad().to_vector() == std::vector<double>{3, 4, 7, 8});
}

TEST_CASE("expand broadcasts with zero strides and no memory", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3}, {3, 1});
  const int64_t before = ws.tracker().live_total();
  Tensor y = ws.call("expand", {x}, {{"shape", V{2, 3, 4}}});
  REQUIRE(ws.tracker().live_total() == before);
  REQUIRE(&y.storage() == &x.storage());
  REQUIRE(y.shape() == Shape{2, 3, 4});
  REQUIRE(y.strides() == Strides{0, 1, 0});
  REQUIRE(y.get(0) == 1);
  REQUIRE(y.get(5) == 2);
  REQUIRE(y.get(12 + 11) == 3);
  REQUIRE(ws.call("expand", {x}, {{"shape", V{-1, 2}}}).to_vector() == std::vector<double>{1, 1, 2, 2, 3, 3});
  Tensor s = ws.call("expand", {Tensor::scalar(7.0)}, {{"shape", V{2, 2}}});
  REQUIRE(s.to_vector() == std::vector<double>{7, 7, 7, 7});
  // A strided input: expand a transposed view.
  Tensor m = iota({1, 3});
  Tensor mt = ws.call("transpose", {m});  // [3, 1]
  REQUIRE(ws.call("expand", {mt}, {{"shape", V{3, 2}}}).to_vector() == std::vector<double>{0, 0, 1, 1, 2, 2});
  REQUIRE_THROWS_WITH(ws.call("expand", {x}, {{"shape", V{4, 3}}}), Catch::Contains("neither 1 nor"));
  REQUIRE_THROWS_WITH(ws.call("expand", {x}, {{"shape", V{3}}}), Catch::Contains("fewer axes"));
  REQUIRE_THROWS_WITH(ws.call("expand", {x}), Catch::Contains("missing attribute 'shape'"));
}

TEST_CASE("a chain of views back-propagates", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = iota({2, 3});
  x.set_requires_grad(true);
  Tensor t = ws.call("transpose", {x});  // [3, 2]
  Tensor r = ws.call("reshape", {t}, {{"shape", V{6}}});  // copy: 0 3 1 4 2 5
  Tensor s = ws.call("slice", {r}, {{"start", int64_t{1}}, {"step", int64_t{2}}});  // 3 4 5
  REQUIRE(s.to_vector() == std::vector<double>{3, 4, 5});
  ws.backward(s, Tensor::from_vector<double>({1, 2, 3}, {3}));
  REQUIRE(x.grad().to_vector() == std::vector<double>{0, 0, 0, 1, 2, 3});
}

TEST_CASE("shape ops pass gradcheck", "[op][grad]") {
  for (const char* op : {"transpose", "permute", "reshape", "flatten", "slice", "concat", "stack", "expand"}) {
    SECTION(op) { require_gradcheck(op); }
  }
}

TEST_CASE("shape ops are registered with docs, costs and notes", "[op]") {
  for (const char* name :
       {"transpose", "permute", "reshape", "flatten", "slice", "slice_backward", "concat", "stack", "expand"}) {
    const OpDef& d = OpRegistry::instance().get(name);
    INFO(name);
    CHECK(d.family == "shape");
    CHECK(!d.doc.empty());
    CHECK(d.cost);
    if (d.differentiable) {
      CHECK(d.backward);
      CHECK(!d.backward_note.empty());
      CHECK(!d.gradcheck.empty());
    } else {
      CHECK(d.checked_via == "slice");
    }
  }
}

TEST_CASE("slice with a huge step and reshape with a huge shape do not overflow", "[op]") {
  opscope::Workspace ws;
  opscope::WorkspaceScope scope(ws);
  using opscope::Tensor;
  Tensor x = Tensor::from_vector<double>({0, 1, 2, 3, 4}, {5});
  Tensor s = ws.call("slice", {x},
                     {{"axis", int64_t{0}},
                      {"start", int64_t{0}},
                      {"stop", int64_t{5}},
                      {"step", std::numeric_limits<int64_t>::max()}});
  CHECK(s.shape() == opscope::Shape{1});
  CHECK(s.get(0) == 0);
  REQUIRE_THROWS_WITH(ws.call("reshape", {x}, {{"shape", std::vector<int64_t>{-1, 4611686018427387905LL, 4}}}),
                      Catch::Contains("too many elements"));
}
