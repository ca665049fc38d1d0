// The figure as the window draws it, written as SVG or PNG: the same boxes, folding, lanes and
// curves, handed to Graphviz with every position pinned (nothing is laid out again), so a
// slide shows what the app shows.
#pragma once
#include <string>

#include "core/graph.h"
#include "viz/graph_layout.h"

namespace opscope::viz {

// What is drawn besides the layout: the theme, and the boxes (selected, current) whose saved
// tensors and links to their forward node are shown, as the window shows them.
struct FigureStyle {
  bool dark = false;
  std::vector<std::string> emphasised;  // box keys
};

// DOT text with each box at its place (pos), each curve given (pos of the edges), the frames
// of unfolded calls and loops, the saved-for-backward badges and the lane titles.
std::string figure_dot(const Graph& g, const GraphLayout& l, const FigureStyle& style = {});

// Renders figure_dot as "svg" or "png" to `path`. Throws opscope::Error on failure.
void render_figure(const Graph& g, const GraphLayout& l, const std::string& format, const std::string& path,
                   const FigureStyle& style = {});

// The figure as the window opens it at its default size (1600 x 1000): both phases in lanes,
// the calls folded that must fold for it to be readable there; `expanded` nodes drawn as the
// ops of their body. For `opscope export`.
GraphLayout window_figure(const Graph& g, const std::vector<int>& only_nodes = {}, const std::set<int>& expanded = {});

}  // namespace opscope::viz
