#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/helpers.h"

using namespace opscope;
using test::param;

TEST_CASE("the course's first graph: c = a + b; d = c * e; f = relu(d)", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = param(Tensor::from_vector<double>({1, -2}, {2}));
  Tensor b = param(Tensor::from_vector<double>({3, 1}, {2}));
  Tensor e = param(Tensor::from_vector<double>({2, 4}, {2}));
  Tensor c = ws.call("add", {a, b});
  Tensor d = ws.call("mul", {c, e});
  Tensor f = ws.call("relu", {d});
  CHECK(f.to_vector() == std::vector<double>{8, 0});
  CHECK(ws.graph().num_nodes() == 3);
  ws.backward(ws.call("sum", {f}));
  // df/dd = [1, 0]; dd/dc = e; dd/de = c = [4, -1]
  CHECK(a.grad().to_vector() == std::vector<double>{2, 0});
  CHECK(b.grad().to_vector() == std::vector<double>{2, 0});
  CHECK(e.grad().to_vector() == std::vector<double>{4, 0});
  // Backward nodes are real graph nodes, after the forward ones, in phase backward.
  int backward_nodes = 0;
  for (auto& n : ws.graph().nodes()) {
    if (n.phase == Phase::backward) {
      ++backward_nodes;
      CHECK(n.forward_of >= 0);
      CHECK(n.forward_of < n.id);
    }
  }
  CHECK(backward_nodes >= 4);
}

TEST_CASE("gradients accumulate over backward calls and zero_grad clears them", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor w = param(Tensor::from_vector<double>({1, 2, 3}, {3}));
  for (int i = 0; i < 2; ++i) ws.backward(ws.call("sum", {ws.call("mul", {w, w})}));
  CHECK(w.grad().to_vector() == std::vector<double>{4, 8, 12});  // 2 * (2w)
  ws.zero_grad({w});
  CHECK_FALSE(w.grad().defined());
  ws.backward(ws.call("sum", {w}));  // y is a function of the leaf through one node
  CHECK(w.grad().to_vector() == std::vector<double>{1, 1, 1});
}

TEST_CASE("broadcast gradients are reduced to the input's shape", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = param(test::randn({3, 4}, 1));
  Tensor b = param(test::randn({4}, 2));
  ws.backward(ws.call("sum", {ws.call("add", {x, b})}));
  CHECK(b.grad().shape() == Shape{4});
  CHECK(b.grad().to_vector() == std::vector<double>{3, 3, 3, 3});
  bool has_sum_to = false;
  for (auto& n : ws.graph().nodes()) has_sum_to = has_sum_to || n.op->name == "sum_to";
  CHECK(has_sum_to);
}

TEST_CASE("backward of a non-scalar needs dL/dy", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = param(Tensor::from_vector<double>({1, 2}, {2}));
  Tensor y = ws.call("mul", {x, x});
  const size_t nodes = ws.graph().num_nodes();
  REQUIRE_THROWS_WITH(ws.backward(y), Catch::Contains("only a scalar") && Catch::Contains("[2]"));
  CHECK(ws.graph().num_nodes() == nodes);
  ws.backward(y, Tensor::from_vector<double>({1, 10}, {2}));
  CHECK(x.grad().to_vector() == std::vector<double>{2, 40});
  REQUIRE_THROWS_WITH(ws.backward(Tensor::zeros({2})), Catch::Contains("does not require a gradient"));
}

TEST_CASE("backward twice needs retain_graph; saved tensors are freed otherwise", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = param(Tensor::from_vector<double>({1, 2}, {2}));
  Tensor loss = ws.call("sum", {ws.call("exp", {x})});
  ws.backward(loss, {}, /*retain_graph=*/true);
  ws.backward(loss);  // allowed: the first kept the saved tensors
  CHECK(x.grad().get(0) == Approx(2 * std::exp(1.0)));
  const size_t nodes = ws.graph().num_nodes();
  try {
    ws.backward(loss);
    FAIL("a third backward without retain_graph must fail");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("node #0 (exp) were freed by an earlier backward") != std::string::npos);
    CHECK(e.hint().find("retain_graph=True") != std::string::npos);
  }
  CHECK(ws.graph().num_nodes() == nodes);  // the failed call left the graph as it was
  CHECK(ws.tracker().live(MemCategory::saved) == 0);
}

