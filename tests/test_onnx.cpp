// ONNX import: the shipped models against PyTorch's recorded outputs and gradients, in both
// modes; the model object in the language; every kind of bad file refused with the file and
// the node named and nothing left behind; the conformance runner's verdicts.
#include <catch2/catch.hpp>
#include <sstream>

#include "app/lang/npy.h"
#include "app/onnx/conformance.h"
#include "app/onnx/onnx_import.h"
#include "tests/helpers.h"
#include "tests/lab.h"
#include "tests/onnx_builder.h"

using namespace opscope;
using opscope::interop::ImportedModel;
using opscope::test::Lab;
using opscope::test::ModelBuilder;
using opscope::test::OnnxTempDir;

namespace {

const std::string kModels = std::string(OPSCOPE_SOURCE_DIR) + "/assets/models/";

Tensor ref(const std::string& model, const std::string& file) {
  return lang::load_npy(kModels + model + ".ref/" + file);
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.get(i)));
  return m;
}

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get(i) - b.get(i)));
  return m;
}

// Outputs within 1e-4 of PyTorch's; every parameter's gradient of L = sum(y·r) within 1e-3 of
// PyTorch's, relative to the gradient's largest entry; buffers get none.
void check_against_pytorch(const std::string& name) {
  INFO(name);
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = ImportedModel::load(kModels + name + ".onnx");
  const Tensor x = ref(name, "x.npy");
  const Tensor y = m->apply(ws, {x}).at(0);
  CHECK(max_diff(y, ref(name, "y.npy")) <= 1e-4);
  ws.backward(ws.call("sum", {ws.call("mul", {y, ref(name, "r.npy")})}));
  REQUIRE(!m->parameters().empty());
  for (auto& p : m->parameters()) {
    INFO(p.name);
    REQUIRE(p.tensor.grad().defined());
    const Tensor expected = ref(name, "grad." + p.name + ".npy");
    CHECK(max_diff(p.tensor.grad(), expected) <= 1e-3 * std::max(max_abs(expected), 1e-6));
  }
  for (auto& b : m->buffers()) CHECK_FALSE(b.tensor.grad().defined());
}

}  // namespace

TEST_CASE("onnx: the shipped models give PyTorch's outputs and gradients", "[onnx][grad]") {
  check_against_pytorch("fashion_cnn");
  check_against_pytorch("resnet_block");
  check_against_pytorch("encoder");
}

TEST_CASE("onnx: import folds PyTorch's shape arithmetic and keeps the ONNX names", "[onnx]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  auto m = ImportedModel::load(kModels + "encoder.onnx");
  CHECK(m->inputs().size() == 1);
  CHECK(m->inputs()[0].name == "x");
  CHECK(m->inputs()[0].dims[0].param == "batch");
  CHECK(m->inputs()[0].shape == Shape{1, 6, 32});  // the symbolic batch takes 1
  CHECK(m->outputs()[0].shape == Shape{1, 6, 32});
  CHECK(m->parameters().size() == 12);
  CHECK(m->param("layer.self_attn.in_proj_weight").shape() == Shape{96, 32});
  CHECK(m->param("layer.self_attn.in_proj_weight").requires_grad());
  auto traced = m->trace(ws);
  int shape_ops = 0, onnx_shape_nodes = 0;
  for (auto& n : m->model().nodes)
    onnx_shape_nodes += n.op_type == "Shape" || n.op_type == "Gather" || n.op_type == "Unsqueeze";
  for (const Node& n : ws.graph().nodes()) {
    CHECK(n.symbolic);
    shape_ops += n.op->name == "gather" || n.op->name == "concat";
  }
  CHECK(onnx_shape_nodes > 20);
  CHECK(shape_ops == 0);  // every Shape/Gather/Unsqueeze/Concat on shapes was folded
  CHECK(traced.folded > 50);
  CHECK(ws.graph().num_nodes() < 40);
  // The graph reads like the file: the nodes carry the ONNX node names and module scopes.
  bool named = false;
  for (const Node& n : ws.graph().nodes())
    if (ws.graph().node_var_name(n.id) == "/layer/self_attn/Softmax") {
      named = true;
      CHECK(n.op->name == "softmax");
      CHECK(n.scope == "layer/self_attn");
    }
  CHECK(named);
  // A new batch size lowers the graph again (the folded shapes depend on it).
  WorkspaceScope again(ws);
  ws.set_static_mode(false);
  CHECK(m->apply(ws, {Tensor::zeros({3, 6, 32})}).at(0).shape() == Shape{3, 6, 32});
}

