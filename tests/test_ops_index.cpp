// interpolate against PyTorch's F.interpolate (float64 values recorded from Debian's
// python3-torch 1.13 for x = arange(24)^1.5 / 10 of shape [1, 2, 3, 4]), and the indexing and
// scan ops against loops written here: gather_elements, gather_nd, scatter_nd, topk, cumsum,
// triu, tril, einsum (both algorithms).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "core/error.h"
#include "tests/helpers.h"

using namespace opscope;
using V = std::vector<int64_t>;

namespace {

struct ResizeCase {
  const char* name;
  AttrMap attrs;
  Shape shape;
  std::vector<double> values;
};

Tensor interp_input() {
  Tensor x = Tensor::empty({1, 2, 3, 4}, DType::f64);
  for (int64_t i = 0; i < 24; ++i) x.data<double>()[i] = std::pow(static_cast<double>(i), 1.5) / 10;
  return x;
}

Tensor ints(const std::vector<int64_t>& v, const Shape& s) { return Tensor::from_vector<int64_t>(v, s, DType::i64); }

}  // namespace

TEST_CASE("interpolate: nearest, nearest-exact and bilinear (both align_corners) give PyTorch's values", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // PyTorch's numbers, one case a line (tools/make_*_fixtures.py wrote them).
  // clang-format off
  const std::vector<ResizeCase> cases = {
      {"nearest_x2", {{"scale_factor", 2.0}}, {1, 2, 6, 8}, {0, 0, 0.1, 0.1, 0.282842712475, 0.282842712475, 0.519615242271, 0.519615242271, 0, 0, 0.1, 0.1, 0.282842712475, 0.282842712475, 0.519615242271, 0.519615242271, 0.8, 0.8, 1.11803398875, 1.11803398875, 1.46969384567, 1.46969384567, 1.85202591775, 1.85202591775, 0.8, 0.8, 1.11803398875, 1.11803398875, 1.46969384567, 1.46969384567, 1.85202591775, 1.85202591775, 2.2627416998, 2.2627416998, 2.7, 2.7, 3.16227766017, 3.16227766017, 3.64828726939, 3.64828726939, 2.2627416998, 2.2627416998, 2.7, 2.7, 3.16227766017, 3.16227766017, 3.64828726939, 3.64828726939, 4.15692193817, 4.15692193817, 4.6872166581, 4.6872166581, 5.23832034148, 5.23832034148, 5.80947501931, 5.80947501931, 4.15692193817, 4.15692193817, 4.6872166581, 4.6872166581, 5.23832034148, 5.23832034148, 5.80947501931, 5.80947501931, 6.4, 6.4, 7.00927956355, 7.00927956355, 7.63675323681, 7.63675323681, 8.28190799273, 8.28190799273, 6.4, 6.4, 7.00927956355, 7.00927956355, 7.63675323681, 7.63675323681, 8.28190799273, 8.28190799273, 8.94427191, 8.94427191, 9.62340895941, 9.62340895941, 10.3189146716, 10.3189146716, 11.0304125036, 11.0304125036, 8.94427191, 8.94427191, 9.62340895941, 9.62340895941, 10.3189146716, 10.3189146716, 11.0304125036, 11.0304125036}},
      {"nearest_5x7", {{"size", V{5, 7}}}, {1, 2, 5, 7}, {0, 0, 0.1, 0.1, 0.282842712475, 0.282842712475, 0.519615242271, 0, 0, 0.1, 0.1, 0.282842712475, 0.282842712475, 0.519615242271, 0.8, 0.8, 1.11803398875, 1.11803398875, 1.46969384567, 1.46969384567, 1.85202591775, 0.8, 0.8, 1.11803398875, 1.11803398875, 1.46969384567, 1.46969384567, 1.85202591775, 2.2627416998, 2.2627416998, 2.7, 2.7, 3.16227766017, 3.16227766017, 3.64828726939, 4.15692193817, 4.15692193817, 4.6872166581, 4.6872166581, 5.23832034148, 5.23832034148, 5.80947501931, 4.15692193817, 4.15692193817, 4.6872166581, 4.6872166581, 5.23832034148, 5.23832034148, 5.80947501931, 6.4, 6.4, 7.00927956355, 7.00927956355, 7.63675323681, 7.63675323681, 8.28190799273, 6.4, 6.4, 7.00927956355, 7.00927956355, 7.63675323681, 7.63675323681, 8.28190799273, 8.94427191, 8.94427191, 9.62340895941, 9.62340895941, 10.3189146716, 10.3189146716, 11.0304125036}},
      {"nearest_exact_5x7", {{"size", V{5, 7}}, {"mode", std::string("nearest-exact")}}, {1, 2, 5, 7}, {0, 0, 0.1, 0.282842712475, 0.282842712475, 0.519615242271, 0.519615242271, 0, 0, 0.1, 0.282842712475, 0.282842712475, 0.519615242271, 0.519615242271, 0.8, 0.8, 1.11803398875, 1.46969384567, 1.46969384567, 1.85202591775, 1.85202591775, 2.2627416998, 2.2627416998, 2.7, 3.16227766017, 3.16227766017, 3.64828726939, 3.64828726939, 2.2627416998, 2.2627416998, 2.7, 3.16227766017, 3.16227766017, 3.64828726939, 3.64828726939, 4.15692193817, 4.15692193817, 4.6872166581, 5.23832034148, 5.23832034148, 5.80947501931, 5.80947501931, 4.15692193817, 4.15692193817, 4.6872166581, 5.23832034148, 5.23832034148, 5.80947501931, 5.80947501931, 6.4, 6.4, 7.00927956355, 7.63675323681, 7.63675323681, 8.28190799273, 8.28190799273, 8.94427191, 8.94427191, 9.62340895941, 10.3189146716, 10.3189146716, 11.0304125036, 11.0304125036, 8.94427191, 8.94427191, 9.62340895941, 10.3189146716, 10.3189146716, 11.0304125036, 11.0304125036}},
      {"bilinear_5x7", {{"size", V{5, 7}}, {"mode", std::string("bilinear")}}, {1, 2, 5, 7}, {0, 0.0357142857143, 0.0928571428571, 0.191421356237, 0.299755036031, 0.435053624486, 0.519615242271, 0.32, 0.386861998393, 0.493841195821, 0.632398380626, 0.778654333375, 0.947223674351, 1.05257951246, 0.8, 0.913583567411, 1.09531727527, 1.29386391721, 1.49700327939, 1.71547874915, 1.85202591775, 1.67764501988, 1.81677665403, 2.03938726867, 2.27622886493, 2.51699689111, 2.77101894503, 2.92978272873, 2.2627416998, 2.41890537844, 2.66876726427, 2.93113883008, 3.19699263226, 3.47471240895, 3.64828726939, 4.15692193817, 4.34631290957, 4.64933846382, 4.96276849979, 5.27911710419, 5.6054912058, 5.80947501931, 5.0541531629, 5.25482768339, 5.57590691618, 5.90686765995, 6.24060455026, 6.58389295544, 6.79844820868, 6.4, 6.61759984413, 6.96575959473, 7.32301640018, 7.68283571938, 8.0514955799, 8.28190799273, 7.926563146, 8.15913245138, 8.53124333999, 8.91190364938, 9.29497585495, 9.68638191299, 9.93101069926, 8.94427191, 9.18682085622, 9.57489917016, 9.97116181551, 10.3697359453, 10.776306135, 11.0304125036}},
      {"bilinear_5x7_ac", {{"size", V{5, 7}}, {"mode", std::string("bilinear")}, {"align_corners", true}}, {1, 2, 5, 7}, {0, 0.05, 0.1, 0.191421356237, 0.282842712475, 0.401228977373, 0.519615242271, 0.4, 0.504508497187, 0.609016994375, 0.742642636724, 0.876268279072, 1.03104442954, 1.18582058001, 0.8, 0.959016994375, 1.11803398875, 1.29386391721, 1.46969384567, 1.66085988171, 1.85202591775, 1.5313708499, 1.72019392214, 1.90901699437, 2.11250137365, 2.31598575292, 2.53307117324, 2.75015659357, 2.2627416998, 2.4813708499, 2.7, 2.93113883008, 3.16227766017, 3.40528246478, 3.64828726939, 4.15692193817, 4.42206929813, 4.6872166581, 4.96276849979, 5.23832034148, 5.5238976804, 5.80947501931, 5.27846096908, 5.56335453995, 5.84824811083, 6.14289244999, 6.43753678915, 6.74161414758, 7.04569150602, 6.4, 6.70463978178, 7.00927956355, 7.32301640018, 7.63675323681, 7.95933061477, 8.28190799273, 7.672135955, 7.99424010824, 8.31634426148, 8.64708910785, 8.97783395421, 9.31699710119, 9.65616024817, 8.94427191, 9.2838404347, 9.62340895941, 9.97116181551, 10.3189146716, 10.6746635876, 11.0304125036}},
      {"bilinear_0.6", {{"scale_factor", 0.6}, {"mode", std::string("bilinear")}}, {1, 2, 1, 2}, {0.32422599875, 0.678459756873, 5.09015562582, 6.03779797326}},
      {"bilinear_1.5_2.5", {{"scale_factor", 1.5}, {"scale_factor_w", 2.5}, {"mode", std::string("bilinear")}}, {1, 2, 4, 10}, {0, 0.01, 0.05, 0.09, 0.154852813742, 0.227989898732, 0.306519965454, 0.401228977373, 0.495937989291, 0.519615242271, 0.4, 0.420901699437, 0.504508497187, 0.588115294937, 0.689192379784, 0.796092893663, 0.907223509166, 1.03104442954, 1.15486534991, 1.18582058001, 1.0437902833, 1.07758075403, 1.21274263696, 1.34790451989, 1.49272383786, 1.64076230085, 1.79175231425, 1.95159697889, 2.11144164353, 2.15140280969, 2.0189514165, 2.06069017466, 2.22764520731, 2.39460023996, 2.56949140601, 2.74702794986, 2.92705335972, 3.1145453676, 3.30203737548, 3.34891037745, 4.15692193817, 4.20995141016, 4.42206929813, 4.63418718611, 4.85254776312, 5.07298923647, 5.29543580927, 5.5238976804, 5.75235955153, 5.80947501931, 5.27846096908, 5.33543968326, 5.56335453995, 5.79126939665, 6.02503471432, 6.26075018565, 6.49835226084, 6.74161414758, 6.98487603433, 7.04569150602, 6.82404531833, 6.88613756612, 7.13450655726, 7.38287554841, 7.63661150012, 7.89213643869, 8.14940133614, 8.41188611025, 8.67437088435, 8.73999207788, 8.52022659167, 8.58697600518, 8.85397365922, 9.12097131325, 9.39297083848, 9.6666376541, 9.94193183108, 10.2221080921, 10.5022843532, 10.5723284185}},
      {"nearest_0.7", {{"scale_factor", 0.7}}, {1, 2, 2, 2}, {0, 0.1, 0.8, 1.11803398875, 4.15692193817, 4.6872166581, 6.4, 7.00927956355}},
  };
  // clang-format on
  const Tensor x = interp_input();
  for (const ResizeCase& c : cases) {
    INFO(c.name);
    const Tensor y = ws.call("interpolate", {x}, c.attrs);
    REQUIRE(y.shape() == c.shape);
    CHECK(test::max_diff(y, c.values) < 1e-9);
    // float32 picks the same sources (nearest computes them in float32, as PyTorch does).
    const Tensor yf = ws.call("interpolate", {x.cast(DType::f32)}, c.attrs);
    CHECK(test::max_diff(yf, c.values) < 1e-5);
  }
}

