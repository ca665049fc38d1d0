// User-defined operators (`@op`): one node per call whose kernel is its traced body, a
// hand-written backward that is one registered op too, saved tensors accounted as a built-in
// op's, gradcheck's pinpointed report, both modes, and the bad inputs.
#include <catch2/catch.hpp>
#include <iostream>
#include <memory>
#include <sstream>

#include "app/lang/session.h"
#include "core/body.h"
#include "core/device.h"
#include "core/program.h"
#include "tests/lab.h"
#include "tests/swish_op.h"
#include "viz/export.h"

using namespace opscope;
using opscope::test::Lab;
using opscope::test::var;

namespace {

const char* const kSwish = opscope::test::kSwishOp;

// Everything a failed statement could change, the registry as the user sees it included.
struct Snapshot {
  std::string vars, ops;
  size_t nodes, values, timeline;
  CategoryBytes live;
  static Snapshot of(Lab& lab) {
    Snapshot s;
    std::ostringstream o, e;
    lab.session.run(":vars", "<snap>", o, e);
    s.vars = o.str();
    for (const OpDef* op : OpRegistry::instance().all())
      s.ops += op->name + "@" + std::to_string(reinterpret_cast<uintptr_t>(op)) + " ";
    s.nodes = lab.ws.graph().num_nodes();
    s.values = lab.ws.graph().num_values();
    s.timeline = lab.ws.tracker().timeline().size();
    s.live = lab.ws.tracker().live();
    return s;
  }
  bool operator==(const Snapshot& o) const {
    return vars == o.vars && ops == o.ops && nodes == o.nodes && values == o.values && timeline == o.timeline &&
           live == o.live;
  }
};

// The code as one statement (an `if True:` block), so that all of it fails or none.
std::string one_statement(const std::string& code) {
  std::string out = "if True:\n    ";
  for (char c : code) out += c == '\n' ? std::string("\n    ") : std::string(1, c);
  return out;
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op->name == op;
  return n;
}

}  // namespace

TEST_CASE("@op: one node per call, its body as kernel, its backward one node", "[op][grad][repl]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok("seed(0)\nx = param(randn(2, 3))\ny = swish(x)");
  const Graph& g = lab.ws.graph();
  REQUIRE(g.num_nodes() == 1);
  const Node& n = g.node(0);
  CHECK(n.op->name == "swish");
  CHECK(n.op->family == "custom");
  CHECK(n.op->origin == "@op at <test>:2");  // the def line
  REQUIRE(n.body);
  REQUIRE(n.body->graph.num_nodes() == 3);  // beta * x, sigmoid, x * s: run as the kernel, not nodes of the graph
  CHECK(n.body->graph.node(1).op->name == "sigmoid");
  CHECK(n.outputs.size() == 2);  // y, and s (a hidden output: saved for backward)
  CHECK(g.value(n.outputs[1]).name == "swish.s");
  const std::string values = lab.ok("s = sigmoid(x)\nprint(allclose(y, x * s))");
  CHECK(values == "True\n");
  lab.ok("backward(y.sum())");
  CHECK(count_op(g, "swish_backward") == 1);
  int backward_nodes = 0;
  for (const Node& m : g.nodes()) backward_nodes += m.phase == Phase::backward && m.forward_of == 0;
  CHECK(backward_nodes == 1);  // the hand-written backward is one node
  // dx = s + x·s·(1 − s), computed independently here
  const Tensor x = var(lab, "x"), dx = x.grad();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = x.get(i), si = 1.0 / (1.0 + std::exp(-xi));
    CHECK(dx.get(i) == Approx(si + xi * si * (1 - si)).epsilon(1e-5));
  }
}

