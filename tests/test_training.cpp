// Training: the optimizer ops against hand-computed steps, the optimizers of the language
// (dynamic and compiled), IDX files, batches, classes and parameters(), while/break/continue,
// conditional expressions and dicts, PyTorch's call conventions (layer_norm), metrics, and
// what a failed statement leaves behind.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/lang/idx.h"
#include "core/error.h"
#include "tests/helpers.h"
#include "tests/lab.h"
#include "viz/metrics.h"

using namespace opscope;
using Catch::Matchers::Contains;
using opscope::test::Lab;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Tensor vec(std::vector<double> v, DType dt = DType::f64) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<double>(v, {n}, dt);
}

void require_values(const Tensor& t, const std::vector<double>& expected, double tol) {
  REQUIRE(t.numel() == static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    INFO("element " << i << ": " << t.get(i) << " vs " << expected[static_cast<size_t>(i)]);
    CHECK(std::fabs(t.get(i) - expected[static_cast<size_t>(i)]) <= tol);
  }
}

// A temporary file, removed afterwards.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("opscope_test_" + name)).string()) {}
  ~TempFile() { std::remove(path.c_str()); }
};

std::vector<unsigned char> idx_bytes(unsigned char type, const std::vector<uint32_t>& dims,
                                     const std::vector<unsigned char>& data) {
  std::vector<unsigned char> b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(d >> s));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gzip(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

double number(Lab& lab, const std::string& expr) { return std::stod(lab.echo(expr)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// The update ops: two steps each, against the formulas written out here.

TEST_CASE("sgd_update: plain, weight decay, momentum and Nesterov, two steps, in place", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const std::vector<double> w0 = {1.0, -2.0, 0.5}, g1 = {0.5, 1.0, -1.0}, g2 = {-0.25, 2.0, 0.0};
  struct Case {
    double lr, mu, wd;
    bool nesterov;
  };
  for (const Case& c :
       {Case{0.1, 0, 0, false}, Case{0.1, 0, 0.01, false}, Case{0.05, 0.9, 0, false}, Case{0.05, 0.9, 0.1, true}}) {
    INFO("lr " << c.lr << " momentum " << c.mu << " weight_decay " << c.wd << " nesterov " << c.nesterov);
    Tensor w = vec(w0), buf = vec({0, 0, 0});
    const void* storage = w.raw_data();
    std::vector<double> ew = w0, eb = {0, 0, 0};
    for (const auto& g : {g1, g2}) {
      std::vector<Tensor> in = {w, vec(g)};
      if (c.mu > 0) in.push_back(buf);
      ws.call("sgd_update", in, {{"lr", c.lr}, {"momentum", c.mu}, {"weight_decay", c.wd}, {"nesterov", c.nesterov}});
      for (size_t i = 0; i < 3; ++i) {  // torch.optim.SGD's step, by hand
        double d = g[i] + c.wd * ew[i];
        if (c.mu > 0) {
          eb[i] = c.mu * eb[i] + d;
          d = c.nesterov ? d + c.mu * eb[i] : eb[i];
        }
        ew[i] -= c.lr * d;
      }
    }
    require_values(w, ew, 1e-15);
    if (c.mu > 0) require_values(buf, eb, 1e-15);
    CHECK(w.raw_data() == storage);  // the parameter's own memory, updated in place
  }
  // The same two plain steps with numbers a student can check: w − 0.1·g, twice.
  Tensor w = vec({1.0, -2.0, 0.5});
  ws.call("sgd_update", {w, vec(g1)}, {{"lr", 0.1}});
  ws.call("sgd_update", {w, vec(g2)}, {{"lr", 0.1}});
  require_values(w, {1.0 - 0.05 + 0.025, -2.0 - 0.1 - 0.2, 0.5 + 0.1}, 1e-15);
  CHECK_THAT(error_of([&] {
               ws.call("sgd_update", {w, vec(g1)}, {{"momentum", 0.9}});
             }),
             Contains("needs a momentum_buffer"));
  CHECK_THAT(error_of([&] { ws.call("sgd_update", {w, vec({1, 2})}); }), Contains("w is [3] but dw is [2]"));
  CHECK_THAT(error_of([&] {
               ws.call("sgd_update", {w, vec(g1), vec({0, 0, 0}, DType::f32)}, {{"momentum", 0.5}});
             }),
             Contains("momentum_buffer is float32 but w is float64"));
}

TEST_CASE("adam_update and adamw_update: two steps against the formulas, state and step count in place", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const std::vector<double> w0 = {0.5, -1.0, 2.0, 0.0}, g1 = {0.1, -0.2, 0.3, 0.0}, g2 = {-0.4, 0.5, 0.1, 1.0};
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (const bool decoupled : {false, true}) {
    const double wd = decoupled ? 0.1 : 0.05;
    INFO((decoupled ? "adamw" : "adam") << " weight_decay " << wd);
    Tensor w = vec(w0), m = vec({0, 0, 0, 0}), v = vec({0, 0, 0, 0});
    Tensor t = Tensor::full({}, 0.0, DType::f32);
    std::vector<double> ew = w0, em(4, 0), ev(4, 0);
    int step = 0;
    for (const auto& g : {g1, g2}) {
      ws.call(decoupled ? "adamw_update" : "adam_update", {w, vec(g), m, v, t},
              {{"lr", lr}, {"beta1", b1}, {"beta2", b2}, {"eps", eps}, {"weight_decay", wd}});
      ++step;
      for (size_t i = 0; i < 4; ++i) {  // PyTorch's Adam / AdamW, by hand
        double d = g[i];
        if (decoupled) ew[i] *= 1 - lr * wd;
        else d += wd * ew[i];
        em[i] = b1 * em[i] + (1 - b1) * d;
        ev[i] = b2 * ev[i] + (1 - b2) * d * d;
        const double mhat = em[i] / (1 - std::pow(b1, step)), vhat = ev[i] / (1 - std::pow(b2, step));
        ew[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      }
    }
    require_values(w, ew, 1e-14);
    require_values(m, em, 1e-15);
    require_values(v, ev, 1e-15);
    CHECK(t.item() == 2);
  }
  // The first Adam step moves every weight by about lr, whatever the gradient's size (m̂/√v̂ = ±1).
  Tensor w = vec({1, 1}), m = vec({0, 0}), v = vec({0, 0}), t = Tensor::full({}, 0.0, DType::f32);
  ws.call("adam_update", {w, vec({1e-3, -50}), m, v, t}, {{"lr", 0.1}});
  require_values(w, {0.9, 1.1}, 1e-6);
  CHECK_THAT(error_of([&] {
               ws.call("adam_update", {w, vec({1, 1}), m, v, Tensor::full({1}, 0.0)});
             }),
             Contains("step must be a 0-d float32 tensor"));
  CHECK_THAT(error_of([&] { ws.call("adam_update", {w, vec({1, 1}), vec({0}), v, t}); }), Contains("exp_avg is [1]"));
}

// ---------------------------------------------------------------------------------------------
// Optimizers in the language

TEST_CASE("SGD, Adam and AdamW in the language: steps in place, state as optimizer-state memory", "[repl]") {
  Lab lab;
  lab.ok(
      "w = param(tensor([[1.0, -2.0], [0.5, 3.0]]))\n"
      "b = param(tensor([0.5, -0.5]))\n"
      "x = tensor([[1.0, 2.0], [3.0, 4.0]])\n"
      "def loss_of():\n"
      "    return ((x @ w + b) ** 2).mean()\n");
  // Adam: two steps, the same as the op called by hand in the test above.
  lab.ok(
      "opt = Adam([w, b], lr=0.1)\n"
      "w0 = detach(w) * 1\n"
      "for i in range(2):\n"
      "    opt.zero_grad()\n"
      "    backward(loss_of())\n"
      "    opt.step()\n");
  CHECK(lab.echo("opt") == "Adam(2 parameters, lr=0.1, betas=(0.9, 0.999), eps=1e-08, weight_decay=0)");
  // m and v per parameter (each as big as it), plus one 4-byte step count each, as PyTorch keeps.
  CHECK(number(lab, "live_bytes(\"optimizer state\")") == 2 * number(lab, "live_bytes(\"parameter\")") + 2 * 4);
  CHECK(lab.echo("opt.state(w)[\"step\"].item()") == "2.0");
  CHECK(lab.echo("opt.state(w).keys()") == "['exp_avg', 'exp_avg_sq', 'step']");
  CHECK(lab.echo("w.requires_grad") == "True");
  // Each step moved each weight by about lr (Adam's first steps are lr·sign(g) in size).
  CHECK(number(lab, "(w - w0).abs().max().item()") <= 0.2 + 1e-6);
  CHECK(number(lab, "(w - w0).abs().max().item()") > 0.1);
  // The update nodes are in the graph, of phase update, in the scope "Adam.step": the loop's
  // last iteration stays (its earlier ones, unreachable, were dropped), one step per parameter.
  const Graph& g = lab.ws.graph();
  int updates = 0;
  for (const Node& n : g.nodes())
    if (n.op->name == "adam_update") {
      ++updates;
      CHECK(n.phase == Phase::update);
      CHECK(n.scope == "Adam.step");
    }
  CHECK(updates == 2);
  // zero_grad sets .grad to None (PyTorch's default); opt.lr can be changed between steps.
  lab.ok("opt.zero_grad()\nopt.lr = 0.01");
  CHECK(lab.echo("w.grad") == "");
  CHECK(lab.echo("opt.lr") == "0.01");
  // SGD with momentum keeps one buffer per parameter; plain SGD keeps none.
  lab.ok("s = param(tensor([1.0, 2.0]))\nsgd = SGD([s], lr=0.5, momentum=0.9)\nbackward((s * s).sum())\nsgd.step()");
  CHECK(lab.echo("s.tolist()") == "[0.0, 0.0]");  // 1 − 0.5·2, 2 − 0.5·4
  CHECK(lab.echo("sgd.state(s)[\"momentum_buffer\"].tolist()") == "[2.0, 4.0]");
  lab.ok(
      "p = param(tensor([1.0]))\nplain = SGD([p], lr=0.1)\nbackward(p.sum())\nbefore = live_bytes(\"optimizer "
      "state\")\nplain.step()");
  CHECK(number(lab, "live_bytes(\"optimizer state\") - before") == 0);
  CHECK(number(lab, "p.item()") == Approx(0.9));
  // AdamW's default weight decay is PyTorch's.
  CHECK(lab.echo("AdamW([p]).weight_decay") == "0.01");
}

TEST_CASE("optimizers: clear errors, and a failed statement puts parameters and state back", "[repl]") {
  Lab lab;
  lab.ok("w = param(tensor([1.0, 2.0]))\nopt = Adam([w], lr=0.1)");
  CHECK_FALSE(lab.run("SGD([w])"));
  CHECK_THAT(lab.err, Contains("SGD() needs a learning rate"));
  CHECK_FALSE(lab.run("Adam([randn(2)])"));
  CHECK_THAT(lab.err, Contains("is not a parameter") && Contains("param(...)"));
  CHECK_FALSE(lab.run("Adam([])"));
  CHECK_THAT(lab.err, Contains("empty parameter list"));
  CHECK_FALSE(lab.run("Adam([w, w])"));
  CHECK_THAT(lab.err, Contains("appears twice"));
  CHECK_FALSE(lab.run("Adam([w], betas=(0.9, 1.5))"));
  CHECK_THAT(lab.err, Contains("invalid beta 1.5"));
  CHECK_FALSE(lab.run("opt.lr = -1"));
  CHECK_THAT(lab.err, Contains("lr must be a number >= 0"));
  CHECK_FALSE(lab.run("opt.momentum"));
  CHECK_THAT(lab.err, Contains("an Adam has no attribute 'momentum'") && Contains("betas"));
  // Three steps, then an error in the same statement: w, its state and its step count are as before.
  lab.ok("backward((w * w).sum())\nopt.step()");
  const std::string w_before = lab.echo("w.tolist()"), m_before = lab.echo("opt.state(w)[\"exp_avg\"].tolist()");
  CHECK_FALSE(lab.run("for i in range(4):\n    opt.step()\n    if i == 2:\n        undefined_name"));
  CHECK(lab.echo("w.tolist()") == w_before);
  CHECK(lab.echo("opt.state(w)[\"exp_avg\"].tolist()") == m_before);
  CHECK(lab.echo("opt.state(w)[\"step\"].item()") == "1.0");
  // A parameter whose first step fails has no state afterwards.
  lab.ok("u = param(tensor([3.0]))\nopt2 = Adam([u])\nbackward(u.sum())");
  CHECK_FALSE(lab.run("if True:\n    opt2.step()\n    undefined_name"));
  CHECK(lab.echo("len(opt2.state(u))") == "0");
  CHECK(number(lab, "u.item()") == 3.0);
  // In static mode the steps belong to the compiled program.
  CHECK_FALSE(lab.run(":mode static\nopt.step()"));
  CHECK_THAT(lab.err, Contains("compile(loss, optimizer=opt)"));
}

TEST_CASE("compile(loss, optimizer=opt): the compiled training step updates as the dynamic one", "[static]") {
  const std::string setup =
      "seed(3)\nw1 = param(randn(4, 8) * 0.5)\nb1 = param(zeros(8))\nw2 = param(randn(8, 3) * 0.5)\n"
      "xb = randn(16, 4)\nyb = tensor([0, 1, 2, 1] * 4)\n";
  for (const char* make :
       {"Adam(params, lr=0.05)", "SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01)", "AdamW(params, lr=0.05)"}) {
    INFO(make);
    Lab dyn, stat;
    dyn.ok(setup + "params = [w1, b1, w2]\nopt = " + make + "\n" +
           "for i in range(3):\n    opt.zero_grad()\n    backward(cross_entropy(relu(xb @ w1 + b1) @ w2, yb))\n    "
           "opt.step()\n");
    stat.ok(setup + "params = [w1, b1, w2]\nopt = " + make + "\n" +
            ":mode static\nx = input(\"x\", [16, 4])\ny = input(\"y\", [16], dtype=\"int64\")\n"
            "loss = cross_entropy(relu(x @ w1 + b1) @ w2, y)\ncompile(loss, optimizer=opt)\n"
            "for i in range(3):\n    l = run(loss, x=xb, y=yb)\n");
    CHECK_THAT(stat.out, Contains("compiled:"));
    for (const char* name : {"w1", "b1", "w2"}) {
      INFO(name);
      CHECK(test::max_diff(test::var(dyn, name), test::var(stat, name)) < 1e-5);
    }
    // The program's update nodes are of phase update and gradients are consumed there.
    const Program& p = *stat.session.interpreter().statics().last;
    int updates = 0;
    for (int id : p.schedule) updates += p.graph.node(id).phase == Phase::update ? 1 : 0;
    CHECK(updates == 3);
    CHECK(p.grads.empty());
    CHECK(stat.echo("w1.grad") == "");
  }
  // Stepping the compiled step and rewinding puts Adam's state back too.
  Lab lab;
  lab.ok(setup +
         "opt = Adam([w1, b1, w2], lr=0.05)\n:mode static\nx = input(\"x\", [16, 4])\n"
         "y = input(\"y\", [16], dtype=\"int64\")\nloss = cross_entropy(relu(x @ w1 + b1) @ w2, y)\n"
         "compile(loss, optimizer=opt)\nrun(loss, x=xb, y=yb)\n:mode dynamic");
  const std::string w_before = lab.echo("w2.sum().item()"),
                    m_before = lab.echo("opt.state(w2)[\"exp_avg\"].sum().item()");
  lab.ok(":mode static\nrun(loss, x=xb, y=yb, step=True)");
  const size_t steps = lab.session.interpreter().statics().run->size();
  lab.ok(":step " + std::to_string(steps - 1));  // every update but the last has run
  CHECK(lab.echo("opt.state(w2)[\"step\"].item()") == "2.0");
  lab.ok(":rewind\n:mode dynamic");
  CHECK(lab.echo("w2.sum().item()") == w_before);
  CHECK(lab.echo("opt.state(w2)[\"exp_avg\"].sum().item()") == m_before);
  CHECK(lab.echo("opt.state(w2)[\"step\"].item()") == "1.0");
  CHECK_FALSE(lab.run(":mode static\ncompile(loss, lr=0.1, optimizer=opt)"));
  CHECK_THAT(lab.err, Contains("not both"));
}

// ---------------------------------------------------------------------------------------------
// Data

TEST_CASE("load_idx: images, labels, other types, gzip, limit; truncated, wrong magic and mismatched files", "[repl]") {
  TempFile images("images.idx"), labels("labels.idx"), gz("images.idx.gz"), ints("ints.idx"), bad("bad.idx");
  // Two 2×3 images of uint8 and their labels.
  const std::vector<unsigned char> pixels = {0, 51, 102, 153, 204, 255, 255, 0, 0, 0, 0, 255};
  write_file(images.path, idx_bytes(0x08, {2, 2, 3}, pixels));
  write_file(labels.path, idx_bytes(0x08, {2}, {7, 3}));
  write_gzip(gz.path, idx_bytes(0x08, {2, 2, 3}, pixels));
  write_file(ints.path, idx_bytes(0x0C, {2}, {0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 1, 0}));  // int32 big-endian: -2, 256
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = lang::load_idx(images.path);
  CHECK(x.shape() == Shape{2, 2, 3});
  CHECK(x.dtype() == DType::f32);
  require_values(x, {0, 0.2, 0.4, 0.6, 0.8, 1, 1, 0, 0, 0, 0, 1}, 1e-7);
  CHECK(ws.tracker().live(MemCategory::input) >= 12 * 4);
  Tensor y = lang::load_idx(labels.path);
  CHECK(y.dtype() == DType::i64);
  require_values(y, {7, 3}, 0);
  Tensor xz = lang::load_idx(gz.path);
  CHECK(test::max_diff(xz, x) == 0);
  CHECK(lang::load_idx(gz.path, 1).shape() == Shape{1, 2, 3});
  CHECK(lang::load_idx(images.path, 5).shape() == Shape{2, 2, 3});
  require_values(lang::load_idx(ints.path), {-2, 256}, 0);

  // Truncated: a header promising more than the file holds is refused before any allocation.
  auto truncated = idx_bytes(0x08, {60000, 28, 28}, std::vector<unsigned char>(100, 1));
  write_file(bad.path, truncated);
  const int64_t before = ws.tracker().peak_total();
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }),
             Contains("the file is truncated") && Contains("47040000 bytes"));
  CHECK(ws.tracker().peak_total() == before);
  write_gzip(bad.path, truncated);
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }), Contains("does not hold what its header says"));
  CHECK(ws.tracker().peak_total() == before);
  // A gzip stream cut in the middle.
  {
    write_gzip(gz.path, idx_bytes(0x08, {200, 28, 28}, std::vector<unsigned char>(200 * 784, 7)));
    std::ifstream in(gz.path, std::ios::binary);
    std::vector<char> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    all.resize(all.size() / 2);
    std::ofstream(bad.path, std::ios::binary).write(all.data(), static_cast<std::streamsize>(all.size()));
    CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }), Contains("truncated") || Contains("does not hold"));
  }
  write_file(bad.path, {0x50, 0x4B, 0x03, 0x04, 0, 0, 0, 0});  // a zip file
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }),
             Contains("wrong magic number 50 4B 03 04") && Contains("not an IDX file"));
  write_file(bad.path, idx_bytes(0x07, {2}, {1, 2}));
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }), Contains("unknown IDX element type 0x07"));
  write_file(bad.path, idx_bytes(0x08, {2}, {1, 2, 3}));
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }), Contains("size mismatch"));
  write_file(bad.path, {0, 0, 8});
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path); }), Contains("shorter than an IDX header"));
  CHECK_THAT(error_of([&] { lang::load_idx(bad.path + ".missing"); }), Contains("cannot open"));

  // In the language: the error points at the call.
  Lab lab;
  CHECK_FALSE(lab.run("x = 1\nimgs = load_idx(\"" + bad.path + ".missing\")"));
  CHECK_THAT(lab.err, Contains("<test>:2:") && Contains("cannot open"));
  CHECK(lab.echo("load_idx(\"" + images.path + "\", limit=1).shape") == "[1, 2, 3]");
}

