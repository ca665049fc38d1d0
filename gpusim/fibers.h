// The lanes' fibers, one implementation per platform: Boost.Context on the desktop
// (gpusim/fibers_desktop.cpp), Emscripten's Asyncify fibers in the browser
// (platform/web/gpusim_fibers_web.cpp). The scheduler (gpusim/lanes.cpp) sees only this.
#pragma once

namespace gpusim {

using LaneMain = void (*)(int lane, void* arg);

// Runs scheduler(arg) where it can switch to and from lanes cheaply: in place on the desktop; in a
// fiber of its own in the browser, so that a switch unwinds that fiber's few frames and not the
// whole program's stack (Asyncify saves every frame between the switch and the stack's bottom).
// scheduler must not throw.
void run_as_scheduler(void (*scheduler)(void*), void* arg);

// Makes lanes 0..n-1 fibers that each run lane_main(i, arg) on their first resume.
void fibers_start(int n, LaneMain lane_main, void* arg);
void fiber_resume(int lane);  // from the scheduler: runs the lane until it yields or returns
void fiber_yield(int lane);  // from the lane: back to the scheduler
// After an error: the lanes still suspended are unwound where the platform can (the desktop:
// their destructors run) and dropped otherwise; a lane marked in `never_unwind` (stopped inside an
// access hook, through which no exception may pass) is dropped.
void fibers_stop(const bool* never_unwind, int n);
// True while fibers_stop unwinds a lane: its catch-all must let that through.
bool fiber_unwinding();
// From the scheduler between two blocks (no lane waits): the front end's idle turn, as a long
// statement's loop gives it (core/interrupt.h check(): a window draws a frame and reads its
// Interrupt button), so a long launch can be stopped; throws Interrupted once one was requested.
void between_blocks();

}  // namespace gpusim
