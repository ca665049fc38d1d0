// The graph figure's readability: edge crossings, total edge length and edges drawn across
// boxes, for the README's MLP (tests/gui/mlp.ops, the screenshot's script), the CNN of lesson 10
// and a Transformer block (assets/examples/transformer_block.ops), forward and backward shown.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "app/lang/session.h"
#include "app/lesson/lesson.h"
#include "bench/bench_util.h"
#include "core/workspace.h"
#include "viz/figure_export.h"
#include "viz/graph_layout.h"
#include "viz/layout_job.h"
#include "viz/layout_metrics.h"
#include "viz/layout_plan.h"
#include "viz/scope_layout.h"

using namespace opscope;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Lesson 10's first cell: the small CNN trained for one step.
std::string lesson10_cnn() {
  const lesson::Lesson l = lesson::load_lesson(std::string(OPSCOPE_SOURCE_DIR) + "/lessons/en/10-map.md");
  for (const auto& b : l.blocks)
    if (b.kind == lesson::Block::Kind::cell) return b.text;
  return {};
}

struct Case {
  std::string name, code;
};

// A model's scope as dot sees it: a chain of n ops (a layer's weight above each, in its column),
// a residual edge over every four, and with `frames` every six ops in a frame of dot's own.
viz::ScopeGraph chain(int n, bool frames) {
  viz::ScopeGraph g;
  for (int i = 0; i < n; ++i) {
    if (frames && i % 6 == 0) g.clusters.push_back({"layer_" + std::to_string(i / 6) + "()  [fold]", -1});
    const int op = static_cast<int>(g.items.size());
    g.items.push_back(
        {"n" + std::to_string(i), viz::ScopeItem::box, 130, 44, frames ? static_cast<int>(g.clusters.size()) - 1 : -1});
    g.items.push_back(
        {"w" + std::to_string(i), viz::ScopeItem::box, 90, 40, frames ? static_cast<int>(g.clusters.size()) - 1 : -1});
    g.edges.push_back({op + 1, op, "[768, 768] f32", false});
    if (!frames) g.same_column.push_back({op + 1, op});
    if (i > 0) g.edges.push_back({op - 2, op, "[1, 197, 768] f32", false});
    if (i >= 4 && i % 4 == 0) g.edges.push_back({op - 8, op, "[1, 197, 768] f32", false});
  }
  return g;
}

// The scope's layout as a figure's boxes and curves, to count its crossings.
viz::GraphLayout as_figure(const viz::ScopeGraph& g, const viz::ScopeLayout& l) {
  viz::GraphLayout f;
  for (size_t i = 0; i < g.items.size(); ++i) {
    viz::LayoutBox b;
    b.key = g.items[i].key;
    b.center = l.centers[i];
    b.width = g.items[i].width;
    b.height = g.items[i].height;
    f.boxes.push_back(b);
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    viz::LayoutEdge e;
    e.from = g.edges[i].from;
    e.to = g.edges[i].to;
    e.spline = l.splines[i];
    f.edges.push_back(e);
  }
  f.width = l.width;
  f.height = l.height;
  return f;
}

// dot's time against the size of the graph it lays out, with its defaults and with fewer passes
// (what the figure of a model can be split into: no run bigger than a call's).
void dot_by_size() {
  struct Setting {
    const char* name;
    std::vector<std::pair<std::string, std::string>> attributes;
  };
  const Setting settings[] = {{"defaults", {}},
                              {"nslimit=2", {{"nslimit", "2"}, {"nslimit1", "2"}}},
                              {"mclimit=0.3", {{"mclimit", "0.3"}}},
                              {"searchsize=5", {{"searchsize", "5"}}},
                              {"remincross=0", {{"remincross", "false"}}}};
  std::printf("\ndot's time by the size of one run (a chain of ops, weights above, a residual edge over every 4)\n");
  std::printf("%-6s %-7s %6s", "ops", "frames", "boxes");
  for (const Setting& st : settings) std::printf(" %13s", st.name);
  std::printf("   (ms, crossings)\n");
  for (const bool frames : {false, true})
    for (const int n : {12, 25, 50, 100, 200, 400}) {
      viz::ScopeGraph g = chain(n, frames);
      std::printf("%-6d %-7s %6zu", n, frames ? "yes" : "no", g.items.size());
      for (const Setting& st : settings) {
        g.dot_attributes = st.attributes;
        const auto t0 = bench::now_s();
        const viz::ScopeLayout l = viz::lay_out_scope(g);
        const double ms = (bench::now_s() - t0) * 1e3;
        std::printf(" %7.0f %5d", ms, viz::measure_layout(as_figure(g, l)).crossings);
        std::fflush(stdout);
      }
      std::printf("\n");
    }
}

