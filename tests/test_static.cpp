// Static mode and the compiler: the same program gives the same values and gradients in both
// modes (with every pass, with none, with recomputation); each pass does what it must and
// nothing it must not; memory plans pass an independent liveness check; stepping reproduces
// a full run; the timeline recorded while stepping is the tracker's.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "core/device.h"
#include "core/program.h"
#include "core/program_run.h"
#include "tests/helpers.h"
#include "tests/lab.h"
#include "viz/export.h"

using namespace opscope;
using opscope::test::Lab;
using opscope::test::max_diff;
using opscope::test::var;

namespace {

// A lesson-sized program: parameters, a model(...) function, data, and the names of the
// parameters whose gradients are compared.
struct Program_ {
  const char* setup;  // parameters and data (xb, yb)
  const char* model;  // def model(x, y): ... return loss
  const char* inputs;  // static placeholders: x = input(...), y = input(...)
  std::vector<std::string> params;
};

const Program_ kMlp = {R"(seed(1)
w1 = param(randn([12, 16]) * 0.3)
b1 = param(zeros([16]))
w2 = param(randn([16, 16]) * 0.3)
b2 = param(zeros([16]))
w3 = param(randn([16, 5]) * 0.3)
b3 = param(zeros([5]))
xb = randn([8, 12])
yb = tensor([0, 1, 2, 3, 4, 0, 1, 2])
)",
                       R"(def model(x, y):
    h1 = relu(x @ w1 + b1)
    h2 = relu(h1 @ w2 + b2)
    return cross_entropy(h2 @ w3 + b3, y)
)",
                       "x = input(\"x\", [8, 12])\ny = input(\"y\", [8], dtype=\"int64\")\n",
                       {"w1", "b1", "w2", "b2", "w3", "b3"}};

const Program_ kCnn = {R"(seed(2)
wc = param(randn([4, 2, 3, 3]) * 0.3)
bc = param(zeros([4]))
wf = param(randn([64, 3]) * 0.2)
xb = randn([2, 2, 8, 8])
yb = tensor([1, 2])
)",
                       R"(def model(x, y):
    h = relu(conv2d(x, wc, bc, padding=1))
    p = max_pool2d(h, kernel_size=2)
    return cross_entropy(reshape(p, shape=[2, 64]) @ wf, y)
)",
                       "x = input(\"x\", [2, 2, 8, 8])\ny = input(\"y\", [2], dtype=\"int64\")\n",
                       {"wc", "bc", "wf"}};

const Program_ kAttention = {R"(seed(3)
wq = param(randn([8, 8]) * 0.4)
wk = param(randn([8, 8]) * 0.4)
wv = param(randn([8, 8]) * 0.4)
g = param(ones([8]))
be = param(zeros([8]))
xb = randn([6, 8])
yb = randn([6, 8])
)",
                             R"(def model(x, y):
    q = x @ wq
    k = x @ wk
    v = x @ wv
    a = softmax(q @ k.T / 2.8284, axis=-1) @ v
    o = layer_norm(a + x, [8], g, be)
    return mean((o - y) * (o - y))
)",
                             "x = input(\"x\", [6, 8])\ny = input(\"y\", [6, 8])\n",
                             {"wq", "wk", "wv", "g", "be"}};

const Program_ kSoftmaxChain = {R"(seed(4)
w = param(randn([5, 7]) * 0.5)
xb = randn([4, 5])
yb = randn([4, 7])
)",
                                R"(def model(x, y):
    s1 = softmax(x @ w, axis=1)
    s2 = softmax(s1 * 3.0 + y, axis=0)
    return (s2 * log(s1)).sum()
)",
                                "x = input(\"x\", [4, 5])\ny = input(\"y\", [4, 7])\n",
                                {"w"}};