TEST_CASE("interpolate: backward adds each output's gradient to its sources; errors name the rule", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // <interpolate(x), g> = <x, interpolate_backward(g)>: the backward is the adjoint.
  const Tensor x = test::uniform({2, 3, 4, 5}, DType::f64, 7);
  for (const AttrMap& a :
       {AttrMap{{"scale_factor", 2.0}}, AttrMap{{"size", V{7, 3}}, {"mode", std::string("bilinear")}},
        AttrMap{{"size", V{9, 9}}, {"mode", std::string("bilinear")}, {"align_corners", true}},
        AttrMap{{"scale_factor", 0.5}, {"mode", std::string("nearest-exact")}}}) {
    const Tensor y = ws.call("interpolate", {x}, a);
    const Tensor g = test::uniform(y.shape(), DType::f64, 8);
    AttrMap ab = a;
    ab.emplace_back("input_shape", V(x.shape()));
    const Tensor dx = ws.call("interpolate_backward", {g}, ab);
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < y.numel(); ++i) lhs += y.get(i) * g.get(i);
    for (int64_t i = 0; i < x.numel(); ++i) rhs += x.get(i) * dx.get(i);
    CHECK(lhs == Approx(rhs).epsilon(1e-12));
  }
  test::require_gradcheck("interpolate");
  CHECK_THROWS_WITH(ws.call("interpolate", {x}), Catch::Contains("give the output size or a scale_factor"));
  CHECK_THROWS_WITH(ws.call("interpolate", {x}, {{"scale_factor", 2.0}, {"size", V{4, 4}}}),
                    Catch::Contains("not both"));
  CHECK_THROWS_WITH(ws.call("interpolate", {x}, {{"scale_factor", 2.0}, {"align_corners", true}}),
                    Catch::Contains("align_corners applies to the interpolating mode \"bilinear\""));
  CHECK_THROWS_WITH(ws.call("interpolate", {Tensor::zeros({3, 4, 5})}, {{"scale_factor", 2.0}}),
                    Catch::Contains("must be 4-D [N, C, H, W]"));
}

