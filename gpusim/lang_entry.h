// The simulator's entry for kernels that are not compiled C++: opscope's language `@kernel`s
// (app/lang/kernel_sim.cpp). Such a kernel runs through the same launch (run_launch: lanes as
// fibers, barriers, warp collectives), the same access checks and counters as ops/cuda's kernels;
// only its sites are source positions of the student's file and its memory comes from here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "gpusim/lanes.h"
#include "gpusim/report.h"

namespace gpusim {

// Global memory as cudaMalloc gives it (256-byte aligned, a gap after each block); null when full.
void* device_alloc(size_t bytes);
void device_free(void* p);
// The block's shared memory (the arena every block reuses), and how much of it a block may use.
unsigned char* shared_memory();
size_t shared_memory_bytes();
// One load, store or atomic of the running lane at `site` (source_site(file, line)): checked
// (bounds, alignment, shared-memory races) and counted as an instrumented kernel's access is. A
// check that fires stops the lane here and fails the launch.
void lane_access(uintptr_t addr, unsigned bytes, AccessKind kind, const void* site);
// "kernel k, block (x,y,z), thread (x,y,z)" of the running lane (for a check of the caller's own).
std::string running_lane_text();
int running_lane();  // the running lane's index in its block
// After a launch failed: the lane the scheduler ran last (the one a lane's check stopped; for a
// barrier's check, the last to arrive), from the built-in variables the scheduler set for it.
int last_resumed_lane();
// FLOPs the caller counted (the launch's record adds them).
void add_flops(uint64_t n);
// While set, each site's costliest request names its first and last lanes' addresses with it
// (global or shared memory; "" leaves one unnamed): "Bt[0, 3]" for the front end's arrays. Set
// around a launch (the arrays must be alive when it ends); cleared with an empty function.
void set_address_namer(std::function<std::string(uintptr_t addr, bool shared)> namer);

}  // namespace gpusim
