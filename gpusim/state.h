// What the simulator's parts share inside gpusim/: the running block and lane, the memory
// spaces, the access log and the launch records. Not seen by the kernels.
#pragma once
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "gpusim/lanes.h"
#include "gpusim/report.h"

namespace gpusim {

constexpr int kMaxThreads = 1024;
constexpr size_t kSharedBytes = 228 * 1024;  // an H100 SM's most per block

enum class Space : uint8_t { global, shared, local };

struct Access {
  const void* site;  // the return address into the kernel's code
  uintptr_t addr;
  uint16_t lane;
  uint8_t bytes;
  AccessKind kind;
  Space space;
};

// The running lane: set by the scheduler; null outside kernels (the hooks then do nothing).
struct LaneRef {
  int linear;  // index of the thread in its block
};
extern thread_local const LaneRef* g_lane;

// Shared memory: one arena, reused by every block (blocks run one after another).
extern unsigned char g_shared_arena[kSharedBytes];
inline unsigned char* shared_base() { return g_shared_arena; }
inline bool in_shared(uintptr_t a) { return a - reinterpret_cast<uintptr_t>(g_shared_arena) < kSharedBytes; }
bool in_lane_stacks(uintptr_t a);

// Global memory (cudaMalloc): the allocation holding [a, a+bytes), or a check error.
struct Allocation {
  uintptr_t begin;
  size_t bytes;
};
// The address range cudaMalloc carves from (empty until the first allocation). Inline: every
// access of every lane asks.
extern uintptr_t g_arena_begin;
extern size_t g_arena_bytes;
inline bool in_global_arena(uintptr_t a) { return a - g_arena_begin < g_arena_bytes; }
const Allocation* find_allocation(uintptr_t a);

// The block being run, for the hooks and the error messages.
struct BlockView {
  const LaunchInfo* launch;
  uint3 block;
  dim3 block_dim;
  uint64_t epoch;  // advances at every barrier and block: accesses of one epoch are unordered
  std::vector<uint64_t>* warp_epochs;  // per warp: advances at its collectives
  uint64_t barriers = 0;  // of this launch
  uint64_t flops = 0;  // counted by mma_sync
};
extern thread_local BlockView g_view;
uint3 thread_of(int linear);
std::string where(int linear);  // "kernel k, block (x,y,z), thread (x,y,z)"
std::string site_text(const void* site);  // "matmul.cu:71" (gpusim/sites.cpp)
// A site is a source position (SourceSite: barriers, collectives and atomics everywhere, every
// access in the browser, whose build writes one record per memory instruction) or, on the
// desktop, an access hook's return address into the kernel's code.
struct SourceSite {
  const char* file;  // base name
  int line;
  int bytes = 0;  // an aggregate copy's bytes where the browser's compiler split it by field (else 0)
};
const SourceSite* as_source_site(const void* site);  // null when `site` is a code address
std::string code_site_text(
    const void* pc);  // the platform's: desktop line tables; the browser's sites are all SourceSites
// The lanes' stacks and cudaMalloc's address range come from the platform (gpusim/host_desktop.cpp,
// platform/web/gpusim_host_web.cpp).
struct AddressRange {
  uintptr_t begin = 0;
  size_t bytes = 0;
};
AddressRange reserve_device_range();  // reserved, committed page by page on first touch
void discard_device_pages(uintptr_t begin, size_t bytes);  // a freed big block's pages back to the system

// The access log of the running block (recording only), analysed per warp when the block ends.
extern thread_local bool g_recording;
extern thread_local std::vector<Access>* g_log;
void analyse_block(const std::vector<Access>& log, int threads, LaunchRecord& rec);
// One warp-wide memory request (at most one access per lane) and what it costs.
struct Request {
  Space space;
  AccessKind kind;
  const void* site;
  uint32_t n = 0;
  uintptr_t addr[32];
  uint8_t bytes[32];
};
uint64_t sectors_of(const Request& r);
uint64_t wavefronts_of(const Request& r, uint64_t& words_out);
// The warp view's trace (trace.cpp): whether this block is traced, its barriers, its analysis.
bool tracing_block(const LaunchInfo& launch, uint3 block);
void note_traced_barrier(const void* site);
void trace_block(const std::vector<Access>& log);
void discard_totals();  // at a launch's start
void finish_record(LaunchRecord& rec);  // at its end: the sites with file:line
void park_before_shared_store();
// One access of the running lane (the platform's instrumentation hooks call it; outside a lane it returns).
void on_access(uintptr_t a, unsigned bytes, AccessKind kind, const void* site);
void check_shared(uintptr_t a, unsigned bytes, AccessKind kind, const void* site, int lane);

}  // namespace gpusim