TEST_CASE("@op: saved tensors count as saved-for-backward and are freed by the backward node", "[op][grad][repl]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok("seed(0)\nx = randn(64, 32)\nw = param(randn(64, 32))\nh = x * w\nreset_peak()");
  const int64_t before_saved = lab.ws.tracker().live(MemCategory::saved);
  lab.ok("y = swish(h)");
  // swish saves h (an activation: it moves to saved) and s (computed in the body: saved).
  CHECK(lab.ws.tracker().live(MemCategory::saved) - before_saved == 2 * 64 * 32 * 4);
  lab.ok("z = swish(w)");  // a saved parameter keeps its category; only s is saved
  CHECK(lab.ws.tracker().live(MemCategory::saved) - before_saved == 3 * 64 * 32 * 4);
  CHECK(lab.ws.tracker().live(MemCategory::parameter) == 64 * 32 * 4);
  lab.ok("backward((y + z).sum(), step=True)");
  const std::string steps = lab.ok(":step all");
  CHECK(steps.find("swish_backward") != std::string::npos);
  CHECK(steps.find("freed the tensors saved by #1 swish") != std::string::npos);
  CHECK(steps.find("freed the tensors saved by #2 swish") != std::string::npos);
  CHECK(lab.ws.tracker().live(MemCategory::saved) == 0);
}

TEST_CASE("@op: no_grad saves nothing and the hidden output is freed at once", "[op][repl]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok("x = param(randn(16, 16))\nno_grad:\n    y = swish(x)");
  CHECK(lab.ws.tracker().live(MemCategory::saved) == 0);
  CHECK(lab.ws.tracker().live(MemCategory::activation) == 16 * 16 * 4);  // y only: s died with the statement
}

TEST_CASE("@op: several outputs, attributes by keyword, several inputs", "[op][grad][repl]") {
  Lab lab;
  lab.ok(R"(@op
def pair(x, w, k=2.0):
    a = x * w * k
    b = x * x
    save(x, w)
    return a, b

@pair.backward
def pair_backward(da, db, x, w, k=2.0):
    return da * w * k + db * 2.0 * x, (da * x * k).sum(axis=0, keepdim=True)
)");
  lab.ok(
      "seed(3)\nx = param(randn(4, 3))\nw = param(randn(1, 3))\na, b = pair(x, w, k=3.0)\nbackward((a * 2.0 + "
      "b).sum())");
  const Tensor x = var(lab, "x"), w = var(lab, "w");
  for (int64_t i = 0; i < x.numel(); ++i)
    CHECK(x.grad().get(i) == Approx(2 * w.get(i % 3) * 3 + 2 * x.get(i)).epsilon(1e-5));
  CHECK(lab.ok("print(gradcheck(pair, randn(4, 3), randn(1, 3), k=0.5) < 1e-6)") == "True\n");
  CHECK(lab.ok("print(gradcheck(pair, randn(4, 3), randn(1, 3)) < 1e-6)") == "True\n");
  // Attributes are validated like a built-in op's
  REQUIRE_FALSE(lab.run("a, b = pair(x, w, k=\"big\")"));
  CHECK(lab.err.find("pair: attribute 'k' must be float, got str") != std::string::npos);
  REQUIRE_FALSE(lab.run("a, b = pair(x, w, q=1)"));
  CHECK(lab.err.find("unknown attribute 'q'") != std::string::npos);
}

TEST_CASE("gradcheck finds a backward that forgets a term and pinpoints the element", "[op][grad][repl]") {
  Lab lab;
  lab.ok(R"(@op
def bad_swish(x):
    s = sigmoid(x)
    save(s)
    return x * s

@bad_swish.backward
def bad_swish_backward(dy, s):
    return dy * s
)");
  const std::string out = lab.ok("seed(1)\nx = randn(6)\nerror = gradcheck(bad_swish, x)\nprint(error)");
  CHECK(out.find("gradcheck(bad_swish) failed: input 'x' [") != std::string::npos);
  CHECK(out.find("analytic") != std::string::npos);
  CHECK(out.find("numeric") != std::string::npos);
  CHECK(out.find("relative error") != std::string::npos);
  CHECK(lab.ok("print(error > 1e-2)") == "True\n");
  // The report names the element with the largest error: check it against a hand computation.
  const Tensor x = var(lab, "x");
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = x.get(i), s = 1.0 / (1.0 + std::exp(-xi)), proj = std::cos(0.7 * i + 0.3);
    const double err = std::fabs(proj * xi * s * (1 - s));  // the forgotten term, weighted like gradcheck does
    if (err > worst) worst = err, at = i;
  }
  CHECK(out.find("input 'x' [" + std::to_string(at) + "]") != std::string::npos);
  lab.ok(kSwish);
  CHECK(lab.ok("print(gradcheck(swish, x))").find("failed") == std::string::npos);
  CHECK(lab.ok("print(gradcheck(swish, x) < 1e-6)") == "True\n");
  const size_t nodes = lab.ws.graph().num_nodes();
  lab.ok("e = gradcheck(swish, x, beta=0.5)");
  CHECK(lab.ws.graph().num_nodes() == nodes);  // the check's own evaluations leave no nodes behind
}

