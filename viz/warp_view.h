// The Kernel Lab's warp view: one request of one block's warp at a time (the simulator's trace,
// plain data): the source line, each lane's address falling into 32-byte sectors (global) or into
// the 32 banks (shared, conflicting lanes marked), the shared tile filling as a heatmap, and the
// counters totalled up to this step. viz draws the trace; it never runs it.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

#include "viz/theme.h"

namespace opscope::viz {

struct WarpLane {
  int lane = 0;
  uint64_t offset = 0;  // bytes: global from its allocation's start, shared from the block's shared memory
  int bytes = 4;
};

struct WarpRequest {
  std::string where;  // "matmul.cu:93"
  std::string source;  // that line's text ("" when the source is not shipped)
  bool shared = false;
  std::string access;  // load, store, atomic
  int site = 0;  // the memory instruction (two on one line differ)
  int warp = 0, phase = 0, allocation = -1;
  uint64_t sectors = 0, wavefronts = 0, words = 0;
  std::vector<WarpLane> lanes;
};

struct WarpTotals {
  uint64_t global_requests = 0, sectors = 0, shared_requests = 0, wavefronts = 0;
  uint64_t site_requests = 0,
           site_cost = 0;  // this step's instruction: its requests so far, their sectors or wavefronts
};

struct WarpView {
  std::string algo, kernel, gpu;
  unsigned block[3] = {1, 1, 1};
  int step = 0, steps = 0;  // the request shown, of how many traced
  uint64_t total_requests = 0;  // the block's, before the trace's bound
  std::string barrier;  // the barrier the block passed last ("" before the first)
  WarpRequest request;
  WarpTotals totals;  // steps 0..step
  std::vector<int> shared_stores;  // per 4-byte shared word: stores up to this step (the tile filling)
};

// Bank of a shared byte offset: 32 banks of 4 bytes.
inline int bank_of(uint64_t offset) { return int(offset / 4 % 32); }

// The step controls are the caller's (app/ notes them for the human-input tests).
void draw_warp_view(const WarpView& v, const Theme& theme, ImVec2 size);

}  // namespace opscope::viz
