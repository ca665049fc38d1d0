// The script language: every construct, the error format, and that a failed statement leaves
// the workspace exactly as it was.
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "app/lang/parser.h"
#include "app/lang/session.h"
#include "app/lang/value.h"
#include "core/workspace.h"
#include "tests/lab.h"

using namespace opscope;
using opscope::test::Lab;

namespace {

// Everything a statement could change: variables, graph, memory, timeline.
struct Snapshot {
  std::string vars;
  size_t nodes, values, timeline;
  CategoryBytes live;
  static Snapshot of(Lab& lab) {
    Snapshot s;
    std::ostringstream o, e;
    lab.session.run(":vars", "<snap>", o, e);
    s.vars = o.str();
    s.nodes = lab.ws.graph().num_nodes();
    s.values = lab.ws.graph().num_values();
    s.timeline = lab.ws.tracker().timeline().size();
    s.live = lab.ws.tracker().live();
    return s;
  }
  bool operator==(const Snapshot& o) const {
    return vars == o.vars && nodes == o.nodes && values == o.values && timeline == o.timeline && live == o.live;
  }
};

}  // namespace

TEST_CASE("the course's first program runs and differentiates", "[repl]") {
  Lab lab;
  lab.ok(
      "a = tensor([1.0, -2.0]); b = tensor([3.0, 1.0]); e = param(tensor([2.0, 4.0]))\n"
      "c = a + b; d = c * e; f = relu(d)\n"
      "backward(f.sum())");
  CHECK(lab.echo("f") == "tensor([8.0, 0.0], shape=[2], dtype=float32, requires_grad=True)");
  CHECK(lab.echo("e.grad") == "tensor([4.0, 0.0], shape=[2], dtype=float32)");
  CHECK(lab.echo("grad(e).shape") == "[2]");
}

TEST_CASE("numbers, strings, lists, tuples, None, booleans", "[repl]") {
  Lab lab;
  CHECK(lab.echo("1 + 2 * 3") == "7");
  CHECK(lab.echo("7 / 2") == "3.5");
  CHECK(lab.echo("7 // 2") == "3");
  CHECK(lab.echo("-7 % 3") == "2");
  CHECK(lab.echo("2 ** 10") == "1024");
  CHECK(lab.echo("-(2 + 3)") == "-5");
  CHECK(lab.echo("1.5e3") == "1500.0");
  CHECK(lab.echo("'ab' + \"cd\"") == "'abcd'");
  CHECK(lab.echo("[1, 2] + [3]") == "[1, 2, 3]");
  CHECK(lab.echo("(1, 2)") == "(1, 2)");
  CHECK(lab.echo("None") == "");  // None is not echoed
  CHECK(lab.echo("True and not False") == "True");
  CHECK(lab.echo("1 < 2") == "True");
  CHECK(lab.echo("3 in [1, 2, 3]") == "True");
  CHECK(lab.echo("[1, 2, 3][-1]") == "3");
  CHECK(lab.echo("[1, 2, 3, 4][1:3]") == "[2, 3]");
  CHECK(lab.echo("len('abc')") == "3");
  lab.ok("# a comment\nx = 1  # trailing comment");
  CHECK(lab.echo("x") == "1");
}

TEST_CASE("assignment, tuple unpacking, augmented assignment", "[repl]") {
  Lab lab;
  lab.ok("q, k, v = 1, 2, 3\na = b = 5\nq += 10");
  CHECK(lab.echo("q") == "11");
  CHECK(lab.echo("(k, v, a, b)") == "(2, 3, 5, 5)");
  lab.ok("t = [1, 2]\nt.append(3)\nt[0] = 9");
  CHECK(lab.echo("t") == "[9, 2, 3]");
}