TEST_CASE("gather_elements picks one element per index; its backward adds repeated ones", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(ws.call("gather_elements", {x, ints({0, 1, 1, 0}, {2, 2})}, {{"axis", int64_t{1}}}).to_vector() ==
        std::vector<double>{1, 2, 5, 4});
  CHECK(ws.call("gather_elements", {x, ints({1, 0, 1}, {1, 3})}).to_vector() == std::vector<double>{4, 2, 6});
  CHECK(ws.call("gather_elements", {x, ints({-1, -3}, {2, 1})}, {{"axis", int64_t{1}}}).to_vector() ==
        std::vector<double>{3, 4});
  const Tensor xp = test::param(x.clone());
  ws.backward(ws.call("sum", {ws.call("gather_elements", {xp, ints({2, 2, 0, 0}, {2, 2})}, {{"axis", int64_t{1}}})}));
  CHECK(xp.grad().to_vector() == std::vector<double>{0, 0, 2, 2, 0, 0});
  CHECK_THROWS_WITH(ws.call("gather_elements", {x, ints({3}, {1, 1})}, {{"axis", int64_t{1}}}),
                    Catch::Contains("index 3 (at flat position 0 of indices) is out of range for an axis of size 3"));
  CHECK_THROWS_WITH(ws.call("gather_elements", {x, ints({0}, {1})}), Catch::Contains("must have the rank of x"));
  test::require_gradcheck("gather_elements");
}

