#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/helpers.h"

using namespace opscope;

namespace {
int64_t sum_bytes(const std::vector<Tensor>& ts) {
  // Distinct storages only: views share bytes.
  std::vector<const Storage*> seen;
  int64_t s = 0;
  for (auto& t : ts) {
    if (!t.defined() || std::find(seen.begin(), seen.end(), &t.storage()) != seen.end()) continue;
    seen.push_back(&t.storage());
    s += t.storage().nbytes();
  }
  return s;
}
}  // namespace

TEST_CASE("live bytes equal the bytes held by live storages, exactly", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  CHECK(ws.tracker().live_total() == 0);
  std::vector<Tensor> held;
  held.push_back(Tensor::zeros({3, 5}));
  held.push_back(Tensor::zeros({7}, DType::f64));
  held.push_back(Tensor::zeros({2, 2}, DType::i64));
  CHECK(ws.tracker().live_total() == sum_bytes(held));
  CHECK(ws.tracker().live_total() == 15 * 4 + 7 * 8 + 4 * 8);
  held.push_back(held[0].view_transpose(0, 1));  // a view adds nothing
  CHECK(ws.tracker().live_total() == sum_bytes(held));
  Tensor a = test::param(test::randn({4, 4}, 1, DType::f32));
  held.push_back(a);
  held.push_back(ws.call("relu", {a}));
  held.push_back(ws.call("mul", {held.back(), a}));
  CHECK(ws.tracker().live_total() == sum_bytes(held));
  held.erase(held.begin() + 1);
  CHECK(ws.tracker().live_total() == sum_bytes(held));
  Tensor loss = ws.call("sum", {held.back()});
  ws.backward(loss);
  held.push_back(loss);
  held.push_back(a.grad());
  CHECK(ws.tracker().live_total() == sum_bytes(held));
  held.clear();
  loss = Tensor();
  a = Tensor();
  CHECK(ws.tracker().live_total() == 0);
}

TEST_CASE("categories: parameter, input, activation, saved, gradient", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  auto& tr = ws.tracker();
  Tensor x = Tensor::zeros({10});  // input: 40 bytes
  Tensor w = test::param(Tensor::full({10}, 2.0));
  CHECK(tr.live(MemCategory::input) == 40);
  CHECK(tr.live(MemCategory::parameter) == 40);
  Tensor h = ws.call("mul", {x, w});  // saves x and w: their categories stay
  CHECK(tr.live(MemCategory::activation) == 40);
  Tensor y = ws.call("relu", {h});  // saves its output y: activation -> saved
  CHECK(tr.live(MemCategory::saved) == 40);
  CHECK(tr.live(MemCategory::activation) == 40);
  Tensor loss = ws.call("sum", {y});
  ws.backward(loss);
  CHECK(tr.live(MemCategory::saved) == 0);  // released after its backward ran
  CHECK(tr.live(MemCategory::gradient) == 40);  // w.grad
  CHECK(tr.peak(MemCategory::saved) == 40);
}

TEST_CASE("the cap refuses an allocation before it is made", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  ws.tracker().set_cap(1 << 20);
  Tensor a = Tensor::zeros({1000});
  const int64_t live = ws.tracker().live_total();
  REQUIRE_THROWS_WITH(Tensor::zeros({1024, 1024}), Catch::Contains("shape [1024, 1024]") &&
                                                       Catch::Contains("4.0 MiB") && Catch::Contains("memory cap"));
  CHECK(ws.tracker().live_total() == live);
  CHECK(ws.tracker().reserved() < (1 << 20));
  // An op whose output would pass the cap fails the same way and leaves the graph as it was.
  Tensor big = Tensor::zeros({500, 500});
  const size_t nodes = ws.graph().num_nodes();
  REQUIRE_THROWS_WITH(ws.call("add", {big, big}), Catch::Contains("memory cap"));
  CHECK(ws.graph().num_nodes() == nodes);
  // Absurd shapes are refused without overflow.
  REQUIRE_THROWS_AS(Tensor::zeros({int64_t(1) << 40, int64_t(1) << 40}), Error);
}

TEST_CASE("the CPU allocator caches freed blocks and reports reserved bytes", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  { Tensor a = Tensor::zeros({256, 256}); }
  const int64_t reserved = ws.tracker().reserved();
  CHECK(reserved >= 256 * 256 * 4);
  CHECK(ws.tracker().live_total() == 0);
  { Tensor b = Tensor::zeros({256, 256}); }
  CHECK(ws.tracker().reserved() == reserved);  // reused, not allocated again
  ws.allocator(Device::cpu)->empty_cache();
  CHECK(ws.tracker().reserved() == 0);
}

TEST_CASE("the timeline has one point per step and falls during backward", "[core]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor w = test::param(test::randn({64, 64}, 3, DType::f32));
  Tensor x = test::randn({32, 64}, 4, DType::f32);
  Tensor h = ws.call("relu", {ws.call("matmul", {x, w})});
  Tensor y = ws.call("tanh", {ws.call("matmul", {h, w})});
  Tensor loss = ws.call("sum", {y});
  const size_t forward_points = ws.tracker().timeline().size();
  CHECK(forward_points == ws.graph().num_nodes());
  const int64_t saved_before = ws.tracker().live(MemCategory::saved);
  CHECK(saved_before > 0);
  h = Tensor();
  y = Tensor();
  ws.backward(loss);
  auto& tl = ws.tracker().timeline();
  CHECK(tl.size() == ws.graph().num_nodes());
  CHECK(tl.back().live[static_cast<int>(MemCategory::saved)] == 0);
  // Saved bytes fall step by step during backward.
  bool fell = false;
  for (size_t i = forward_points + 1; i < tl.size(); ++i)
    fell =
        fell || tl[i].live[static_cast<int>(MemCategory::saved)] < tl[i - 1].live[static_cast<int>(MemCategory::saved)];
  CHECK(fell);
}