// Runs the program dynamically and statically (compile options in `compile_args`) and checks
// loss and gradients agree.
void check_same_in_both_modes(const Program_& prog, const std::string& compile_args,
                              const std::string& passes_off = "") {
  Lab lab;
  lab.ok(prog.setup);
  lab.ok(prog.model);
  lab.ok("loss_dyn = model(xb, yb)\nbackward(loss_dyn)");
  std::vector<Tensor> dyn_grads;
  for (auto& p : prog.params) dyn_grads.push_back(var(lab, p).grad().clone());
  std::string zero = "zero_grad(";
  for (size_t i = 0; i < prog.params.size(); ++i) zero += (i ? ", " : "") + prog.params[i];
  lab.ok(zero + ")");
  if (!passes_off.empty()) lab.ok(":passes off " + passes_off);
  lab.ok(std::string("static:\n") + "    " +
         std::string(prog.inputs).replace(std::string(prog.inputs).find('\n') + 1, 0, "    ") +
         "    loss = model(x, y)\n");
  lab.ok("compile(loss" + compile_args + ")");
  lab.ok("loss_st = run(loss, x=xb, y=yb)");
  INFO("compile(loss" << compile_args << ") with passes off: " << passes_off);
  CHECK(max_diff(var(lab, "loss_st"), var(lab, "loss_dyn")) <= 1e-5 * (1 + std::fabs(var(lab, "loss_dyn").item())));
  for (size_t i = 0; i < prog.params.size(); ++i) {
    INFO("gradient of " << prog.params[i]);
    Tensor g = var(lab, prog.params[i]).grad();
    REQUIRE(g.defined());
    CHECK(max_diff(g, dyn_grads[i]) <= 1e-5);
  }
  REQUIRE(lab.session.interpreter().statics().last);
  CHECK(check_memory_plan(*lab.session.interpreter().statics().last).empty());
}

}  // namespace

TEST_CASE("dynamic and static mode give the same values and gradients", "[static]") {
  for (const Program_* p : {&kMlp, &kCnn, &kAttention, &kSoftmaxChain}) {
    check_same_in_both_modes(*p, "");
    check_same_in_both_modes(*p, "", "all");
    check_same_in_both_modes(*p, ", recompute=\"every:2\"");
    check_same_in_both_modes(*p, ", recompute=\"every:1\"", "fuse_elementwise cse");
    check_same_in_both_modes(*p, ", recompute=4096");
  }
}

TEST_CASE("a static training step updates parameters like the dynamic one", "[static]") {
  Lab lab;
  lab.ok(kMlp.setup);
  lab.ok(kMlp.model);
  lab.ok("w1_before = w1 * 1\nloss_dyn = model(xb, yb)\nbackward(loss_dyn)\nw1_dyn = w1 - 0.1 * w1.grad");
  lab.ok("zero_grad(w1, b1, w2, b2, w3, b3)");
  lab.ok(std::string(
      "static:\n    x = input(\"x\", [8, 12])\n    y = input(\"y\", [8], dtype=\"int64\")\n    loss = model(x, y)\n"));
  lab.ok("compile(loss, lr=0.1)\nl = run(loss, x=xb, y=yb)");
  CHECK(max_diff(var(lab, "w1"), var(lab, "w1_dyn")) <= 1e-6);
  CHECK_FALSE(var(lab, "w1").grad().defined());  // a training step keeps no gradients
  CHECK(max_diff(var(lab, "w1_before"), var(lab, "w1_dyn")) > 1e-4);
}

TEST_CASE("dce drops what nothing needs and keeps what gradients need", "[static]") {
  Lab lab;
  lab.ok(
      ":mode static\nx = input(\"x\", [3, 4])\nw = param(randn([4, 4]))\nunused = exp(x) * 2\nh = x @ w\nloss = (h * "
      "h).sum()");
  lab.ok("compile(loss)");
  const Program& p = *lab.session.interpreter().statics().last;
  for (int id : p.schedule) CHECK(p.graph.node(id).op->name != "exp");
  // exp was never traced into the program (it does not lead to the loss); a node only backward
  // reads stays: h is read by mul's backward.
  const int h = var(lab, "h").impl()->value_id;
  bool h_read_by_backward = false;
  for (int id : p.schedule)
    if (p.graph.node(id).phase == Phase::backward)
      for (int v : p.graph.node(id).inputs) h_read_by_backward = h_read_by_backward || v == h;
  CHECK(h_read_by_backward);
  // An inference program of the same graph drops the gradient-only nodes.
  lab.ok("compile([h, unused], grad=False)");
  const Program& q = *lab.session.interpreter().statics().last;
  bool has_exp = false;
  for (int id : q.schedule) has_exp = has_exp || q.graph.node(id).label().find("exp") != std::string::npos;
  CHECK(has_exp);  // as a node, or inside a fused chain
  for (int id : q.schedule) CHECK(q.graph.node(id).phase == Phase::forward);
}