TEST_CASE("gather_nd and scatter_nd address slices by index rows, as ONNX's examples", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  // ONNX's GatherND examples 1, 3 and 5 (batch_dims = 1).
  const Tensor d2 = Tensor::from_vector<double>({0, 1, 2, 3}, {2, 2});
  CHECK(ws.call("gather_nd", {d2, ints({0, 0, 1, 1}, {2, 2})}).to_vector() == std::vector<double>{0, 3});
  CHECK(ws.call("gather_nd", {d2, ints({1, 0}, {2, 1})}).to_vector() == std::vector<double>{2, 3, 0, 1});
  const Tensor d3 = Tensor::from_vector<double>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  const Tensor g = ws.call("gather_nd", {d3, ints({1, 0}, {2, 1})}, {{"batch_dims", int64_t{1}}});
  CHECK(g.shape() == Shape{2, 2});
  CHECK(g.to_vector() == std::vector<double>{2, 3, 4, 5});
  // ScatterND's example 1: data [1..8], indices [[4], [3], [1], [7]], updates [9, 10, 11, 12].
  const Tensor data = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {8});
  const Tensor idx = ints({4, 3, 1, 7}, {4, 1}), upd = Tensor::from_vector<double>({9, 10, 11, 12}, {4});
  CHECK(ws.call("scatter_nd", {data, idx, upd}).to_vector() == std::vector<double>{1, 11, 3, 10, 9, 6, 7, 12});
  CHECK(ws.call("scatter_nd", {data, ints({1, 1, -1, 0}, {4, 1}), upd}, {{"reduction", std::string("add")}})
            .to_vector() == std::vector<double>{13, 21, 3, 4, 5, 6, 7, 19});
  // Gradients: data loses them where updates were written; updates get dy at their rows.
  const Tensor dp = test::param(data.clone()), up = test::param(upd.clone());
  ws.backward(ws.call("sum", {ws.call("mul", {ws.call("scatter_nd", {dp, idx, up}), data})}));
  CHECK(dp.grad().to_vector() == std::vector<double>{1, 0, 3, 0, 0, 6, 7, 0});
  CHECK(up.grad().to_vector() == std::vector<double>{5, 4, 2, 8});
  CHECK_THROWS_WITH(ws.call("scatter_nd", {data, idx, Tensor::zeros({3}, DType::f64)}),
                    Catch::Contains("updates [3] must be [4]"));
  test::require_gradcheck("gather_nd");
  test::require_gradcheck("scatter_nd");
}

