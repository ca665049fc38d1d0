#include "app/figure_module.h"

#include "core/error.h"
#include "core/module_file.h"
#include "opscope_abi.h"
#include "viz/figure_module.h"

namespace opscope::app {

namespace {

constexpr const char* kModuleName = "libopscope_figures.so";
constexpr const char* kEnvVar = "OPSCOPE_FIGURES_MODULE";  // names another copy of it

}  // namespace

void render_window_figure(const Graph& g, const std::vector<int>& only_nodes, const std::set<int>& expanded,
                          const std::string& format, const std::string& path) {
  std::string why;
  static const viz::FigureModule* module = nullptr;  // the command line's: one thread
  if (!module)
    module = open_module_table<viz::FigureModule>(kModuleName, kEnvVar, OPSCOPE_FIGURES_BUILT_MODULE,
                                                  OPSCOPE_FIGURE_MODULE_ENTRY, viz::kFigureModuleInterface,
                                                  OPSCOPE_ABI_ID, why);
  if (!module)
    throw Error("cannot render the figure: " + why, module_hint(kModuleName, kEnvVar) + "; --dot needs no Graphviz");
  module->render_window_figure(g, only_nodes, expanded, format, path);
}

}  // namespace opscope::app
