// GUI speed: Graphviz layout of ~300-node graphs (target <= 200 ms, cached afterwards) and the
// CPU time of one frame (building every panel's draw lists, no GPU: ImGui runs without a
// window here, so this needs no display). Target <= 8 ms per frame.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <vector>

#include "app/gui/gui_state.h"
#include "app/lang/session.h"
#include "bench/bench_util.h"
#include "core/workspace.h"
#include "viz/graph_layout.h"

using namespace opscope;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Case {
  const char* name;
  const char* code;
};

}  // namespace

int main() {
  const Case cases[] = {
      {"chain fwd 300", "seed(0)\nx = param(4, 4)\nfor i in range(150):\n    x = tanh(x) * 0.9\n"},
      {"mlp 34 layers f+b",
       "seed(0)\nx = randn(8, 16)\nh = x\nfor i in range(34):\n    w = param(16, 16)\n    h = relu(h @ w + 0.1)\n"
       "loss = h.sum()\nbackward(loss, retain_graph=True)\n"},
  };
  bench::print_build_info();
  std::printf("GUI bench: CPU time per frame (building ImGui draw lists, no GPU), median of 60 frames\n");
  std::printf("%-18s %6s %6s %10s %12s %12s %12s %12s\n", "graph", "nodes", "boxes", "layout ms", "view alone",
              "UI (fit)", "UI zoom .6", "UI zoom 1");
  for (const auto& c : cases) {
    Workspace ws;
    WorkspaceScope scope(ws);
    lang::Session session(ws);
    std::ostringstream out, err;
    if (!session.run(c.code, "<bench>", out, err)) {
      std::fprintf(stderr, "%s", err.str().c_str());
      return 1;
    }
    // Layout: median of 5 (the view caches it; this is the cost when the structure changes).
    std::vector<double> lt;
    viz::GraphLayout layout;
    for (int i = 0; i < 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      layout = viz::layout_graph(ws.graph(), {});
      lt.push_back(ms_since(t0));
    }

    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.f / 60.f;
    app::GuiState s;
    s.ws = &ws;
    s.session = &session;
    s.log = std::make_unique<viz::StepLog>(ws.executor());
    s.fonts = viz::load_fonts(1.f);
    unsigned char* pixels;
    int w, h;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // the atlas, as the renderer would upload it
    viz::apply_style(false, 1.f);
    // zoom > 0: that zoom, centred on the middle of the layout; 0: the whole graph (Fit).
    auto frames = [&](int n, float zoom) {
      std::vector<double> t;
      for (int i = 0; i < n; ++i) {
        if (zoom > 0) {
          s.graph.zoom = zoom;
          const ImVec2 c0 = s.graph.canvas_min, c1 = s.graph.canvas_max;
          s.graph.pan = ImVec2((c1.x - c0.x) * 0.5f - s.graph.layout.width * 0.5f * zoom,
                               (c1.y - c0.y) * 0.5f - s.graph.layout.height * 0.5f * zoom);
        } else {
          s.graph.fit_all = true;
        }
        s.stats.time = i / 60.0;
        auto t0 = std::chrono::steady_clock::now();
        ImGui::NewFrame();
        app::draw_ui(s);
        ImGui::Render();
        t.push_back(ms_since(t0));
      }
      return median(t);
    };
    frames(5, 0);  // first frames lay out and fit
    const double full = frames(60, 0);
    // The graph view alone: a window holding only it.
    std::vector<double> vt;
    viz::GraphViewFrame gf;
    gf.graph = &ws.graph();
    gf.theme = &viz::theme(false);
    gf.fonts = &s.fonts;
    for (int i = 0; i < 60; ++i) {
      gf.time = i / 60.0;
      auto t0 = std::chrono::steady_clock::now();
      ImGui::NewFrame();
      ImGui::SetNextWindowPos(ImVec2(0, 0));
      ImGui::SetNextWindowSize(io.DisplaySize);
      ImGui::Begin("view");
      viz::draw_graph_view(s.graph, gf);
      ImGui::End();
      ImGui::Render();
      vt.push_back(ms_since(t0));
    }
    const int vtx_fit = ImGui::GetDrawData()->TotalVtxCount;
    const float fit_zoom = s.graph.zoom;
    const double mid = frames(60, 0.6f);
    const int vtx_mid = ImGui::GetDrawData()->TotalVtxCount;
    const double zoomed = frames(60, 1.0f);
    const double worst = std::max({median(vt), full, mid, zoomed});
    std::printf("%-18s %6zu %6zu %10.1f %12.2f %12.2f %12.2f %12.2f   layout %s, frame %s\n", c.name,
                ws.graph().num_nodes(), layout.boxes.size(), median(lt), median(vt), full, mid, zoomed,
                bench::verdict(median(lt) <= 200), bench::verdict(worst <= 8));
    std::printf("%-18s vertices: %d at fit (zoom %.2f), %d at zoom 0.6\n", "", vtx_fit, fit_zoom, vtx_mid);
    s.log.reset();
    ImGui::DestroyContext();
  }
  std::printf("targets: layout <= 200 ms, frame <= 8 ms\n");
  return 0;
}
