// The graph figure's readability: edge crossings, total edge length and edges drawn across
// boxes, for the README's MLP (tests/gui/mlp.ops, the screenshot's script), the CNN of lesson 10
// and a Transformer block (assets/examples/transformer_block.ops), forward and backward shown.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "app/lang/session.h"
#include "app/lesson/lesson.h"
#include "bench/bench_util.h"
#include "core/workspace.h"
#include "viz/figure_export.h"
#include "viz/graph_layout.h"
#include "viz/layout_metrics.h"

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
  std::printf("%-18s %-8s %6s %6s %6s %10s %12s %10s %10s %10s\n", "graph", "layout", "nodes", "boxes", "edges", "crossings",
              "edge length", "thru box", "size", "layout ms");
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
      std::printf("%-18s %-8s %6zu %6d %6d %10d %12.0f %10d %10s %10.1f\n", c.name.c_str(), row.layout, ws.graph().num_nodes(), m.boxes,
                  m.edges, m.crossings, m.edge_length, m.through_boxes, size, ms);
    }
  }
  return 0;
}