TEST_CASE("tensor expressions: + - * / @ ** % unary minus and comparisons", "[repl][op]") {
  Lab lab;
  lab.ok("x = tensor([[1.0, 2.0], [3.0, 4.0]])");
  CHECK(lab.echo("x + 1") == "tensor([[2.0, 3.0],\n        [4.0, 5.0]], shape=[2, 2], dtype=float32)");
  CHECK(lab.echo("(2 * x - x / 2).sum()") == "tensor(15.0, shape=[], dtype=float32)");
  CHECK(lab.echo("(x @ x)[0]") == "tensor([ 7.0, 10.0], shape=[2], dtype=float32)");
  CHECK(lab.echo("(x ** 2)[1, 1]") == "tensor(16.0, shape=[], dtype=float32)");
  CHECK(lab.echo("(-x)[0, 0].item()") == "-1.0");
  CHECK(lab.echo("(-x % 3)[1]") == "tensor([0.0, 2.0], shape=[2], dtype=float32)");  // Python's %: the divisor's sign
  CHECK(lab.echo("(x > 2).sum().item()") == "2");
  CHECK(lab.echo("x.T[0]") == "tensor([1.0, 3.0], shape=[2], dtype=float32)");
  CHECK(lab.echo("x[:, 1:2].shape") == "[2, 1]");
  CHECK(lab.echo("x[-1]") == "tensor([3.0, 4.0], shape=[2], dtype=float32)");
  CHECK(lab.echo("x.dtype") == "'float32'");
  CHECK(lab.echo("x.device") == "'cpu'");
  CHECK(lab.echo("x.requires_grad") == "False");
  CHECK(lab.echo("x.shape == [2, 2]") == "True");
}

TEST_CASE("every registered op is callable by name, with attributes and algorithms", "[repl][op]") {
  Lab lab;
  lab.ok("seed(0); a = randn(3, 4); b = randn(4, 5)");
  CHECK(lab.echo("matmul(a, b, algo=\"naive\").shape") == "[3, 5]");
  CHECK(lab.echo("((matmul(a, b, algo=\"blocked\") - a @ b) ** 2).sum().item() < 1e-8") == "True");
  CHECK(lab.echo("softmax(a, axis=0).sum(axis=0).shape") == "[4]");
  CHECK(lab.echo("transpose(a, 0, 1).shape") == "[4, 3]");
  CHECK(lab.echo("sum(a, 1, True).shape") == "[3, 1]");
  CHECK(lab.echo("a.sum(axis=1, keepdim=True).shape") == "[3, 1]");
  CHECK(lab.echo("concat([a, a], axis=0).shape") == "[6, 4]");
  CHECK(lab.echo("a.reshape(2, 6).shape") == "[2, 6]");
  CHECK(lab.echo("a.float().dtype") == "'float32'");
  CHECK(lab.echo("a.double().dtype") == "'float64'");
  REQUIRE_FALSE(lab.run("softmax(a, axs=1)"));
  CHECK(lab.err.find("unknown attribute 'axs'") != std::string::npos);
  CHECK(lab.err.find("did you mean 'axis'") != std::string::npos);
}

TEST_CASE("def, return, if/elif/else, for, composite scopes", "[repl]") {
  Lab lab;
  lab.ok(R"(def swish(x):
    return x * sigmoid(x)

def sign_of(n):
    if n > 0:
        return 1
    elif n < 0:
        return -1
    else:
        return 0

total = 0
for i in range(5):
    total = total + i
for w in [1, 2]:
    total += w
x = param(tensor([1.0, -1.0]))
y = swish(x)
)");
  CHECK(lab.echo("total") == "13");
  CHECK(lab.echo("(sign_of(-3), sign_of(0), sign_of(2))") == "(-1, 0, 1)");
  int scoped = 0;
  for (const Node& n : lab.ws.graph().nodes()) scoped += n.scope == "swish";
  CHECK(scoped == 2);  // sigmoid and mul belong to swish
  lab.ok("def f(a, b=2):\n    return a * b");
  CHECK(lab.echo("f(3)") == "6");
  CHECK(lab.echo("f(3, b=4)") == "12");
}

