// The lane scheduler's interface to the kernels (through the stand-in cuda_runtime.h): the
// built-in variables, barriers, warp collectives, shared memory and launches. Threads of a block
// run as fibers, one at a time, switching only at __syncthreads and warp collectives; blocks run
// one after another. Nothing here names opscope's core: the kernels include it, core never does.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gpusim {

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

// The running lane's built-in variables (set by the scheduler before each switch into a lane).
// __thread, not thread_local: no initialisation wrapper call on each read of threadIdx.
extern __thread uint3 g_thread_idx;
extern __thread uint3 g_block_idx;
extern __thread dim3 g_block_dim;
extern __thread dim3 g_grid_dim;

enum class Collective : uint8_t { sync, shfl_xor, shfl_idx, shfl_down, shfl_up, ballot };

// The site of a barrier, collective or atomic named by its source position (the stand-in header's
// default arguments): one stable pointer per (file, line).
const void* source_site(const char* file, int line);

void sync_block(const void* site);
// Waits until every lane of `mask` in this warp reached a collective, then returns this lane's result.
uint64_t warp_collective(Collective kind, unsigned mask, uint64_t value, int arg, int width, const void* site);
unsigned warp_lanes_mask();  // the lanes of the running warp that exist and have not exited
void note_atomic(const void* p, size_t bytes, const void* site);

// Static __shared__ arrays: one per declaration (the lambda's type K) and block; rewritten from
// `__shared__ T name[N];` to `auto& name = *::gpusim::shared_alloc<T[N], alignof(T)>([]{});`.
void* shared_slot(const void* key, size_t bytes, size_t align);
template <class A, size_t Align = alignof(A), class K> A* shared_alloc(K) {
  static const char key = 0;
  return static_cast<A*>(shared_slot(&key, sizeof(A), Align < alignof(A) ? alignof(A) : Align));
}
// `extern __shared__ T name[];`: the launch's dynamic shared memory.
void* dynamic_shared_base();
template <class T> T* dynamic_shared() { return static_cast<T*>(dynamic_shared_base()); }

struct LaunchInfo {
  dim3 grid, block;
  size_t shared_bytes;
  const char* kernel;
  const char* file;
  int line;
};
// Runs thread(ctx) once per thread of the grid; throws what a lane threw or a check raised.
void run_launch(const LaunchInfo& info, void (*thread)(void*), void* ctx);

}  // namespace gpusim
