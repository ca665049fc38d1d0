// The graph as a textbook figure, without a display: the mirrored backward lane, folding of
// calls, what is not the model left out (initialisation, earlier loop iterations), search
// through folds, the crossing count, and the export drawing the same layout.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/lang/session.h"
#include "core/workspace.h"
#include "viz/figure_export.h"
#include "viz/graph_figure.h"
#include "viz/graph_layout.h"
#include "viz/layout_metrics.h"

#include "tests/ran_script.h"

using namespace opscope;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kTwoLayers =
    "seed(0)\n"
    "def dense(x, w, b):\n    return x @ w + b\n"
    "x = randn(8, 16); w1 = param(randn(16, 32) * 0.1); b1 = param(zeros(32)); w2 = param(32, 4); b2 = "
    "param(zeros(4))\n"
    "h = relu(dense(x, w1, b1)); loss = dense(h, w2, b2).sum()\n"
    "backward(loss)\n";

const viz::LayoutBox& box(const viz::GraphLayout& l, const std::string& key) {
  const int i = l.find(key);
  REQUIRE(i >= 0);
  return l.boxes[static_cast<size_t>(i)];
}

}  // namespace

TEST_CASE("figure: the backward pass runs in a lane below, each node under the forward node it differentiates",
          "[viz]") {
  Ran r(kTwoLayers);
  const viz::GraphLayout l = viz::layout_graph(r.ws.graph(), {});
  REQUIRE(l.backward_lane_top > 0);
  float forward_bottom = 0;
  for (const auto& b : l.boxes)
    if (b.lane == viz::Lane::forward) forward_bottom = std::max(forward_bottom, b.center.y + b.height / 2);
  int backward_ops = 0;
  for (const auto& b : l.boxes) {
    if (b.lane != viz::Lane::backward) continue;
    INFO(b.key << " " << b.title);
    CHECK(b.center.y - b.height / 2 > forward_bottom);
    if (b.kind != viz::BoxKind::op) continue;
    ++backward_ops;
    // Under its forward node: the node it differentiates is its anchor, at about the same x.
    REQUIRE(!b.anchor.empty());
    const viz::LayoutBox& a = box(l, b.anchor);
    CHECK(a.node == r.ws.graph().node(b.node).forward_of);
    CHECK(std::abs(a.center.x - b.center.x) < b.width + 16.f);
  }
  CHECK(backward_ops > 8);
  // Gradients run right to left, against the forward pass.
  int leftwards = 0, gradients = 0;
  for (const auto& e : l.edges) {
    if (e.kind != viz::EdgeKind::gradient) continue;
    const viz::LayoutBox &from = l.boxes[static_cast<size_t>(e.from)], &to = l.boxes[static_cast<size_t>(e.to)];
    ++gradients;
    leftwards += to.center.x <= from.center.x + 1.f;
  }
  CHECK(gradients > 5);
  CHECK(leftwards == gradients);
}

TEST_CASE("figure: the nodes that initialised a parameter fold into it; its value says how it was made", "[viz]") {
  Ran r(kTwoLayers);
  const Graph& g = r.ws.graph();
  REQUIRE(g.node(0).op->name == "mul");  // randn(16, 32) * 0.1
  const viz::GraphLayout l = viz::layout_graph(g, {});
  CHECK(l.find_node(0) < 0);
  for (const auto& b : l.boxes) CHECK(b.title.find("#0 ") == std::string::npos);
  int w1 = -1;
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value(static_cast<int>(v)).name == "w1") w1 = static_cast<int>(v);
  REQUIRE(w1 >= 0);
  CHECK(g.value(w1).origin == "param(randn(16, 32) * 0.1)");
  CHECK(g.value(w1).origin_line == 4);
  CHECK(viz::initialisation_nodes(g, w1) == std::vector<int>{0});
  // A value the model also reads is not initialisation: it stays.
  Ran kept("seed(0)\nt = randn(4) * 2\nw = param(t)\ny = (w + t).sum()\n");
  CHECK(viz::layout_graph(kept.ws.graph(), {}).find_node(0) >= 0);
}

TEST_CASE("figure: a loop shows its last iteration, with how many ran", "[viz]") {
  Ran r(
      "seed(0)\nx = param(randn(4))\ny = x\nfor i in range(5):\n    y = tanh(y) * 0.5\nloss = "
      "y.sum()\nbackward(loss)\n");
  const Graph& g = r.ws.graph();
  const viz::GraphLayout l = viz::layout_graph(g, {});
  int tanh_boxes = 0, loops = 0;
  for (const auto& b : l.boxes) tanh_boxes += b.title.find("tanh") != std::string::npos && b.lane == viz::Lane::forward;
  CHECK(tanh_boxes == 1);
  for (const auto& c : l.clusters)
    if (c.loop) {
      ++loops;
      CHECK(c.iterations == 5);
      CHECK(c.label == "loop: last of 5 iterations");
    }
  CHECK(loops == 1);
  const auto counts = viz::loop_counts(g);
  REQUIRE(counts.size() == 1);
  CHECK(counts.begin()->second.iterations == 5);
  // The last iteration reads y from the iteration before: an input box that says so.
  bool earlier = false;
  for (const auto& b : l.boxes) earlier = earlier || b.subtitle.find("earlier iteration") != std::string::npos;
  CHECK(earlier);
  // The backward nodes of the earlier iterations stay out with them.
  int backward_tanh = 0;
  for (const auto& b : l.boxes)
    if (b.lane == viz::Lane::backward && b.node >= 0)
      backward_tanh += g.node(g.node(b.node).forward_of).op->name == "tanh";
  CHECK(backward_tanh >= 1);
  CHECK(backward_tanh <= 3);
}