TEST_CASE("no-grad scope records no saved tensors and no gradients", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor w = param(Tensor::from_vector<double>({1, 2}, {2}));
  Tensor y;
  {
    NoGradGuard ng;
    y = ws.call("exp", {w});
  }
  CHECK_FALSE(y.requires_grad());
  CHECK(ws.graph().node(0).saved.empty());
  CHECK(ws.tracker().live(MemCategory::saved) == 0);
  Tensor z = ws.call("exp", {w});
  CHECK(z.requires_grad());
}

TEST_CASE("every step emits an event with shapes, memory and cost", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  std::vector<StepEvent> events;
  int id = ws.executor().add_listener([&](const StepEvent& e) { events.push_back(e); });
  Tensor a = param(test::randn({2, 3}, 1));
  Tensor b = param(test::randn({3, 4}, 2));
  Tensor c = ws.call("matmul", {a, b});
  REQUIRE(events.size() == 1);
  CHECK(events[0].op->name == "matmul");
  CHECK(events[0].phase == Phase::forward);
  CHECK(events[0].input_shapes == std::vector<Shape>{{2, 3}, {3, 4}});
  CHECK(events[0].output_shapes == std::vector<Shape>{{2, 4}});
  CHECK(events[0].cost.flops == 2 * 2 * 3 * 4);
  CHECK(total_bytes(events[0].mem_after) - total_bytes(events[0].mem_before) == 2 * 4 * 8);
  ws.backward(ws.call("sum", {c}));
  bool saw_dA = false, saw_dB = false;
  for (auto& e : events)
    if (e.phase == Phase::backward && e.op->name == "matmul") {
      // dA = dC @ Bᵀ : [2,4] @ [4,3];  dB = Aᵀ @ dC : [3,2] @ [2,4]
      saw_dA = saw_dA || (e.input_shapes == std::vector<Shape>{{2, 4}, {4, 3}});
      saw_dB = saw_dB || (e.input_shapes == std::vector<Shape>{{3, 2}, {2, 4}});
    }
  CHECK(saw_dA);
  CHECK(saw_dB);
  bool released = false;
  for (auto& e : events) released = released || !e.saved_released_of.empty();
  CHECK(released);
  ws.executor().remove_listener(id);
}

TEST_CASE("anomaly mode names the first node that makes NaN or Inf", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, -1}, {2}).set_name("x");
  ws.call("log", {x});  // off: NaN passes silently
  ws.set_anomaly(true);
  const size_t nodes = ws.graph().num_nodes();
  REQUIRE_THROWS_WITH(ws.call("log", {x}), Catch::Contains("anomaly") && Catch::Contains("log") &&
                                               Catch::Contains("NaN") && Catch::Contains("x [2]"));
  CHECK(ws.graph().num_nodes() == nodes);
}

