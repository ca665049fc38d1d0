// The models students bring, small (tests/onnx/models, made by tools/make_onnx_models.py
// --tests with Debian's python3-torch and torchvision): MobileNetV3 (hardswish, hardsigmoid),
// DeepLabV3 on a dilated MobileNetV3 (Resize, dilated convolutions), a Swin Transformer (Mod and
// ScatterND in its mask arithmetic), a U-Net (ConvTranspose, GroupNorm's pattern folded,
// InstanceNormalization, bilinear Resize), an LSTM language model and a bidirectional GRU
// tagger. Each imports, runs and differentiates: its output, dL/dx and dL/d(every parameter)
// against PyTorch's, computed in float64, within 1e-4 of each tensor's largest entry. A keyword
// spotter (Conv1d, BatchNorm1d, MaxPool1d, a grouped Conv1d, AdaptiveAvgPool1d) and a video CNN
// (Conv3d, BatchNorm3d, AvgPool3d) are exported in float64 and held to 1e-6.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <set>

#include "app/lang/npy.h"
#include "app/onnx/onnx_import.h"
#include "tests/lab.h"

using namespace opscope;
using opscope::interop::ImportedModel;
using opscope::interop::ImportOptions;

namespace {

const std::string kDir = std::string(OPSCOPE_SOURCE_DIR) + "/tests/onnx/models/";

Tensor ref(const std::string& model, const std::string& file) { return lang::load_npy(kDir + model + ".ref/" + file); }

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.get(i)));
  return m;
}

// max |a − e| relative to the largest |e| (one number per tensor, as a tolerance reads), or to
// `floor` when that is larger: a gradient that is 0 in exact arithmetic (a convolution's bias
// before an InstanceNorm, which subtracts it again) is PyTorch's float64 rounding noise, and is
// held to 1e-4 of a hundredth of the model's largest gradient instead.
double relative_error(const Tensor& a, const Tensor& e, double floor = 1e-12) {
  REQUIRE(a.shape() == e.shape());
  double diff = 0;
  for (int64_t i = 0; i < e.numel(); ++i) diff = std::max(diff, std::fabs(a.get(i) - e.get(i)));
  return diff / std::max(max_abs(e), floor);
}

// Runs `name` on its x, checks y, then L = sum(y·r)'s gradients: x's (float inputs) and every
// parameter's, each within `tolerance` of its largest entry. Returns the model for more checks.
std::shared_ptr<ImportedModel> check_against_pytorch(Workspace& ws, const std::string& name,
                                                     const ImportOptions& opt = {}, double tolerance = 1e-4) {
  INFO(name);
  auto m = ImportedModel::load(kDir + name + ".onnx", opt);
  Tensor x = ref(name, "x.npy");
  const bool float_input = is_floating(x.dtype());
  if (float_input) x.set_requires_grad(true);
  const Tensor y = m->apply(ws, {x}).at(0);
  CHECK(relative_error(y, ref(name, "y.npy")) <= tolerance);
  ws.backward(ws.call("sum", {ws.call("mul", {y, ref(name, "r.npy")})}));
  if (float_input) {
    REQUIRE(x.grad().defined());
    CHECK(relative_error(x.grad(), ref(name, "grad.x.npy")) <= tolerance);
  }
  REQUIRE(!m->parameters().empty());
  double largest = 0;
  for (auto& p : m->parameters()) largest = std::max(largest, max_abs(ref(name, "grad." + p.name + ".npy")));
  for (auto& p : m->parameters()) {
    INFO(p.name);
    REQUIRE(p.tensor.grad().defined());
    CHECK(relative_error(p.tensor.grad(), ref(name, "grad." + p.name + ".npy"), 1e-2 * largest) <= tolerance);
  }
  return m;
}

std::multiset<std::string> op_names(const Workspace& ws) {
  std::multiset<std::string> ops;
  for (const Node& n : const_cast<Workspace&>(ws).graph().nodes())
    if (n.phase == Phase::forward) ops.insert(n.op->name);
  return ops;
}

}  // namespace

TEST_CASE("onnx models: MobileNetV3 and DeepLabV3 (hardswish, hardsigmoid, Resize) agree with PyTorch",
          "[onnx][grad]") {
  {
    Workspace ws;
    WorkspaceScope scope(ws);
    check_against_pytorch(ws, "mobilenet_v3_small");
    const auto ops = op_names(ws);
    CHECK(ops.count("hardswish") > 0);
    CHECK(ops.count("hardsigmoid") > 0);
  }
  Workspace ws;
  WorkspaceScope scope(ws);
  check_against_pytorch(ws, "deeplabv3_mobilenet_v3");
  CHECK(op_names(ws).count("interpolate") == 2);  // the pooled branch, and the output back to the input's size
}