TEST_CASE("dce removes a backward node no gradient needs", "[static]") {
  Lab lab;
  // Gradients only for w: dx is computed by matmul's backward formula only if x needs it; here
  // the autodiff of a*b builds both products and dce must drop the one for b.
  lab.ok(":mode static\na = param(randn([3]))\nb = param(randn([3]))\nloss = (a * b).sum()");
  lab.ok("compile(loss, wrt=[a])");
  const Program& p = *lab.session.interpreter().statics().last;
  REQUIRE(p.grads.size() == 1);
  const PassReport& dce = p.reports.at(2);
  REQUIRE(dce.pass == "dce");
  CHECK_FALSE(dce.changes.empty());
  lab.ok("zero_grad(a)\nrun(loss)");
  CHECK(max_diff(var(lab, "a").grad(), var(lab, "b")) == 0);
  CHECK_FALSE(var(lab, "b").grad().defined());
}

TEST_CASE("cse runs the same op on the same inputs once", "[static]") {
  Lab lab;
  lab.ok(
      ":mode static\nx = input(\"x\", [4, 4])\nw = param(randn([4, 4]))\ny = relu(x @ w) + relu(x @ w)\nloss = "
      "y.sum()");
  lab.ok("compile(loss, grad=False)");
  const Program& p = *lab.session.interpreter().statics().last;
  int matmuls = 0;
  for (int id : p.schedule) matmuls += p.graph.node(id).op->name == "matmul";
  CHECK(matmuls == 1);
  lab.ok(":passes off cse\ncompile(loss, grad=False)");
  const Program& q = *lab.session.interpreter().statics().last;
  matmuls = 0;
  for (int id : q.schedule) matmuls += q.graph.node(id).op->name == "matmul";
  CHECK(matmuls == 2);
  // Same values either way.
  lab.ok("xb = randn([4, 4])\nr1 = run(loss, x=xb)\n:passes on cse\ncompile(loss, grad=False)\nr2 = run(loss, x=xb)");
  CHECK(max_diff(var(lab, "r1"), var(lab, "r2")) <= 1e-5);
}

TEST_CASE("constant folding computes constant subgraphs at compile time", "[static]") {
  Lab lab;
  lab.ok(":mode static\nx = input(\"x\", [4])\nc = exp(ones([4]) * 2) + 1\ny = (x * c).sum()");
  lab.ok("compile(y, grad=False)");
  const Program& p = *lab.session.interpreter().statics().last;
  CHECK(p.schedule.size() == 2);  // mul and sum; exp, mul, add were folded
  const PassReport& cf = p.reports.at(4);
  REQUIRE(cf.pass == "constant_folding");
  CHECK(cf.changes.size() == 3);
  lab.ok("r = run(y, x=ones([4]))");
  CHECK(var(lab, "r").item() == Approx(4 * (std::exp(2.0) + 1)).epsilon(1e-6));
  // Parameters are never folded: they change between runs.
  lab.ok("w = param(ones([4]))\nz = (x * exp(w)).sum()\ncompile(z)");
  const Program& q = *lab.session.interpreter().statics().last;
  bool has_exp = false;
  for (int id : q.schedule) has_exp = has_exp || q.graph.node(id).op->name == "exp";
  CHECK(has_exp);
}