TEST_CASE("@op: a redefinition replaces the session's own op; nodes made before keep theirs", "[op][repl]") {
  Lab lab;
  lab.ok("@op\ndef twice(x):\n    return x * 2.0\n");
  lab.ok("a = twice(tensor([1.0, 2.0]))");
  const OpDef* first = lab.ws.graph().node(0).op;
  lab.ok("@op\ndef twice(x):\n    return x * 3.0\n");
  lab.ok("b = twice(tensor([1.0, 2.0]))");
  CHECK(lab.ws.graph().node(0).op == first);
  CHECK(lab.ws.graph().node(1).op != first);
  CHECK(lab.ok("print(b)").find("3.0") != std::string::npos);
  CHECK(OpRegistry::instance().find("twice") == lab.ws.graph().node(1).op);
}

TEST_CASE("@op: a failed statement undoes the definition, the registry included", "[op][repl]") {
  Lab lab;
  lab.ok("@op\ndef twice(x):\n    return x * 2.0\n");
  const OpDef* kept = OpRegistry::instance().find("twice");
  const Snapshot before = Snapshot::of(lab);
  REQUIRE_FALSE(
      lab.run("if True:\n    @op\n    def twice(x):\n        return x * 5.0\n    @op\n    def thrice(x):\n        "
              "return x * 3.0\n    oops = nope"));
  CHECK(lab.err.find("unknown name 'nope'") != std::string::npos);
  CHECK(OpRegistry::instance().find("twice") == kept);  // the same object is back
  CHECK(OpRegistry::instance().find("thrice") == nullptr);
  CHECK(Snapshot::of(lab) == before);
  CHECK(lab.ok("print(twice(tensor([1.0])))").find("2.0") != std::string::npos);
}

TEST_CASE("@op: ops belong to their session; its end and :reset unregister them", "[op][repl]") {
  {
    Lab a;
    a.ok("@op\ndef shared_name(x):\n    return x * 2.0\n");
    CHECK(OpRegistry::instance().find("shared_name"));
    {
      Lab b;
      REQUIRE_FALSE(b.run("@op\ndef shared_name(x):\n    return x * 3.0\n"));
      CHECK(b.err.find("'shared_name' is already an @op of another session (@op at <test>:2)") != std::string::npos);
      CHECK(OpRegistry::instance().find("shared_name") == &a.session.interpreter().lookup("shared_name")->as_op());
    }
    a.ok("y = shared_name(tensor([1.0]))");
    a.ok(":reset");
    CHECK(OpRegistry::instance().find("shared_name") == nullptr);
    a.ok("@op\ndef shared_name(x):\n    return x * 2.0\n");
  }
  CHECK(OpRegistry::instance().find("shared_name") == nullptr);  // the session ended
  Lab c;
  c.ok("@op\ndef shared_name(x):\n    return x * 4.0\n");  // free again
}

