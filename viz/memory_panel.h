// The memory panel: live bytes after every step, stacked by category (parameters, inputs,
// activations, saved for backward, gradients, workspace, temporaries), the current step and
// the peak marked. Numbers are the allocator's, carried by the executor's StepEvents.
#pragma once
#include <imgui.h>

#include <vector>

#include "core/executor.h"
#include "viz/theme.h"

namespace opscope::viz {

struct MemoryPoint {
  int64_t step;
  int node;
  CategoryBytes bytes;
};
// One point per step event (memory after the step).
std::vector<MemoryPoint> memory_series(const std::vector<StepEvent>& events);

// A line over the chart: another run's total bytes after each of its steps (the same program
// with recomputation switched the other way, measured in a scratch workspace).
struct MemoryOverlay {
  std::string label;
  std::vector<int64_t> totals;
  bool dashed = false;
};

struct MemoryPanelFrame {
  const std::vector<StepEvent>* events = nullptr;
  const CategoryBytes* live_now = nullptr;  // the tracker's live bytes now (shown in the legend)
  const Theme* theme = nullptr;
  int64_t current_step = -1;  // marked with a line
  const std::vector<MemoryOverlay>* overlays = nullptr;  // drawn over the stacked areas
  size_t total_steps = 0;  // a run being stepped: the x axis spans all its steps from the start
};

void draw_memory_panel(const MemoryPanelFrame& f, ImVec2 size);

}  // namespace opscope::viz
