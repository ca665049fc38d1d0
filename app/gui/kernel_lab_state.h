// The Kernel Lab panel's state: the operator and sizes measured, the chart's rows (CPU measured,
// GPU simulated on `sim`), and the warp view's trace and step. Filled by lab_open / lab_open_warp
// (they run the measurements outside a frame, through run_busy, so the window keeps drawing);
// read by the panel (kernel_lab_panel.cpp) and the state JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "viz/kernel_lab_chart.h"
#include "viz/warp_view.h"

namespace opscope::app {

struct GuiState;

struct WarpTrace {
  std::string algo, kernel;
  unsigned block[3] = {1, 1, 1};
  std::vector<std::string> barriers;  // each barrier's file:line, in the order passed
  std::vector<viz::WarpRequest> requests;  // in the order the block's warps issue them
  uint64_t total_requests = 0;
  int step = 0;
  std::string error;  // the kernel could not be traced (no sim, no such algorithm, a check fired)
};

struct KernelLabState {
  bool opened = false;  // the tab exists (after the first lab_open)
  bool bring_forward = false;  // select the tab in the next frame
  std::string op;
  std::vector<int64_t> sizes;
  std::string gpu = "H100";  // the preset the simulated time bounds are for
  bool sim_available = false;
  viz::LabChart chart;  // title and note in English (the state JSON); drawn through lab_chart_shown
  std::string description;  // "a 64×64, b 64×64"
  enum class Note { none, no_sim, simulated, sim_failed } note = Note::none;
  std::string note_detail;  // why there is no sim, or why it failed
  std::string error;  // the op could not be measured at all
  WarpTrace warp;
  viz::WarpView view;  // the warp view at warp.step (made by lab_set_step)
  int frames_drawn = 0;
};

constexpr size_t kWarpTraceMaxRequests =
    8192;  // one block's requests kept (about 5 MB at most): a 32x32 tiled matmul block at 64 makes 4384

// Measures every algorithm of `op` at `sizes` ("" sizes: the op's defaults). Call outside a frame.
void lab_open(GuiState& s, const std::string& op, const std::vector<int64_t>& sizes);
// Traces `algo`'s first launch on sim (block (0,0,0)) at the lab's op and sizes; step 0 shown.
void lab_open_warp(GuiState& s, const std::string& algo);
// The warp view of the last `@kernel` launched in the language (its first block, its own lines).
void lab_open_language_kernel(GuiState& s);
// Moves the warp view: by one request, or to the first request after the next barrier.
void lab_step(KernelLabState& lab, int delta);
void lab_step_to_next_barrier(KernelLabState& lab);
void lab_set_step(KernelLabState& lab, int step);
// From inside a frame (a lesson's directive, a click): lab_open once the frame is drawn.
void lab_open_after_frame(GuiState& s, const std::string& op, const std::vector<int64_t>& sizes);
// "lab OP SIZE...", "lab warp ALGO", "lab step [N|barrier|back]", "lab gpu T4" (scripted actions).
void lab_action(GuiState& s, const std::string& args);
// {"op", "sizes", "gpu", "sim", "algos": [...], "warp_view": {...}} for the state JSON.
std::string lab_state_json(const KernelLabState& lab);
// [kernel_lab_panel.cpp] the tab's contents.
void draw_kernel_lab(GuiState& s);

// The chart's title and note in the window's language (the panel draws a copy each frame).
void lab_title_and_note(const KernelLabState& lab, viz::LabChart& chart);

}  // namespace opscope::app
