// The metrics panel: one small chart per series a script logs (loss, accuracy, ...), drawn
// while the loop runs, the current step marked with a line, a hover readout of step and value.
#pragma once
#include <imgui.h>

#include <string>

#include "viz/metrics.h"
#include "viz/theme.h"

namespace opscope::viz {

struct MetricsPanelState {
  int charts_drawn = 0;  // last frame's (for the state dump and tests)
  float marker_x = -1;  // screen x of the current-step line in the first chart (-1: none)
};

struct MetricsPanelFrame {
  const MetricLog* log = nullptr;
  const Theme* theme = nullptr;
  bool running = false;  // a statement is still running: say so in the header
};

void draw_metrics_panel(MetricsPanelState& state, const MetricsPanelFrame& f, ImVec2 size);

}  // namespace opscope::viz
