// Ctrl-C: a request raised from a signal handler, another thread or a step hook stops the
// running statement at its next step boundary; the statement rolls back like any failure
// (variables, graph, gradients, saved tensors, the generator), prints "interrupted at
// FILE:LINE:COL", and the session goes on.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "core/interrupt.h"
#include "tests/lab.h"
#include "tests/workspace_state.h"

using namespace opscope;
using opscope::test::Lab;
using opscope::test::workspace_state;

namespace {

// Raises the interrupt once `after` executor steps have run (from inside the step loop).
struct InterruptAfter {
  Workspace& ws;
  long after;
  long steps = 0;
  int id;
  InterruptAfter(Workspace& w, long n) : ws(w), after(n) {
    id = ws.executor().add_listener([this](const StepEvent&) {
      if (++steps == after) interrupt::request();
    });
  }
  ~InterruptAfter() {
    ws.executor().remove_listener(id);
    interrupt::clear();
  }
};

const char* kMlp =
    ":seed 0\n"
    "x = randn(8, 6)\n"
    "t = randn(8, 3)\n"
    "w1 = param(randn(6, 5) * 0.3)\n"
    "w2 = param(randn(5, 3) * 0.3)\n"
    "loss = mse_loss(relu(x @ w1) @ w2, t)\n";

}  // namespace

TEST_CASE("interrupt: the flag is one atomic, checked at step boundaries", "[core]") {
  interrupt::clear();
  CHECK_FALSE(interrupt::requested());
  CHECK_NOTHROW(interrupt::check());
  interrupt::request();
  CHECK(interrupt::requested());
  CHECK_THROWS_AS(interrupt::check(), Interrupted);
  interrupt::clear();
  CHECK_NOTHROW(interrupt::check());
}

TEST_CASE("interrupt: a long loop stopped from another thread keeps every variable", "[repl]") {
  Lab lab;
  lab.ok("keep = tensor([42.0])\nw = param(ones(4, 4))");
  const std::string before = workspace_state(lab.session);
  std::atomic<bool> started{false};
  lab.ws.executor().add_listener([&](const StepEvent&) { started = true; });
  std::thread presser([&] {
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    interrupt::request();  // what the SIGINT handler does
  });
  const bool ok =
      lab.run("for i in range(1000000):\n    z = matmul(randn(64, 64), randn(64, 64))\n    keep = keep + 1");
  presser.join();
  CHECK_FALSE(ok);
  CHECK(lab.session.interrupted());
  CHECK_FALSE(interrupt::requested());  // answered: the next statement runs
  CHECK(lab.err.rfind("interrupted at <test>:", 0) == 0);
  CHECK(lab.err.find("^") != std::string::npos);  // the caret under the statement
  CHECK(workspace_state(lab.session) == before);
  CHECK(lab.echo("keep") == "tensor([42.0], shape=[1], dtype=float32)");
}

TEST_CASE("interrupt: in the middle of backward leaves gradients and saved tensors as they were", "[repl]") {
  Lab lab;
  lab.ok(kMlp);
  SECTION("the first backward: no .grad appears") {
    const std::string before = workspace_state(lab.session);
    {
      InterruptAfter press(lab.ws, 3);
      CHECK_FALSE(lab.run("backward(loss)"));
    }
    CHECK(lab.session.interrupted());
    CHECK(workspace_state(lab.session) == before);
    CHECK(lab.echo("w1.grad == None") == "True");
  }
  SECTION("accumulating into existing gradients: they keep their values") {
    lab.ok("backward(loss, retain_graph=True)\ng1 = w1.grad * 1.0");
    const std::string before = workspace_state(lab.session);
    {
      InterruptAfter press(lab.ws, 4);
      CHECK_FALSE(lab.run("backward(loss)"));
    }
    CHECK(workspace_state(lab.session) == before);
    CHECK(lab.echo("allclose(w1.grad, g1)") == "True");
  }
  // The saved tensors the interrupted pass had freed are back: backward runs to the end now.
  lab.ok("backward(loss)");
  CHECK(lab.echo("w1.grad.shape") == "[6, 5]");
}

TEST_CASE("interrupt: a stepped pass stops between two steps and goes on", "[repl]") {
  Lab lab;
  lab.ok(kMlp);
  lab.ok("backward(loss, step=True)");
  const size_t total = lab.session.interpreter().pending_pass()->size();
  {
    InterruptAfter press(lab.ws, 2);
    CHECK_FALSE(lab.run(":run"));
  }
  CHECK(lab.session.interrupted());
  CHECK(lab.err.find("steps left: :step or :run goes on") != std::string::npos);
  REQUIRE(lab.session.interpreter().pending_pass());
  CHECK(lab.session.interpreter().pending_pass()->position() == 2);  // the third step never started
  lab.ok(":run");
  CHECK_FALSE(lab.session.interpreter().pending_pass());
  CHECK(total > 2);
  CHECK(lab.echo("w2.grad.shape") == "[5, 3]");
}

TEST_CASE("interrupt: a request made between statements stops the script at the next one", "[repl]") {
  Lab lab;
  lab.ok("a = 1");
  interrupt::request();
  CHECK_FALSE(lab.run("a = 2\na = 3"));
  CHECK(lab.session.interrupted());
  CHECK(lab.err.rfind("interrupted at <test>:1:1", 0) == 0);
  CHECK(lab.echo("a") == "1");
}

TEST_CASE("interrupt: inside a user function, at the function's own line", "[repl]") {
  Lab lab;
  lab.ok("def spin(n):\n    s = 0\n    for i in range(n):\n        s = s + i\n    return s");
  int boundaries = 0;  // no executor steps here: the loop's back-edge is the boundary
  interrupt::set_idle_hook(
      [&] {
        if (++boundaries == 10) interrupt::request();
      },
      0.0);
  const bool ok = lab.run("r = spin(1000000)");
  interrupt::set_idle_hook({});
  CHECK_FALSE(ok);
  CHECK(lab.session.interrupted());
  CHECK(lab.err.rfind("interrupted at <test>:3:", 0) == 0);
  CHECK(lab.err.find("for i in range(n):") != std::string::npos);
  CHECK(lab.session.interpreter().lookup("r") == nullptr);
}

TEST_CASE("interrupt: the idle hook runs between steps and may press Interrupt itself", "[core]") {
  Lab lab;
  int calls = 0;
  interrupt::set_idle_hook(
      [&] {
        if (++calls == 3) interrupt::request();  // the GUI's Interrupt button, clicked in a frame
      },
      0.0);
  const bool ok = lab.run("for i in range(100000):\n    z = ones(2) + 1");
  interrupt::set_idle_hook({});
  CHECK_FALSE(ok);
  CHECK(lab.session.interrupted());
  CHECK(calls == 3);
}