TEST_CASE("@op: bad input is a positioned error that changes nothing", "[op][repl]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok(
      "seed(0)\nx = param(randn(2, 3))\nv = randn(3)\ndef plain(x):\n    return x * 2.0\n"
      "@op\ndef no_backward(x):\n    return x * 2.0\n"
      "@op\ndef uses_w(x):\n    return x * v\n");
  struct Bad {
    std::string code, message;
  };
  const std::vector<Bad> bad = {
      {"@op\ndef relu(x):\n    return x",
       "'relu' is a built-in operator (activation); @op at <test>:3 cannot replace it"},
      {"@relu.backward\ndef relu_backward(dy, x):\n    return dy",
       "'relu' is a built-in operator: its backward is part of opscope"},
      {"@op\ndef zeros(x):\n    return x", "'zeros' is a builtin function of the language"},
      {"@plain.backward\ndef plain_backward(dy):\n    return dy", "'plain' is a def, not an @op"},
      {"@v.backward\ndef v_backward(dy):\n    return dy", "'v' is a tensor, not an @op"},
      {"@nosuch.backward\ndef b(dy):\n    return dy", "there is no op 'nosuch'"},
      {"@swish.backward\ndef again(dy, x, s, beta=1.0):\n    return dy",
       "swish already has a backward (swish_backward, defined at <test>:9)"},
      {"save(x, v)", "save(x, ...) keeps tensors for backward, and only in the body of an @op"},
      {"@op\ndef f(x):\n    return x @ x\ny = f(v)", "matmul needs tensors of rank >= 2"},
      {"@op\ndef loop(x):\n    return loop(x)\ny = loop(v)", "loop calls itself"},
      {"y = uses_w(x)", "reads the global tensor 'v'"},
      {"@op\ndef noisy(x):\n    return x + randn(3)\ny = noisy(v)",
       "randn() cannot be called in the body of @op noisy"},
      {"@op\ndef nothing(x):\n    y = x * 2.0\ny = nothing(v)", "@op nothing returns nothing"},
      {"@op\ndef num(x):\n    return 1.0\ny = num(v)", "num returned a float, not a tensor"},
      {"@op\ndef f(x, m=None):\n    return x", "the default of 'm' is a None"},
      {"@op\ndef f(beta=1.0):\n    return beta", "@op f has no tensor input"},
      {"@op\ndef f(x):\n    s = sigmoid(x)\n    save(s)\n    save(x)\n    return s\ny = f(v)",
       "save() is called twice in the body of f"},
      {"y = no_backward(x)\nbackward(y.sum())", "no_backward is an @op without a backward"},
      {"@op\ndef f(x):\n    s = sigmoid(x)\n    save(s)\n    return x * s\n@f.backward\ndef f_backward(dy, s, t):\n    "
       "return dy * s * t",
       "f_backward takes 3 tensors (dy, s, t) but f hands its backward 2"},
      {"@op\ndef f(x):\n    s = sigmoid(x)\n    save(x, s)\n    return x * s\n@f.backward\ndef f_backward(dy, x, s):\n "
       "   return dy * s",
       "f saves 'x' for its backward, but f_backward never reads it"},
      {"@op\ndef f(x):\n    s = sigmoid(x)\n    return x * s\n@f.backward\ndef f_backward(dy):\n    return dy * s",
       "f_backward reads 's', a variable of f's body that its backward does not receive"},
      {"@op\ndef f(x, w):\n    return x * w\n@f.backward\ndef f_backward(dy):\n    return dy\ny = f(x, "
       "x)\nbackward(y.sum())",
       "f_backward returned 1 gradient but f has 2 tensor inputs (x, w)"},
      {"@op\ndef f(x):\n    return x * 2.0\n@f.backward\ndef f_backward(dy):\n    return dy.sum()\ny = "
       "f(x)\nbackward(y.sum())",
       "f_backward returned a gradient of shape [] for 'x' of f, which has shape [2, 3]"},
      {"@op\ndef f(x):\n    return x * 2.0\n@f.backward\ndef f_backward(dy):\n    return dy.double()\ny = "
       "f(x)\nbackward(y.sum())",
       "f_backward returned a float64 gradient for 'x' of f, which is float32"},
      {"@op\ndef f(x):\n    return x * 2.0\n@f.backward\ndef f_backward(dy, beta=1.0):\n    return dy",
       "f_backward's attribute 'beta' is not an attribute of f"},
      {"@op\n@static\ndef f(x):\n    return x", "cannot be combined with other decorators"},
      {"@swish.forward\ndef f(x):\n    return x", "unknown decorator '@swish.forward'"},
      {"def outer(x):\n    @op\n    def inner(y):\n        return y\n    return x\nz = outer(v)",
       "an @op is defined at the top level"},
  };
  for (const Bad& b : bad) {
    INFO(b.code);
    const Snapshot before = Snapshot::of(lab);
    REQUIRE_FALSE(lab.run(one_statement(b.code)));
    INFO(lab.err);
    CHECK(lab.err.find(b.message) != std::string::npos);
    CHECK(lab.err.find("<test>:") == 0);
    CHECK(lab.err.find("^") != std::string::npos);
    CHECK(Snapshot::of(lab) == before);
  }
  // An error in the body points into the body, and says which call it was.
  REQUIRE_FALSE(lab.run("@op\ndef g(x):\n    return x @ x\ny = g(v)"));
  CHECK(lab.err.find("<test>:3:") == 0);
  CHECK(lab.err.find("g(x [3] float32): matmul") != std::string::npos);
  // The hint of a missing backward shows how to write it.
  REQUIRE_FALSE(lab.run("y = no_backward(x)\nbackward(y.sum())"));
  CHECK(lab.err.find("@no_backward.backward") != std::string::npos);
  CHECK(lab.err.find("def no_backward_backward(dy)") != std::string::npos);
  lab.ok("y = swish(x)\nbackward(y.sum())");  // still usable
}