TEST_CASE("constructors, seed, param, autograd builtins, no_grad", "[repl]") {
  Lab lab;
  CHECK(lab.echo("zeros(2, 3).shape") == "[2, 3]");
  CHECK(lab.echo("ones([2]).sum().item()") == "2.0");
  CHECK(lab.echo("full([2], 7).sum().item()") == "14.0");
  CHECK(lab.echo("arange(4)") == "tensor([0, 1, 2, 3], shape=[4], dtype=int64)");
  CHECK(lab.echo("arange(0, 1, 0.5)") == "tensor([0.0000, 0.5000], shape=[2], dtype=float32)");
  CHECK(lab.echo("eye(2).sum().item()") == "2.0");
  CHECK(lab.echo("tensor([[1, 2], [3, 4]]).dtype") == "'int64'");
  CHECK(lab.echo("tensor([1, 2], dtype=\"float64\").dtype") == "'float64'");
  lab.ok("seed(3); r1 = randn(4); seed(3); r2 = randn(4)");
  CHECK(lab.echo("(r1 - r2).abs().sum().item()") == "0.0");
  CHECK(lab.echo("((rand(100) >= 0) * (rand(100) < 1)).sum().item()") == "100");
  lab.ok("w = param(3, 4); x = ones(2, 3)\nloss = (x @ w).sum()\nbackward(loss)");
  CHECK(lab.echo("w.grad.shape") == "[3, 4]");
  CHECK(lab.echo("w.grad.sum().item()") == "24.0");
  lab.ok("backward((x @ w).sum())");
  CHECK(lab.echo("w.grad.sum().item()") == "48.0");  // accumulated
  lab.ok("zero_grad(w)");
  CHECK(lab.echo("w.grad") == "");
  lab.ok("no_grad:\n    y = x @ w");
  CHECK(lab.echo("y.requires_grad") == "False");
  CHECK(lab.echo("detach(w).requires_grad") == "False");
  CHECK(lab.echo("item(w.sum()) == w.sum().item()") == "True");
  lab.ok("v = param(tensor([1.0, 2.0]))\n(v * v).backward(grad=tensor([1.0, 1.0]))");
  CHECK(lab.echo("v.grad") == "tensor([2.0, 4.0], shape=[2], dtype=float32)");
}

TEST_CASE("save and load .npy from the language", "[repl]") {
  Lab lab;
  auto dir = std::filesystem::temp_directory_path() / "opscope_lang_npy";
  std::filesystem::create_directories(dir);
  std::string path = (dir / "x.npy").string();
  lab.ok("x = tensor([[1.5, 2.5], [3.5, 4.5]])\nsave(\"" + path + "\", x)\ny = load(\"" + path + "\")");
  CHECK(lab.echo("(x == y).sum().item()") == "4");
  CHECK(lab.echo("y.shape") == "[2, 2]");
}

TEST_CASE("print writes values and records tensors for --json", "[repl]") {
  Lab lab;
  CHECK(lab.ok("print(1, 'two', [3])") == "1 two [3]\n");
  lab.ok("print(tensor([1, 2]))");
  REQUIRE(lab.session.shown().size() == 1);
  CHECK(lab.session.shown()[0].shape == std::vector<int64_t>{2});
  CHECK(lab.session.shown()[0].data == std::vector<double>{1, 2});
}

TEST_CASE("commands", "[repl]") {
  Lab lab;
  CHECK(lab.ok(":help").find(":graph") != std::string::npos);
  CHECK(lab.ok(":help relu").find("relu(x)") != std::string::npos);
  CHECK(lab.ok(":help randn").find("randn(*shape") != std::string::npos);
  CHECK(lab.ok(":ops").find("matmul") != std::string::npos);
  CHECK(lab.ok(":doc matmul").find("dA = dC·Bᵀ") != std::string::npos);
  lab.ok("w = param(2, 2); x = ones(1, 2); y = relu(x @ w)");
  std::string vars = lab.ok(":vars");
  CHECK(vars.find("w              parameter  [2, 2]") != std::string::npos);
  std::string graph = lab.ok(":graph");
  CHECK(graph.find("y[1, 2] = relu(") != std::string::npos);
  CHECK(lab.ok(":mem").find("saved for backward") != std::string::npos);
  lab.ok(":seed 5");
  CHECK(lab.ok(":anomaly on") == "anomaly mode on\n");
  CHECK(lab.ok(":history").find("w = param(2, 2)") != std::string::npos);
  lab.ok(":reset");
  CHECK(lab.ws.graph().num_nodes() == 0);
  REQUIRE_FALSE(lab.run("w"));
  lab.ok(":quit");
  CHECK(lab.session.quit_requested());
}

TEST_CASE("errors print FILE:LINE:COL, the line, a caret and a hint", "[repl]") {
  Lab lab;
  lab.ok("x = tensor([1.0, 2.0])");
  REQUIRE_FALSE(lab.run("y = 1\nf = rleu(x)"));
  CHECK(lab.err == "<test>:2:5: error: unknown name 'rleu'\n    f = rleu(x)\n        ^\nhint: did you mean 'relu'?\n");
  lab.ok("a = randn(2, 3); b = randn(2, 3)");
  REQUIRE_FALSE(lab.run("c = a @ b"));
  CHECK(lab.err.find("<test>:1:7: error: matmul: inner dimensions differ: [2, 3] @ [2, 3]") == 0);
  CHECK(lab.err.find("hint:") != std::string::npos);
  // An error inside a function points into the function's own source.
  lab.ok("def g(t):\n    return t @ t");
  REQUIRE_FALSE(lab.run("g(a)"));
  CHECK(lab.err.find("<test>:2:14: error: matmul") == 0);
}

