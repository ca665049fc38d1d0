// The graph layout (Graphviz dot, in memory) and the SVG/PNG export: no display needed.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/lang/session.h"
#include "core/error.h"
#include "core/workspace.h"
#include "viz/export.h"
#include "viz/graph_layout.h"
#include "viz/graphviz.h"
#include "viz/layout_wrap.h"

#include "tests/ran_script.h"

using namespace opscope;

namespace {

const char* kMlp =
    "seed(0)\n"
    "def dense(x, w, b):\n    return x @ w + b\n"
    "x = randn(8, 16); w1 = param(16, 32); b1 = param(zeros(32)); w2 = param(32, 4)\n"
    "h = relu(dense(x, w1, b1)); loss = (h @ w2).sum()\n"
    "backward(loss)\n";

std::string script_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool overlap(const viz::LayoutBox& a, const viz::LayoutBox& b) {
  return std::abs(a.center.x - b.center.x) * 2 < a.width + b.width - 0.5f &&
         std::abs(a.center.y - b.center.y) * 2 < a.height + b.height - 0.5f;
}

}  // namespace

TEST_CASE("layout: the same graph gives the same positions, and no boxes overlap", "[viz]") {
  Ran r(kMlp);
  viz::LayoutOptions o;
  const viz::GraphLayout a = viz::layout_graph(r.ws.graph(), o), b = viz::layout_graph(r.ws.graph(), o);
  REQUIRE(a.boxes.size() == b.boxes.size());
  for (size_t i = 0; i < a.boxes.size(); ++i) {
    CHECK(a.boxes[i].key == b.boxes[i].key);
    CHECK(a.boxes[i].center.x == b.boxes[i].center.x);
    CHECK(a.boxes[i].center.y == b.boxes[i].center.y);
  }
  for (size_t i = 0; i < a.boxes.size(); ++i)
    for (size_t j = i + 1; j < a.boxes.size(); ++j) {
      INFO(a.boxes[i].key << " and " << a.boxes[j].key);
      CHECK_FALSE(overlap(a.boxes[i], a.boxes[j]));
    }
  // Every box lies inside the layout's extent, every edge has a spline.
  for (const auto& bx : a.boxes) {
    CHECK(bx.center.x - bx.width / 2 >= -1.f);
    CHECK(bx.center.x + bx.width / 2 <= a.width + 1.f);
    CHECK(bx.center.y - bx.height / 2 >= -1.f);
    CHECK(bx.center.y + bx.height / 2 <= a.height + 1.f);
  }
  for (const auto& e : a.edges) CHECK(e.spline.size() >= 4);
}

TEST_CASE("layout: every node is shown once, leaves by kind, the function as a cluster", "[viz]") {
  Ran r(kMlp);
  const Graph& g = r.ws.graph();
  const viz::GraphLayout l = viz::layout_graph(g, {});
  for (const Node& n : g.nodes()) {
    const int b = l.find_node(n.id);
    REQUIRE(b >= 0);
    CHECK(l.boxes[static_cast<size_t>(b)].key == "n" + std::to_string(n.id));
    CHECK(l.boxes[static_cast<size_t>(b)].title.find(n.op->name) != std::string::npos);
  }
  int params = 0, seeds = 0;
  for (const auto& b : l.boxes) {
    params += b.kind == viz::BoxKind::parameter;
    seeds += b.kind == viz::BoxKind::grad_seed;
  }
  CHECK(params == 3);  // w1, b1, w2
  CHECK(seeds == 1);  // dloss/dloss = 1
  REQUIRE(l.clusters.size() == 1);  // one call of dense(); its frame has the call's own key
  CHECK(l.clusters[0].scope == "dense");
  CHECK(l.clusters[0].key.rfind("dense@", 0) == 0);
  // Both phases: links from backward nodes to their forward nodes.
  CHECK(std::count_if(l.edges.begin(), l.edges.end(), [](auto& e) { return e.link; }) > 0);
}

