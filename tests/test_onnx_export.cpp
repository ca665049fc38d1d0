// ONNX export: graphs written by save_onnx pass ONNX's checker (run by the exporter) and,
// imported again, give the same outputs; ops without an ONNX form are one error naming them.
#include <catch2/catch.hpp>
#include <set>

#include "app/onnx/onnx_import.h"
#include "app/onnx/proto_module.h"
#include "core/op.h"
#include "tests/lab.h"
#include "tests/onnx_builder.h"

using namespace opscope;
using opscope::interop::ImportedModel;
using opscope::test::Lab;
using opscope::test::OnnxTempDir;

namespace {

const std::string kModels = std::string(OPSCOPE_SOURCE_DIR) + "/assets/models/";

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get(i) - b.get(i)));
  return m;
}

// Imports `path` again and applies it to `inputs`: the outputs must be `expected`.
void round_trips(const std::string& path, const std::vector<Tensor>& inputs, const std::vector<Tensor>& expected,
                 double tol = 1e-5) {
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = ImportedModel::load(path);
  auto outs = m->apply(ws, inputs);
  REQUIRE(outs.size() == expected.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    INFO("output " << i << " of " << path);
    CHECK(max_diff(outs[i], expected[i]) <= tol);
  }
}

}  // namespace

TEST_CASE("onnx export: a dynamic graph's forward round-trips", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  const std::string path = dir.file("mlp.onnx");
  lab.ok(
      "seed(1)\nx = randn(4, 8)\nw1 = param(8, 16)\nb1 = param(zeros(16))\nw2 = param(16, 3)\n"
      "h = gelu(x @ w1 + b1)\ny = softmax(h @ w2, axis=1)\nsave_onnx(y, \"" +
      path + "\")");
  CHECK(lab.out.find("wrote") != std::string::npos);
  CHECK(lab.out.find("3 initializers, opset 17") != std::string::npos);
  round_trips(path, {test::var(lab, "x")}, {test::var(lab, "y")});
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = ImportedModel::load(path);
  REQUIRE(m->inputs().size() == 1);
  CHECK(m->inputs()[0].name == "x");  // the variable's name
  CHECK(m->parameters().size() == 3);
  CHECK_NOTHROW(m->param("w1"));
}

TEST_CASE("onnx export: a static program round-trips", "[onnx][static]") {
  Lab lab;
  OnnxTempDir dir;
  const std::string path = dir.file("cnn.onnx");
  lab.ok(
      ":mode static\nseed(2)\nx = input(\"image\", [2, 3, 8, 8])\nw = param(randn(4, 3, 3, 3) * 0.3)\n"
      "y = max_pool2d(relu(conv2d(x, w, padding=1)), kernel_size=2)\nz = flatten(y, start_dim=1).sum(axis=1)\n"
      "save_onnx(z, \"" +
      path + "\")\n:mode dynamic\nxv = randn(2, 3, 8, 8)\n:mode static\ncompile(z, grad=False)\nzv = run(z, image=xv)");
  round_trips(path, {test::var(lab, "xv")}, {test::var(lab, "zv")});
}

TEST_CASE("onnx export: an imported model exports and imports again", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  const std::string path = dir.file("encoder_again.onnx");
  lab.ok("m = load_onnx(\"" + kModels + "encoder.onnx\")\nx = load(\"" + kModels +
         "encoder.ref/x.npy\")\ny = m(x)\n"
         "save_onnx(y, \"" +
         path + "\")");
  round_trips(path, {test::var(lab, "x")}, {test::var(lab, "y")});
  // The running statistics of a BatchNorm model stay initializers, not inputs.
  const std::string cnn = dir.file("cnn_again.onnx");
  lab.ok("c = load_onnx(\"" + kModels + "fashion_cnn.onnx\")\nxc = load(\"" + kModels +
         "fashion_cnn.ref/x.npy\")\n"
         "yc = c(xc)\nsave_onnx(yc, \"" +
         cnn + "\")");
  round_trips(cnn, {test::var(lab, "xc")}, {test::var(lab, "yc")});
}

