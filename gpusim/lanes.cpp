// The lane scheduler: the threads of a block as fibers (gpusim/fibers.h), run one at a time until
// they reach a barrier, a warp collective or their end; warps' collectives complete when every
// lane of their mask arrived, the barrier when every thread did. A check or an exception in one
// lane stops the block: the other fibers are unwound (their destructors run) where the platform
// can, never left waiting.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "gpusim/fibers.h"
#include "gpusim/state.h"

namespace gpusim {

__thread uint3 g_thread_idx{0, 0, 0};
__thread uint3 g_block_idx{0, 0, 0};
__thread dim3 g_block_dim;
__thread dim3 g_grid_dim;
thread_local const LaneRef* g_lane = nullptr;
thread_local BlockView g_view{};

alignas(256) unsigned char g_shared_arena[kSharedBytes];

namespace {

enum class LaneState : uint8_t { runnable, at_barrier, at_warp, done };

struct Lane : LaneRef {
  LaneState state = LaneState::runnable;
  bool failed = false;  // stopped by a check inside an access hook: its stack is dropped, not unwound
  uint3 tid{};
  const void* site = nullptr;  // the barrier or collective it waits at
  Collective kind = Collective::sync;
  unsigned mask = 0;
  int arg = 0, width = 32;
  uint64_t value = 0, result = 0;
};

struct Block {
  std::vector<Lane> lanes;
  std::exception_ptr error;
};
thread_local Block* g_block = nullptr;

struct SharedSlot {
  const void* key;
  size_t offset;
};
std::vector<SharedSlot> g_slots;
size_t g_shared_used = 0, g_dynamic_bytes = 0;

Lane& running() {
  if (!g_block || !g_lane)
    throw opscope::Error("a CUDA device function was called outside a kernel (simulated device)");
  return *static_cast<Lane*>(const_cast<LaneRef*>(g_lane));
}

void yield(Lane& l) { fiber_yield(l.linear); }

[[noreturn]] void fail(const std::string& what, const std::string& hint) {
  throw opscope::Error("simulated GPU: " + what, hint);
}

std::string dim_text(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

}  // namespace

uint3 thread_of(int linear) {
  const dim3 d = g_view.block_dim;
  return uint3{unsigned(linear) % d.x, (unsigned(linear) / d.x) % d.y, unsigned(linear) / (d.x * d.y)};
}

std::string where(int linear) {
  std::string k = g_view.launch ? g_view.launch->kernel : "?";
  return "kernel " + k + ", block " + dim_text(g_view.block) + ", thread " + dim_text(thread_of(linear));
}

void* shared_slot(const void* key, size_t bytes, size_t align) {
  for (const SharedSlot& s : g_slots)
    if (s.key == key) return g_shared_arena + s.offset;
  const size_t off = (g_shared_used + align - 1) / align * align;
  if (off + bytes > kSharedBytes)
    fail(where(running().linear) + ": the block's shared memory exceeds " + std::to_string(kSharedBytes / 1024) +
             " KiB",
         "use smaller shared arrays");
  g_slots.push_back({key, off});
  g_shared_used = off + bytes;
  return g_shared_arena + off;
}

void* dynamic_shared_base() { return g_shared_arena; }

unsigned warp_lanes_mask() {
  Lane& me = running();
  const int w0 = me.linear / 32 * 32, n = int(g_block->lanes.size());
  unsigned m = 0;
  for (int i = w0; i < w0 + 32 && i < n; ++i)
    if (g_block->lanes[size_t(i)].state != LaneState::done) m |= 1u << (i - w0);
  return m;
}

[[noreturn]] void fail_lane(const std::string& what, const std::string& hint) {
  Lane& me = running();
  if (!g_block->error) g_block->error = std::make_exception_ptr(opscope::Error("simulated GPU: " + what, hint));
  me.failed = true;
  me.state = LaneState::done;
  yield(me);  // the scheduler sees the error and never resumes this lane
  std::abort();
}

// Before a shared-memory store: the lane lets the others run first, so every lane's reads of
// the old value in this epoch (as a warp ahead would still be doing on a GPU) come before the
// store, and a store without a barrier after those reads shows as the write-after-read it is.
void park_before_shared_store() {
  Lane& me = running();
  yield(me);
}

void sync_block(const void* site) {
  Lane& me = running();
  me.state = LaneState::at_barrier;
  me.site = site;  // the kernel's file:line (the stand-in header's default arguments)
  yield(me);
}

uint64_t warp_collective(Collective kind, unsigned mask, uint64_t value, int arg, int width, const void* site) {
  Lane& me = running();
  me.state = LaneState::at_warp;
  me.kind = kind;
  me.mask = mask;
  me.value = value;
  me.arg = arg;
  me.width = width;
  me.site = site;
  yield(me);
  return me.result;
}

namespace {

// Completes warp w's collective when every lane of its mask waits at one; false when none waits.
bool complete_warp(Block& b, int w) {
  const int n = int(b.lanes.size()), w0 = w * 32, w1 = std::min(n, w0 + 32);
  Lane* first = nullptr;
  for (int i = w0; i < w1; ++i)
    if (b.lanes[size_t(i)].state == LaneState::at_warp) {
      first = &b.lanes[size_t(i)];
      break;
    }
  if (!first) return false;
  for (int i = w0; i < w1; ++i) {
    const Lane& l = b.lanes[size_t(i)];
    if (!(first->mask >> (i - w0) & 1u)) continue;
    if (l.state == LaneState::at_warp && (l.site != first->site || l.kind != first->kind))
      fail(where(l.linear) + " waits at a warp collective at " + site_text(l.site) + " while " + where(first->linear) +
               " waits at " + site_text(first->site),
           "every lane of a warp collective's mask must call the same one");
    if (l.state == LaneState::done || l.state == LaneState::at_barrier)
      fail(where(first->linear) + ": the warp collective at " + site_text(first->site) + " never completes: thread " +
               std::to_string(l.linear) + " of its mask " +
               (l.state == LaneState::done ? "has exited" : "waits at a __syncthreads"),
           "the mask of a _sync collective must name only lanes that reach it");
  }
  uint64_t ballot = 0;
  for (int i = w0; i < w1; ++i)
    if (b.lanes[size_t(i)].state == LaneState::at_warp && b.lanes[size_t(i)].value) ballot |= uint64_t(1) << (i - w0);
  for (int i = w0; i < w1; ++i) {
    Lane& l = b.lanes[size_t(i)];
    if (l.state != LaneState::at_warp) continue;
    const int lane = i - w0, width = l.width > 0 && l.width <= 32 ? l.width : 32, base = lane / width * width;
    int src = lane;
    switch (l.kind) {
      case Collective::shfl_xor: src = base + ((lane - base) ^ l.arg) % width; break;
      case Collective::shfl_idx: src = base + ((l.arg % width) + width) % width; break;
      case Collective::shfl_down: src = lane - base + l.arg < width ? lane + l.arg : lane; break;
      case Collective::shfl_up: src = lane - base - l.arg >= 0 ? lane - l.arg : lane; break;
      default: break;
    }
    // A source lane outside the warp or not taking part gives the lane's own value.
    const Lane* s = w0 + src < w1 ? &b.lanes[size_t(w0 + src)] : nullptr;
    l.result = l.kind == Collective::ballot ? ballot : (s && s->state == LaneState::at_warp ? s->value : l.value);
  }
  for (int i = w0; i < w1; ++i)
    if (b.lanes[size_t(i)].state == LaneState::at_warp) b.lanes[size_t(i)].state = LaneState::runnable;
  ++(*g_view.warp_epochs)[size_t(w)];
  return true;
}

// Releases the barrier when every thread waits at the same one; a check error otherwise.
bool release_barrier(Block& b) {
  const Lane* waiting = nullptr;
  const Lane* exited = nullptr;
  for (const Lane& l : b.lanes) {
    if (l.state == LaneState::at_barrier && !waiting) waiting = &l;
    if (l.state == LaneState::done && !exited) exited = &l;
  }
  if (!waiting) return false;
  for (const Lane& l : b.lanes)
    if (l.state == LaneState::at_barrier && l.site != waiting->site)
      fail("divergent __syncthreads: " + where(waiting->linear) + " waits at " + site_text(waiting->site) + ", " +
               where(l.linear) + " at " + site_text(l.site),
           "every thread of a block must reach the same __syncthreads: keep barriers out of conditions that differ "
           "between threads");
  if (exited)
    fail("__syncthreads reached by part of the block: " + where(waiting->linear) + " waits at " +
             site_text(waiting->site) + " but " + where(exited->linear) + " has exited",
         "threads must not return before a __syncthreads the others reach: guard the work, not the barrier");
  for (Lane& l : b.lanes) l.state = LaneState::runnable;
  ++g_view.epoch;
  ++g_view.barriers;
  note_traced_barrier(waiting->site);
  return true;
}

void resume(Lane& l) {
  g_lane = &l;
  g_thread_idx = l.tid;
  fiber_resume(l.linear);
  g_lane = nullptr;
}

struct BlockRun {
  Block* block;
  void (*thread)(void*);
  void* ctx;
};

void lane_main(int i, void* arg) {
  auto* run = static_cast<BlockRun*>(arg);
  Block& b = *run->block;
  try {
    run->thread(run->ctx);
  } catch (...) {
    if (fiber_unwinding()) throw;
    if (!b.error) b.error = std::current_exception();
  }
  b.lanes[size_t(i)].state = LaneState::done;
}

// Runs one block to its end (or its first error, rethrown after every fiber is stopped).
void run_block(Block& b, void (*thread)(void*), void* tctx) {
  for (Lane& l : b.lanes) {
    l.state = LaneState::runnable;
    l.failed = false;
  }
  BlockRun run{&b, thread, tctx};
  fibers_start(int(b.lanes.size()), lane_main, &run);
  const int warps = int((b.lanes.size() + 31) / 32);
  try {
    for (;;) {
      bool ran = false;
      for (Lane& l : b.lanes) {
        if (l.state != LaneState::runnable) continue;
        resume(l);
        ran = true;
        if (b.error) std::rethrow_exception(b.error);
      }
      if (ran) continue;  // collectives and barriers complete once no lane can run
      bool progressed = false;
      for (int w = 0; w < warps; ++w) progressed = complete_warp(b, w) || progressed;
      if (progressed) continue;
      if (!release_barrier(b)) break;  // every lane has exited
    }
  } catch (...) {
    g_lane = nullptr;
    // A lane stopped inside an access hook is not unwound: the hooks are declared nothrow, so no
    // exception may pass their call sites. Its frames hold only the kernel's plain values.
    std::vector<char> failed(b.lanes.size());
    for (size_t i = 0; i < b.lanes.size(); ++i) failed[i] = b.lanes[i].failed;
    fibers_stop(reinterpret_cast<const bool*>(failed.data()), int(failed.size()));
    throw;
  }
}

std::mutex g_launch_mutex;  // one launch at a time: shared memory and the shadow are global

// OPSCOPE_SIM_KERNELS=FILE: the names of the kernels launched in this process, written at exit
// (which of ops/cuda's kernels a test run reached).
struct KernelNames {
  std::set<std::string> names;
  ~KernelNames() {
    const char* path = std::getenv("OPSCOPE_SIM_KERNELS");
    if (!path || names.empty()) return;
    if (FILE* f = std::fopen(path, "a")) {
      for (const std::string& n : names) std::fprintf(f, "%s\n", n.c_str());
      std::fclose(f);
    }
  }
};
KernelNames g_kernel_names;

}  // namespace

void run_launch(const LaunchInfo& info, void (*thread)(void*), void* tctx) {
  std::lock_guard<std::mutex> lock(g_launch_mutex);
  g_kernel_names.names.insert(info.kernel);
  const uint64_t threads = uint64_t(info.block.x) * info.block.y * info.block.z;
  if (threads == 0 || threads > kMaxThreads || info.grid.x == 0 || info.grid.y == 0 || info.grid.z == 0 ||
      info.grid.y > 65535 || info.grid.z > 65535)
    fail("kernel " + std::string(info.kernel) + " launched with grid " +
             dim_text({info.grid.x, info.grid.y, info.grid.z}) + " and block " +
             dim_text({info.block.x, info.block.y, info.block.z}) + " (at " + info.file + ":" +
             std::to_string(info.line) + ")",
         "a block has 1 to 1024 threads; each grid size is at least 1");
  if (info.shared_bytes > kSharedBytes)
    fail("kernel " + std::string(info.kernel) + " asks for " + std::to_string(info.shared_bytes) +
             " bytes of dynamic shared memory",
         "at most " + std::to_string(kSharedBytes) + " bytes per block");
  LaunchRecord rec;
  rec.kernel = info.kernel;
  rec.grid[0] = info.grid.x, rec.grid[1] = info.grid.y, rec.grid[2] = info.grid.z;
  rec.block[0] = info.block.x, rec.block[1] = info.block.y, rec.block[2] = info.block.z;
  std::vector<Access> log;
  std::vector<uint64_t> warp_epochs((threads + 31) / 32, 0);
  g_grid_dim = info.grid;
  g_block_dim = info.block;
  g_view.launch = &info;
  g_view.block_dim = info.block;
  g_view.warp_epochs = &warp_epochs;
  g_view.barriers = 0;
  g_view.flops = 0;
  g_log = g_recording ? &log : nullptr;
  if (g_recording) discard_totals();
  Block b;
  b.lanes.resize(threads);
  for (uint64_t i = 0; i < threads; ++i) {
    b.lanes[i].linear = int(i);
    b.lanes[i].tid = thread_of(int(i));
  }
  g_block = &b;
  struct Reset {
    ~Reset() {
      g_block = nullptr;
      g_lane = nullptr;
      g_log = nullptr;
      g_view.launch = nullptr;
    }
  } reset;
  struct Blocks {
    const LaunchInfo& info;
    Block& b;
    std::vector<Access>& log;
    LaunchRecord& rec;
    uint64_t threads;
    void (*thread_fn)(void*);
    void* thread_ctx;
    std::exception_ptr error;
  } blocks{info, b, log, rec, threads, thread, tctx, nullptr};
  run_as_scheduler(
      [](void* arg) {
        auto& s = *static_cast<Blocks*>(arg);
        try {
          for (unsigned z = 0; z < s.info.grid.z; ++z)
            for (unsigned y = 0; y < s.info.grid.y; ++y)
              for (unsigned x = 0; x < s.info.grid.x; ++x) {
                g_block_idx = {x, y, z};
                g_view.block = {x, y, z};
                ++g_view.epoch;
                g_slots.clear();
                g_dynamic_bytes = (s.info.shared_bytes + 255) / 256 * 256;
                g_shared_used = g_dynamic_bytes;
                s.b.error = nullptr;
                run_block(s.b, s.thread_fn, s.thread_ctx);
                if (g_recording) {
                  if (tracing_block(s.info, g_view.block)) trace_block(s.log);
                  analyse_block(s.log, int(s.threads), s.rec);
                  s.log.clear();
                }
                between_blocks();  // Interrupt (a drawn frame's button, Ctrl-C) stops the launch here
              }
        } catch (...) {
          s.error = std::current_exception();
        }
      },
      &blocks);
  if (blocks.error) {
    // A check that fired fails the statement; while recording, the launch's record keeps what it
    // found (the counters up to the block that stopped), so a report names the hazard too.
    if (g_recording) {
      try {
        std::rethrow_exception(blocks.error);
      } catch (const opscope::Error& e) {
        if (std::string(e.what()).rfind("simulated GPU: ", 0) == 0) rec.hazards.push_back(e.what());
      } catch (...) {}
      finish_record(rec);
      rec.barriers = g_view.barriers;
      rec.flops = g_view.flops;
      add_record(std::move(rec));
    }
    std::rethrow_exception(blocks.error);
  }
  if (g_recording) finish_record(rec);
  rec.barriers = g_view.barriers;
  rec.flops = g_view.flops;
  if (g_recording) add_record(std::move(rec));
}

}  // namespace gpusim