TEST_CASE("fusion makes one node of an elementwise chain and never hides a value needed elsewhere", "[static]") {
  Lab lab;
  lab.ok(":mode static\nx = input(\"x\", [16, 32])\nw = ones([32]) * 0.5\nb = zeros([32]) + 0.1\ny = gelu(x * w + b)");
  lab.ok(":passes off constant_folding\ncompile(y, grad=False)");
  {
    const Program& p = *lab.session.interpreter().statics().last;
    REQUIRE(p.schedule.size() >= 1);
    const Node& f = p.graph.node(p.schedule.back());
    CHECK(f.op->name == "fused_elementwise");
    CHECK(f.label() == "fused(mul → add → gelu)");
    CHECK(f.fused.size() == 3);
    Cost fused = node_cost(p.graph, f), unfused;
    for (auto& m : f.fused) {
      Cost c = node_cost(p.graph, m);
      unfused.bytes_read += c.bytes_read;
      unfused.bytes_written += c.bytes_written;
    }
    CHECK(fused.bytes_read + fused.bytes_written < 0.6 * (unfused.bytes_read + unfused.bytes_written));
  }
  lab.ok(
      "xb = randn([16, 32])\nfused = run(y, x=xb)\n:passes off fuse_elementwise\ncompile(y, grad=False)\nplain = "
      "run(y, x=xb)");
  CHECK(max_diff(var(lab, "fused"), var(lab, "plain")) <= 1e-6);
  // a is read twice: the chain stops at it.
  lab.ok(
      ":passes on all\nz = input(\"z\", [8])\na = z * 2\nc = gelu(a + 1)\nout = (c + a).sum()\ncompile(out, "
      "grad=False)");
  const Program& p = *lab.session.interpreter().statics().last;
  const int a = var(lab, "a").impl()->value_id;
  bool a_produced = false;
  for (int id : p.schedule)
    for (int v : p.graph.node(id).outputs) a_produced = a_produced || v == a;
  CHECK(a_produced);  // still a value of its own
  for (int id : p.schedule)
    for (auto& m : p.graph.node(id).fused)
      for (int v : m.outputs)
        if (v == a) CHECK(p.graph.node(id).outputs[0] == a);  // only as a chain's final output
}

TEST_CASE("training graphs keep the forward values backward reads unfused", "[static]") {
  Lab lab;
  lab.ok(
      ":mode static\nx = input(\"x\", [4, 6])\nw = param(randn([6]))\nh = tanh(x * w)\nloss = (h * "
      "h).sum()\ncompile(loss)");
  const Program& p = *lab.session.interpreter().statics().last;
  const int h = var(lab, "h").impl()->value_id;
  for (int id : p.schedule)
    for (auto& m : p.graph.node(id).fused)
      for (int v : m.outputs) CHECK((v != h || p.graph.node(id).outputs[0] == h));
  CHECK(check_memory_plan(p).empty());
}

TEST_CASE("the memory plan reuses buffers and an independent check catches a bad plan", "[static]") {
  Lab lab;
  lab.ok(kMlp.setup);
  lab.ok(kMlp.model);
  lab.ok(
      "static:\n    x = input(\"x\", [8, 12])\n    y = input(\"y\", [8], dtype=\"int64\")\n    loss = model(x, "
      "y)\ncompile(loss)");
  Program p = *lab.session.interpreter().statics().last;
  REQUIRE(p.plan.enabled);
  CHECK(p.plan.planned_bytes < p.plan.naive_bytes);
  CHECK(p.plan.buffer_bytes.size() < p.plan.buffer_of.size());
  CHECK(check_memory_plan(p).empty());
  // Put two values that are alive together in one buffer: the check must say so.
  auto live = p.liveness();
  bool broke = false;
  for (size_t i = 0; i < live.size() && !broke; ++i)
    for (size_t j = i + 1; j < live.size() && !broke; ++j) {
      const auto &a = live[i], &b = live[j];
      if (!p.plan.buffer_of.count(a.value) || !p.plan.buffer_of.count(b.value)) continue;
      if (a.last > b.def && b.def > a.def && p.plan.buffer_of[a.value] != p.plan.buffer_of[b.value]) {
        p.plan.buffer_bytes[static_cast<size_t>(p.plan.buffer_of[a.value])] = std::max(a.bytes, b.bytes);
        p.plan.buffer_of[b.value] = p.plan.buffer_of[a.value];
        broke = true;
      }
    }
  REQUIRE(broke);
  CHECK_FALSE(check_memory_plan(p).empty());
}