TEST_CASE("onnx export: every op with an ONNX form round-trips", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  const std::string path = dir.file("ops.onnx");
  lab.ok(
      "seed(3)\nx = randn(2, 3, 6, 6)\nt = randn(2, 5, 8)\nidx = tensor([[0, 3], [1, 1]])\n"
      "table = param(randn(4, 8))\nlabels = tensor([1, 0])\n"
      "a = clip(gelu(x, approximate=\"tanh\"), min=-0.2, max=0.9) + erf(x) * sigmoid(x) - tanh(x) / (abs(x) + 1)\n"
      "b = where(x > 0, leaky_relu(x, negative_slope=0.2), exp(x)) ** 2.0 + sqrt(abs(x)) - log(abs(x) + 2)\n"
      "c = batch_norm(conv2d(a, param(randn(4, 3, 3, 3)), stride=2, padding=1, dilation=1), zeros(4), ones(4), "
      "training=False)\n"
      "d = avg_pool2d(pad(b, [1, 1, 1, 1], mode=\"reflect\"), kernel_size=2) + max_pool2d(pad(b, [1, 0, 0, 1], "
      "mode=\"replicate\"), kernel_size=2, stride=1)[:, :, :4, :4]\n"
      "e = concat([adaptive_avg_pool2d(c, [1, 1]).reshape(2, 4), var(d, axes=[2, 3]), d.mean(axis=[2, 3]), "
      "d.max(axis=3).sum(axis=2)], axis=1)\n"
      "f = layer_norm(scaled_dot_product_attention(t, t, t, causal=True), [8])\n"
      "g = stack([embedding(idx, table), gather(table, idx, axis=0)], axis=1).transpose(1, 2)\n"
      "h = log_softmax(expand(f[:, 0:1, :], [2, 4, 8]).permute(0, 2, 1), axis=-1)\n"
      "l = cross_entropy(e[:, 0:3], labels) + mse_loss(e, zeros(2, 13)) + (x > 0.5).cast(dtype=\"float32\").mean()\n"
      "save_onnx([e, f, g, h, l], \"" +
      path + "\")");
  round_trips(path, {test::var(lab, "x"), test::var(lab, "t"), test::var(lab, "idx"), test::var(lab, "labels")},
              {test::var(lab, "e"), test::var(lab, "f"), test::var(lab, "g"), test::var(lab, "h"), test::var(lab, "l")},
              1e-4);
}

TEST_CASE("onnx export: the activations, layers and indexing ops of issue 32 round-trip", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  const std::string path = dir.file("layers.onnx");
  lab.ok(
      "seed(5)\nx = randn(2, 4, 5, 5)\nw = param(randn(4, 3, 3, 3) * 0.3)\ng = param(randn(4))\nb = param(randn(4))\n"
      "t = randn(3, 6)\nidx = tensor([[0, 2], [1, 1], [5, 0]])\nrows = tensor([[2], [0]])\n"
      "a = hardswish(x) + hardsigmoid(x) * elu(x, alpha=0.5) - selu(x) + mish(x) + floor(x) + ceil(x) + round(x)\n"
      "a = a + sin(x) * cos(x) + x % 0.7 + fmod(x, 0.7)\n"
      "c = conv_transpose2d(a, w, stride=2, padding=1, output_padding=1)\n"
      "d = group_norm(a, 2, g, b) + instance_norm(a, g, b) + group_norm(a, 4)\n"
      "e = interpolate(d, scale_factor=2.0, mode=\"bilinear\") + interpolate(d, size=[10, 10]) + upsample_nearest2d(d, "
      "scale_factor=2)\n"
      "e = e + interpolate(d, size=[10, 10], mode=\"bilinear\", align_corners=True) + interpolate(d, size=[10, 10], "
      "mode=\"nearest-exact\")\n"
      "v, i = topk(t, k=2)\n"
      "f = gather_elements(t, idx, axis=1) + cumsum(t, axis=1)[:, 0:2] + triu(t)[:, 0:2] - tril(t, diagonal=-1)[:, "
      "0:2]\n"
      "h = scatter_nd(t, rows, gather_nd(t, rows) * 2.0) + einsum(\"ij,kj->ik\", t, t) @ t\n"
      "save_onnx([c, e, v, i, f, h], \"" +
      path + "\")");
  CHECK(lab.out.find("wrote") != std::string::npos);
  round_trips(path, {test::var(lab, "x"), test::var(lab, "t"), test::var(lab, "idx"), test::var(lab, "rows")},
              {test::var(lab, "c"), test::var(lab, "e"), test::var(lab, "v"), test::var(lab, "i"), test::var(lab, "f"),
               test::var(lab, "h")},
              1e-4);
  // group_norm goes out as PyTorch writes it and comes back as one node.
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = ImportedModel::load(path);
  m->trace(ws);
  int group_norms = 0, instance_norms = 0;
  for (const Node& n : ws.graph().nodes()) {
    group_norms += n.op->name == "group_norm";
    instance_norms += n.op->name == "instance_norm";
  }
  CHECK(group_norms == 2);
  CHECK(instance_norms == 1);
}