TEST_CASE("@op: in static mode it is one traced node; compile and run give dynamic mode's gradients",
          "[op][static][grad]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok(
      "seed(5)\nw = param(randn(4, 3))\nxb = randn(5, 4)\n"
      "dyn = swish(xb @ w, beta=1.5).sum()\nbackward(dyn)\ndw = w.grad * 1.0\nzero_grad(w)\n"
      ":mode static\nxin = input(\"x\", [5, 4])\nloss = swish(xin @ w, beta=1.5).sum()\ncompile(loss)\n"
      "out = run(loss, x=xb)\n:mode dynamic\n");
  const auto& program = lab.session.interpreter().statics().last;
  REQUIRE(program);
  int fwd = 0, bwd = 0;
  for (int id : program->schedule) {
    fwd += program->graph.node(id).op->name == "swish";
    bwd += program->graph.node(id).op->name == "swish_backward";
  }
  CHECK(fwd == 1);
  CHECK(bwd == 1);
  CHECK(lab.ok("print(allclose(w.grad, dw))") == "True\n");
  CHECK(lab.ok("print(allclose(out, dyn))") == "True\n");
  // The program's cost counts the op as the sum of its body's ops.
  double body_flops = 0;
  for (int id : program->schedule)
    if (program->graph.node(id).op->name == "swish")
      body_flops = node_cost(program->graph, program->graph.node(id)).flops;
  CHECK(body_flops > 0);
}

TEST_CASE("@op: its cost is the sum of its body's costs, flops() counts it once per call", "[op][repl]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok(
      "x = randn(32, 16)\nf0 = flops()\ny = swish(x)\nf_op = flops() - f0\n"
      "f0 = flops()\nt = x * 1.0\ns = sigmoid(t)\nz = x * s\nf_ops = flops() - f0");
  CHECK(lab.ok("print(f_op == f_ops)") == "True\n");
  const Node& n = lab.ws.graph().node(0);
  CHECK(node_cost(lab.ws.graph(), n).flops == body_cost(*n.body).flops);
}