TEST_CASE("bad input gives clear errors and leaves the workspace usable", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = test::randn({2, 3}, 1), b = test::randn({4, 5}, 2);
  const size_t nodes = ws.graph().num_nodes();
  const int64_t live = ws.tracker().live_total();
  REQUIRE_THROWS_WITH(ws.call("matmul", {a, b}), Catch::Contains("matmul: inner dimensions differ: [2, 3] @ [4, 5]"));
  REQUIRE_THROWS_WITH(ws.call("exp", {Tensor::zeros({2}, DType::i64)}),
                      Catch::Contains("exp: expected a floating-point"));
  REQUIRE_THROWS_WITH(ws.call("leaky_relu", {a}, {{"negative_slope", -1.0}}), Catch::Contains("must be >= 0"));
  REQUIRE_THROWS_WITH(ws.call("softmax", {a}, {{"axs", int64_t(0)}}), Catch::Contains("unknown attribute 'axs'"));
  try {
    ws.call("softmax", {a}, {{"axs", int64_t(0)}});
  } catch (const Error& e) {
    CHECK(std::string(e.hint()).find("did you mean 'axis'") != std::string::npos);
  }
  REQUIRE_THROWS_WITH(ws.call("rleu", {a}), Catch::Contains("unknown operator 'rleu'"));
  try {
    ws.call("rleu", {a});
  } catch (const Error& e) {
    CHECK(e.hint() == "did you mean 'relu'?");
  }
  REQUIRE_THROWS_WITH(ws.call("add", {a, b}), Catch::Contains("cannot be broadcast"));
  REQUIRE_THROWS_WITH(ws.call("add", {a}), Catch::Contains("expects 2 inputs"));
  REQUIRE_THROWS_WITH(ws.call("matmul", {a, a.view_transpose(0, 1)}, {}, "fast"), Catch::Contains("unknown algorithm"));
  CHECK(ws.graph().num_nodes() == nodes);
  CHECK(ws.tracker().live_total() == live);
  Tensor ok = ws.call("add", {a, a});  // still usable
  CHECK(ok.get(0) == Approx(2 * a.get(0)));
}

TEST_CASE("requires_grad set after a tensor entered the graph still gets gradients", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor x = Tensor::from_vector<double>({1, 2, 3}, {3});
  ws.call("mul", {x, x});  // x enters the graph as a plain input
  x.set_requires_grad(true);
  ws.backward(ws.call("sum", {ws.call("mul", {x, Tensor::scalar(2.0, DType::f64)})}));
  REQUIRE(x.grad().defined());
  CHECK(x.grad().to_vector() == std::vector<double>{2, 2, 2});
  // An op's output made a parameter afterwards becomes a leaf of its own.
  Tensor y;
  {
    NoGradGuard ng;
    y = ws.call("add", {x, x});
  }
  y.set_requires_grad(true);
  ws.backward(ws.call("sum", {ws.call("mul", {y, y})}));
  REQUIRE(y.grad().defined());
  CHECK(y.grad().to_vector() == std::vector<double>{4, 8, 12});
}

TEST_CASE("backward of a tensor whose graph was reset is a clear error", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor w = param(Tensor::from_vector<double>({1, 2}, {2}));
  Tensor loss = ws.call("sum", {ws.call("mul", {w, w})});
  ws.reset_graph();
  REQUIRE_THROWS_WITH(ws.backward(loss), Catch::Contains("graph that computed this tensor was cleared"));
  CHECK_FALSE(w.grad().defined());
  CHECK_FALSE(loss.grad().defined());
}

TEST_CASE("a backward that runs out of memory changes no gradient", "[core][grad]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t n = 65536;
  Tensor a = param(Tensor::zeros({n}, DType::f64)), b = param(Tensor::zeros({n}, DType::f64));
  Tensor y = ws.call("add", {a, b});
  Tensor g = Tensor::full({n}, 1.0, DType::f64);
  // Room for the seed and one gradient, not two.
  ws.tracker().set_cap(ws.tracker().live_total() + 2 * n * 8 + n * 4);
  REQUIRE_THROWS_WITH(ws.backward(y, g, true), Catch::Contains("memory cap"));
  CHECK_FALSE(a.grad().defined());
  CHECK_FALSE(b.grad().defined());
  ws.tracker().set_cap(int64_t(1) << 40);
  ws.backward(y, g, true);
  CHECK(a.grad().get(0) == 1);
  CHECK(b.grad().get(0) == 1);
}

TEST_CASE("size() of a 0-d tensor is an error, not a crash", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  REQUIRE_THROWS_WITH(Tensor::scalar(3.0).size(0), Catch::Contains("0-d tensor has no axes"));
}

