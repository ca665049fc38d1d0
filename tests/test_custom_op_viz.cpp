// An @op's node in the figure: expanded, its body's ops are boxes inside a frame named after
// the node, wired to the node's inputs and to the readers of its outputs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "core/body.h"
#include "tests/lab.h"
#include "tests/swish_op.h"
#include "viz/export.h"
#include "viz/graph_layout.h"
#include "viz/graphviz.h"

using namespace opscope;
using opscope::test::Lab;

namespace {
const std::string kProgram = std::string(opscope::test::kSwishOp) + R"ops(
w = param(randn(3, 4))
h = swish(randn(2, 3) @ w)
loss = relu(h).sum()
backward(loss)
)ops";
}  // namespace

TEST_CASE("layout: an expanded @op shows its body's ops in a frame, wired in and out", "[viz][op]") {
  Lab lab;
  lab.ok(kProgram);
  const Graph& g = lab.ws.graph();
  viz::LayoutOptions folded;
  const viz::GraphLayout plain = viz::layout_graph(g, folded);
  REQUIRE(plain.find("n1") >= 0);
  CHECK(plain.find("n1.1") < 0);
  viz::LayoutOptions o;
  o.expanded = {1};
  const viz::GraphLayout L = viz::layout_graph(g, o);
  CHECK(L.find("n1") < 0);
  for (const char* key : {"n1.0", "n1.1", "n1.2"}) {
    INFO(key);
    REQUIRE(L.find(key) >= 0);
    CHECK(L.boxes[static_cast<size_t>(L.find(key))].node == 1);
  }
  CHECK(L.boxes[static_cast<size_t>(L.find("n1.1"))].subtitle == "s");
  CHECK(L.find_node(1) == L.find("n1.2"));  // the box making its output stands for the node
  bool frame = false;
  for (const auto& c : L.clusters) frame = frame || (c.node == 1 && c.scope == "#1 swish");
  CHECK(frame);
  // matmul's output flows into the body's first mul; relu reads what the body's last mul makes.
  auto edge = [&](const std::string& from, const std::string& to) {
    for (const auto& e : L.edges)
      if (!e.link && e.from == L.find(from) && e.to == L.find(to)) return true;
    return false;
  };
  CHECK(edge("n0", "n1.0"));
  CHECK(edge("n0", "n1.2"));  // x * s reads x too
  CHECK(edge("n1.1", "n1.2"));
  CHECK(edge("n1.2", "n2"));
  // Every box inside the frame, and the frame's boxes do not overlap.
  for (size_t i = 0; i < L.boxes.size(); ++i)
    for (size_t j = i + 1; j < L.boxes.size(); ++j) {
      const auto &a = L.boxes[i], &b = L.boxes[j];
      CHECK_FALSE((std::abs(a.center.x - b.center.x) * 2 < a.width + b.width - 0.5f &&
                   std::abs(a.center.y - b.center.y) * 2 < a.height + b.height - 0.5f));
    }
  // The backward node expands too.
  int bw = -1;
  for (const Node& n : g.nodes())
    if (n.op->name == "swish_backward") bw = n.id;
  REQUIRE(bw >= 0);
  o.expanded = {1, bw};
  const viz::GraphLayout both = viz::layout_graph(g, o);
  CHECK(both.find("n" + std::to_string(bw) + ".0") >= 0);
}

TEST_CASE("export: an expanded @op renders through Graphviz", "[viz][op]") {
  Lab lab;
  lab.ok(kProgram);
  std::vector<int> all;
  std::set<int> expand;
  for (const Node& n : lab.ws.graph().nodes()) {
    all.push_back(n.id);
    if (node_body(lab.ws.graph(), n)) expand.insert(n.id);
  }
  CHECK(expand.size() == 2);
  const std::string dot = viz::graph_to_dot(lab.ws.graph(), all, expand);
  const auto svg = std::filesystem::temp_directory_path() / "opscope_custom_op.svg";
  viz::render_dot(dot, "svg", svg.string());
  CHECK(std::filesystem::file_size(svg) > 1000);
  std::filesystem::remove(svg);
}