TEST_CASE("onnx models: a Swin Transformer (shifted windows: Mod, ScatterND folded) agrees with PyTorch",
          "[onnx][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = check_against_pytorch(ws, "swin_t");
  // The mask arithmetic (Mod, ScatterND, Range, Equal ...) depends on sizes alone: none of it
  // reaches the graph.
  const auto ops = op_names(ws);
  CHECK(ops.count("scatter_nd") == 0);
  CHECK(ops.count("mod") == 0);
  bool used_mod = false;
  for (const auto& n : m->model().nodes) used_mod = used_mod || n.op_type == "Mod" || n.op_type == "ScatterND";
  CHECK(used_mod);
}

TEST_CASE("onnx models: a U-Net (ConvTranspose, GroupNorm folded back, InstanceNorm, bilinear) agrees with PyTorch",
          "[onnx][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  check_against_pytorch(ws, "unet");
  const auto ops = op_names(ws);
  CHECK(ops.count("group_norm") == 2);  // PyTorch's Reshape–InstanceNormalization–Reshape–Mul–Add, one node each
  CHECK(ops.count("instance_norm") == 2);  // the two InstanceNorm2d layers
  CHECK(ops.count("conv_transpose2d") == 1);
  CHECK(ops.count("interpolate") == 1);
}

TEST_CASE("onnx models: an LSTM language model and a bidirectional GRU agree with PyTorch, unrolled per step",
          "[onnx][grad]") {
  {
    Workspace ws;
    WorkspaceScope scope(ws);
    check_against_pytorch(ws, "lstm_lm");
    std::set<std::string> steps;
    for (const Node& n : ws.graph().nodes())
      if (n.scope.find("/t=") != std::string::npos) steps.insert(n.scope);
    CHECK(steps.size() == 14);  // 7 steps in each of the 2 layers (one LSTM node each)
  }
  Workspace ws;
  WorkspaceScope scope(ws);
  check_against_pytorch(ws, "gru_tagger");
}

TEST_CASE("onnx models: tied initializers are named on load, and untie=True gives PyTorch's parameters back",
          "[onnx][grad][repl]") {
  {  // tied, as the file says: one parameter, whose gradient is the sum of its three uses'
    Workspace ws;
    WorkspaceScope scope(ws);
    auto m = ImportedModel::load(kDir + "tied_encoder.onnx");
    REQUIRE(m->ties().size() == 2);
    CHECK(m->ties_note().find("'layer.norm2.bias' and 'layer.norm1.bias' are 'layer.self_attn.out_proj.bias'") !=
          std::string::npos);
    CHECK(m->parameters().size() == 9);
    const Tensor y = m->apply(ws, {ref("tied_encoder", "x.npy")}).at(0);
    ws.backward(ws.call("sum", {ws.call("mul", {y, ref("tied_encoder", "r.npy")})}));
    const Tensor sum = ws.call("add", {ws.call("add", {ref("tied_encoder", "grad.layer.self_attn.out_proj.bias.npy"),
                                                       ref("tied_encoder", "grad.layer.norm1.bias.npy")}),
                                       ref("tied_encoder", "grad.layer.norm2.bias.npy")});
    CHECK(relative_error(m->param("layer.self_attn.out_proj.bias").grad(), sum) <= 1e-4);
  }
  Workspace ws;
  WorkspaceScope scope(ws);
  ImportOptions untie;
  untie.untie = true;
  auto m = check_against_pytorch(ws, "tied_encoder", untie);
  CHECK(m->parameters().size() == 12);  // PyTorch's 12
  CHECK(m->ties_note().find("untied:") == 0);
  // The language says so on load_onnx, and takes untie=.
  test::Lab lab;
  CHECK(lab.ok("m = load_onnx(\"" + kDir + "tied_encoder.onnx\")").find("note: tied parameters:") != std::string::npos);
  CHECK(lab.ok("u = load_onnx(\"" + kDir + "tied_encoder.onnx\", untie=True)").find("note: untied:") !=
        std::string::npos);
  CHECK(lab.echo("len(u.parameters())") == "12");
}

TEST_CASE("onnx models: a 1-D keyword spotter and a 3-D video CNN agree with PyTorch in float64 (issue 44)",
          "[onnx][grad]") {
  const double float64_tolerance = 1e-6;
  {
    Workspace ws;
    WorkspaceScope scope(ws);
    auto m = check_against_pytorch(ws, "keyword_spotter", {}, float64_tolerance);
    CHECK(m->parameters().front().tensor.dtype() == DType::f64);
    const auto ops = op_names(ws);
    CHECK(ops.count("conv1d") == 3);  // the front end, the grouped and the dilated convolution
    CHECK(ops.count("batch_norm") == 2);
    CHECK(ops.count("max_pool1d") == 1);
    CHECK(ops.count("avg_pool1d") == 1);  // AdaptiveAvgPool1d(4) over 16 positions, exported as AveragePool
  }
  Workspace ws;
  WorkspaceScope scope(ws);
  check_against_pytorch(ws, "video_cnn", {}, float64_tolerance);
  const auto ops = op_names(ws);
  CHECK(ops.count("conv3d") == 2);
  CHECK(ops.count("batch_norm") == 2);
  CHECK(ops.count("avg_pool3d") == 2);
  CHECK(ops.count("mean") == 1);  // AdaptiveAvgPool3d(1), exported as GlobalAveragePool
}