TEST_CASE("onnx: the model object in the language, both modes", "[onnx][repl]") {
  Lab lab;
  const std::string dir = "\"" + kModels;
  lab.ok("m = load_onnx(" + dir + "fashion_cnn.onnx\")\nx = load(" + dir + "fashion_cnn.ref/x.npy\")");
  CHECK(lab.echo("m.inputs") == "[('x', ['batch', 1, 28, 28])]");
  CHECK(lab.echo("m.outputs") == "[('y', [1, 10])]");
  CHECK(lab.echo("len(m.parameters())") == "10");
  CHECK(lab.echo("len(m.buffers())") == "4");
  CHECK(lab.echo("m.param(\"conv1.weight\").shape") == "[8, 1, 3, 3]");
  CHECK(lab.echo("m(x=x).shape") == "[2, 10]");  // by keyword
  CHECK_FALSE(lab.run("m.param(\"conv1.wieght\")"));
  CHECK(lab.err.find("did you mean 'conv1.weight'") != std::string::npos);
  CHECK_FALSE(lab.run("m(y=x)"));
  CHECK(lab.err.find("no input named 'y'") != std::string::npos);
  CHECK_FALSE(lab.run("m(zeros(2, 3, 28, 28))"));
  CHECK(lab.err.find("[batch, 1, 28, 28]") != std::string::npos);
  // Dynamic mode: backward through it fills .grad; a stepped backward steps it.
  lab.ok("y = m(x)\nloss = (y * load(" + dir + "fashion_cnn.ref/r.npy\")).sum()\nbackward(loss, step=True)");
  CHECK(lab.out.find("backward pass ready") != std::string::npos);
  lab.ok(":step 3");
  CHECK(lab.out.find("[gradient of #") != std::string::npos);
  lab.ok(":run");
  const Tensor g = test::var(lab, "x");  // the input has no gradient; the parameter has
  CHECK_FALSE(g.grad().defined());
  lab.ok("g = m.param(\"fc.weight\").grad");
  CHECK(max_diff(test::var(lab, "g"), ref("fashion_cnn", "grad.fc.weight.npy")) <=
        1e-3 * max_abs(ref("fashion_cnn", "grad.fc.weight.npy")));
  // Static mode: m traces against input(); compile/run give the same numbers.
  lab.ok("zero_grad(m.parameters())\n:mode static");
  lab.ok("xs = input(\"x\", [2, 1, 28, 28])\nys = m(xs)\nls = (ys * load(" + dir + "fashion_cnn.ref/r.npy\")).sum()");
  lab.ok("compile(ys, grad=False)\nyv = run(ys, x=x)");
  CHECK(max_diff(test::var(lab, "yv"), ref("fashion_cnn", "y.npy")) <= 1e-4);
  lab.ok("compile(ls)\nlv = run(ls, x=x)");
  lab.ok(":mode dynamic\ng2 = m.param(\"fc.weight\").grad");
  CHECK(max_diff(test::var(lab, "g2"), ref("fashion_cnn", "grad.fc.weight.npy")) <=
        1e-3 * max_abs(ref("fashion_cnn", "grad.fc.weight.npy")));
}

TEST_CASE("onnx: an imported model trains with an optimizer written in the language", "[onnx][repl]") {
  Lab lab;
  lab.ok(":seed 0\nm = load_onnx(\"" + kModels +
         "fashion_cnn.onnx\")\nx = rand(16, 1, 28, 28)\n"
         "y = argmax(randn(16, 10), axis=1)\nopt = Adam(m.parameters(), lr=2e-3)\nw0 = m.param(\"fc.weight\") * 1.0\n"
         "losses = []\nfor i in range(12):\n    opt.zero_grad()\n    loss = cross_entropy(m(x), y)\n"
         "    backward(loss)\n    opt.step()\n    losses.append(loss.item())");
  const double first = std::stod(lab.echo("losses[0]")), last = std::stod(lab.echo("losses[11]"));
  CHECK(last < 0.8 * first);  // one fixed batch: twelve Adam steps fit it
  CHECK(lab.echo("allclose(m.param(\"fc.weight\"), w0)") == "False");  // the initializer itself was updated in place
  // Adam's state: two moments per parameter value plus a step count per parameter.
  lab.ok("values = 0\nfor p in m.parameters():\n    values += p.numel()");
  const int64_t values = std::stoll(lab.echo("values"));
  CHECK(values == 9146);
  CHECK(lab.echo("live_bytes(\"optimizer state\")") == std::to_string(2 * values * 4 + 10 * 4));
}