TEST_CASE("layout: forward only, backward only, and a folded function", "[viz]") {
  Ran r(kMlp);
  const Graph& g = r.ws.graph();
  viz::LayoutOptions o;
  o.filter = viz::PhaseFilter::forward_only;
  const viz::GraphLayout f = viz::layout_graph(g, o);
  for (const auto& b : f.boxes) CHECK(b.phase == Phase::forward);
  o.filter = viz::PhaseFilter::backward_only;
  const viz::GraphLayout bw = viz::layout_graph(g, o);
  int bwd_ops = 0;
  for (const auto& b : bw.boxes) bwd_ops += b.kind == viz::BoxKind::op;
  int expected = 0;
  for (const Node& n : g.nodes()) expected += n.phase == Phase::backward;
  CHECK(bwd_ops == expected);
  o.filter = viz::PhaseFilter::forward_only;
  o.folded = {"dense"};
  const viz::GraphLayout folded = viz::layout_graph(g, o);
  const int fb = folded.find_node(0);
  REQUIRE(fb >= 0);
  CHECK(folded.boxes[static_cast<size_t>(fb)].kind == viz::BoxKind::folded_scope);
  CHECK(folded.boxes[static_cast<size_t>(fb)].key.rfind("s:dense@", 0) == 0);
  CHECK(folded.boxes.size() < f.boxes.size());
  CHECK(folded.clusters.empty());
}

TEST_CASE("layout: a graph of optimizer updates alone (nothing in the forward lane)", "[viz]") {
  // After a training loop inside a function only the last step's updates are held, and their
  // leaves go to the backward lane with them; the lanes once indexed dot's output without
  // running dot (the window and `export --svg` crashed after the Fashion-MNIST example).
  Ran r(
      "seed(0)\nw = param(randn(3))\nopt = Adam([w], lr=0.1)\ndef train():\n    for i in range(2):\n"
      "        opt.zero_grad()\n        backward(sum(w * w))\n        opt.step()\ntrain()\n");
  const Graph& g = r.ws.graph();
  int updates = 0, others = 0;
  for (const Node& n : g.nodes()) (n.phase == Phase::update ? updates : others) += 1;
  REQUIRE(updates == 1);
  REQUIRE(others == 0);
  const viz::GraphLayout l = viz::layout_graph(g, {});
  for (const Node& n : g.nodes()) CHECK(l.find_node(n.id) >= 0);
  REQUIRE(!l.edges.empty());
  for (const auto& e : l.edges) CHECK(e.spline.size() >= 4);
  for (size_t i = 0; i < l.boxes.size(); ++i)
    for (size_t j = i + 1; j < l.boxes.size(); ++j) CHECK(!overlap(l.boxes[i], l.boxes[j]));
}

TEST_CASE("layout: the lane titles and the edge labels lie inside the figure", "[viz]") {
  // The first course example: its inputs sit in the top left corner, where "forward pass →" is
  // drawn, and a label on the curve from `a` hung past the figure's left edge.
  Ran r(
      "a = tensor([1.0, 2.0]); b = tensor([3.0, 4.0]); e = param(tensor([0.5, -1.0]))\n"
      "c = a + b; f = relu(c * e); backward(f.sum())\n");
  viz::LayoutOptions o;
  const viz::GraphLayout l = viz::layout_graph(r.ws.graph(), o);
  REQUIRE(l.backward_lane_top > 0);
  for (const auto& bx : l.boxes) {
    INFO(bx.key);
    CHECK(bx.center.y - bx.height / 2 >= 20.f);  // under the forward lane's title band
  }
  for (const auto& e : l.edges) {
    if (e.link || !e.has_label_pos || e.label.empty()) continue;
    INFO(e.label);
    const float half = 6.f * static_cast<float>(e.label.size()) / 2;
    CHECK(e.label_pos.x - half >= -1.f);
    CHECK(e.label_pos.x + half <= l.width + 1.f);
  }
}

