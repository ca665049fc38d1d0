// Convolution, pooling and the norms over 1 and 3 spatial axes against PyTorch: each case's
// inputs, output and gradients (of L = sum(y·r)) were computed by PyTorch 1.13 in float64
// (tools/make_nd_op_fixtures.py, folders in tests/ops_nd/), and every algorithm of the op must
// give them within 1e-10. Then the gradchecks of the new ops, the one geometry shared by every
// rank (conv1d runs the 2-D kernels: it must equal conv2d of height 1) and the shape errors.
#include <catch2/catch.hpp>
#include <string>

#include "app/lang/npy.h"
#include "core/error.h"
#include "core/op.h"
#include "core/workspace.h"
#include "tests/helpers.h"

using namespace opscope;
using V = std::vector<int64_t>;

namespace {

const std::string kDir = std::string(OPSCOPE_SOURCE_DIR) + "/tests/ops_nd/";

Tensor fixture(const std::string& name, const std::string& file) { return lang::load_npy(kDir + name + "/" + file); }

// The fixture `name` run through `op` with `attrs` and each algorithm: y and every input's
// gradient equal PyTorch's. `trailing` inputs are opscope-only (batch_norm's running
// statistics, fresh zeros and ones as PyTorch's were) placed after the fixture's first input.
void check_against_pytorch(const std::string& name, const std::string& op, const AttrMap& attrs, size_t inputs,
                           const std::vector<Tensor>& after_x = {}) {
  for (const std::string& algo : OpRegistry::instance().get(op).algorithms) {
    INFO(name << " [" << algo << "]");
    Workspace ws;
    WorkspaceScope scope(ws);
    std::vector<Tensor> in, args;
    for (size_t i = 0; i < inputs; ++i) {
      in.push_back(fixture(name, "in" + std::to_string(i) + ".npy"));
      in.back().set_requires_grad(true);
    }
    args.push_back(in[0]);
    for (const Tensor& t : after_x) args.push_back(t.clone());
    args.insert(args.end(), in.begin() + 1, in.end());
    const Tensor y = ws.call(op, args, attrs, algo);
    CHECK(test::max_diff(y, fixture(name, "y.npy")) < 1e-10);
    ws.backward(ws.call("sum", {ws.call("mul", {y, fixture(name, "r.npy")})}));
    for (size_t i = 0; i < inputs; ++i) {
      INFO("gradient of input " << i);
      REQUIRE(in[i].grad().defined());
      CHECK(test::max_diff(in[i].grad(), fixture(name, "grad.in" + std::to_string(i) + ".npy")) < 1e-10);
    }
  }
}

Tensor filled(const Shape& s, double v) {
  Tensor t = Tensor::empty(s, DType::f64, MemCategory::input);
  t.fill(v);
  return t;
}

}  // namespace

TEST_CASE("conv1d, conv3d and their transposes agree with PyTorch", "[op][grad]") {
  check_against_pytorch(
      "conv1d", "conv1d",
      {{"stride", int64_t{2}}, {"padding", int64_t{1}}, {"dilation", int64_t{2}}, {"groups", int64_t{2}}}, 3);
  check_against_pytorch("conv3d", "conv3d", {{"stride", V{2, 1, 2}}, {"padding", V{1, 0, 1}}, {"dilation", V{1, 2, 1}}},
                        3);
  check_against_pytorch("conv3d_groups", "conv3d", {{"padding", int64_t{1}}, {"groups", int64_t{2}}}, 2);
  check_against_pytorch(
      "conv_transpose1d", "conv_transpose1d",
      {{"stride", int64_t{2}}, {"padding", int64_t{1}}, {"output_padding", int64_t{1}}, {"groups", int64_t{2}}}, 3);
  check_against_pytorch(
      "conv_transpose3d", "conv_transpose3d",
      {{"stride", V{2, 1, 2}}, {"padding", V{0, 1, 1}}, {"output_padding", V{1, 0, 1}}, {"dilation", V{1, 2, 1}}}, 3);
}

TEST_CASE("1-D and 3-D pools agree with PyTorch", "[op][grad]") {
  check_against_pytorch("max_pool1d", "max_pool1d",
                        {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}, 1);
  check_against_pytorch("max_pool3d", "max_pool3d",
                        {{"kernel_size", V{2, 3, 3}}, {"stride", V{1, 2, 2}}, {"padding", V{1, 1, 1}}}, 1);
  check_against_pytorch("avg_pool1d", "avg_pool1d",
                        {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}, 1);
  check_against_pytorch("avg_pool3d", "avg_pool3d",
                        {{"kernel_size", V{2, 3, 3}}, {"stride", V{1, 2, 2}}, {"padding", V{1, 1, 0}}}, 1);
  check_against_pytorch("adaptive_avg_pool1d", "adaptive_avg_pool1d", {{"output_size", V{4}}}, 1);
  check_against_pytorch("adaptive_avg_pool3d", "adaptive_avg_pool3d", {{"output_size", V{2, 3, 4}}}, 1);
}