TEST_CASE("onnx: :import names the model after the file", "[onnx][repl]") {
  Lab lab;
  lab.ok(":import " + kModels + "resnet_block.onnx");
  CHECK(lab.out.find("<onnx model resnet_block.onnx") != std::string::npos);
  CHECK(lab.echo("resnet_block(zeros(1, 8, 8, 8)).shape") == "[1, 16, 4, 4]");
  lab.ok(":import " + kModels + "encoder.onnx enc");
  CHECK(lab.echo("enc.name") == "'encoder'");
  CHECK_FALSE(lab.run(":import"));
}

// --- bad input --------------------------------------------------------------------------------

namespace {

// A load that must fail with `needle` in the message, leaving the session as it was.
void refused(Lab& lab, const std::string& path, const std::string& needle) {
  INFO(path << " should fail with: " << needle);
  const int64_t live = lab.ws.tracker().live_total();
  const size_t nodes = lab.ws.graph().num_nodes();
  CHECK_FALSE(lab.run("bad = load_onnx(\"" + path + "\")"));
  INFO(lab.err);
  CHECK(lab.err.find(needle) != std::string::npos);
  CHECK(lab.err.find(std::filesystem::path(path).filename().string()) != std::string::npos);  // names the file
  CHECK(lab.ws.tracker().live_total() == live);  // nothing half-imported stays
  CHECK(lab.ws.graph().num_nodes() == nodes);
  CHECK(lab.session.interpreter().lookup("bad") == nullptr);
}

ModelBuilder relu_model() {
  ModelBuilder b;
  b.input("x", {-1, 4}).output("y");
  b.node("Relu", {"x"}, {"y"}, "relu1");
  return b;
}

}  // namespace

