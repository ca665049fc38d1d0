// Graphviz as a module, libopscope_figures.so: layout and rendering (viz/graphviz.cpp and the
// files built on it) with libgvc, libcgraph and the layout plugins under them. The window module
// links it; the opscope command opens it with dlopen for `export --svg/--png` only: Graphviz's
// libraries linked into the executable cost ~1.6 ms of every start-up. Its calls into the
// engine bind to the executable, which exports opscope's symbols (cmake/extension_exports.txt).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/module_file.h"

namespace opscope::viz {

// Bumped whenever the table changes.
constexpr int kFigureModuleInterface = 1;

struct FigureModule : ModuleTableHead {
  // window_figure(g, only_nodes, expanded) rendered as `format` ("svg", "png") to `path`.
  void (*render_window_figure)(const Graph& g, const std::vector<int>& only_nodes, const std::set<int>& expanded,
                               const std::string& format, const std::string& path) = nullptr;
};

#define OPSCOPE_FIGURE_MODULE_ENTRY "opscope_figure_module"

}  // namespace opscope::viz