TEST_CASE("recomputation drops activations for extra FLOPs and keeps the gradients", "[static]") {
  Lab lab;
  lab.ok(kMlp.setup);
  lab.ok(kMlp.model);
  lab.ok("static:\n    x = input(\"x\", [8, 12])\n    y = input(\"y\", [8], dtype=\"int64\")\n    loss = model(x, y)");
  lab.ok(
      "compile(loss)\nbase_flops = program_info(\"flops\")\nsaved1 = program_info(\"held_activations\")\nl1 = "
      "run(loss, x=xb, y=yb)");
  lab.ok("g1 = w1.grad * 1\nzero_grad(w1, b1, w2, b2, w3, b3)");
  lab.ok(
      "compile(loss, recompute=\"every:2\")\nrc_flops = program_info(\"flops\")\nsaved2 = "
      "program_info(\"held_activations\")\nl2 = run(loss, x=xb, y=yb)");
  CHECK(max_diff(var(lab, "g1"), var(lab, "w1").grad()) == 0);
  CHECK(lab.echo("saved2 < saved1") == "True");
  CHECK(lab.echo("rc_flops > base_flops") == "True");
  // checkpoint() marks: with recompute="marks" only marked values are kept.
  lab.ok(
      "static:\n    h = relu(x @ w1 + b1)\n    h2 = checkpoint(relu(h @ w2 + b2))\n    loss2 = cross_entropy(h2 @ w3 + "
      "b3, y)");
  lab.ok("compile(loss2, recompute=\"marks\")");
  const Program& p = *lab.session.interpreter().statics().last;
  const PassReport& rc = p.reports.at(6);
  REQUIRE(rc.pass == "recompute");
  REQUIRE_FALSE(rc.changes.empty());
  CHECK(rc.changes[0].find("dropped") != std::string::npos);
  CHECK(rc.changes[0].find("h2") == std::string::npos);
}

TEST_CASE("stepping a static program reproduces a full run exactly", "[static]") {
  Lab lab;
  lab.ok(kAttention.setup);
  lab.ok(kAttention.model);
  lab.ok("static:\n    x = input(\"x\", [6, 8])\n    y = input(\"y\", [6, 8])\n    loss = model(x, y)\ncompile(loss)");
  lab.ok("full = run(loss, x=xb, y=yb)\ngfull = wq.grad * 1\nzero_grad(wq, wk, wv, g, be)");
  lab.ok("run(loss, x=xb, y=yb, step=True)");
  lab.ok(":step\n");
  lab.ok(":step 3\n");
  lab.ok(":step bwd\n");
  CHECK(lab.out.find("bwd") != std::string::npos);
  lab.ok(":rewind");
  lab.ok(":run");
  CHECK(lab.out.find("program done") != std::string::npos);
  CHECK(max_diff(var(lab, "wq").grad(), var(lab, "gfull")) == 0);
}

TEST_CASE("the memory timeline recorded while stepping is the tracker's", "[static]") {
  Lab lab;
  lab.ok(kMlp.setup);
  lab.ok(kMlp.model);
  lab.ok(
      "static:\n    x = input(\"x\", [8, 12])\n    y = input(\"y\", [8], dtype=\"int64\")\n    loss = model(x, "
      "y)\ncompile(loss)");
  std::vector<int64_t> event_totals, tracker_live;
  Workspace& ws = lab.ws;
  int id = ws.executor().add_listener([&](const StepEvent& e) {
    int64_t total = 0;
    for (int c = 0; c < kNumCategories; ++c) total += e.mem_after[c];
    event_totals.push_back(total);
    tracker_live.push_back(ws.tracker().live_total());
  });
  ws.tracker().clear_timeline();
  lab.ok("run(loss, x=xb, y=yb, step=True)\n:step 4\n:run");
  ws.executor().remove_listener(id);
  const auto& timeline = ws.tracker().timeline();
  REQUIRE(timeline.size() == event_totals.size());
  for (size_t i = 0; i < timeline.size(); ++i) {
    int64_t total = 0;
    for (int c = 0; c < kNumCategories; ++c) total += timeline[i].live[c];
    CHECK(total == event_totals[i]);
    CHECK(total == tracker_live[i]);
  }
}

TEST_CASE(":replay steps the forward tape again from its recorded inputs", "[static]") {
  Lab lab;
  lab.ok("a = randn([2, 3])\nw = randn([3, 3])\nb = relu(a @ w * 2)");
  lab.ok(":replay");
  lab.ok(":step 2");
  CHECK(lab.out.find("matmul") != std::string::npos);
  lab.ok(":run");
  CHECK(lab.out.find("replay done") != std::string::npos);
  REQUIRE_FALSE(lab.run(":step"));
  CHECK(lab.err.find("nothing to step") != std::string::npos);
}