TEST_CASE("onnx: damaged and hostile files are clear errors that leave nothing behind", "[onnx]") {
  Lab lab;
  OnnxTempDir dir;
  test::write_file(dir.file("text.onnx"), "x = tensor([1, 2])\nprint(x)\n");
  refused(lab, dir.file("text.onnx"), "not an ONNX model");
  test::write_file(dir.file("empty.onnx"), "");
  refused(lab, dir.file("empty.onnx"), "empty");
  const std::string encoder = test::read_file(kModels + "encoder.onnx");
  test::write_file(dir.file("truncated.onnx"), encoder.substr(0, encoder.size() / 2));
  refused(lab, dir.file("truncated.onnx"), "truncated");
  refused(lab, dir.file("missing.onnx"), "cannot open");

  // Larger than the memory cap: the file, then the initializers, refused before allocation.
  lab.ok(":mem cap 20000");
  refused(lab, kModels + "encoder.onnx", "more than the memory cap");
  lab.ok(":mem cap 1e10");
  ModelBuilder huge;  // dims that claim 40 GB and no data: refused before anything is allocated
  huge.input("x", {2}).output("y");
  huge.node("Add", {"x", "w"}, {"y"});
  auto* w = huge.g().add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(100000);
  w->add_dims(100000);
  refused(lab, huge.save(dir, "huge.onnx"),
          "its initializers need 37.25 GiB as opscope stores them, more than the memory cap leaves");

  ModelBuilder newer(99);
  newer.input("x", {2}).output("y");
  newer.node("Relu", {"x"}, {"y"});
  refused(lab, newer.save(dir, "opset99.onnx"), "opset 99 is newer than opscope reads");
  ModelBuilder older(3);
  older.input("x", {2}).output("y");
  older.node("Relu", {"x"}, {"y"});
  refused(lab, older.save(dir, "opset3.onnx"), "opset 3 is older");
  refused(lab, dir.file("opset3.onnx"), "here Relu changed");  // Relu-1 had consumed_inputs

  ModelBuilder missing;
  missing.input("x", {2, 3}).output("y");
  missing.node("MatMul", {"x", "w"}, {"y"}, "fc");
  refused(lab, missing.save(dir, "missing_init.onnx"),
          "node MatMul 'fc' reads 'w', which no node, graph input or initializer provides");

  ModelBuilder cycle;
  cycle.input("x", {2}).output("c");
  cycle.node("Add", {"x", "c"}, {"a"}, "first");
  cycle.node("Relu", {"a"}, {"c"}, "second");
  refused(lab, cycle.save(dir, "cycle.onnx"), "cycle: node Add 'first', Relu 'second'");

  ModelBuilder twice;
  twice.input("x", {2}).output("a");
  twice.node("Relu", {"x"}, {"a"}, "r1");
  twice.node("Neg", {"x"}, {"a"}, "r2");
  refused(lab, twice.save(dir, "twice.onnx"), "produced twice");

  // Every unmapped op type at once, with the nodes.
  ModelBuilder many;
  many.input("x", {1, 3, 4, 4}).output("z");
  many.node("Unique", {"x"}, {"t"}, "uniq");
  many.node("NonZero", {"x"}, {"u"}, "nz1");
  many.node("NonZero", {"x"}, {"v"}, "nz2");
  many.node("Relu", {"x"}, {"z"}, "ok");
  refused(lab, many.save(dir, "unmapped.onnx"),
          "2 operator types that opscope does not map: NonZero (nodes 'nz1', 'nz2'); Unique (node 'uniq')");

  // Shapes that cannot be resolved at import.
  ModelBuilder shapeless;
  shapeless.input("x", {}, onnx::TensorProto::FLOAT, false).output("y");
  shapeless.node("Relu", {"x"}, {"y"}, "r");
  refused(lab, shapeless.save(dir, "no_shape.onnx"), "input 'x' has no shape in the file");
  ModelBuilder dynamic;
  dynamic.input("x", {6}).input("s", {2}, onnx::TensorProto::INT64).output("y");
  dynamic.node("Reshape", {"x", "s"}, {"y"}, "reshape_by_data");
  refused(lab, dynamic.save(dir, "dynamic.onnx"),
          "node Reshape 'reshape_by_data': the new shape ('s') is computed from the model's inputs");

  // An initializer whose data is shorter than its dims, one kept in an external file.
  ModelBuilder shorted = relu_model();
  auto* t = shorted.g().add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(10);
  t->set_raw_data(std::string(8, '\0'));
  refused(lab, shorted.save(dir, "short.onnx"), "initializer 'w' declares 10 elements of float but holds 8 bytes");
  ModelBuilder external = relu_model();
  auto* e = external.g().add_initializer();
  e->set_name("w");
  e->set_data_type(onnx::TensorProto::FLOAT);
  e->add_dims(4);
  e->set_data_location(onnx::TensorProto::EXTERNAL);
  refused(lab, external.save(dir, "external.onnx"), "keeps its data in an external file");
  ModelBuilder half = relu_model();
  auto* h = half.g().add_initializer();
  h->set_name("w");
  h->set_data_type(onnx::TensorProto::FLOAT16);
  h->add_dims(1);
  h->add_int32_data(0);
  refused(lab, half.save(dir, "float16.onnx"), "dtype float16, which opscope lacks");

  // A bad attribute value: the node and what to do.
  ModelBuilder pads;
  pads.input("x", {1, 1, 4, 4}).output("y");
  auto& pool = pads.node("MaxPool", {"x"}, {"y"}, "pool");
  ModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 3});
  ModelBuilder::attr(pool, "dilations", std::vector<int64_t>{2, 1});
  refused(lab, pads.save(dir, "dilated_pool.onnx"),
          "node MaxPool 'pool': dilations [2, 1] (opscope's pools are undilated)");

  // After all that the session still works and the relu model loads.
  lab.ok("good = load_onnx(\"" + relu_model().save(dir, "relu.onnx") + "\")");
  CHECK(lab.echo("good(tensor([[-1.0, 2.0, -3.0, 4.0]]))") ==
        "tensor([[0.0, 2.0, 0.0, 4.0]], shape=[1, 4], dtype=float32)");
}

