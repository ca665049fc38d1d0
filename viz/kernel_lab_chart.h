// The Kernel Lab's chart: an operator's algorithms side by side (time, GFLOP/s, GB/s) and their
// position on a roofline. Plain data in, ImGui draw lists out; viz never runs a kernel, so the
// rows come measured (CPU) or simulated (the `sim` device, labelled so) from app/.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "viz/theme.h"

namespace opscope::viz {

struct LabChartRow {
  std::string algo;
  std::string where;  // "CPU, measured" or "H100, simulated"
  bool simulated = false;
  bool ok = true;
  std::string error;  // refused, or wrong against the reference
  bool reference = false;
  double max_error = 0;  // against the reference
  double seconds = 0, gflops = 0, gbytes = 0;
  double intensity = 0;  // FLOPs per byte moved (simulated rows: DRAM sectors the counters saw)
};

struct LabChart {
  std::string title;  // "matmul on A 128×128, B 128×128"
  std::string note;  // what is missing (no sim device) or how the numbers were made
  std::vector<LabChartRow> rows;
  double gpu_peak_gflops = 0, gpu_bandwidth_gbs = 0;  // the roofline of the simulated GPU (0: none)
  std::string gpu;
};

// Draws the chart in `size` (0: what is left). Returns the row index clicked, or -1.
int draw_lab_chart(const LabChart& chart, const Theme& theme, ImVec2 size);

}  // namespace opscope::viz