TEST_CASE("30+ bad inputs: each is a clear error that leaves the workspace unchanged", "[repl]") {
  Lab lab;
  lab.ok(
      "seed(1); x = randn(2, 3); w = param(3, 4); w2 = randn(4, 5); i = arange(6)\n"
      "loss = (x @ w).sum(); backward(loss)\n"
      "def rec(n):\n    return rec(n)\n"
      "items = [1, 2]");
  struct Bad {
    std::string code;
    std::string message;
  };
  const std::string deep = std::string(150, '(') + "1" + std::string(150, ')');
  const std::vector<Bad> bad = {
      {"f = rleu(x)", "unknown name 'rleu'"},
      {"y = x @ w2", "inner dimensions differ"},
      {"y = exp(i)", "expected a floating-point"},
      {"y = leaky_relu(x, negative_slope=-1.0)", "must be >= 0"},
      {"y = softmax(x, axs=1)", "unknown attribute 'axs'"},
      {"y = x +", "expected an expression"},
      {"y = (x + 1", "never closed"},
      {"y = x]", "does not close anything"},
      {"1 = x", "cannot assign"},
      {"def f(a)\n    return a", "expected ':'"},
      {"if True:\ny = 1", "expected an indented block"},
      {"return 1", "'return' outside a function"},
      {"for k in 5:\n    pass", "cannot iterate"},
      {"for k in range(2000000):\n    pass", "loop limit"},
      {"z = rec(1)", "recursion deeper than"},
      {"z = zeros(100000, 100000, 100000)", "memory cap"},
      {"z = x.sahpe", "did you mean 'shape'"},
      {"backward(w * 2)", "only a scalar"},
      {"z = x[5]", "out of range"},
      {"z = x[0, 0, 0]", "too many indices"},
      {"z = tensor([[1, 2], [3]])", "ragged"},
      {"z = 'a' + 1", "unsupported operand"},
      {"i.requires_grad = True", "floating-point"},
      {"z = relu()", "expects 1 input"},
      {"z = transpose(x, 0, 1, 2, 3)", "too many positional"},
      {":nosuch", "unknown command ':nosuch'"},
      {"z = 1 / 0", "division by zero"},
      {"q, k = 1, 2, 3", "cannot unpack 3 values into 2"},
      {"z = reshape(x, [4, 2])", "cannot reshape"},
      {"z = x.to(\"cuda\")", "no CUDA device found"},
      {"z = x $ 2", "unexpected character"},
      {"z = load(\"/nonexistent/x.npy\")", "nonexistent"},
      {"z = len(5)", "len() of a int"},
      {"if x:\n    pass", "ambiguous"},
      {"z = matmul(x, w, algo=\"fast\")", "unknown algorithm"},
      {"backward(loss)", "freed by an earlier backward"},
      {"print(undefined_thing)", "unknown name 'undefined_thing'"},
      {std::string("z = ") + deep, "nested too deeply"},
      {"z = relu(x) + rleu(x)", "unknown name 'rleu'"},  // relu ran first: its node is undone
      {"for k in range(3):\n    t = relu(x)\n    u = nope", "unknown name 'nope'"},  // t assigned, then undone
      {"z = tensor([1, 2]) @ x", "rank >= 2"},
      {"z = 99999999999999999999", "too large"},
      {"z = \"abc", "unterminated string"},
      {"  z = 1", "unexpected indentation"},
      {"z = items[7]", "out of range"},
  };
  CHECK(bad.size() >= 30);
  for (const Bad& b : bad) {
    INFO(b.code);
    const Snapshot before = Snapshot::of(lab);
    REQUIRE_FALSE(lab.run(b.code));
    INFO(lab.err);
    CHECK(lab.err.find(b.message) != std::string::npos);
    CHECK(lab.err.find("<test>:") == 0);
    CHECK(lab.err.find("^") != std::string::npos);  // a caret under the column
    CHECK(Snapshot::of(lab) == before);
    CHECK_FALSE(lab.run("z"));  // no half-made variable survived
  }
  lab.ok("ok = relu(x)");  // still usable
}

