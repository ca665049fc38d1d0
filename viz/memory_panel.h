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

struct MemoryPanelFrame {
  const std::vector<StepEvent>* events = nullptr;
  const CategoryBytes* live_now = nullptr;  // the tracker's live bytes now (shown in the legend)
  const Theme* theme = nullptr;
  int64_t current_step = -1;  // marked with a line
};

void draw_memory_panel(const MemoryPanelFrame& f, ImVec2 size);

}  // namespace opscope::viz
