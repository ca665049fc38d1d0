// The symbol the opscope command opens libopscope_figures.so for: its table (figure_module.h).
#include "opscope_abi.h"
#include "viz/figure_export.h"
#include "viz/figure_module.h"

namespace {

void render_window_figure(const opscope::Graph& g, const std::vector<int>& only_nodes, const std::set<int>& expanded,
                          const std::string& format, const std::string& path) {
  opscope::viz::render_figure(g, opscope::viz::window_figure(g, only_nodes, expanded), format, path);
}

}  // namespace

extern "C" const opscope::viz::FigureModule* opscope_figure_module() {
  static const opscope::viz::FigureModule table{{opscope::viz::kFigureModuleInterface, OPSCOPE_ABI_ID},
                                                &render_window_figure};
  return &table;
}