TEST_CASE("figure: each call folds into a box of its own; its leaves and backward nodes fold with it", "[viz]") {
  Ran r(kTwoLayers);
  const Graph& g = r.ws.graph();
  const auto calls = viz::foldable_calls(g, {});
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].name == "dense");
  CHECK(calls[0].key != calls[1].key);
  viz::LayoutOptions o;
  o.folded = {calls[1].key};  // the second call only
  const viz::GraphLayout l = viz::layout_graph(g, o);
  const viz::LayoutBox& f = box(l, "s:" + calls[1].key);
  CHECK(f.kind == viz::BoxKind::folded_scope);
  CHECK(f.title == "dense()");
  CHECK(f.subtitle == "in h [8, 32]");
  REQUIRE(f.details.size() == 2);
  CHECK(f.details[1] == "2 ops · params w2, b2");
  CHECK(l.find("v" + std::to_string(g.node(f.nodes[0]).inputs[1])) < 0);  // w2 went into the box
  const viz::LayoutBox& b = box(l, "b:" + calls[1].key);  // its backward nodes, under it
  CHECK(b.anchor == f.key);
  CHECK(b.lane == viz::Lane::backward);
  CHECK(l.clusters.size() == 1);  // the first call is still a frame
  CHECK(l.find_node(calls[0].node_ids[0]) >= 0);
  // Search finds what a folded box holds.
  const auto hits = viz::search_boxes(l, g, "matmul");
  CHECK(std::find(hits.begin(), hits.end(), f.key) != hits.end());
  // Unfolded by key wins over folded by name.
  o.folded = {"dense"};
  o.unfolded = {calls[0].key};
  const viz::GraphLayout u = viz::layout_graph(g, o);
  CHECK(u.find("s:" + calls[0].key) < 0);
  CHECK(u.find("s:" + calls[1].key) >= 0);
  // An unnamed input is named by the node that made it.
  Ran r2("def dense(x, w):\n    return x @ w\nx = randn(8, 16); w = param(16, 4)\ny = dense(relu(x), w)\n");
  const auto calls2 = viz::foldable_calls(r2.ws.graph(), {});
  REQUIRE(calls2.size() == 1);
  viz::LayoutOptions o2;
  o2.folded = {"dense"};
  CHECK(box(viz::layout_graph(r2.ws.graph(), o2), "s:" + calls2[0].key).subtitle == "in #0 [8, 16]");
}

TEST_CASE("figure: a graph too big for its canvas folds its biggest calls until it fits", "[viz]") {
  Ran r(read_file(std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/transformer_block.ops"));
  const Graph& g = r.ws.graph();
  const float w = 1000, h = 560;
  auto zoom = [&](const viz::GraphLayout& l) { return std::min(w / l.width, h / l.height); };
  const viz::GraphLayout all = viz::layout_graph(g, {});
  REQUIRE(zoom(all) < 0.5f);
  const viz::FoldedToFit fit = viz::fold_to_fit(g, {}, 0.5f, zoom, -1);
  CHECK(fit.fits);
  CHECK(fit.folded.size() >= 1);
  CHECK(fit.layout.boxes.size() < all.boxes.size());
  // Around the current step: the call holding it stays open.
  const int in_attention = viz::foldable_calls(g, {})[0].node_ids[0];
  const viz::FoldedToFit around = viz::fold_to_fit(g, {}, 0.5f, zoom, in_attention);
  CHECK(around.layout.boxes[static_cast<size_t>(around.layout.find_node(in_attention))].kind == viz::BoxKind::op);
}

TEST_CASE("figure: constants are written into their node; crossings are counted", "[viz]") {
  Ran r("seed(0)\nx = param(randn(4))\ny = (x * 0.5).sum()\n");
  const viz::GraphLayout l = viz::layout_graph(r.ws.graph(), {});
  CHECK(box(l, "n0").title == "#0 mul(·, 0.5)");
  for (const auto& b : l.boxes) CHECK(b.kind != viz::BoxKind::constant);
  // Two curves crossing once, two that do not.
  const std::vector<viz::Point> a{{0, 0}, {10, 10}}, b{{0, 10}, {10, 0}}, c{{20, 0}, {30, 0}};
  CHECK(viz::count_crossings(a, b, {}) == 1);
  CHECK(viz::count_crossings(a, c, {}) == 0);
}

TEST_CASE("figure: the export draws the window's layout and folding, to SVG and PNG", "[viz]") {
  Ran r(read_file(std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/transformer_block.ops"));
  const viz::GraphLayout l = viz::window_figure(r.ws.graph());
  bool folded = false;
  for (const auto& b : l.boxes) folded = folded || b.kind == viz::BoxKind::folded_scope;
  CHECK(folded);
  const std::string dot = viz::figure_dot(r.ws.graph(), l);
  CHECK(dot.find("attention()") != std::string::npos);
  CHECK(dot.find("backward pass") != std::string::npos);
  const std::string dir = std::filesystem::temp_directory_path().string();
  viz::render_figure(r.ws.graph(), l, "svg", dir + "/opscope_test_figure.svg");
  const std::string svg = read_file(dir + "/opscope_test_figure.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("attention()") != std::string::npos);
  viz::render_figure(r.ws.graph(), l, "png", dir + "/opscope_test_figure.png");
  CHECK(read_file(dir + "/opscope_test_figure.png").substr(1, 3) == "PNG");
}
