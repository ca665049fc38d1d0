// The simulated device's global memory and the CUDA runtime calls of the stand-in header.
// cudaMalloc carves 256-byte-aligned blocks (as the real one gives) out of one reserved address
// range, each followed by a 256-byte gap, so an access past an allocation's end is seen as out
// of bounds instead of landing in a neighbour. Streams and events: one in-order queue that is
// always finished (a launch runs to its end before it returns).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "gpusim/state.h"
#include "include/cuda_runtime.h"

namespace gpusim {

uintptr_t g_arena_begin = 0;
size_t g_arena_bytes = 0;

namespace {

constexpr size_t kAlign = 256, kGap = 256;

class Arena {
 public:
  Arena() {
    const AddressRange r = reserve_device_range();
    base_ = r.begin;
    bytes_ = r.bytes;
    g_arena_begin = base_;
    g_arena_bytes = bytes_;
    if (bytes_) free_[base_] = bytes_;
  }
  void* allocate(size_t bytes) {
    std::lock_guard<std::mutex> lock(m_);
    const size_t need = (std::max<size_t>(bytes, 1) + kGap + kAlign - 1) / kAlign * kAlign;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need) continue;
      const uintptr_t p = it->first;
      const size_t rest = it->second - need;
      free_.erase(it);
      if (rest) free_[p + need] = rest;
      used_[p] = Allocation{p, bytes};
      return reinterpret_cast<void*>(p);
    }
    return nullptr;
  }
  bool release(void* ptr) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = used_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == used_.end()) return false;
    uintptr_t p = it->first;
    size_t n = (std::max<size_t>(it->second.bytes, 1) + kGap + kAlign - 1) / kAlign * kAlign;
    used_.erase(it);
    if (n >= (1 << 20)) discard_device_pages(p, n);  // give big blocks' pages back
    auto next = free_.lower_bound(p);
    if (next != free_.end() && next->first == p + n) {
      n += next->second;
      free_.erase(next);
    }
    auto prev = free_.lower_bound(p);
    if (prev != free_.begin()) {
      --prev;
      if (prev->first + prev->second == p) {
        p = prev->first;
        n += prev->second;
        free_.erase(prev);
      }
    }
    free_[p] = n;
    return true;
  }
  bool contains(uintptr_t a) const { return a - base_ < bytes_; }
  const Allocation* find(uintptr_t a) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = used_.upper_bound(a);
    if (it == used_.begin()) return nullptr;
    --it;
    // The allocation at or before a: the caller decides whether a lies inside it.
    return a < it->first + it->second.bytes + kGap ? &it->second : nullptr;
  }
  // [p, p+n) lies inside one allocation (for the copies).
  bool holds(const void* ptr, size_t n) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(ptr);
    const Allocation* al = find(a);
    return al && a + n <= al->begin + al->bytes;
  }

 private:
  std::mutex m_;
  uintptr_t base_ = 0;
  size_t bytes_ = 0;
  std::map<uintptr_t, size_t> free_;
  std::map<uintptr_t, Allocation> used_;
};

Arena& arena() {
  static Arena a;
  return a;
}

thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t copy(void* dst, const void* src, size_t n) {
  if (n == 0) return cudaSuccess;
  const bool dst_dev = in_global_arena(reinterpret_cast<uintptr_t>(dst)),
             src_dev = in_global_arena(reinterpret_cast<uintptr_t>(src));
  if ((dst_dev && !arena().holds(dst, n)) || (src_dev && !arena().holds(src, n)))
    return t_last_error = cudaErrorInvalidValue;
  std::memmove(dst, src, n);
  return cudaSuccess;
}

}  // namespace

const Allocation* find_allocation(uintptr_t a) { return arena().find(a); }

}  // namespace gpusim

namespace gpusim_rt {

using gpusim::arena;

cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = arena().allocate(bytes);
  return *p ? cudaSuccess : (gpusim::t_last_error = cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  return arena().release(p) ? cudaSuccess : (gpusim::t_last_error = cudaErrorInvalidValue);
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  return gpusim::copy(dst, src, bytes);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  return gpusim::copy(dst, src, bytes);
}
cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!arena().holds(dst, bytes)) return gpusim::t_last_error = cudaErrorInvalidValue;
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) { return cudaMemset(dst, value, bytes); }

struct CUstream_st {};
struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = new CUstream_st;
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
// Events time the simulation on the host: that is what a step costs here, not a GPU's time.
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}
cudaError_t cudaGetLastError() { return std::exchange(gpusim::t_last_error, cudaSuccess); }
cudaError_t cudaPeekAtLastError() { return gpusim::t_last_error; }
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (simulated device)";
    case cudaErrorMemoryAllocation: return "out of memory (simulated device)";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument (simulated device)";
    case cudaErrorLaunchFailure: return "unspecified launch failure (simulated device)";
  }
  return "unknown error (simulated device)";
}
cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  *p = cudaDeviceProp{};
  // The chosen preset's own figures (its name, clock, memory, SMs, compute capability).
  const gpusim::GpuPreset& g = gpusim::chosen_gpu();
  std::snprintf(p->name, sizeof p->name, "simulated %s at %.2f GHz", g.name, g.clock_hz / 1e9);
  p->totalGlobalMem = size_t(g.memory_gib) << 30;
  p->sharedMemPerBlock = gpusim::kSharedBytes;
  p->major = g.arch / 10;
  p->minor = g.arch % 10;
  p->multiProcessorCount = g.sms;
  p->warpSize = 32;
  p->maxThreadsPerBlock = gpusim::kMaxThreads;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;  // sm_90: every kernel version runs (wmma, wmma_half)
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMultiProcessorCount: *value = gpusim::chosen_gpu().sms; break;
  }
  return cudaSuccess;
}

}  // namespace gpusim_rt