namespace {
int count_backward(Workspace& ws, const std::string& op) {
  int n = 0;
  for (auto& node : ws.graph().nodes()) n += node.phase == Phase::backward && node.op->name == op;
  return n;
}
Tensor slice_of(Workspace& ws, const Tensor& x, int64_t axis, int64_t start, int64_t stop) {
  return ws.call("slice", {x}, {{"axis", axis}, {"start", start}, {"stop", stop}});
}
}  // namespace

TEST_CASE("slices that tile an axis get their gradients joined by one concat", "[core][grad]") {
  // qkv = x·wᵀ split three ways; loss = Σ(2·q·k + v·v): dq = 2k, dk = 2q, dv = 2v, so
  // dqkv = [2k, 2q, 2v] and dw = dqkvᵀ·x, by hand.
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor w = param(Tensor::from_vector<double>({1, 2, 0, -1, 3, 1, -2, 0, 1, 1, 2, -1}, {6, 2}));
  Tensor x = Tensor::from_vector<double>({1, 2, -1, 0.5}, {2, 2});
  Tensor qkv = ws.call("matmul", {x, ws.call("transpose", {w})});  // [2, 6]
  Tensor v = slice_of(ws, qkv, 1, 4, 6);  // read out of order: joined by position, not arrival
  Tensor q = slice_of(ws, qkv, 1, 0, 2);
  Tensor k = slice_of(ws, qkv, 1, 2, 4);
  Tensor two = Tensor::scalar(2.0, DType::f64);
  Tensor loss =
      ws.call("sum", {ws.call("add", {ws.call("mul", {ws.call("mul", {q, k}), two}), ws.call("mul", {v, v})})});
  ws.backward(loss);
  CHECK(count_backward(ws, "concat") == 1);
  CHECK(count_backward(ws, "slice_backward") == 0);
  const std::vector<double> qk = qkv.to_vector();  // rows of [q0 q1 k0 k1 v0 v1]
  std::vector<double> want(12, 0.0);
  for (int r = 0; r < 2; ++r) {
    const double* row = &qk[static_cast<size_t>(r * 6)];
    const double dqkv[6] = {2 * row[2], 2 * row[3], 2 * row[0], 2 * row[1], 2 * row[4], 2 * row[5]};
    for (int o = 0; o < 6; ++o)
      for (int i = 0; i < 2; ++i) want[static_cast<size_t>(o * 2 + i)] += dqkv[o] * x.get(r * 2 + i);
  }
  const std::vector<double> got = w.grad().to_vector();
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]));
}

TEST_CASE("a sliced parameter's tiling slices are joined; gaps and overlaps keep slice_backward", "[core][grad]") {
  for (auto [first_stop, second_start, joined] : {std::tuple{1, 1, true}, {1, 2, false}, {2, 1, false}}) {
    INFO("w[0:" << first_stop << "] and w[" << second_start << ":4]");
    Workspace ws;
    WorkspaceScope scope(ws);
    Tensor w = param(Tensor::from_vector<double>({1, 2, 3, 4}, {4}));
    Tensor a = slice_of(ws, w, 0, 0, first_stop), b = slice_of(ws, w, 0, second_start, 4);
    // loss = Σ 3·a + Σ b²: dw[i] = 3 (i in a) + 2·w[i] (i in b)
    ws.backward(ws.call("add", {ws.call("sum", {ws.call("mul", {a, Tensor::scalar(3.0, DType::f64)})}),
                                ws.call("sum", {ws.call("mul", {b, b})})}));
    CHECK(count_backward(ws, "concat") == (joined ? 1 : 0));
    CHECK(count_backward(ws, "slice_backward") == (joined ? 0 : 2));
    for (int i = 0; i < 4; ++i)
      CHECK(w.grad().get(i) == Approx((i < first_stop ? 3.0 : 0.0) + (i >= second_start ? 2.0 * (i + 1) : 0.0)));
  }
}