TEST_CASE("a trace of a static run parses and names fused nodes", "[static][viz]") {
  Lab lab;
  lab.ok(":mode static\nx = input(\"x\", [8, 8])\ny = tanh(x * 2 + 1)\ncompile(y, grad=False)");
  viz::TraceRecorder rec(lab.ws.executor());
  lab.ok("r = run(y, x=randn([8, 8]))");
  auto j = nlohmann::json::parse(viz::chrome_trace_json(rec.events(), rec.labels));
  bool fused_slice = false;
  for (auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["name"].get<std::string>().find("fused(") != std::string::npos) fused_slice = true;
  CHECK(fused_slice);
}

TEST_CASE("static mode errors point at the line and change nothing", "[static][repl]") {
  Lab lab;
  REQUIRE_FALSE(lab.run("x = input(\"x\", [2, 3])"));
  CHECK(lab.err.find(":mode static") != std::string::npos);
  lab.ok(":mode static\nx = input(\"x\", [2, 3])\nw = param(randn([4, 5]))");
  REQUIRE_FALSE(lab.run("y = x @ w"));  // shape inference runs now, in static mode too
  CHECK(lab.err.find("<test>:1:") != std::string::npos);
  CHECK(lab.session.interpreter().lookup("y") == nullptr);
  lab.ok("w2 = param(randn([3, 5]))\ny = (x @ w2).sum()");
  REQUIRE_FALSE(lab.run("r = run(y, x=randn([3, 3]))"));
  CHECK(lab.err.find("declared [2, 3]") != std::string::npos);
  REQUIRE_FALSE(lab.run("r = run(y)"));
  CHECK(lab.err.find("needs a value") != std::string::npos);
  REQUIRE_FALSE(lab.run("r = run(y, xx=randn([2, 3]))"));
  CHECK(lab.err.find("did you mean 'x'") != std::string::npos);
  REQUIRE_FALSE(lab.run("print(y.item())"));
  CHECK(lab.err.find("symbolic") != std::string::npos);
  lab.ok(":mode dynamic\nd = randn([2])");
  REQUIRE_FALSE(lab.run("compile(d)"));
  CHECK(lab.err.find("dynamic mode") != std::string::npos);
  REQUIRE_FALSE(lab.run("z = y + 1"));
  CHECK(lab.err.find("symbolic") != std::string::npos);
  REQUIRE_FALSE(lab.run(":passes off fusion"));
  CHECK(lab.err.find("fuse_elementwise") != std::string::npos);
}

TEST_CASE("a @static function and the compile table", "[static][repl]") {
  Lab lab;
  lab.ok("@static\ndef f(x):\n    return gelu(x * 2 + 1)\n");
  lab.ok(":mode static\nx = input(\"x\", [4])\n:mode dynamic");
  lab.ok("y = f(x)");  // the body builds symbolic nodes, in dynamic mode too
  CHECK(var(lab, "y").is_symbolic());
  lab.ok("compile(y, grad=False)");
  std::string table = lab.ok(":compile");
  for (auto* pass : {"autodiff", "dce", "cse", "constant_folding", "fuse_elementwise", "recompute", "plan_memory"})
    CHECK(table.find(pass) != std::string::npos);
  CHECK(table.find("fused(mul → add → gelu)") != std::string::npos);
  std::string nodes = lab.ok(":compile nodes");
  CHECK(nodes.find("fused") != std::string::npos);
  lab.ok("r = run(y, x=tensor([0.0, 1.0, -1.0, 2.0]))");
  CHECK(var(lab, "r").get(0) == Approx(0.8413447).epsilon(1e-5));
}

TEST_CASE("the DOT of a compiled program draws what runs", "[static][viz]") {
  Lab lab;
  lab.ok(":mode static\nx = input(\"x\", [4, 4])\nunused = exp(x)\ny = tanh(x * 2 + 1)\ncompile(y, grad=False)");
  const Program& p = *lab.session.interpreter().statics().last;
  const std::string dot = viz::graph_to_dot(p.graph, p.schedule);
  CHECK(dot.find("fused(mul → add → tanh)") != std::string::npos);
  CHECK(dot.find("exp") == std::string::npos);  // not in the program
  CHECK(dot.find("#1 mul") == std::string::npos);  // replaced by the fused node
  CHECK(dot == viz::graph_to_dot(p.graph, p.schedule));  // deterministic
}

