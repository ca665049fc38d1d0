#include <catch2/catch.hpp>

#include "core/describe.h"
#include "core/gradcheck.h"
#include "core/random.h"
#include "core/workspace.h"

using namespace opscope;

TEST_CASE("every operator of the engine issue is registered", "[op]") {
  for (const char* name : {"add",
                           "sub",
                           "mul",
                           "div",
                           "neg",
                           "pow",
                           "exp",
                           "log",
                           "sqrt",
                           "abs",
                           "maximum",
                           "minimum",
                           "where",
                           "eq",
                           "ne",
                           "lt",
                           "le",
                           "gt",
                           "ge",
                           "relu",
                           "leaky_relu",
                           "gelu",
                           "sigmoid",
                           "tanh",
                           "sum",
                           "mean",
                           "max",
                           "var",
                           "matmul",
                           "transpose",
                           "permute",
                           "reshape",
                           "flatten",
                           "slice",
                           "concat",
                           "stack",
                           "expand",
                           "softmax",
                           "log_softmax",
                           "softmax_backward",
                           "cross_entropy",
                           "mse_loss",
                           "linear",
                           "dropout",
                           "sum_to",
                           "cast"}) {
    INFO(name);
    CHECK(OpRegistry::instance().find(name) != nullptr);
  }
}

TEST_CASE("every operator declares its metadata", "[op]") {
  for (const OpDef* op : OpRegistry::instance().all()) {
    INFO(op->name);
    CHECK(!op->doc.empty());
    CHECK(!op->family.empty());
    CHECK(op->infer);
    CHECK(op->cost);
    CHECK(!op->algorithms.empty());
    CHECK(op->find_kernel(Device::cpu, op->default_algorithm()) != nullptr);
    CHECK(!describe_op(*op).empty());
    if (op->differentiable) {
      CHECK(op->backward);
      CHECK(!op->backward_note.empty());
    }
    if (!op->checked_via.empty()) {
      // A backward-only op is exercised by the gradcheck of the op that calls it.
      const OpDef* via = OpRegistry::instance().find(op->checked_via);
      REQUIRE(via != nullptr);
      CHECK(!via->gradcheck.empty());
    }
  }
}

TEST_CASE("every differentiable operator passes gradcheck in every algorithm", "[grad]") {
  int checked = 0;
  for (const OpDef* op : OpRegistry::instance().all()) {
    if (!op->differentiable) continue;
    INFO(op->name);
    CHECK(!op->gradcheck.empty());  // an op without a gradcheck case fails the suite
    for (const GradcheckResult& r : gradcheck_op(*op)) {
      INFO(r.op << " algo=" << r.algo << " case " << r.case_index << " (" << r.note << "): " << r.message
                << " max_abs_error=" << r.max_abs_error);
      CHECK(r.passed);
      CHECK(r.elements_checked > 0);
      ++checked;
    }
  }
  CHECK(checked > 40);
}

TEST_CASE("gradcheck catches a wrong backward", "[grad]") {
  // A deliberately wrong op (not registered): y = x², backward claims dx = dy * x (missing the 2).
  OpDef d;
  {
    d.name = "test_wrong_square";
    d.family = "test";
    d.doc = "y = x² with a wrong backward";
    d.input_names = {"x"};
    d.infer = [](const InferCtx& c) { return std::vector<TensorMeta>{c.inputs[0]}; };
    d.kernel(Device::cpu, "default", [](KernelCtx& k) {
      for (int64_t i = 0; i < k.in(0).numel(); ++i)
        k.out().data<double>()[i] = k.in(0).data<double>()[i] * k.in(0).data<double>()[i];
    });
    d.saves = {{SavedRef::input, 0}};
    d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * g.input(0)}; };
    d.cost = [](auto&, auto&, auto&, auto) { return Cost{}; };
    d.gradcheck = {GradcheckCase{{{{3}}}, {}, 1e-6, 1e-5, ""}};
  }
  auto results = gradcheck_op(d);
  REQUIRE(results.size() == 1);
  CHECK_FALSE(results[0].passed);
  CHECK(results[0].message.find("analytic") != std::string::npos);
}

TEST_CASE("gradcheck catches a saved tensor that backward never reads", "[grad]") {
  // y = 2x that saves x (memory training would hold for nothing): its backward is dy·2.
  OpDef d = OpDef::declare("test_saves_unread", "test", "y = 2x", {"x"});
  d.infer = [](const InferCtx& c) { return std::vector<TensorMeta>{c.inputs[0]}; };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    for (int64_t i = 0; i < k.in(0).numel(); ++i) k.out().data<double>()[i] = 2 * k.in(0).data<double>()[i];
  });
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> { return {g.grad_output(0) * 2.0}; };
  d.cost = [](auto&, auto&, auto&, auto) { return Cost{}; };
  d.gradcheck = {GradcheckCase{{{{3}}}, {}, 1e-6, 1e-5, ""}};
  auto results = gradcheck_op(d);
  REQUIRE(results.size() == 1);
  CHECK_FALSE(results[0].passed);
  CHECK(results[0].message == "saves input x for backward, but its backward never reads it");
  d.saves.clear();
  CHECK(gradcheck_op(d)[0].passed);
}

TEST_CASE("every operator has cases: gradcheck, the CUDA tests and the saved-tensor check run them", "[op]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard no_grad;
  for (const OpDef* op : OpRegistry::instance().all()) {
    if (!op->builtin()) continue;
    INFO(op->name);
    CHECK(!op->gradcheck.empty());
    for (size_t i = 0; i < op->gradcheck.size(); ++i) {  // each runs on the CPU (the CUDA tests need a GPU)
      const GradcheckCase& c = op->gradcheck[i];
      INFO("case " << i << " " << c.note);
      CHECK_NOTHROW(ws.call_multi(*op, make_case_inputs(c, 7 + i), op->resolve(c.attrs)));
      ws.reset_graph();
    }
  }
}