TEST_CASE("onnx: the newer opsets' forms: Gelu (20), axes and num_outputs (18)", "[onnx]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  ModelBuilder b(20);
  b.input("x", {2, 6}).output("g").output("m").output("s0").output("s1");
  auto& gelu = b.node("Gelu", {"x"}, {"g"}, "gelu");
  auto* a = gelu.add_attribute();
  a->set_name("approximate");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("tanh");
  b.node("ReduceMean", {"x", "axes"}, {"m"}, "mean");  // axes are an input from opset 18
  b.init("axes", Tensor::from_vector<int64_t>({1}, {1}, DType::i64));
  auto& split = b.node("Split", {"x"}, {"s0", "s1"}, "split");
  ModelBuilder::attr(split, "num_outputs", int64_t{2});
  ModelBuilder::attr(split, "axis", int64_t{1});
  auto m = ImportedModel::from_model(interop::parse_onnx_bytes(b.bytes(), "newer.onnx", int64_t(1) << 30));
  const Tensor x = Tensor::from_vector<double>({-2, -1, -0.5, 0, 0.5, 1, 2, 3, 4, -3, 0.25, 1.5}, {2, 6}, DType::f32);
  auto outs = m->apply(ws, {x});
  REQUIRE(outs.size() == 4);
  CHECK(max_diff(outs[0], ws.call("gelu", {x}, {{"approximate", std::string("tanh")}})) == 0);
  CHECK(max_diff(outs[1], ws.call("mean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdim", true}})) < 1e-7);
  CHECK(outs[2].shape() == Shape{2, 3});
  CHECK(outs[3].get(0) == x.get(3));
}

TEST_CASE("onnx: an older opset reads when its operators are unchanged since opset 6", "[onnx]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  ModelBuilder b(1);  // Tanh-6 and GlobalAveragePool-1: the same in opset 1 and 6
  b.input("x", {1, 2, 2, 2}).output("y");
  b.node("Tanh", {"x"}, {"t"}, "tanh");
  b.node("GlobalAveragePool", {"t"}, {"y"}, "pool");
  CHECK_THROWS_WITH(ImportedModel::from_model(interop::parse_onnx_bytes(b.bytes(), "old.onnx", int64_t(1) << 30)),
                    Catch::Contains("here Tanh 'tanh' changed"));
  ModelBuilder same(1);
  same.input("x", {1, 2, 2, 2}).output("y");
  same.node("GlobalAveragePool", {"x"}, {"y"}, "pool");
  auto m = ImportedModel::from_model(interop::parse_onnx_bytes(same.bytes(), "old.onnx", int64_t(1) << 30));
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, -1, -2, -3, 6}, {1, 2, 2, 2}, DType::f32);
  auto outs = m->apply(ws, {x});
  REQUIRE(outs.size() == 1);
  CHECK(outs[0].shape() == Shape{1, 2, 1, 1});
  CHECK(outs[0].get(0) == Approx(2.5).margin(1e-6));
  CHECK(outs[0].get(1) == Approx(0).margin(1e-6));
}

TEST_CASE("onnx: GlobalAveragePool and GlobalMaxPool over 1 and 3 spatial axes (issue 44)", "[onnx]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  ModelBuilder b;
  b.input("s", {2, 3, 5}).input("v", {1, 2, 2, 3, 2});
  for (const char* x : {"s", "v"}) {
    b.output(std::string("avg_") + x).output(std::string("max_") + x);
    b.node("GlobalAveragePool", {x}, {std::string("avg_") + x});
    b.node("GlobalMaxPool", {x}, {std::string("max_") + x});
  }
  auto m = ImportedModel::from_model(interop::parse_onnx_bytes(b.bytes(), "global.onnx", int64_t(1) << 30));
  const Tensor s = test::randn({2, 3, 5}, 7, DType::f32), v = test::randn({1, 2, 2, 3, 2}, 8, DType::f32);
  auto outs = m->apply(ws, {s, v});
  REQUIRE(outs.size() == 4);
  CHECK(outs[0].shape() == Shape{2, 3, 1});
  CHECK(outs[3].shape() == Shape{1, 2, 1, 1, 1});
  for (int64_t c = 0; c < 2; ++c) {  // channel c of v: 12 elements, one after another
    double sum = 0, max = -1e30;
    for (int64_t i = 0; i < 12; ++i) sum += v.get(c * 12 + i), max = std::max(max, v.get(c * 12 + i));
    CHECK(outs[2].get(c) == Approx(sum / 12).margin(1e-6));
    CHECK(outs[3].get(c) == max);
  }
  for (int64_t r = 0; r < 6; ++r) {  // row r of s: 5 elements
    double sum = 0, max = -1e30;
    for (int64_t i = 0; i < 5; ++i) sum += s.get(r * 5 + i), max = std::max(max, s.get(r * 5 + i));
    CHECK(outs[0].get(r) == Approx(sum / 5).margin(1e-6));
    CHECK(outs[1].get(r) == max);
  }
}