TEST_CASE("@op: :ops, :doc, :graph N and the DOT export show it and its body", "[op][repl][viz]") {
  Lab lab;
  lab.ok(kSwish);
  CHECK(lab.ok(":ops").find("swish ") != std::string::npos);
  const std::string doc = lab.ok(":doc swish");
  CHECK(doc.find("y = x·sigmoid(beta·x)") != std::string::npos);
  CHECK(doc.find("beta: float = 1") != std::string::npos);
  CHECK(doc.find("defined by @op at <test>:2") != std::string::npos);
  CHECK(doc.find("backward source: swish_backward at <test>:9") != std::string::npos);
  lab.ok("x = param(randn(2, 3))\ny = swish(x)\nbackward(y.sum())");
  CHECK(lab.ok(":doc swish").find("save(): x (an input: stays an input), s (computed: saved for backward)") !=
        std::string::npos);
  const std::string graph = lab.ok(":graph");
  CHECK(graph.find("#0 fwd y[2, 3], swish.s[2, 3] = swish(x[2, 3])") != std::string::npos);
  CHECK(graph.find("(3 ops inside: :graph 0)") != std::string::npos);
  const std::string body = lab.ok(":graph 0");
  CHECK(body.find("#0.1 fwd s[2, 3] = sigmoid(") != std::string::npos);
  int bw = -1;
  for (const Node& n : lab.ws.graph().nodes())
    if (n.op->name == "swish_backward") bw = n.id;
  REQUIRE(bw >= 0);
  CHECK(lab.ok(":graph " + std::to_string(bw)).find("its kernel runs") != std::string::npos);
  std::vector<int> all;
  for (const Node& n : lab.ws.graph().nodes()) all.push_back(n.id);
  const std::string folded = viz::graph_to_dot(lab.ws.graph(), all);
  CHECK(folded.find("cluster_body") == std::string::npos);
  const std::string dot = viz::graph_to_dot(lab.ws.graph(), all, {0, bw});
  CHECK(dot.find("subgraph cluster_body_0") != std::string::npos);
  CHECK(dot.find("n0_1 [label=\"#0.1 sigmoid\\ns\"") != std::string::npos);
  CHECK(dot.find("cluster_body_" + std::to_string(bw)) != std::string::npos);
  CHECK(viz::graph_to_dot(lab.ws.graph(), all, {0, bw}) == dot);  // deterministic
}

TEST_CASE("@op: an @op calling another @op nests bodies; a body may call a plain def", "[op][grad][repl]") {
  Lab lab;
  lab.ok(kSwish);
  lab.ok(
      "def helper(a):\n    return a * 0.5\n"
      "@op\ndef outer(x):\n    h = helper(x)\n    save(x)\n    return swish(h)\n"
      "@outer.backward\ndef outer_backward(dy, x):\n    s = sigmoid(x * 0.5)\n    return dy * 0.5 * (s + x * 0.5 * s * "
      "(1.0 - s))\n");
  lab.ok("x = param(randn(3))\ny = outer(x)");
  const Node& n = lab.ws.graph().node(0);
  REQUIRE(n.body);
  REQUIRE(n.body->graph.num_nodes() == 2);  // helper's mul, then one swish node with its own body
  CHECK(n.body->graph.node(1).op->name == "swish");
  CHECK(n.body->graph.node(1).body);
  CHECK(lab.ok("print(gradcheck(outer, randn(3)) < 1e-6)") == "True\n");
}

TEST_CASE("@op: the REPL waits for the def after a decorator", "[repl]") {
  Lab lab;
  CHECK(lab.session.needs_more_input("@op"));
  CHECK(lab.session.needs_more_input("@op\ndef f(x):"));
  CHECK(lab.session.needs_more_input("@swish.backward"));
  CHECK(lab.session.needs_more_input("@op\ndef f(x):\n    \"\"\"a doc"));
  CHECK_FALSE(lab.session.needs_more_input("@op\ndef f(x):\n    return x\n\n"));
}

