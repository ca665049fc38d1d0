// A long session stays bounded: the undo log keeps each variable's value at the start of the
// statement only, and tape no live tensor can reach is dropped (ids stay stable, rollback stays
// exact), so a training loop's memory and node count do not grow with its length.
#include <catch2/catch.hpp>

#include "core/stable_ids.h"
#include "tests/lab.h"
#include "tests/workspace_state.h"

using namespace opscope;
using opscope::test::Lab;
using opscope::test::workspace_state;

namespace {

// Lesson 3's loop on a small MLP: each step makes new parameters from the old ones.
std::string training(int steps, const std::string& extra = "") {
  return ":seed 0\n"
         "x = randn(4, 16)\n"
         "t = randn(4, 16)\n"
         "w1 = param(randn(16, 8) * 0.3)\n"
         "w2 = param(randn(8, 16) * 0.3)\n"
         "n0 = flops()\n"
         "for i in range(" +
         std::to_string(steps) +
         "):\n"
         "    loss = mse_loss(relu(x @ w1) @ w2, t)\n"
         "    backward(loss)\n"
         "    w1 = param(detach(w1 - 0.1 * w1.grad))\n"
         "    w2 = param(detach(w2 - 0.1 * w2.grad))\n" +
         extra;
}

struct LoopRun {
  int64_t peak = 0, max_nodes = 0;
  size_t undo_peak = 0;
};

LoopRun run_loop(int steps) {
  Lab lab;
  LoopRun r;
  lab.ws.executor().add_listener([&](const StepEvent&) {
    r.max_nodes = std::max<int64_t>(r.max_nodes, static_cast<int64_t>(lab.ws.graph().node_count()));
  });
  lab.ws.tracker().reset_peak();
  lab.ok(training(steps));
  r.peak = lab.ws.tracker().peak_total();
  r.undo_peak = lab.session.interpreter().statement_undo().peak_entries();
  return r;
}

}  // namespace

TEST_CASE("stable ids: items keep their ids through removals and truncation", "[core]") {
  StableIdVector<std::string> v;
  for (int i = 0; i < 10; ++i) CHECK(v.push(std::to_string(i)) == i);
  CHECK(v.retain_if([](int id, const std::string&) { return id % 3 == 0; }) == 6);
  CHECK(v.size() == 4);
  CHECK(v.end_id() == 10);
  for (int i = 0; i < 10; ++i) {
    INFO(i);
    CHECK((v.find(i) != nullptr) == (i % 3 == 0));
    if (v.find(i)) CHECK(*v.find(i) == std::to_string(i));
  }
  CHECK(v.push("10") == 10);  // a dense tail again, found by arithmetic
  CHECK(*v.find(10) == "10");
  v.truncate(6);  // a rollback: ids from 6 on go, and are given again
  CHECK(v.size() == 2);
  CHECK(v.find(9) == nullptr);
  CHECK(*v.find(3) == "3");
  CHECK(v.push("6'") == 6);
  CHECK(*v.find(6) == "6'");
  CHECK(v.find(-1) == nullptr);
  CHECK(v.find(100) == nullptr);
}

TEST_CASE("tape: what no live tensor reaches is dropped, the recipe of live tensors stays", "[repl]") {
  Lab lab;
  lab.ok(
      "a = tensor([1.0, -2.0]); b = tensor([3.0, 1.0]); e = param(tensor([2.0, 4.0]))\n"
      "c = a + b; d = c * e; f = relu(d)\n"
      "backward(f.sum())");
  const Graph& g = lab.ws.graph();
  const size_t held = g.node_count();
  CHECK(held == g.num_nodes());  // everything is reachable from f (and its backward from its forward)
  lab.ok("y = relu(a)");
  const int relu_node = static_cast<int>(g.num_nodes()) - 1;
  // The relu's output is gone and nothing reads it: it goes when the tape is next looked at
  // (after a loop; otherwise once the tape has grown by as much as it holds).
  lab.ok("for k in range(1):\n    y = tanh(a)");
  CHECK_FALSE(g.has_node(relu_node));
  CHECK(g.has_node(relu_node + 1));  // ids are not renumbered
  CHECK(g.node(relu_node + 1).op->name == "tanh");
  CHECK(g.drops().nodes == 1);
  CHECK(lab.ok(":graph").find("(1 earlier nodes were dropped") != std::string::npos);
  // A failed statement after a drop restores exactly what was there.
  const std::string before = workspace_state(lab.session);
  CHECK_FALSE(lab.run("if True:\n    z = relu(a) * e\n    backward(z.sum())\n    undefined_name"));
  CHECK(workspace_state(lab.session) == before);
}