TEST_CASE("topk gives values and indices in order, ties by index, and differentiates through the indices",
          "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = Tensor::from_vector<double>({3, 1, 4, 1, 5, 9, 2, 6}, {2, 4});
  auto outs = ws.call_multi(OpRegistry::instance().get("topk"), {x},
                            OpRegistry::instance().get("topk").resolve({{"k", int64_t{2}}}));
  CHECK(outs[0].to_vector() == std::vector<double>{4, 3, 9, 6});
  CHECK(outs[1].to_vector() == std::vector<double>{2, 0, 1, 3});
  auto small = ws.call_multi(OpRegistry::instance().get("topk"), {x},
                             OpRegistry::instance().get("topk").resolve({{"k", int64_t{3}}, {"largest", false}}));
  CHECK(small[0].to_vector() == std::vector<double>{1, 1, 3, 2, 5, 6});
  CHECK(small[1].to_vector() == std::vector<double>{1, 3, 0, 2, 0, 3});  // the two 1s: the lower index first
  test::require_gradcheck("topk");
  CHECK_THROWS_WITH(ws.call("topk", {x}, {{"k", int64_t{5}}}),
                    Catch::Contains("k=5 but axis 1 of x [2, 4] has 4 elements"));
}

TEST_CASE("cumsum runs forward, backward and exclusive; triu and tril keep their triangles", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(ws.call("cumsum", {x}, {{"axis", int64_t{1}}}).to_vector() == std::vector<double>{1, 3, 6, 4, 9, 15});
  CHECK(ws.call("cumsum", {x}, {{"axis", int64_t{0}}}).to_vector() == std::vector<double>{1, 2, 3, 5, 7, 9});
  CHECK(ws.call("cumsum", {x}, {{"axis", int64_t{1}}, {"exclusive", true}}).to_vector() ==
        std::vector<double>{0, 1, 3, 0, 4, 9});
  CHECK(ws.call("cumsum", {x}, {{"axis", int64_t{-1}}, {"reverse", true}}).to_vector() ==
        std::vector<double>{6, 5, 3, 15, 11, 6});
  CHECK(ws.call("cumsum", {ints({1, 2, 3}, {3})}).to_vector() == std::vector<double>{1, 3, 6});
  test::require_gradcheck("cumsum");
  const Tensor m = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  CHECK(ws.call("triu", {m}).to_vector() == std::vector<double>{1, 2, 3, 0, 5, 6, 0, 0, 9});
  CHECK(ws.call("triu", {m}, {{"diagonal", int64_t{1}}}).to_vector() == std::vector<double>{0, 2, 3, 0, 0, 6, 0, 0, 0});
  CHECK(ws.call("tril", {m}, {{"diagonal", int64_t{-1}}}).to_vector() ==
        std::vector<double>{0, 0, 0, 4, 0, 0, 7, 8, 0});
  test::require_gradcheck("triu");
  test::require_gradcheck("tril");
}