// PyTorch's ceil_mode (a last partial window) and count_include_pad=False (the padding not
// counted in the average) at every rank, in every algorithm (the vectorized 1-D and 2-D kernels
// hand these windows to the direct loop).
TEST_CASE("the pools' ceil_mode and count_include_pad agree with PyTorch", "[op][grad]") {
  const AttrMap k3s2p1 = {{"kernel_size", int64_t{3}},
                          {"stride", int64_t{2}},
                          {"padding", int64_t{1}},
                          {"ceil_mode", true}};
  check_against_pytorch("max_pool2d_ceil", "max_pool2d", k3s2p1, 1);
  AttrMap exclude = k3s2p1;
  exclude.push_back({"count_include_pad", false});
  check_against_pytorch("avg_pool2d_ceil_exclude", "avg_pool2d", exclude, 1);
  check_against_pytorch("avg_pool2d_ceil_include", "avg_pool2d",
                        {{"kernel_size", V{3, 2}}, {"stride", int64_t{2}}, {"padding", V{1, 0}}, {"ceil_mode", true}},
                        1);
  check_against_pytorch(
      "avg_pool1d_exclude", "avg_pool1d",
      {{"kernel_size", int64_t{4}}, {"stride", int64_t{3}}, {"padding", int64_t{2}}, {"count_include_pad", false}}, 1);
  check_against_pytorch("max_pool3d_ceil", "max_pool3d", {{"kernel_size", int64_t{2}}, {"ceil_mode", true}}, 1);
  check_against_pytorch("avg_pool3d_ceil_exclude", "avg_pool3d",
                        {{"kernel_size", V{2, 3, 3}},
                         {"stride", int64_t{2}},
                         {"padding", V{1, 1, 0}},
                         {"ceil_mode", true},
                         {"count_include_pad", false}},
                        1);
}

TEST_CASE("batch_norm and instance_norm over 1 and 3 spatial axes agree with PyTorch", "[op][grad]") {
  check_against_pytorch("batch_norm1d", "batch_norm", {}, 3, {filled({3}, 0), filled({3}, 1)});
  check_against_pytorch("batch_norm3d", "batch_norm", {}, 3, {filled({3}, 0), filled({3}, 1)});
  check_against_pytorch("instance_norm3d", "instance_norm", {}, 3);
}

TEST_CASE("the 1-D and 3-D ops pass their gradchecks in every algorithm", "[op][grad]") {
  for (const char* op :
       {"conv1d", "conv3d", "conv_transpose1d", "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d",
        "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool3d"})
    test::require_gradcheck(op);
}

TEST_CASE("conv1d is conv2d of height 1: the same numbers from the one geometry", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const Tensor x = test::uniform({2, 4, 13}, DType::f64, 1), w = test::uniform({6, 2, 3}, DType::f64, 2);
  const AttrMap a1 = {{"stride", int64_t{2}},
                      {"padding", int64_t{2}},
                      {"dilation", int64_t{2}},
                      {"groups", int64_t{2}}};
  const AttrMap a2 = {{"stride", V{1, 2}}, {"padding", V{0, 2}}, {"dilation", V{1, 2}}, {"groups", int64_t{2}}};
  const Tensor y1 = ws.call("conv1d", {x, w}, a1);
  const Tensor y2 = ws.call("conv2d", {x.view_reshape({2, 4, 1, 13}), w.view_reshape({6, 2, 1, 3})}, a2);
  REQUIRE(y1.shape() == Shape{2, 6, 7});
  CHECK(test::max_diff(y1, y2.view_reshape({2, 6, 7})) == 0);
}

TEST_CASE("1-D and 3-D shape errors name the layout and the op of the input's rank", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  auto message = [&](const std::string& op, const std::vector<Tensor>& in, const AttrMap& a = {}) {
    try {
      ws.call(op, in, a);
    } catch (const Error& e) {
      return std::string(e.what()) + " | " + e.hint();
    }
    return std::string("no error");
  };
  const Tensor x4 = test::uniform({1, 2, 5, 5}, DType::f64, 1), x5 = test::uniform({1, 2, 3, 5, 5}, DType::f64, 2);
  CHECK_THAT(message("conv3d", {x4, test::uniform({3, 2, 3, 3, 3}, DType::f64, 3)}),
             Catch::Contains("5-D [N, C, D, H, W]") && Catch::Contains("use conv2d"));
  CHECK_THAT(message("conv1d", {test::uniform({2, 7}, DType::f64, 4), test::uniform({3, 2, 3}, DType::f64, 5)}),
             Catch::Contains("add a batch axis: reshape(x, [1, 2, 7])"));
  CHECK_THAT(message("conv3d", {x5, test::uniform({3, 2, 4, 3, 3}, DType::f64, 6)}),
             Catch::Contains("output would be empty") &&
                 Catch::Contains("is 3×5×5, smaller than the dilated kernel 4×3×3"));
  CHECK_THAT(message("max_pool3d", {x4}),
             Catch::Contains("rank 5 [N, C, D, H, W]") && Catch::Contains("use max_pool2d"));
  CHECK_THAT(message("avg_pool3d", {x5}, {{"kernel_size", V{4, 2, 2}}}), Catch::Contains("does not fit"));
  CHECK_THAT(message("max_pool3d", {x5}, {{"stride", V{1, 2}}}),
             Catch::Contains("must be an int or a triple (d, h, w)"));
  CHECK_THAT(message("adaptive_avg_pool1d", {x4}, {{"output_size", V{2}}}), Catch::Contains("use adaptive_avg_pool2d"));
}
