// The shared-memory race check (compute-sanitizer's racecheck, simplified): per 2 bytes of the
// shared arena (a __half is the narrowest element the kernels store), the last writer and up to two readers, each with the epoch it accessed in.
// An epoch ends at each __syncthreads (and block); lanes of one warp are also ordered by the
// warp's collectives (__syncwarp, shuffles). Two accesses of different threads in one epoch, not
// so ordered, at least one a store: a hazard (RAW, WAR or WAW), reported with both lines.
#include <array>

#include "gpusim/state.h"

namespace gpusim {

[[noreturn]] void fail_lane(const std::string& what, const std::string& hint);

namespace {

constexpr size_t kGranule = 2;
struct Touch {
  uint64_t epoch = 0;
  const void* site = nullptr;
  uint32_t warp_epoch = 0;
  int16_t lane = -1;
};
struct WordShadow {
  Touch write, read_a, read_b;
};
std::array<WordShadow, kSharedBytes / kGranule> g_shadow;

bool ordered(const Touch& t, int lane, uint32_t warp_epoch) {
  if (t.lane < 0 || t.epoch != g_view.epoch || t.lane == lane) return true;
  return t.lane / 32 == lane / 32 && t.warp_epoch != warp_epoch;
}

[[noreturn]] void hazard(const char* kind, const char* verb, const Touch& earlier, const char* earlier_verb, int lane,
                         const void* site, size_t offset) {
  fail_lane(std::string(kind) + " hazard in shared memory: " + where(lane) + " " + verb + " offset " +
                std::to_string(offset) + " at " + site_text(site) + "; thread (" +
                std::to_string(thread_of(earlier.lane).x) + "," + std::to_string(thread_of(earlier.lane).y) + "," +
                std::to_string(thread_of(earlier.lane).z) + ") " + earlier_verb + " it at " + site_text(earlier.site) +
                " with no __syncthreads between",
            "put a __syncthreads between the two accesses (after the reads of a tile, before it is overwritten)");
}

}  // namespace

void check_shared(uintptr_t a, unsigned bytes, AccessKind kind, const void* site, int lane) {
  if (kind == AccessKind::atomic) return;  // atomics do not race with each other
  const size_t off = a - reinterpret_cast<uintptr_t>(shared_base());
  const uint32_t we = uint32_t((*g_view.warp_epochs)[size_t(lane / 32)]);
  const Touch now{g_view.epoch, site, we, int16_t(lane)};
  for (size_t w = off / kGranule; w <= (off + bytes - 1) / kGranule && w < g_shadow.size(); ++w) {
    WordShadow& s = g_shadow[w];
    if (!ordered(s.write, lane, we))
      hazard(kind == AccessKind::load ? "read-after-write" : "write-after-write",
             kind == AccessKind::load ? "reads" : "writes", s.write, "wrote", lane, site, off);
    if (kind == AccessKind::store) {
      if (!ordered(s.read_a, lane, we)) hazard("write-after-read", "writes", s.read_a, "read", lane, site, off);
      if (!ordered(s.read_b, lane, we)) hazard("write-after-read", "writes", s.read_b, "read", lane, site, off);
      s.write = now;
    } else if (s.read_a.epoch != g_view.epoch || s.read_a.lane == lane) {
      s.read_a = now;
    } else if (s.read_b.epoch != g_view.epoch || s.read_b.lane == lane || s.read_b.lane < 0) {
      s.read_b = now;
    }
  }
}

}  // namespace gpusim