TEST_CASE("einsum: matmul and the loops agree with matmul, sums and traces; errors name the letter", "[op][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  const Tensor a = test::uniform({2, 3, 4}, DType::f64, 1), b = test::uniform({2, 4, 5}, DType::f64, 2);
  const Tensor ab = ws.call("matmul", {a, b});
  for (const char* algo : {"matmul", "naive"}) {
    INFO(algo);
    CHECK(test::max_diff(ws.call("einsum", {a, b}, {{"equation", std::string("bij,bjk->bik")}}, algo), ab) < 1e-12);
    // The output's letters in another order: a permuted product.
    const Tensor t = ws.call("einsum", {a, b}, {{"equation", std::string("bij,bjk->kbi")}}, algo);
    CHECK(test::max_diff(t, ws.call("permute", {ab}, {{"dims", V{2, 0, 1}}})) < 1e-12);
    // Sums, a trace, implicit output, ellipsis, a diagonal.
    CHECK(test::max_diff(ws.call("einsum", {a}, {{"equation", std::string("bij->j")}}, algo),
                         ws.call("sum", {a}, {{"axes", V{0, 1}}})) < 1e-12);
    const Tensor sq = test::uniform({4, 4}, DType::f64, 3);
    double trace = 0;
    for (int i = 0; i < 4; ++i) trace += sq.get(i * 5);
    CHECK(ws.call("einsum", {sq}, {{"equation", std::string("ii")}}, algo).item() == Approx(trace));
    CHECK(test::max_diff(ws.call("einsum", {a, b}, {{"equation", std::string("...ij,...jk")}}, algo), ab) < 1e-12);
    CHECK(ws.call("einsum", {sq}, {{"equation", std::string("ii->i")}}, algo).get(3) == sq.get(15));
  }
  CHECK_THROWS_WITH(ws.call("einsum", {a, a}, {{"equation", std::string("bij,bjk->bik")}}),
                    Catch::Contains("'j' is 4 in one place and 3 in operand 2"));
  CHECK_THROWS_WITH(ws.call("einsum", {a}, {{"equation", std::string("ij->i")}}),
                    Catch::Contains("operand 1 has shape [2, 3, 4] (3 axes) but its subscripts name 2"));
  CHECK_THROWS_WITH(ws.call("einsum", {a}, {{"equation", std::string("bij->q")}}),
                    Catch::Contains("'q' is in no operand"));
  test::require_gradcheck("einsum");
}
