// Every load and store of the kernels' code reaches on_access: the kernels are compiled with
// instrumentation that calls a hook per access (the desktop: GCC's kernel-address mode,
// gpusim/host_desktop.cpp; the browser: clang's sanitizer coverage, platform/web/gpusim_host_web.cpp),
// and the hook calls here. Outside a lane it returns at once. In a lane they classify the address
// (the lane's stack: local; the shared arena; the global arena of cudaMalloc), run the checks
// (out of bounds, misaligned, shared-memory races) and, while recording, log the access.
#include <cstdio>

#include "core/error.h"
#include "gpusim/state.h"

namespace gpusim {

thread_local bool g_recording = false;
thread_local std::vector<Access>* g_log = nullptr;

[[noreturn]] void fail_lane(const std::string& what, const std::string& hint);  // lanes.cpp: stops the block

namespace {

const char* kind_text(AccessKind k) {
  return k == AccessKind::load ? "load" : k == AccessKind::store ? "store" : "atomic";
}

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

thread_local Allocation t_last{0, 0};

void check_global(uintptr_t a, unsigned bytes, AccessKind kind, const void* site, int lane) {
  if (bytes > 1 && bytes <= 16 && (bytes & (bytes - 1)) == 0 && (a & (bytes - 1)) != 0)
    fail_lane("misaligned global " + std::string(kind_text(kind)) + " of " + std::to_string(bytes) +
                  " bytes at address " + hex(a) + " (" + where(lane) + ", at " + site_text(site) + ")",
              "a " + std::to_string(bytes) + "-byte access needs an address that is a multiple of " +
                  std::to_string(bytes) + ": check the offset of a float4/double view");
  if (a - t_last.begin + bytes <= t_last.bytes) return;
  const Allocation* al = find_allocation(a);
  if (al && a + bytes <= al->begin + al->bytes) {
    t_last = *al;
    return;
  }
  std::string rel = "outside every allocation";
  if (al)
    rel = std::to_string(a + bytes - (al->begin + al->bytes)) + " bytes past the end of the " +
          std::to_string(al->bytes) + "-byte allocation at " + hex(al->begin);
  fail_lane("out-of-bounds global " + std::string(kind_text(kind)) + " of " + std::to_string(bytes) +
                " bytes at address " + hex(a) + ", " + rel + " (" + where(lane) + ", at " + site_text(site) + ")",
            "an index runs past the tensor: check the kernel's bound against the size it was launched for");
}

}  // namespace

void on_access(uintptr_t a, unsigned bytes, AccessKind kind, const void* site) {
  const LaneRef* lane = g_lane;
  if (!lane) return;
  Space space;
  if (in_shared(a)) {
    space = Space::shared;
    if (bytes > 1 && bytes <= 16 && (bytes & (bytes - 1)) == 0 && (a & (bytes - 1)) != 0)
      fail_lane("misaligned shared " + std::string(kind_text(kind)) + " of " + std::to_string(bytes) +
                    " bytes at offset " + std::to_string(a - reinterpret_cast<uintptr_t>(shared_base())) + " (" +
                    where(lane->linear) + ", at " + site_text(site) + ")",
                "align the shared array for its widest access");
    if (kind == AccessKind::store) park_before_shared_store();
    check_shared(a, bytes, kind, site, lane->linear);
  } else if (in_global_arena(a)) {
    space = Space::global;
    check_global(a, bytes, kind, site, lane->linear);
  } else {
    return;  // the lane's stack (locals, its copy of the parameters) or the launch's own host data
  }
  if (g_log) g_log->push_back(Access{site, a, uint16_t(lane->linear), uint8_t(bytes), kind, space});
}

void note_atomic(const void* p, size_t bytes, const void* site) {
  on_access(reinterpret_cast<uintptr_t>(p), unsigned(bytes), AccessKind::atomic, site);
}

}  // namespace gpusim

namespace nvcuda::wmma {
void note_mma_flops(uint64_t flops) { gpusim::g_view.flops += flops; }
}  // namespace nvcuda::wmma