TEST_CASE("@op on cuda: its body's ops run there, its gradients match the CPU's", "[cuda][op]") {
  if (!device_available(Device::cuda)) {
    std::cout << "SKIPPED: no CUDA device (CUDA built: " << (device_built(Device::cuda) ? "yes" : "no") << ")\n";
    return;
  }
  Lab lab;
  lab.ok(kSwish);
  lab.ok(
      "seed(0)\na = randn(4, 5)\nxc = param(a * 1.0)\nxg = param(a.to(\"cuda\"))\n"
      "yc = swish(xc, beta=1.5)\nyg = swish(xg, beta=1.5)\nbackward(yc.sum())\nbackward(yg.sum())");
  CHECK(var(lab, "yg").device() == Device::cuda);
  CHECK(var(lab, "xg").grad().device() == Device::cuda);
  CHECK(lab.ok("print(allclose(yg.to(\"cpu\"), yc, atol=1e-5), allclose(xg.grad.to(\"cpu\"), xc.grad, atol=1e-5))") ==
        "True True\n");
}

TEST_CASE("@op: a saved output is saved as itself, not copied into a hidden output", "[op][grad][repl]") {
  Lab lab;
  lab.ok(
      "@op\ndef sig(x):\n    y = sigmoid(x)\n    save(y)\n    return y\n"
      "@sig.backward\ndef sig_backward(dy, y):\n    return dy * y * (1.0 - y)\n");
  lab.ok("x = param(randn(8, 8))\nz = sig(x)");
  CHECK(lab.ws.graph().node(0).outputs.size() == 1);
  CHECK(lab.ws.tracker().live(MemCategory::saved) == 8 * 8 * 4);  // z itself, now saved for backward
  CHECK(lab.ok(":doc sig").find("y (an output: saved as itself)") != std::string::npos);
  CHECK(lab.ok("print(gradcheck(sig, randn(3, 2)) < 1e-6)") == "True\n");
  lab.ok("backward(z.sum())");
  CHECK(lab.ws.tracker().live(MemCategory::saved) == 0);
}

TEST_CASE("@op: a backward may return None for an input that gets no gradient", "[op][grad][repl]") {
  Lab lab;
  lab.ok(
      "@op\ndef scale(x, w):\n    save(w)\n    return x * w\n"
      "@scale.backward\ndef scale_backward(dy, w):\n    return dy * w, None\n");
  lab.ok("x = param(randn(3))\nw = param(randn(3))\nbackward(scale(x, w).sum())");
  CHECK(lab.ok("print(allclose(x.grad, w), w.grad)") == "True None\n");
  // gradcheck sees the missing gradient: w's numeric gradient is x, its analytic one zero.
  CHECK(lab.ok("print(gradcheck(scale, randn(3), randn(3)) > 1e-2)").find("input 'w'") != std::string::npos);
}

TEST_CASE("@op in static mode: several outputs and attributes compile and run; gradcheck runs dynamically",
          "[op][static][grad]") {
  Lab lab;
  lab.ok(R"ops(@op
def pair(x, k=2.0):
    a = x * k
    b = x * x
    save(x)
    return a, b

@pair.backward
def pair_backward(da, db, x, k=2.0):
    return da * k + db * 2.0 * x
)ops");
  lab.ok(
      "seed(2)\nw = param(randn(3, 3))\nxb = randn(2, 3)\n"
      "a, b = pair(xb @ w, k=0.5)\ndyn = (a + b * 3.0).sum()\nbackward(dyn)\ndw = w.grad * 1.0\nzero_grad(w)\n"
      ":mode static\nxin = input(\"x\", [2, 3])\nsa, sb = pair(xin @ w, k=0.5)\nloss = (sa + sb * "
      "3.0).sum()\ncompile(loss)\n"
      "out = run(loss, x=xb)\nerror = gradcheck(pair, randn(2, 3), k=3.0)\n:mode dynamic\n");
  CHECK(lab.ok("print(allclose(out, dyn), allclose(w.grad, dw), error < 1e-6)") == "True True True\n");
  const auto& program = lab.session.interpreter().statics().last;
  REQUIRE(program);
  int pairs = 0;
  for (int id : program->schedule) pairs += program->graph.node(id).op->name == "pair";
  CHECK(pairs == 1);
}