// A model's figure with every call unfolded: one dot run with dot's own nested frames (as the
// window laid out before issue 31) against a run per call (scope_tree.h), from scratch and after
// one more call is folded (the others from the cache).
void model_whole_or_by_call() {
  const std::string path = std::string(OPSCOPE_SOURCE_DIR) + "/tests/models/vit_b_16_tiny.onnx";
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session session(ws);
  std::ostringstream out, err;
  if (!session.run(":mode static\nm = load_onnx(\"" + path + "\")\nx = input(\"x\", [1, 3, 32, 32])\ny = m(x)\n",
                   "<bench>", out, err)) {
    std::fprintf(stderr, "%s", err.str().c_str());
    return;
  }
  std::printf("\nViT-B/16's shape (12 layers, tests/models/vit_b_16_tiny.onnx), %zu nodes, every call unfolded\n",
              ws.graph().num_nodes());
  std::printf("%-28s %6s %7s %10s %12s\n", "layout", "boxes", "frames", "dot runs", "ms");
  for (const bool whole : {true, false}) {
    viz::LayoutOptions o;
    o.flat_limit = whole ? 1 << 30 : o.flat_limit;
    auto cache = std::make_shared<viz::ScopeCache>();
    const auto t0 = bench::now_s();
    viz::FigureJob job(viz::plan_figure(ws.graph(), o), cache);
    job.run_all();
    const viz::GraphLayout l = job.take();
    const double ms = (bench::now_s() - t0) * 1e3;
    std::printf("%-28s %6zu %7zu %10d %12.0f\n", whole ? "one dot run (dot's frames)" : "a dot run per call",
                l.boxes.size(), l.clusters.size(), cache->total_runs(), ms);
    if (whole) continue;
    o.folded = {"encoder/layers/encoder_layer_7"};  // one call folds: its frame and the frames around it again
    const int runs = cache->total_runs();
    const auto t1 = bench::now_s();
    viz::FigureJob again(viz::plan_figure(ws.graph(), o), cache);
    again.run_all();
    std::printf("%-28s %6zu %7s %10d %12.0f\n", "  then one call folded", again.take().boxes.size(), "",
                cache->total_runs() - runs, (bench::now_s() - t1) * 1e3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --png DIR: also draw each figure (both layouts) to DIR, to look at.
  const std::string png_dir = argc == 3 && std::string(argv[1]) == "--png" ? argv[2] : "";
  const std::string src = OPSCOPE_SOURCE_DIR;
  const Case cases[] = {{"README MLP", read_file(src + "/tests/gui/mlp.ops") + "\n:step all\n"},
                        {"lesson 10 CNN", lesson10_cnn()},
                        {"Transformer block", read_file(src + "/assets/examples/transformer_block.ops")}};
  bench::print_build_info();
  std::printf("Graph figure, forward and backward shown (layout units: pixels at zoom 1)\n");
  std::printf("%-18s %-8s %6s %6s %6s %10s %12s %10s %10s %10s\n", "graph", "layout", "nodes", "boxes", "edges",
              "crossings", "edge length", "thru box", "size", "layout ms");
  for (const auto& c : cases) {
    Workspace ws;
    WorkspaceScope scope(ws);
    lang::Session session(ws);
    std::ostringstream out, err;
    if (!session.run(c.code, c.name, out, err)) {
      std::fprintf(stderr, "%s: %s", c.name.c_str(), err.str().c_str());
      return 1;
    }
    // Before: one dot layout of both phases, every edge drawn (as on main). Now: the lanes, at
    // rest (saved-tensor edges shown only for the selected or current step) and with them.
    struct Row {
      const char* layout;
      bool lanes, with_saved;
    };
    for (const Row& row : {Row{"dot", false, true}, Row{"lanes", true, false}, Row{"lanes+s", true, true}}) {
      viz::LayoutOptions o;
      o.lanes = row.lanes;
      const auto t0 = bench::now_s();
      const viz::GraphLayout l = viz::layout_graph(ws.graph(), o);
      const double ms = (bench::now_s() - t0) * 1e3;
      const viz::LayoutMetrics m = viz::measure_layout(l, row.with_saved);
      if (!png_dir.empty() && !(row.lanes && row.with_saved)) {
        std::string file = c.name + (row.lanes ? "_lanes" : "_dot") + ".png";
        for (auto& ch : file) ch = ch == ' ' ? '_' : ch;
        viz::FigureStyle style;
        if (row.with_saved || !row.lanes)
          for (const auto& b : l.boxes) style.emphasised.push_back(b.key);
        viz::render_figure(ws.graph(), l, "png", png_dir + "/" + file, style);
      }
      char size[32];
      std::snprintf(size, sizeof size, "%.0fx%.0f", m.width, m.height);
      std::printf("%-18s %-8s %6zu %6d %6d %10d %12.0f %10d %10s %10.1f\n", c.name.c_str(), row.layout,
                  ws.graph().num_nodes(), m.boxes, m.edges, m.crossings, m.edge_length, m.through_boxes, size, ms);
    }
  }
  dot_by_size();
  model_whole_or_by_call();
  return 0;
}
