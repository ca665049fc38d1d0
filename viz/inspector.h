// The inspector: the selected node's op (doc and formula), attributes, inputs and outputs
// (shape, strides, dtype, device, bytes), values as a table and a heatmap with a colour bar,
// gradients, saved tensors and cost.
#pragma once
#include <functional>
#include <string>

#include "core/graph.h"
#include "viz/graph_layout.h"
#include "viz/theme.h"

namespace opscope::viz {

struct InspectorState {
  int shown_value = -1;  // the value whose numbers are shown (-1: the node's first output)
};

struct InspectorFrame {
  const Graph* graph = nullptr;
  std::string selected;  // box key: "n3", "v5", "s:dense@2" or ""
  const GraphLayout* layout = nullptr;  // the graph view's boxes (a folded call's summary)
  const Theme* theme = nullptr;
  const Fonts* fonts = nullptr;
  // A compiled program's values live in its run, not in the graph: the shell looks them up.
  std::function<Tensor(int value)> live_value;
};

void draw_inspector(InspectorState& s, const InspectorFrame& f);

// A tensor's numbers as a heatmap (diverging colours around 0) with a colour bar; 2-D as is,
// higher ranks show their first 2-D plane, 1-D as one row. Large tensors are sampled.
void draw_heatmap(const Tensor& t, const Theme& th, float max_width);

}  // namespace opscope::viz