TEST_CASE("layout: a 300-node graph lays out without overlaps", "[viz]") {
  std::string code = "seed(0)\nx = param(4, 4)\n";
  for (int i = 0; i < 150; ++i) code += "x = tanh(x) * 0.9\n";  // written out: a loop would show its last iteration
  Ran r(code);
  const Graph& g = r.ws.graph();
  REQUIRE(g.num_nodes() >= 300);
  const viz::GraphLayout l = viz::layout_graph(g, {});
  CHECK(l.find_node(static_cast<int>(g.num_nodes()) - 1) >= 0);
  int overlaps = 0;
  for (size_t i = 0; i < l.boxes.size(); ++i)
    for (size_t j = i + 1; j < l.boxes.size(); ++j) overlaps += overlap(l.boxes[i], l.boxes[j]);
  CHECK(overlaps == 0);
}

TEST_CASE("export: SVG and PNG through Graphviz", "[viz]") {
  Ran r(kMlp);
  const std::string dot = viz::graph_to_dot(r.ws.graph());
  auto read = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  const std::string dir = std::filesystem::temp_directory_path().string();
  viz::render_dot(dot, "svg", dir + "/opscope_test_export.svg");
  const std::string svg = read(dir + "/opscope_test_export.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("matmul") != std::string::npos);
  viz::render_dot(dot, "png", dir + "/opscope_test_export.png");
  const std::string png = read(dir + "/opscope_test_export.png");
  REQUIRE(png.size() > 1000);
  CHECK(png.substr(1, 3) == "PNG");
  CHECK_THROWS_AS(viz::render_dot(dot, "gif", dir + "/x.gif"), Error);
}

namespace {
// The MLP in a workspace whose session goes on running statements (a :reset, a rollback).
struct LiveMlp {
  Workspace ws;
  WorkspaceScope scope{ws};
  lang::Session session{ws};
  LiveMlp() {
    std::ostringstream out, err;
    const bool ok = session.run(kMlp, "<test>", out, err);
    INFO(err.str());
    REQUIRE(ok);
  }
};
}  // namespace

TEST_CASE("layout: a layout kept while the next is made forgets what a :reset took away", "[viz]") {
  LiveMlp live;
  Workspace& ws = live.ws;
  lang::Session& session = live.session;
  std::ostringstream out, err;
  viz::GraphLayout l = viz::layout_graph(ws.graph(), viz::LayoutOptions{});
  const size_t boxes = l.boxes.size();
  REQUIRE(boxes > 4);
  auto keys = [](const viz::GraphLayout& x) {
    std::vector<std::string> k;
    for (const auto& b : x.boxes) k.push_back(b.key + "|" + b.title + "|" + std::to_string(b.center.x));
    return k;
  };
  const std::vector<std::string> before = keys(l);
  CHECK(viz::forget_missing(l, ws.graph()) == 0);  // nothing went: the layout is untouched
  CHECK(keys(l) == before);
  CHECK(l.boxes.size() == boxes);
  REQUIRE(session.run(":reset", "<test>", out, err));
  CHECK(viz::forget_missing(l, ws.graph()) == static_cast<int>(boxes));
  CHECK(l.boxes.size() == boxes);  // still drawn, dimmed, until the next layout
  for (const auto& b : l.boxes) {
    CHECK(b.gone);
    CHECK(b.node == -1);
    CHECK(b.value == -1);
    CHECK(b.nodes.empty());
  }
  for (int box : l.node_box) CHECK(box == -1);
}

TEST_CASE("layout: a rolled-back statement's boxes are forgotten; the rest keep their nodes", "[viz]") {
  LiveMlp live;
  Workspace& ws = live.ws;
  lang::Session& session = live.session;
  std::ostringstream out, err;
  const viz::GraphLayout before = viz::layout_graph(ws.graph(), viz::LayoutOptions{});
  const Graph::Mark mark = ws.graph().mark();
  // The window lays out while a statement runs; then the statement fails and is rolled back.
  REQUIRE(session.run("extra = relu(h) * 2.0", "<test>", out, err));
  viz::GraphLayout l = viz::layout_graph(ws.graph(), viz::LayoutOptions{});
  REQUIRE(l.boxes.size() > before.boxes.size());
  ws.graph().rollback(mark);
  const int forgotten = viz::forget_missing(l, ws.graph());
  CHECK(forgotten >= 2);  // relu and mul (and the constant's box)
  int gone = 0;
  for (const auto& b : l.boxes) {
    gone += b.gone;
    if (b.gone) CHECK(before.find(b.key) < 0);  // only the rolled-back statement's boxes
    else CHECK(before.find(b.key) >= 0);
    if (b.node >= 0) CHECK(ws.graph().has_node(b.node));
    if (b.value >= 0) CHECK(ws.graph().has_value(b.value));
  }
  CHECK(gone == forgotten);
  for (int id = 0; id < static_cast<int>(l.node_box.size()); ++id)
    if (l.node_box[static_cast<size_t>(id)] >= 0) CHECK(ws.graph().has_node(id));
}

// A long figure wraps like a paragraph (issue 40): rows of forward ops, each with its backward
// boxes beneath it; nothing overlaps, no edge label covers a box or another label.
TEST_CASE("layout: a long figure wrapped into rows keeps each backward box under its forward box", "[viz][fit]") {
  Ran r(script_file(std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/transformer_block.ops"));
  viz::LayoutOptions o;
  const viz::GraphLayout one = viz::layout_graph(r.ws.graph(), o);
  const viz::Point wide_canvas{1000, 1000};  // square: one row of the block is far too wide for it
  REQUIRE(viz::wrapped_zoom(one, 0, wide_canvas) < 0.4f);
  const float width = viz::row_width_to_fit(one, wide_canvas, 0.4f);
  REQUIRE(width > 0);
  REQUIRE(width < one.width);
  const viz::GraphLayout rows = viz::wrap_rows(one, width);
  CHECK(rows.row_lane_tops.size() >= 1);
  CHECK(rows.width < one.width);
  CHECK(rows.height > one.height);
  CHECK(viz::wrapped_zoom(one, width, wide_canvas) > viz::wrapped_zoom(one, 0, wide_canvas));
  REQUIRE(rows.boxes.size() == one.boxes.size());
  for (size_t i = 0; i < rows.boxes.size(); ++i)
    for (size_t j = i + 1; j < rows.boxes.size(); ++j) {
      INFO(rows.boxes[i].key << " and " << rows.boxes[j].key);
      CHECK_FALSE(overlap(rows.boxes[i], rows.boxes[j]));
    }
  for (const auto& b : rows.boxes) {  // in the figure; a backward box below its forward box, in the same row
    CHECK(b.center.x - b.width / 2 >= -1.f);
    CHECK(b.center.x + b.width / 2 <= rows.width + 1.f);
    CHECK(b.center.y + b.height / 2 <= rows.height + 1.f);
    if (b.anchor.empty()) continue;
    const viz::LayoutBox& a = rows.boxes[static_cast<size_t>(rows.find(b.anchor))];
    INFO(b.key << " under " << a.key);
    CHECK(b.center.y > a.center.y);
    CHECK(b.center.y - a.center.y < one.height);
  }
  std::vector<viz::LabelRect> labels;
  for (const auto& e : rows.edges) {
    CHECK(e.spline.size() >= 4);
    if (!e.has_label_pos || e.label.empty() || e.kind != viz::EdgeKind::forward) continue;
    const viz::LabelRect l = viz::label_rect(rows, e, e.label_pos);
    for (const auto& b : rows.boxes) {
      INFO(e.label << " over " << b.key);
      CHECK_FALSE((l.l < b.center.x + b.width / 2 && b.center.x - b.width / 2 < l.r &&
                   l.t < b.center.y + b.height / 2 && b.center.y - b.height / 2 < l.b));
    }
    for (const auto& p : labels) CHECK_FALSE((l.l < p.r && p.l < l.r && l.t < p.b && p.t < l.b));
    labels.push_back(l);
  }
  CHECK(!labels.empty());
  // Wide enough for one row: left as laid out.
  CHECK(viz::row_width_to_fit(one, {one.width * 2, one.height * 2}, 1.f) == 0);
}