// Review regressions: each program gives the same values (and gradients, running statistics)
// in static mode as in dynamic mode.
namespace {
std::string dyn_and_static(const std::string& setup, const std::string& body, const std::string& fetch,
                           const std::string& feed_decl, const std::string& compile_args = "") {
  Lab dyn, st;
  dyn.ok(setup + "\nx = xv");
  dyn.ok(body);
  st.ok(setup);
  st.ok(":mode static\n" + feed_decl);
  st.ok(body);
  if (!compile_args.empty()) st.ok("compile(" + fetch + ", " + compile_args + ")");
  st.ok("r = run(" + fetch + ", x=xv)");
  dyn.ok("r = " + fetch);
  INFO(body);
  CHECK(max_diff(var(dyn, "r"), var(st, "r")) <= 1e-5);
  return st.ok(":compile nodes");
}
}  // namespace

TEST_CASE("no value is written in place while a view of it is still read", "[static]") {
  const std::string setup = "xv = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])";
  dyn_and_static(setup, "h = relu(x) + 1.0\ny = h + h.T\nz = y.sum(axis=1)", "z", "x = input(\"x\", [3, 3])");
  dyn_and_static(setup, "h = relu(x) + 1.0\nz = tanh((h - h[0:1, :]) * 0.1).sum(axis=1)", "z",
                 "x = input(\"x\", [3, 3])");
}

TEST_CASE("fetched values and gradients read later in the program are kept", "[static]") {
  Lab lab;
  lab.ok(":mode static\nx = input(\"x\", [2, 2])\nw = param(ones([2, 2]))\nh = x @ w\nloss = (h * h).sum()");
  lab.ok("r = run([loss, h], x=ones([2, 2]))");
  lab.ok(
      ":mode dynamic\nw2 = param(ones([3]))\nv = param(tensor([1.0, 0.0, 3.0]))\nh2 = w2 + v * 2.0\nl2 = (h2 * "
      "h2).sum()\nbackward(l2)");
  lab.ok("g_dyn = v.grad * 1\nzero_grad(w2, v)");
  lab.ok(":mode static\nh3 = w2 + v * 2.0\nl3 = (h3 * h3).sum()\nr3 = run(l3)");
  CHECK(max_diff(var(lab, "v").grad(), var(lab, "g_dyn")) == 0);
}

TEST_CASE("side effects: recompute and replay leave batch_norm's running statistics right", "[static]") {
  const std::string setup =
      "seed(5)\nw1 = param(randn([4, 3]) * 0.5)\nw2 = param(randn([3, 2]) * 0.5)\nrm = zeros([3])\nrv = ones([3])\n"
      "xv = randn([6, 4])\ndef f(x):\n    h = batch_norm(x @ w1, rm, rv)\n    return (relu(h) @ w2).sum()\n";
  Lab dyn, st;
  dyn.ok(setup + "l = f(xv)\nbackward(l)");
  st.ok(setup + "static:\n    x = input(\"x\", [6, 4])\n    l = f(x)\ncompile(l, recompute=0)\nr = run(l, x=xv)");
  CHECK(max_diff(var(dyn, "rm"), var(st, "rm")) <= 1e-6);
  CHECK(max_diff(var(dyn, "w1").grad(), var(st, "w1").grad()) <= 1e-5);
  // Replaying the tape does not update the statistics again.
  dyn.ok("before = rm * 1\n:replay\n:run");
  CHECK(max_diff(var(dyn, "rm"), var(dyn, "before")) == 0);
}

TEST_CASE("constant folding leaves tensors a side effect changes to run time", "[static]") {
  const std::string setup =
      "xv = tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0]])\nw = param(tensor([1.0, 1.0]))\nrm = zeros([2])\nrv = "
      "ones([2])";
  dyn_and_static(setup, "h = batch_norm(x * w, rm, rv)\nloss = (h[0:1, :] * (rm * 10.0)).sum()", "loss",
                 "x = input(\"x\", [3, 2])");
}