TEST_CASE("onnx: --shape sizes a symbolic input, and is checked", "[onnx]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  CHECK(interop::parse_shape_option("x=8,1,28,28") == std::pair<std::string, Shape>{"x", {8, 1, 28, 28}});
  CHECK_THROWS_WITH(interop::parse_shape_option("x=8,a"), Catch::Contains("cannot read the size 'a'"));
  interop::ImportOptions opt;
  opt.shapes["x"] = {8, 1, 28, 28};
  CHECK(ImportedModel::load(kModels + "fashion_cnn.onnx", opt)->outputs()[0].shape == Shape{8, 10});
  opt.shapes["x"] = {8, 3, 28, 28};
  CHECK_THROWS_WITH(ImportedModel::load(kModels + "fashion_cnn.onnx", opt), Catch::Contains("fixes dimension 1 to 1"));
  opt.shapes = {{"image", {1, 1, 28, 28}}};
  CHECK_THROWS_WITH(ImportedModel::load(kModels + "fashion_cnn.onnx", opt),
                    Catch::Contains("not an input of the model"));
}

// --- the conformance runner -------------------------------------------------------------------

namespace {

// A backend-test folder: model.onnx and test_data_set_0 with the inputs and expected outputs.
void write_node_test(const OnnxTempDir& dir, const std::string& name, const ModelBuilder& b,
                     const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  const auto folder = dir.path / name / "test_data_set_0";
  std::filesystem::create_directories(folder);
  test::write_file((dir.path / name / "model.onnx").string(), b.bytes());
  auto write = [&](const std::string& file, const Tensor& t) {
    onnx::TensorProto p;
    interop::tensor_to_proto(t, file, p);
    test::write_file((folder / file).string(), p.SerializeAsString());
  };
  for (size_t i = 0; i < inputs.size(); ++i) write("input_" + std::to_string(i) + ".pb", inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) write("output_" + std::to_string(i) + ".pb", outputs[i]);
}

}  // namespace

TEST_CASE("onnx: the conformance runner passes, fails with the first difference, skips with a reason", "[onnx]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  OnnxTempDir dir;
  const Tensor x = Tensor::from_vector<double>({-1, 2, -3}, {3}, DType::f32);
  ModelBuilder relu;
  relu.input("x", {3}).output("y");
  relu.node("Relu", {"x"}, {"y"}, "r");
  write_node_test(dir, "test_relu_ok", relu, {x}, {Tensor::from_vector<double>({0, 2, 0}, {3}, DType::f32)});
  write_node_test(dir, "test_relu_wrong", relu, {x}, {Tensor::from_vector<double>({0, 2.01, 0}, {3}, DType::f32)});
  ModelBuilder pool;
  pool.input("x", {1, 1, 4, 4}).output("y");
  auto& dilated = pool.node("MaxPool", {"x"}, {"y"}, "p");
  ModelBuilder::attr(dilated, "kernel_shape", std::vector<int64_t>{1, 2});
  ModelBuilder::attr(dilated, "dilations", std::vector<int64_t>{1, 2});
  write_node_test(dir, "test_maxpool_dilated", pool, {Tensor::zeros({1, 1, 4, 4})}, {Tensor::zeros({1, 1, 4, 2})});
  std::ostringstream log;
  const auto report = interop::run_conformance({dir.path.string()}, {}, log);
  REQUIRE(report.tests.size() == 3);
  CHECK(report.count(interop::ConformanceTest::passed) == 1);
  CHECK(report.count(interop::ConformanceTest::failed) == 1);
  CHECK(report.count(interop::ConformanceTest::skipped) == 1);
  CHECK(
      log.str().find(
          "FAILED test_relu_wrong [Relu]: test_data_set_0 output 0: first difference at [1]: 2, expected 2.00999999") !=
      std::string::npos);
  CHECK(log.str().find("nodes: Relu 'r'") != std::string::npos);
  const std::string table = interop::conformance_table(report, true);
  CHECK(table.find("| MaxPool | 0 | 0 | 1 | dilations [1, 2] (opscope's pools are undilated) |") != std::string::npos);
  CHECK(table.find("| Relu | 1 | 1 | 0 |") != std::string::npos);
}
