// The lanes' fibers in the browser (gpusim/fibers.h): Emscripten's fibers, which need Asyncify
// (the build links with -sASYNCIFY): a switch unwinds the running fiber's frames into its Asyncify
// buffer and rewinds the other's. The scheduler runs in a fiber of its own, so a switch between
// it and a lane unwinds a handful of frames, never the whole program's stack (that happens once
// per launch). Lanes left waiting after an error are dropped, not unwound: their stacks are
// reused by the next block and their destructors do not run (kernels hold plain values).
#include <emscripten/emscripten.h>
#include <emscripten/fiber.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <utility>

#include "core/interrupt.h"
#include "gpusim/fibers.h"
#include "gpusim/state.h"

namespace gpusim {

namespace {

constexpr size_t kLaneStackBytes = 64 * 1024;  // the lane's C stack (the kernel's arrays)
constexpr size_t kLaneAsyncifyBytes = 32 * 1024;  // its frames' locals while it waits
constexpr size_t kSchedulerStackBytes = 1 << 20;
constexpr size_t kSchedulerAsyncifyBytes = 64 * 1024;
constexpr size_t kMainAsyncifyBytes = 1 << 20;  // the program's whole stack, once per launch

// One block of memory per purpose, taken on the first launch; the browser commits its pages as
// they are touched.
unsigned char* take(size_t bytes) {
  void* p = std::aligned_alloc(16, bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<unsigned char*>(p);
}

struct Pool {
  unsigned char* lane_stacks = take(kLaneStackBytes * kMaxThreads);
  unsigned char* lane_asyncify = take(kLaneAsyncifyBytes * kMaxThreads);
  unsigned char* scheduler_stack = take(kSchedulerStackBytes);
  unsigned char* scheduler_asyncify = take(kSchedulerAsyncifyBytes);
  unsigned char* main_asyncify = take(kMainAsyncifyBytes);
  std::unique_ptr<emscripten_fiber_t[]> lanes{new emscripten_fiber_t[kMaxThreads]};
  emscripten_fiber_t scheduler{}, main{};
};

Pool& pool() {
  static Pool p;
  return p;
}

LaneMain g_lane_main = nullptr;
void* g_lane_arg = nullptr;

[[noreturn]] void lane_entry(void* index) {
  const int i = int(reinterpret_cast<intptr_t>(index));
  g_lane_main(i, g_lane_arg);
  emscripten_fiber_swap(&pool().lanes[size_t(i)], &pool().scheduler);  // done: never resumed
  std::abort();
}

struct SchedulerCall {
  void (*f)(void*);
  void* arg;
} g_scheduler_call;

// between_blocks(): the scheduler asks the launch's own stack (the main fiber) to take the idle
// turn there, where a frame may suspend through Asyncify as between a loop's steps; what it
// throws (Interrupted) is carried back to the scheduler.
bool g_idle_turn = false;
std::exception_ptr g_idle_error;
double g_next_idle_ms = 0;
constexpr double kIdleEveryMs = 10;  // a switch to the main fiber unwinds the whole program's stack

[[noreturn]] void scheduler_entry(void*) {
  g_scheduler_call.f(g_scheduler_call.arg);
  emscripten_fiber_swap(&pool().scheduler, &pool().main);  // back to the launch: never resumed
  std::abort();
}

}  // namespace

bool in_lane_stacks(uintptr_t a) {
  return a - reinterpret_cast<uintptr_t>(pool().lane_stacks) < kLaneStackBytes * kMaxThreads;
}

void run_as_scheduler(void (*scheduler)(void*), void* arg) {
  Pool& p = pool();
  g_scheduler_call = {scheduler, arg};
  emscripten_fiber_init_from_current_context(&p.main, p.main_asyncify, kMainAsyncifyBytes);
  emscripten_fiber_init(&p.scheduler, scheduler_entry, nullptr, p.scheduler_stack, kSchedulerStackBytes,
                        p.scheduler_asyncify, kSchedulerAsyncifyBytes);
  g_next_idle_ms = emscripten_get_now() + kIdleEveryMs;
  for (;;) {
    emscripten_fiber_swap(&p.main, &p.scheduler);
    if (!g_idle_turn) return;  // the scheduler returned
    g_idle_turn = false;
    try {
      opscope::interrupt::check();
    } catch (...) {
      g_idle_error = std::current_exception();
    }
  }
}

void between_blocks() {
  if (opscope::interrupt::requested()) throw opscope::Interrupted();
  if (emscripten_get_now() < g_next_idle_ms) return;
  Pool& p = pool();
  g_idle_turn = true;
  emscripten_fiber_swap(&p.scheduler, &p.main);
  g_next_idle_ms = emscripten_get_now() + kIdleEveryMs;
  if (g_idle_error) std::rethrow_exception(std::exchange(g_idle_error, nullptr));
}

void fibers_start(int n, LaneMain lane_main, void* arg) {
  Pool& p = pool();
  g_lane_main = lane_main;
  g_lane_arg = arg;
  for (int i = 0; i < n; ++i)
    emscripten_fiber_init(&p.lanes[size_t(i)], lane_entry, reinterpret_cast<void*>(intptr_t(i)),
                          p.lane_stacks + size_t(i) * kLaneStackBytes, kLaneStackBytes,
                          p.lane_asyncify + size_t(i) * kLaneAsyncifyBytes, kLaneAsyncifyBytes);
}

void fiber_resume(int lane) { emscripten_fiber_swap(&pool().scheduler, &pool().lanes[size_t(lane)]); }

void fiber_yield(int lane) { emscripten_fiber_swap(&pool().lanes[size_t(lane)], &pool().scheduler); }

void fibers_stop(const bool*, int) {}

bool fiber_unwinding() { return false; }

}  // namespace gpusim