TEST_CASE("fashion_mnist: a fixed subset, NCHW images in [0, 1] and int64 labels (when installed)", "[repl]") {
  Lab lab;
  if (!lab.run("x, y = fashion_mnist(\"test\", limit=100)")) {
    CHECK_THAT(lab.err, Contains("apt install dataset-fashion-mnist"));
    WARN("SKIPPED: dataset-fashion-mnist is not installed");
    return;
  }
  CHECK(lab.echo("x.shape") == "[100, 1, 28, 28]");
  CHECK(lab.echo("(y.shape, y.dtype, x.dtype)") == "([100], 'int64', 'float32')");
  CHECK(number(lab, "(x < 0).sum().item()") == 0);
  CHECK(number(lab, "x.max().item()") == 1.0);
  CHECK(number(lab, "y.max().item()") <= 9);
  CHECK_FALSE(lab.run("fashion_mnist(\"validation\")"));
  CHECK_THAT(lab.err, Contains("split must be \"train\" or \"test\""));
}

TEST_CASE("batches: every sample once per epoch, shuffled by the seed, the last batch smaller; progress", "[repl]") {
  Lab lab;
  lab.ok(
      "x = arange(10).reshape(10, 1)\ny = arange(10) * 10\nseen = []\nsizes = []\n"
      "for xb, yb in batches(x, y, batch_size=4, seed=1):\n"
      "    sizes.append(len(xb))\n"
      "    for i in range(len(xb)):\n"
      "        seen.append(xb[i, 0].item())\n"
      "        assert yb[i].item() == 10 * xb[i, 0].item()\n");
  CHECK(lab.echo("sizes") == "[4, 4, 2]");
  CHECK(lab.echo("len(seen)") == "10");
  for (int v = 0; v < 10; ++v) CHECK(lab.echo(std::to_string(v) + " in seen") == "True");
  const std::string order = lab.echo("seen");
  CHECK(order != "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
  lab.ok(
      "again = []\nfor xb, yb in batches(x, y, batch_size=4, seed=1):\n    again = again + "
      "xb.reshape(len(xb)).tolist()");
  CHECK(lab.echo("again") == order);  // the same seed, the same order
  CHECK(lab.echo("len(batches(x, y, batch_size=4, drop_last=True))") == "2");
  lab.ok(
      "flat = []\nfor xb in batches(x, batch_size=3, shuffle=False):\n    flat = flat + xb.reshape(len(xb)).tolist()");
  CHECK(lab.echo("flat") == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
  // The batches are data (the loader's copies), not nodes of the graph.
  const size_t nodes = lab.ws.graph().num_nodes();
  lab.ok("for xb, yb in batches(x, y):\n    pass");
  CHECK(lab.ws.graph().num_nodes() == nodes);
  CHECK_FALSE(lab.run("batches(x, y, batch_size=0)"));
  CHECK_THAT(lab.err, Contains("batch_size must be an integer >= 1"));

  // A front end sees the loop's progress: one event per batch, then done.
  std::vector<lang::Interpreter::LoopProgress> events;
  lab.session.interpreter().set_progress_hook([&](const lang::Interpreter::LoopProgress& p) { events.push_back(p); });
  lab.ok("for xb, yb in batches(x, y, batch_size=5):\n    print(len(xb))");
  using P = lang::Interpreter::LoopProgress;
  REQUIRE(events.size() == 5);  // step, output, step, output, done
  CHECK(events[0].event == P::step);
  CHECK(events[0].total == 2);
  CHECK(events[1].event == P::output);
  CHECK(events[2].done_items == 1);
  CHECK(events.back().event == P::done);
  events.clear();
  CHECK_FALSE(lab.run("for xb, yb in batches(x, y, batch_size=5):\n    undefined_name"));
  REQUIRE(!events.empty());
  CHECK(events.back().event == P::done);  // the line is cleared even when the loop fails
}

// ---------------------------------------------------------------------------------------------
// The language: classes, parameters(), while, break/continue, conditional expressions, dicts

TEST_CASE("classes: __init__, attributes, methods, calling a model runs forward (or __call__); parameters()",
          "[repl]") {
  Lab lab;
  lab.ok(
      "class Linear:\n"
      "    bias_init = 0.0\n"
      "    def __init__(self, n_in, n_out):\n"
      "        self.w = param(randn(n_in, n_out) * 0.1)\n"
      "        self.b = param(zeros(n_out) + self.bias_init)\n"
      "    def forward(self, x):\n"
      "        return x @ self.w + self.b\n"
      "class MLP:\n"
      "    'two layers and a list of extras'\n"
      "    def __init__(self):\n"
      "        self.fc1 = Linear(4, 8)\n"
      "        self.fc2 = Linear(8, 2)\n"
      "        self.extra = [param(ones(2)), {\"scale\": param(ones(1))}]\n"
      "        self.again = self.fc1\n"
      "        self.steps = 0\n"
      "    def __call__(self, x):\n"
      "        self.steps += 1\n"
      "        return self.fc2(relu(self.fc1(x))) * self.extra[0]\n"
      "m = MLP()\n"
      "y = m(randn(3, 4))\n");
  CHECK(lab.echo("y.shape") == "[3, 2]");
  CHECK(lab.echo("m.steps") == "1");
  CHECK(lab.echo("m") == "<MLP object>");
  // Every parameter once (fc1 is reachable twice), in the order of the attributes.
  CHECK(lab.echo("len(parameters(m))") == "6");
  lab.ok("shapes = []\nfor p in parameters(m):\n    shapes.append(p.shape)");
  CHECK(lab.echo("shapes") == "[[4, 8], [8], [8, 2], [2], [2], [1]]");
  CHECK(lab.echo("parameters(m)[0].name") == "'w'");
  // A model's method called on tensors is a scope of the graph, as a def is.
  bool in_scope = false;
  for (const Node& n : lab.ws.graph().nodes())
    in_scope |= n.scope == "MLP.__call__/Linear.forward" && n.op->name == "matmul";
  CHECK(in_scope);
  CHECK(lab.echo("Linear.bias_init") == "0.0");
  CHECK(lab.echo("m.fc1.forward(randn(1, 4)).shape") == "[1, 8]");
  // Errors: no base classes, self needed, attributes and arity named.
  CHECK_FALSE(lab.run("class Net(nn.Module):\n    pass"));
  CHECK_THAT(lab.err, Contains("no base class") && Contains("class Net:"));
  CHECK_FALSE(lab.run("m.fc3"));
  CHECK_THAT(lab.err, Contains("'MLP' object has no attribute 'fc3'") && Contains("did you mean 'fc1'"));
  CHECK_FALSE(lab.run("Linear(4)"));
  CHECK_THAT(lab.err, Contains("Linear.__init__() is missing the argument 'n_out'"));
  CHECK_FALSE(lab.run("class A:\n    pass\nA()(1)"));
  CHECK_THAT(lab.err, Contains("'A' object cannot be called") && Contains("def forward(self, x)"));
  CHECK_FALSE(lab.run("class B:\n    def f():\n        pass"));
  CHECK_THAT(lab.err, Contains("needs self as its first parameter"));
  CHECK_FALSE(lab.run("class C:\n    print(1)"));
  CHECK_THAT(lab.err, Contains("a class body holds methods"));
  // A failed statement takes back what it set on an object.
  CHECK_FALSE(lab.run("if True:\n    m.steps = 100\n    m.new_attr = 1\n    undefined_name"));
  CHECK(lab.echo("m.steps") == "1");
  CHECK_FALSE(lab.run("m.new_attr"));
}

TEST_CASE("while, break and continue; conditional expressions; dicts", "[repl]") {
  Lab lab;
  lab.ok(
      "i = 0\ntotal = 0\nwhile True:\n    i += 1\n    if i > 10:\n        break\n    if i % 2 == 0:\n        continue\n"
      "    total += i\n");
  CHECK(lab.echo("(i, total)") == "(11, 25)");
  lab.ok(
      "found = -1\nfor k in range(5):\n    for j in range(5):\n        if j > k:\n            break\n    if k == 3:\n"
      "        found = k\n        break\n");
  CHECK(lab.echo("found") == "3");
  CHECK(lab.echo("'big' if 5 > 3 else 'small'") == "'big'");
  CHECK(lab.echo("1 if False else 2 if False else 3") == "3");
  lab.ok("d = {\"lr\": 0.1, \"epochs\": 2, 3: \"three\"}\nd[\"lr\"] = 0.05\nd[\"new\"] = [1]\n");
  CHECK(lab.echo("d") == "{'lr': 0.05, 'epochs': 2, 3: 'three', 'new': [1]}");
  CHECK(lab.echo("(len(d), 'lr' in d, 'x' in d, d.get('x', 7), d[3])") == "(4, True, False, 7, 'three')");
  lab.ok("keys = []\nfor k, v in d.items():\n    keys.append(k)\nfor k in d:\n    keys.append(k)");
  CHECK(lab.echo("keys") == "['lr', 'epochs', 3, 'new', 'lr', 'epochs', 3, 'new']");
  CHECK(lab.echo("{}") == "{}");
  CHECK(lab.echo("{1: 2} == {1: 2}") == "True");
  // A failed statement takes back what it did to a dict.
  CHECK_FALSE(lab.run("if True:\n    d['lr'] = 9\n    d['gone'] = 1\n    undefined_name"));
  CHECK(lab.echo("(d['lr'], 'gone' in d)") == "(0.05, False)");
  // while shares for's iteration limit.
  CHECK_FALSE(lab.run("n = 0\nwhile True:\n    n += 1"));
  CHECK_THAT(lab.err, Contains("more than 1000000 loop iterations in one statement"));
  CHECK(lab.echo("n") == "0");
  // The grammar's errors keep their positions and hints.
  CHECK_FALSE(lab.run("x = 1\nbreak"));
  CHECK_THAT(lab.err, Contains("<test>:2:1: error: 'break' outside a loop"));
  CHECK_FALSE(lab.run("def f():\n    for i in range(3):\n        def g():\n            continue\n"));
  CHECK_THAT(lab.err, Contains("<test>:4:13: error: 'continue' outside a loop"));
  CHECK_FALSE(lab.run("y = 1 if True"));
  CHECK_THAT(lab.err, Contains("<test>:1:14: error: expected 'else' in a conditional expression") &&
                          Contains("a if condition else b"));
  CHECK_FALSE(lab.run("e = {\"a\" 1}"));
  CHECK_THAT(lab.err, Contains("<test>:1:10: error: expected ':'") && Contains("{key: value, ...}"));
  CHECK_FALSE(lab.run("e = {[1]: 2}"));
  CHECK_THAT(lab.err, Contains("a list cannot be a dict key"));
  CHECK_FALSE(lab.run("e = {'a': 1}\ne['b']"));
  CHECK_THAT(lab.err, Contains("<test>:2:3: error: key 'b' is not in the dict") && Contains("did you mean 'a'"));
  CHECK_FALSE(lab.run("while True:\n    pass\nelse:\n    pass"));
  CHECK_THAT(lab.err, Contains("'while ... else' is not supported"));
  CHECK_FALSE(lab.run("for a, b in [1, 2]:\n    pass"));
  CHECK_THAT(lab.err, Contains("cannot unpack a value of type int into 2 names"));
  CHECK_FALSE(lab.run("class = 3"));
  CHECK_THAT(lab.err, Contains("expected a class name"));
}

// ---------------------------------------------------------------------------------------------
// PyTorch's conventions in calls, metrics, evaluation helpers

TEST_CASE("layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5) as torch.nn.functional", "[repl]") {
  Lab lab;
  lab.ok(
      "x = randn(2, 3, 4)\nw = ones(4) * 2\nb = zeros(4) + 1\n"
      "a = layer_norm(x, [4], w, b)\nc = layer_norm(x, (4,), weight=w, bias=b)\nd = layer_norm(x, 4, w, b, 1e-5)\n"
      "e = layer_norm(x, x.shape[-1:], None, None)\nf = layer_norm(x, [3, 4])\n");
  CHECK(lab.echo("allclose(a, c) and allclose(a, d)") == "True");
  CHECK(lab.echo("allclose(a, e * 2 + 1)") == "True");
  CHECK(lab.echo("f.mean().abs().item() < 1e-6") == "True");
  CHECK_FALSE(lab.run("layer_norm(x, [3])"));
  CHECK_THAT(lab.err, Contains("normalized_shape=[3] but x [2, 3, 4] ends in [4]") && Contains("x.shape[-1:]"));
  CHECK_FALSE(lab.run("layer_norm(x, [4], bias=b)"));
  CHECK_THAT(lab.err, Contains("'bias' is given but 'weight' is not"));
  CHECK_FALSE(lab.run("layer_norm(x, [4], w, weight=w)"));
  CHECK_THAT(lab.err, Contains("input 'weight' is given twice"));
  CHECK_FALSE(lab.run("layer_norm(x)"));
  CHECK_THAT(lab.err, Contains("missing attribute 'normalized_shape'"));
  // conv2d and the pools take an int or a pair, by name or after the inputs.
  lab.ok(
      "img = randn(1, 2, 9, 8)\nk = randn(3, 2, 3, 2)\n"
      "y = conv2d(img, k, stride=(2, 1), padding=(1, 0), dilation=(1, 2))\n"
      "p = max_pool2d(img, (3, 2), stride=(1, 2))\nq = avg_pool2d(img, kernel_size=2)\n");
  CHECK(lab.echo("(y.shape, p.shape, q.shape)") == "([1, 3, 5, 6], [1, 2, 7, 4], [1, 2, 4, 4])");
  CHECK(lab.echo("conv2d(img, k, bias=zeros(3)).shape") == "[1, 3, 7, 7]");
  CHECK_FALSE(lab.run("conv2d(img, k, stride=(1, 2, 3))"));
  CHECK_THAT(lab.err, Contains("'stride' must be an int or a pair (h, w)"));
  // x.float() and x.long(), argmax and argmin.
  CHECK(lab.echo("tensor([1, 2]).float().dtype") == "'float32'");
  CHECK(lab.echo("tensor([1.7, -2.2]).long().tolist()") == "[1, -2]");
  lab.ok("s = tensor([[0.1, 0.9, 0.3], [2.0, -1.0, 2.0]])");
  CHECK(lab.echo("argmax(s, axis=1).tolist()") == "[1, 0]");
  CHECK(lab.echo("s.argmin(dim=1).tolist()") == "[0, 1]");
  CHECK(lab.echo("argmax(s).item()") == "3");
  CHECK(lab.echo("argmax(s, axis=0, keepdim=True).shape") == "[1, 3]");
  CHECK(lab.echo("argmax(s, 1).dtype") == "'int64'");
  CHECK_FALSE(lab.run("argmax(s, axes=[0, 1])"));
  CHECK_THAT(lab.err, Contains("takes one axis"));
  CHECK(lab.echo("accuracy(s, tensor([1, 2]))") == "0.5");
  CHECK(lab.echo("accuracy(tensor([1, 2, 3]), tensor([1, 0, 3]))") == "0.666666666667");
  CHECK_FALSE(lab.run("accuracy(s, tensor([1.0, 2.0]))"));
  CHECK_THAT(lab.err, Contains("labels must be class indices (int64)"));
}

TEST_CASE("log(name, value): one series per name, steps, rollback, CSV; log(x) is still ln", "[repl]") {
  Lab lab;
  lab.ok("for i in range(3):\n    log(\"loss\", 1.0 / (i + 1))\n    log(\"acc\", tensor(0.5) * i, step=10 * i)\n");
  const viz::MetricLog& m = lab.session.interpreter().metrics();
  REQUIRE(m.series().size() == 2);
  CHECK(m.series()[0].name == "loss");
  CHECK(m.series()[0].steps == std::vector<int64_t>{0, 1, 2});
  CHECK(m.series()[1].steps == std::vector<int64_t>{0, 10, 20});
  CHECK(m.series()[1].values.back() == 1.0);
  CHECK(m.current_step() == 20);
  CHECK(viz::metrics_csv(m) ==
        "name,step,value\nloss,0,1\nloss,1,0.5\nloss,2,0.333333333\nacc,0,0\nacc,10,0.5\nacc,20,1\n");
  // A failed statement takes its points back.
  CHECK_FALSE(lab.run("if True:\n    log(\"loss\", 9)\n    log(\"other\", 1)\n    undefined_name"));
  CHECK(m.series().size() == 2);
  CHECK(m.series()[0].values.size() == 3);
  CHECK(lab.echo("log(tensor([1.0])).item()") == "0.0");
  CHECK_FALSE(lab.run("log(\"loss\", randn(3))"));
  CHECK_THAT(lab.err, Contains("takes one number, got a tensor of shape [3]"));
  lab.ok(":reset");
  CHECK(m.empty());
}

TEST_CASE("a training loop's memory: the optimizer allocates its state once and nothing per step", "[repl]") {
  Lab lab;
  lab.ok(
      "seed(0)\nx = randn(2048, 8)\ny = (x[:, 0] > 0).long()\nw = param(randn(8, 2) * 0.3)\nopt = Adam([w], lr=0.01)\n"
      "def train(n):\n"
      "    i = 0\n"
      "    for xb, yb in batches(x, y, batch_size=128):\n"
      "        opt.zero_grad()\n"
      "        backward(cross_entropy(xb @ w, yb))\n"
      "        opt.step()\n"
      "        i += 1\n"
      "        if i == 2:\n"
      "            after2 = live_bytes()\n"
      "            reset_peak()\n"
      "        if i == 4:\n"
      "            peak4 = peak_bytes()\n"
      "    return after2, live_bytes(), peak4, peak_bytes()\n"
      "a, b, peak4, peak16 = train(16)\n");
  // Live bytes after step 2 and after step 16 are the same, and so are the peaks of steps 3-4
  // and 3-16: nothing is kept per step.
  CHECK(number(lab, "a") == number(lab, "b"));
  CHECK(number(lab, "peak16") == number(lab, "peak4"));
  CHECK(number(lab, "live_bytes(\"optimizer state\")") == 2 * 16 * 4 + 4);
}