TEST_CASE("onnx export: convolutions and pools over 1 and 3 axes round-trip (issue 44)", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  const std::string path = dir.file("nd.onnx");
  lab.ok(
      "seed(6)\ns = randn(2, 4, 12)\nv = randn(1, 2, 4, 6, 6)\n"
      "a = conv1d(s, param(randn(6, 2, 3) * 0.3), stride=2, padding=2, dilation=2, groups=2)\n"
      "b = max_pool1d(a, kernel_size=2) + avg_pool1d(a, kernel_size=3, stride=2, padding=1)\n"
      "c = conv_transpose1d(b, param(randn(6, 3, 4) * 0.3), stride=2, padding=1, output_padding=1)\n"
      "d = adaptive_avg_pool1d(c, [1]).reshape(2, 3) + adaptive_avg_pool1d(a, [3]).sum(axis=2)[:, 0:3]\n"
      "p = conv3d(v, param(randn(4, 2, 3, 3, 3) * 0.3), stride=(1, 2, 2), padding=1)\n"
      "q = max_pool3d(p, kernel_size=(2, 1, 1)) + avg_pool3d(p, kernel_size=(2, 3, 3), stride=(2, 1, 1), padding=(0, "
      "1, 1))\n"
      "r = conv_transpose3d(q, param(randn(4, 2, 2, 2, 2) * 0.3), stride=2)\n"
      "t = adaptive_avg_pool3d(r, [2, 3, 3]) - adaptive_avg_pool3d(q, [1, 1, 1]).mean()\n"
      "save_onnx([c, d, r, t], \"" +
      path + "\")");
  round_trips(path, {test::var(lab, "s"), test::var(lab, "v")},
              {test::var(lab, "c"), test::var(lab, "d"), test::var(lab, "r"), test::var(lab, "t")});
  // Each op went out as the ONNX operator of its rank, and came back as itself.
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = ImportedModel::load(path);
  m->trace(ws);
  std::set<std::string> ops;
  for (const Node& n : ws.graph().nodes()) ops.insert(n.op->name);
  for (const char* op : {"conv1d", "max_pool1d", "avg_pool1d", "conv_transpose1d", "conv3d", "max_pool3d", "avg_pool3d",
                         "conv_transpose3d"}) {
    INFO(op);
    CHECK(ops.count(op) == 1);
  }
}

TEST_CASE("onnx export: ops without an ONNX form are one error naming them", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  lab.ok("x = randn(1, 1, 2, 2)\ny = upsample_nearest2d(dropout(x, p=0.5), scale_factor=2)");
  CHECK_FALSE(lab.run("save_onnx(y, \"" + dir.file("no.onnx") + "\")"));
  CHECK(lab.err.find("no ONNX form for dropout (node #0: training mode draws a random mask)") != std::string::npos);
  CHECK(lab.err.find("upsample_nearest2d") == std::string::npos);  // it is a Resize
  CHECK_FALSE(std::filesystem::exists(dir.file("no.onnx")));
  lab.ok("w = param(randn(3, 3))\nloss = (randn(2, 3) @ w).sum()\nbackward(loss)");
  CHECK_FALSE(lab.run("save_onnx(w.grad, \"" + dir.file("grad.onnx") + "\")"));
  CHECK(lab.err.find("not in the graph") != std::string::npos);
}

TEST_CASE("onnx export: every registered operator has an exporter or a reason for having none", "[onnx]") {
  const interop::ExportCoverage coverage = interop::onnx_proto_module().export_coverage();
  const std::set<std::string> exported(coverage.exported.begin(), coverage.exported.end());
  std::set<std::string> without;
  const std::string where = "app/onnx/export_ops.cpp";
  for (const auto& [op, why] : coverage.without_form) {
    INFO("ops_without_onnx_form() in " << where << " lists '" << op << "'");
    CHECK(without.insert(op).second);  // listed once
    CHECK_FALSE(why.empty());
    if (!OpRegistry::instance().find(op))
      FAIL_CHECK("'" << op << "' is no registered operator: remove it from the list");
    if (exported.count(op)) FAIL_CHECK("'" << op << "' is in export_table() too: remove it from the list");
  }
  for (const std::string& op : exported)
    if (!OpRegistry::instance().find(op))
      FAIL_CHECK("export_table() (" << where << ", export_layers.cpp) exports '" << op
                                    << "', which is no registered operator");
  int checked = 0;
  for (const OpDef* op : OpRegistry::instance().all()) {
    if (!op->builtin()) continue;  // an extension's or a test's own operator
    ++checked;
    if (!exported.count(op->name) && !without.count(op->name))
      FAIL_CHECK("operator '" << op->name << "' has no ONNX exporter: add one to export_table() in " << where
                              << " (or add_layer_exports in export_layers.cpp), or list it in ops_without_onnx_form() "
                              << "there with the reason it has none");
  }
  CHECK(checked > 100);
}
