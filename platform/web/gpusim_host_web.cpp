// The browser's side of the simulator (the desktop's: gpusim/host_desktop.cpp): the access
// hooks of the kernels' instrumentation, sites named from records made at build time, and the
// address range of the simulated global memory.
//
// The kernels are compiled by clang with -fsanitize-coverage=trace-loads,trace-stores, which
// calls __sanitizer_cov_{load,store}N(addr) before each access; gpusim/sancov_sites.py renames
// each call to gpusim_cov_{load,store}N(addr, site), site being a SourceSite {file, line} of
// its own per memory instruction (WebAssembly has no return address to name it by).
#include <cstdlib>

#include "gpusim/state.h"

namespace gpusim {

std::string code_site_text(const void* site) {
  const auto* s = static_cast<const SourceSite*>(site);
  return std::string(s->file) + ":" + std::to_string(s->line);
}

// One block of the heap: the browser commits its pages as they are touched, so an untouched
// range costs address space only. 256 MiB: room beside the program in 32-bit WebAssembly.
AddressRange reserve_device_range() {
  constexpr size_t kBytes = size_t(256) << 20;
  void* p = std::aligned_alloc(256, kBytes);
  return p ? AddressRange{reinterpret_cast<uintptr_t>(p), kBytes} : AddressRange{};
}

void discard_device_pages(uintptr_t, size_t) {}  // WebAssembly's memory never shrinks

}  // namespace gpusim

namespace {
// The access's bytes: the site's whole aggregate where sancov_sites.py joined its fields' calls.
int access_bytes(int n, const void* site) {
  const int joined = static_cast<const gpusim::SourceSite*>(site)->bytes;
  return joined ? joined : n;
}
}  // namespace

extern "C" {
#define GPUSIM_HOOK(n)                                                                                         \
  void gpusim_cov_load##n(const void* a, const void* site) {                                                   \
    gpusim::on_access(reinterpret_cast<uintptr_t>(a), access_bytes(n, site), gpusim::AccessKind::load, site);  \
  }                                                                                                            \
  void gpusim_cov_store##n(const void* a, const void* site) {                                                  \
    gpusim::on_access(reinterpret_cast<uintptr_t>(a), access_bytes(n, site), gpusim::AccessKind::store, site); \
  }
GPUSIM_HOOK(1)
GPUSIM_HOOK(2)
GPUSIM_HOOK(4)
GPUSIM_HOOK(8)
GPUSIM_HOOK(16)
#undef GPUSIM_HOOK
}