TEST_CASE("a fused leaky_relu keeps its slope exactly", "[static]") {
  const std::string setup = "xv = tensor([-1000000.0, -3.0, 2.0, -0.5])";
  dyn_and_static(setup, "h = leaky_relu(x * 1.0, negative_slope=0.0000004) + 1.0\nloss = (h * 1.0).sum()", "loss",
                 "x = input(\"x\", [4])");
}

TEST_CASE("run() of other outputs keeps the last compile's training step", "[static]") {
  Lab lab;
  lab.ok(":mode static\nx = input(\"x\", [2, 2])\nw = param(ones([2, 2]))\nh = x @ w\nloss = (h * h).sum()");
  lab.ok("compile(loss, lr=0.1)\n:mode dynamic\nw0 = w * 1\n:mode static");
  const std::string out = lab.ok("r = run([loss, h], x=ones([2, 2]))");
  CHECK(out.find("options of the last compile") != std::string::npos);
  CHECK(max_diff(var(lab, "w"), var(lab, "w0")) > 0.1);  // the update ran
  CHECK_FALSE(var(lab, "w").grad().defined());
}

// Fusion asks where the fused kernels run, not which device: values on cuda fuse when CUDA is
// built (shapes only: no GPU is needed to compile a program).
TEST_CASE("fusion fuses device values where the fused ops have kernels there", "[static]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  StaticModeGuard static_mode(ws, true);
  auto input = [&](const char* name, const Shape& shape) {
    Tensor t = Tensor::symbolic(shape, DType::f32, Device::cuda);
    t.impl()->name = name;
    ws.graph().value(ws.value_of(t)).placeholder = true;
    return t;
  };
  Tensor x = input("x", {16, 32}), w = input("w", {8, 6}), a = input("a", {8, 5}), b = input("b", {5, 6});
  Tensor y = ws.call("gelu", {ws.call("add", {ws.call("mul", {x, x}), x})}, {{"approximate", std::string("tanh")}});
  Tensor w2 = ws.call("sgd_update", {w, ws.call("matmul", {a, b})}, {{"lr", 0.5}});
  CompileOptions opt;
  opt.fetch = {y.impl()->value_id, w2.impl()->value_id};
  opt.gradients = false;
  auto p = compile_program(ws, opt);
  std::multiset<std::string> ops;  // the update runs as early as it may: the order is not the point
  for (int id : p->schedule) {
    const Node& n = p->graph.node(id);
    ops.insert(n.op->name + "/" + n.algo);
    if (n.op->name == "fused_elementwise") CHECK(n.attrs.s("chain") == "mul i0 i0;add r0 i0;gelu/1 r1");
  }
  if (device_built(Device::cuda)) {
    CHECK(ops == std::multiset<std::string>{"fused_elementwise/default", "sgd_matmul_update/cublas"});
  } else {  // no CUDA kernels for the fused ops: every op stays as it is
    const std::string matmul = "matmul/" + default_algorithm_on(OpRegistry::instance().get("matmul"), Device::cuda);
    CHECK(ops ==
          std::multiset<std::string>{"mul/default", "add/default", "gelu/default", matmul, "sgd_update/default"});
  }
}

// A fused node costs the arithmetic of the ops it replaced: the pass cuts bytes, never FLOPs.
TEST_CASE("fusion keeps the FLOPs of the fused ops and cuts the bytes", "[static]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  StaticModeGuard static_mode(ws, true);
  Tensor x = ws.placeholder("x", {64, 64}, DType::f32);
  Tensor y = ws.call("softplus", {ws.call("add", {ws.call("mul", {x, x}), x})}, {{"beta", 2.0}});
  CompileOptions opt;
  opt.fetch = {y.impl()->value_id};
  opt.gradients = false;
  auto p = compile_program(ws, opt);
  REQUIRE(p->schedule.size() == 1);
  const PassReport* before = nullptr;
  const PassReport* after = nullptr;
  for (const PassReport& r : p->reports) {
    if (r.pass == "constant_folding") before = &r;
    if (r.pass == "fuse_elementwise") after = &r;
  }
  REQUIRE(before);
  REQUIRE(after);
  CHECK(after->flops == Approx(before->flops));
  CHECK(after->bytes_moved < before->bytes_moved / 2);
}
