// Static mode keeps the values a student already has: expressions of concrete tensors (run()'s
// results, .grad, loaded data) are computed at once; reading a symbolic value says so first,
// naming the expression; every error points at its own statement.
#include <catch2/catch.hpp>

#include "tests/lab.h"

using namespace opscope;
using opscope::test::Lab;

namespace {
const char* kProgram =
    ":mode static\n"
    "x = input(\"x\", [2])\n"
    "w = param(tensor([1.0, 2.0]))\n"
    "y = x * w\n";
}

TEST_CASE("static values: reading run()'s results works after run, in static mode", "[static]") {
  Lab lab;
  lab.ok(kProgram);
  lab.ok("compile(y, grad=False)\nz = run(y, x=ones(2))");
  CHECK(lab.ok("print(sum(z).item())") == "3.0\n");
  CHECK(lab.echo("(z * 2).tolist()") == "[2.0, 4.0]");
  // A parameter's expression joins the program (compile differentiates it); reading it now
  // computes it without side effects.
  lab.ok("v = w * 2");
  CHECK(lab.echo("v.sum().item()") == "6.0");
  CHECK(lab.echo("v") == "tensor([2.0, 4.0], shape=[2], dtype=float32)");  // its values, read now
  // The compiler still sees constants to fold (they are computed when read, not when written).
  lab.ok("c = exp(ones([2]) * 0.0) + 1\nq = (x * c).sum()\ncompile(q, grad=False)");
  CHECK(lab.echo("c.tolist()") == "[2.0, 2.0]");
  CHECK(lab.echo("program_info(\"nodes\")") == "2.0");
}

TEST_CASE("static values: .item() of a symbolic value says it is symbolic first, at its own line, naming it",
          "[static]") {
  Lab lab;
  lab.ok(kProgram);
  CHECK_FALSE(lab.run("a = 1\nprint(sum(y).item())"));
  CHECK(lab.err.rfind("<test>:2:7: error: 'sum(y)' is symbolic: it depends on the input 'x'", 0) == 0);
  CHECK(lab.err.find("run(sum(y), x=...)") != std::string::npos);
  // Before anything else: y has two elements, but the first thing said is that it is symbolic.
  CHECK_FALSE(lab.run("float(y)"));
  CHECK(lab.err.rfind("<test>:1:7: error: 'y' is symbolic", 0) == 0);
  CHECK_FALSE(lab.run("if y.sum():\n    pass"));
  CHECK(lab.err.rfind("<test>:1:6: error: 'y.sum()' is symbolic", 0) == 0);
}

TEST_CASE("static values: read in a method or used in dynamic mode, at its own line, naming it", "[static]") {
  Lab lab;
  lab.ok(kProgram);
  // The values are read in the middle of a method, below every expression wrapper.
  CHECK_FALSE(lab.run("n = 1\n\nq = y.tolist()"));
  CHECK(lab.err.rfind("<test>:3:5: error: 'y' is symbolic", 0) == 0);
  lab.ok(":mode dynamic");
  CHECK_FALSE(lab.run("b = 2\nc = relu(y * 3) + 1"));
  CHECK(lab.err.rfind("<test>:2:10: error: 'y' is symbolic", 0) == 0);
  CHECK(lab.echo("b") == "2");
}
