// The lanes' fibers on the desktop (gpusim/fibers.h): Boost.Context, a register switch of about
// 20 ns, on stacks cut from one mapping and reused block after block.
#include <sys/mman.h>

#include <boost/context/fiber.hpp>
#include <new>
#include <vector>

#include "core/interrupt.h"
#include "gpusim/fibers.h"
#include "gpusim/state.h"

namespace gpusim {

namespace ctx = boost::context;

namespace {

constexpr size_t kStackBytes = 64 * 1024;

class StackPool {
 public:
  StackPool() {
    void* p = mmap(nullptr, kStackBytes * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<unsigned char*>(p);
    reset();
  }
  ctx::stack_context take() {
    if (free_.empty()) throw std::bad_alloc();
    const int i = free_.back();
    free_.pop_back();
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = base_ + (size_t(i) + 1) * kStackBytes;
    return sc;
  }
  void give(ctx::stack_context& sc) {
    free_.push_back(int((static_cast<unsigned char*>(sc.sp) - base_) / kStackBytes) - 1);
  }
  // After a failed block: stacks of lanes dropped without unwinding are free again.
  void reset() {
    free_.clear();
    for (int i = kMaxThreads - 1; i >= 0; --i) free_.push_back(i);
  }
  bool contains(uintptr_t a) const { return a - reinterpret_cast<uintptr_t>(base_) < kStackBytes * kMaxThreads; }

 private:
  unsigned char* base_ = nullptr;
  std::vector<int> free_;
};

StackPool& stacks() {
  static StackPool pool;
  return pool;
}

struct PoolAllocator {
  ctx::stack_context allocate() { return stacks().take(); }
  void deallocate(ctx::stack_context& sc) noexcept { stacks().give(sc); }
};

struct LaneFiber {
  ctx::fiber self;  // the lane while it waits
  ctx::fiber caller;  // the scheduler while the lane runs
};
thread_local std::vector<LaneFiber> t_fibers;
thread_local bool t_unwinding = false;

}  // namespace

bool in_lane_stacks(uintptr_t a) { return stacks().contains(a); }

void run_as_scheduler(void (*scheduler)(void*), void* arg) { scheduler(arg); }

void fibers_start(int n, LaneMain lane_main, void* arg) {
  t_fibers.clear();
  t_fibers.resize(size_t(n));
  for (int i = 0; i < n; ++i)
    t_fibers[size_t(i)].self =
        ctx::fiber(std::allocator_arg, PoolAllocator{}, [i, lane_main, arg](ctx::fiber&& caller) {
          t_fibers[size_t(i)].caller = std::move(caller);
          lane_main(i, arg);
          return std::move(t_fibers[size_t(i)].caller);
        });
}

void fiber_resume(int lane) {
  LaneFiber& f = t_fibers[size_t(lane)];
  f.self = std::move(f.self).resume();
}

void fiber_yield(int lane) {
  LaneFiber& f = t_fibers[size_t(lane)];
  f.caller = std::move(f.caller).resume();
}

void fibers_stop(const bool* never_unwind, int n) {
  bool dropped = false;
  for (int i = 0; i < n; ++i)
    if (never_unwind[i] && t_fibers[size_t(i)].self) {
      new ctx::fiber(std::move(t_fibers[size_t(i)].self));  // one pointer, deliberately never destroyed
      dropped = true;
    }
  t_unwinding = true;
  for (LaneFiber& f : t_fibers) f.self = ctx::fiber();  // unwinds the lanes still waiting
  t_unwinding = false;
  if (dropped) stacks().reset();
}

bool fiber_unwinding() { return t_unwinding; }

// The scheduler runs in place, on the stack the launch was called from: the idle hook may draw there.
void between_blocks() { opscope::interrupt::check(); }

}  // namespace gpusim
