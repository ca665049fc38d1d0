// The entry for language kernels (gpusim/lang_entry.h): thin wrappers over the simulator's own parts.
#include "gpusim/lang_entry.h"

#include "gpusim/include/cuda_runtime.h"
#include "gpusim/state.h"

namespace gpusim {

void* device_alloc(size_t bytes) {
  void* p = nullptr;
  return gpusim_rt::cudaMalloc(&p, bytes) == cudaSuccess ? p : nullptr;
}
void device_free(void* p) { gpusim_rt::cudaFree(p); }
unsigned char* shared_memory() { return shared_base(); }
size_t shared_memory_bytes() { return kSharedBytes; }
void lane_access(uintptr_t addr, unsigned bytes, AccessKind kind, const void* site) {
  on_access(addr, bytes, kind, site);
}
std::string running_lane_text() { return g_lane ? where(g_lane->linear) : std::string("outside a kernel"); }
int running_lane() { return g_lane ? g_lane->linear : -1; }
int last_resumed_lane() {
  const dim3 d = g_block_dim;
  return int(g_thread_idx.x + d.x * (g_thread_idx.y + d.y * g_thread_idx.z));
}
void add_flops(uint64_t n) { g_view.flops += n; }

}  // namespace gpusim
