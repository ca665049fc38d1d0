// `opscope export --svg/--png`: the figure rendered by the Graphviz module (viz/figure_module.h),
// opened on this first use.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "core/graph.h"

namespace opscope::app {

// The figure as the window opens it (viz::window_figure) written as `format` ("svg", "png") to
// `path`. Throws an Error naming what is missing when the module cannot be opened.
void render_window_figure(const Graph& g, const std::vector<int>& only_nodes, const std::set<int>& expanded,
                          const std::string& format, const std::string& path);

}  // namespace opscope::app