TEST_CASE("tab completion offers names, ops, attributes, keywords and commands", "[repl]") {
  Lab lab;
  lab.ok("weights = param(2, 2)");
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  auto c = lab.session.completions("y = rel", 7);
  CHECK(has(c, "relu"));
  CHECK_FALSE(has(c, "matmul"));
  CHECK(has(lab.session.completions("wei", 3), "weights"));
  CHECK(has(lab.session.completions("weights.sh", 10), "shape"));
  CHECK(has(lab.session.completions("weights.gr", 10), "grad"));
  CHECK(has(lab.session.completions("softmax(x, ax", 13), "axis="));
  CHECK(has(lab.session.completions("matmul(a, b, al", 15), "algo="));
  CHECK(has(lab.session.completions(":gr", 3), "graph"));
  CHECK(has(lab.session.completions("ra", 2), "randn"));
  CHECK(has(lab.session.completions("ra", 2), "range"));
}

TEST_CASE("the REPL knows when a block or bracket is unfinished", "[repl]") {
  Lab lab;
  CHECK(lab.session.needs_more_input("def f(x):"));
  CHECK(lab.session.needs_more_input("def f(x):\n    return x"));
  CHECK_FALSE(lab.session.needs_more_input("def f(x):\n    return x\n"));
  CHECK(lab.session.needs_more_input("y = (1,"));
  CHECK_FALSE(lab.session.needs_more_input("y = (1, 2)"));
  CHECK(lab.session.needs_more_input("for i in range(3):"));
  CHECK_FALSE(lab.session.needs_more_input(":help"));
  CHECK_FALSE(lab.session.needs_more_input("x = 1"));
}

TEST_CASE("commands may appear on their own lines inside a script", "[repl]") {
  Lab lab;
  std::string out = lab.ok("x = tensor([1.0, 2.0])\n:vars\ny = x * 2\n:graph\n");
  CHECK(out.find("x              tensor") != std::string::npos);
  CHECK(out.find("y[2] = mul(") != std::string::npos);
  CHECK(out.find("y              tensor") == std::string::npos);  // :vars ran before y existed
  REQUIRE_FALSE(lab.run("z = 1\n:nosuch\nw = 2"));
  CHECK(lab.err.find("<test>:2:1: error: unknown command ':nosuch'") == 0);
}

TEST_CASE("backward(y, step=True) runs one step at a time and shows dA = dC·Bᵀ", "[repl][grad]") {
  Lab lab;
  lab.ok("A = param(randn(2, 3)); B = param(randn(3, 4)); C = A @ B; loss = C.sum()");
  CHECK(lab.ok("backward(loss, step=True)") == "backward pass ready: 6 steps (:step, :step 5, :step bwd, :run)\n");
  CHECK(lab.echo("A.grad") == "");  // nothing ran yet
  std::string first = lab.ok(":step");
  CHECK(first.find("bwd") != std::string::npos);
  CHECK(first.find("5 steps left") != std::string::npos);
  std::string rest = lab.ok(":run");
  // dA = dC @ Bᵀ: [2,4] @ [4,3];  dB = Aᵀ @ dC: [3,2] @ [2,4]
  CHECK(rest.find("dA[2, 3] = matmul(dC[2, 4], B.T[4, 3])") != std::string::npos);
  CHECK(rest.find("dB[3, 4] = matmul(A.T[3, 2], dC[2, 4])") != std::string::npos);
  CHECK(rest.find("transpose(B[3, 4])") != std::string::npos);
  CHECK(rest.find("transpose(A[2, 3])") != std::string::npos);
  CHECK(rest.find("freed the tensors saved by #0 matmul") != std::string::npos);
  CHECK(rest.find("backward pass done") != std::string::npos);
  CHECK(lab.echo("A.grad.shape") == "[2, 3]");
  REQUIRE_FALSE(lab.run(":step"));
  CHECK(lab.err.find("nothing to step") != std::string::npos);
}