TEST_CASE("tape: statements without loops look at the tape once it has doubled", "[repl]") {
  Lab lab;
  lab.ok("a = ones(2)");
  for (int i = 0; i < 600; ++i) lab.ok("y = relu(a)");  // each statement leaves the last one's node dead
  CHECK(lab.ws.graph().drops().nodes > 0);
  CHECK(lab.ws.graph().node_count() < 600);
}

TEST_CASE("tape: a training loop's memory, nodes and undo log do not grow with its length", "[repl]") {
  const LoopRun short_run = run_loop(10), long_run = run_loop(2000);
  INFO("peak " << short_run.peak << " vs " << long_run.peak << ", nodes " << short_run.max_nodes << " vs "
               << long_run.max_nodes);
  CHECK(static_cast<double>(long_run.peak) <= 1.05 * static_cast<double>(short_run.peak));
  CHECK(long_run.max_nodes <= short_run.max_nodes + static_cast<int64_t>(4 * lang::kTapeCheckMin));
  // One entry per variable and per leaf's .grad; entries of leaves that died are compacted away.
  CHECK(long_run.undo_peak < 600);  // not 2000 steps × 4 (variables and gradients)
  CHECK(short_run.undo_peak < 60);
}

TEST_CASE("tape: the loop's earlier iterations are dropped and said so; flops() keeps counting them", "[repl]") {
  Lab lab;
  lab.ok(training(300, "n = flops()\n"));
  const lang::LoopTape& loop = lab.session.interpreter().last_loop();
  CHECK(loop.iterations == 300);
  CHECK(loop.dropped_iterations == 299);  // the last one is shown
  CHECK(loop.line == 7);
  CHECK(lab.ws.graph().drops().nodes > 0);
  const std::string graph = lab.ok(":graph");
  CHECK(graph.find("the loop at line 7 ran 300 iterations, 299 of them dropped whole") != std::string::npos);
  // FLOPs of every node run so far, the dropped ones included: 300 identical steps.
  Lab one;
  one.ok(training(1, "n = flops()\n"));
  const double per_step = std::stod(one.echo("n - n0")), all = std::stod(lab.echo("n - n0"));
  CHECK(per_step > 0);
  CHECK(all == Approx(300 * per_step).epsilon(1e-9));
}

TEST_CASE("tape: a loop that fails at iteration 500 leaves everything as it was", "[repl]") {
  Lab lab;
  lab.ok(training(3));
  const std::string before = workspace_state(lab.session);
  lab.ws.tracker().reset_peak();
  const int64_t live = lab.ws.tracker().live_total();
  CHECK_FALSE(
      lab.run("for i in range(1000):\n"
              "    loss = mse_loss(relu(x @ w1) @ w2, t)\n"
              "    backward(loss)\n"
              "    w1 = param(detach(w1 - 0.1 * w1.grad))\n"
              "    w2 = param(detach(w2 - 0.1 * w2.grad))\n"
              "    assert i < 500, \"iteration 500\""));
  CHECK(lab.err.find("<test>:6:5: error: assertion failed: i < 500") != std::string::npos);
  CHECK(workspace_state(lab.session) == before);
  // While it ran, memory stayed near one step's (not 500 steps of parameters and gradients).
  CHECK(lab.ws.tracker().peak_total() < live + 64 * 1024);
}

TEST_CASE("tape: a stepped pass and the last compiled program keep what they need", "[repl][static]") {
  Lab lab;
  lab.ok(":seed 0\nx = randn(4, 3)\nw = param(randn(3, 2))\nloss = (x @ w).sum()\nbackward(loss, step=True)");
  lab.ok("loss = None");  // nothing holds the forward any more, but the stepped pass needs it
  lab.ok(":run");
  CHECK(lab.echo("w.grad.shape") == "[3, 2]");
  lab.ok(":mode static\nxs = input(\"xs\", [4, 3])\ny = (xs @ w).sum()\ncompile(y)\ny = None");
  CHECK(lab.run(":compile"));
}

TEST_CASE("tape: a forward-only loop's saved tensors do not keep its tape alive", "[repl]") {
  // No backward: every relu keeps its output for a backward that never comes. Once no tensor
  // reaches the node, that saved output goes with it (as in PyTorch).
  Lab lab;
  lab.ok(":seed 0\nx = randn(4, 16)\nw = param(randn(16, 16))");
  lab.ws.tracker().reset_peak();
  lab.ok("for i in range(1000):\n    y = relu(x @ w).sum()");
  CHECK(lab.ws.graph().node_count() == 3);  // the last iteration: matmul, relu, sum
  CHECK(lab.ws.tracker().live(MemCategory::saved) == 4 * 16 * 4);  // its relu's output only
  CHECK(lab.ws.tracker().peak(MemCategory::saved) < 600 * 4 * 16 * 4);
}