TEST_CASE("stepping then finishing equals a full backward, exactly", "[repl][grad]") {
  Lab a, b;
  const char* prog = "seed(4); w = param(randn(5, 3)); x = randn(2, 5)\nloss = softmax(relu(x @ w)).sum()\n";
  a.ok(prog);
  b.ok(prog);
  a.ok("backward(loss)");
  b.ok("backward(loss, step=True)\n:step 2\n:step 3\n:run");
  CHECK(a.echo("w.grad.tolist()") == b.echo("w.grad.tolist()"));
  // The memory timeline recorded during stepping is the tracker's own numbers.
  const auto& tl = b.ws.tracker().timeline();
  REQUIRE(!tl.empty());
  CHECK(tl.back().live == b.ws.tracker().live());
}

TEST_CASE("memory and step counts are readable from the language", "[repl]") {
  Lab lab;
  lab.ok("x = zeros(10)");  // 40 bytes of input
  CHECK(lab.echo("live_bytes(\"input\")") == "40");
  CHECK(lab.echo("live_bytes()") == "40");
  lab.ok("w = param(10); y = relu(x * w)");
  CHECK(lab.echo("live_bytes(\"saved\")") == "40");  // relu keeps its output
  CHECK(lab.echo("peak_bytes(\"activation\") >= 40") == "True");
  CHECK(lab.echo("step_count()") == "2");
  CHECK(lab.echo("flops()") == "20.0");  // mul and relu: one FLOP per element each
  lab.ok("reset_peak()");
  CHECK(lab.echo("peak_bytes() == live_bytes()") == "True");
  REQUIRE_FALSE(lab.run("live_bytes(\"activations\")"));
  CHECK(lab.err.find("unknown memory category") != std::string::npos);
}

TEST_CASE("review regressions: exact integers, in-place undo, nested defs, stepped backward undo", "[repl]") {
  Lab lab;
  CHECK(lab.echo("9007199254740993 + 0") == "9007199254740993");
  CHECK(lab.echo("-9223372036854775807 % -1") == "0");
  REQUIRE_FALSE(lab.run("z = 2 ** 62 * 4"));
  CHECK(lab.err.find("integer overflow") != std::string::npos);
  // In-place changes of a failed statement are undone.
  lab.ok("L = [1, 2]; p = param(2)");
  REQUIRE_FALSE(lab.run("if True:\n    L[0] = 99\n    L.append(5)\n    p.requires_grad = False\n    nope"));
  CHECK(lab.echo("L") == "[1, 2]");
  CHECK(lab.echo("p.requires_grad") == "True");
  // A def inside a block outlives the input that defined it.
  lab.ok("if True:\n    def f(a):\n        return a * 2 + 1\n");
  CHECK(lab.echo("f(3)") == "7");
  // A stepped backward built by a failing statement is dropped with it.
  lab.ok("x = param(3)");
  REQUIRE_FALSE(lab.run("if True:\n    y = (x * x).sum()\n    backward(y, step=True)\n    nope"));
  REQUIRE_FALSE(lab.run(":step all"));
  CHECK(lab.err.find("nothing to step") != std::string::npos);
}

TEST_CASE("a value's accessors check its kind and name both kinds on a mismatch", "[repl]") {
  using lang::Value;
  CHECK(Value::Int(7).as_int() == 7);
  CHECK(Value::Real(0.5).number() == 0.5);
  CHECK(Value::List({Value::Int(1)}, Value::tuple).kind() == Value::tuple);
  CHECK(Value::None().kind() == Value::none);
  CHECK_THROWS_WITH(Value::Int(7).as_tensor(), Catch::Contains("the value is int, not tensor"));
  CHECK_THROWS_WITH(Value::Str("x").items(), Catch::Contains("the value is str, not tuple"));
  CHECK_THROWS_AS(Value::None().number(), Error);
}

TEST_CASE("the parser gives each operator its enum, spelled back by name_of", "[repl]") {
  using lang::Operator;
  const lang::Block b = lang::parse_program("a // b\nnot a\n-a\nx in y\na and b\nx **= 2\n");
  REQUIRE(b.size() == 6);
  CHECK(b[0]->value->op == Operator::floor_div);
  CHECK(b[1]->value->op == Operator::not_);
  CHECK(b[2]->value->op == Operator::neg);
  CHECK(b[3]->value->op == Operator::in);
  CHECK(b[4]->value->op == Operator::and_);
  CHECK(b[5]->op == Operator::pow);
  CHECK(std::string(lang::name_of(Operator::floor_div)) == "//");
  CHECK(std::string(lang::name_of(Operator::ne)) == "!=");
}
