// The simulator's stand-in for CUDA's runtime header: ops/cuda/*.cu compile as C++ against it
// (g++, after gpusim/rewrite.cmake turned launches and __shared__ declarations into calls).
// What a kernel sees (qualifiers, threadIdx..., __syncthreads, shuffles, atomics, float4) maps
// onto the lane scheduler of gpusim/lanes.h; the runtime calls onto gpusim/memory.h.
#pragma once
#include <math.h>  // CUDA's global float overloads (expf, sqrt(float), ...): the C++ <math.h> has them

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "gpusim/lanes.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__ static

using gpusim::dim3;
using gpusim::uint3;

#define threadIdx (::gpusim::g_thread_idx)
#define blockIdx (::gpusim::g_block_idx)
#define blockDim (::gpusim::g_block_dim)
#define gridDim (::gpusim::g_grid_dim)
constexpr int warpSize = 32;

struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct __attribute__((aligned(16))) double2 {
  double x, y;
};
struct __attribute__((aligned(16))) int4 {
  int x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }

// --- barriers and warp collectives ---------------------------------------------------------------
// Their site is the caller's file:line, from default arguments (evaluated at the call, so right
// whether or not the compiler inlines these; a return address is neither, nor has WebAssembly one).
#define GPUSIM_HERE const char *gpusim_file = __builtin_FILE(), int gpusim_line = __builtin_LINE()
#define GPUSIM_SITE ::gpusim::source_site(gpusim_file, gpusim_line)
inline void __syncthreads(GPUSIM_HERE) { ::gpusim::sync_block(GPUSIM_SITE); }
inline void __syncwarp(unsigned mask = 0xffffffffu, GPUSIM_HERE) {
  ::gpusim::warp_collective(::gpusim::Collective::sync, mask, 0, 0, 32, GPUSIM_SITE);
}

namespace gpusim {
template <class T> inline T shuffle(Collective kind, unsigned mask, T v, int arg, int width, const void* site) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "the simulator shuffles values of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_collective(kind, mask, bits, arg, width, site);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
}  // namespace gpusim

template <class T>
__attribute__((noinline)) T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, GPUSIM_HERE) {
  return ::gpusim::shuffle(::gpusim::Collective::shfl_xor, mask, v, lane_mask, width, GPUSIM_SITE);
}
template <class T> __attribute__((noinline)) T __shfl_sync(unsigned mask, T v, int src, int width = 32, GPUSIM_HERE) {
  return ::gpusim::shuffle(::gpusim::Collective::shfl_idx, mask, v, src, width, GPUSIM_SITE);
}
template <class T>
__attribute__((noinline)) T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, GPUSIM_HERE) {
  return ::gpusim::shuffle(::gpusim::Collective::shfl_down, mask, v, int(delta), width, GPUSIM_SITE);
}
template <class T>
__attribute__((noinline)) T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, GPUSIM_HERE) {
  return ::gpusim::shuffle(::gpusim::Collective::shfl_up, mask, v, int(delta), width, GPUSIM_SITE);
}
inline unsigned __ballot_sync(unsigned mask, int pred, GPUSIM_HERE) {
  return unsigned(::gpusim::warp_collective(::gpusim::Collective::ballot, mask, pred != 0, 0, 32, GPUSIM_SITE));
}
inline int __all_sync(unsigned mask, int pred, GPUSIM_HERE) {
  return __ballot_sync(mask, pred, gpusim_file, gpusim_line) == (mask & ::gpusim::warp_lanes_mask());
}
inline int __any_sync(unsigned mask, int pred, GPUSIM_HERE) {
  return __ballot_sync(mask, pred, gpusim_file, gpusim_line) != 0;
}
inline unsigned __activemask() { return ::gpusim::warp_lanes_mask(); }

// --- atomics: one lane runs at a time, so a plain read-modify-write is atomic; counted as atomics
#define GPUSIM_ATOMIC(T)                              \
  inline T atomicAdd(T* p, T v, GPUSIM_HERE) {        \
    ::gpusim::note_atomic(p, sizeof(T), GPUSIM_SITE); \
    T o = *p;                                         \
    *p = o + v;                                       \
    return o;                                         \
  }                                                   \
  inline T atomicMin(T* p, T v, GPUSIM_HERE) {        \
    ::gpusim::note_atomic(p, sizeof(T), GPUSIM_SITE); \
    T o = *p;                                         \
    *p = v < o ? v : o;                               \
    return o;                                         \
  }                                                   \
  inline T atomicMax(T* p, T v, GPUSIM_HERE) {        \
    ::gpusim::note_atomic(p, sizeof(T), GPUSIM_SITE); \
    T o = *p;                                         \
    *p = v > o ? v : o;                               \
    return o;                                         \
  }                                                   \
  inline T atomicExch(T* p, T v, GPUSIM_HERE) {       \
    ::gpusim::note_atomic(p, sizeof(T), GPUSIM_SITE); \
    T o = *p;                                         \
    *p = v;                                           \
    return o;                                         \
  }
GPUSIM_ATOMIC(int)
GPUSIM_ATOMIC(unsigned)
GPUSIM_ATOMIC(unsigned long long)
GPUSIM_ATOMIC(float)
GPUSIM_ATOMIC(double)
#undef GPUSIM_ATOMIC
inline int atomicCAS(int* p, int cmp, int v, GPUSIM_HERE) {
  ::gpusim::note_atomic(p, 4, GPUSIM_SITE);
  int o = *p;
  if (o == cmp) *p = v;
  return o;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v, GPUSIM_HERE) {
  ::gpusim::note_atomic(p, 8, GPUSIM_SITE);
  unsigned long long o = *p;
  if (o == cmp) *p = v;
  return o;
}

// --- CUDA's global min/max overloads and intrinsics ----------------------------------------------
template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>> inline T max(T a, T b) { return a > b ? a : b; }
template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>> inline T min(T a, T b) { return a < b ? a : b; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
template <class T> inline T __ldg(const T* p) { return *p; }
inline int __float_as_int(float f) {
  int i;
  std::memcpy(&i, &f, 4);
  return i;
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}

// --- the runtime API ---------------------------------------------------------------------------
// In a namespace of its own: a build with nvcc links the real runtime too, whose symbols these
// must not take over. The kernels' unqualified calls find them through the using-directive.
namespace gpusim_rt {
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
enum cudaDeviceAttr {
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMultiProcessorCount = 16
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
struct CUstream_st;
struct CUevent_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
constexpr unsigned cudaStreamNonBlocking = 1;
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int major, minor, multiProcessorCount, warpSize, maxThreadsPerBlock;
};

cudaError_t cudaMalloc(void** p, size_t bytes);
template <class T> cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t s = nullptr);
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaGetDevice(int* d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
template <class F> cudaError_t cudaFuncSetAttribute(F*, cudaFuncAttribute, int) {
  return cudaSuccess;
}  // every size is allowed
}  // namespace gpusim_rt
using namespace gpusim_rt;

// --- launches: gpusim/rewrite.cmake turns  k<<<grid, block, smem, stream>>>(args)  into
//   ::gpusim::launch(::gpusim::LaunchConfig(grid, block, smem, stream), "k", __FILE__, __LINE__,
//                    [&](auto&... a) { k(a...); })(args)
namespace gpusim {
struct LaunchConfig {
  dim3 grid, block;
  size_t shared_bytes;
  LaunchConfig(dim3 g, dim3 b, size_t smem = 0, gpusim_rt::cudaStream_t = nullptr)
      : grid(g), block(b), shared_bytes(smem) {}
};
template <class F> struct Launch {
  LaunchConfig cfg;
  const char* kernel;
  const char* file;
  int line;
  F body;
  template <class... A> void operator()(A&&... a) {
    // The arguments are evaluated once; each thread gets its own copy, as kernel parameters are.
    std::tuple<std::decay_t<A>...> args(std::forward<A>(a)...);
    auto thread = [](void* ctx) {
      auto* self = static_cast<std::pair<Launch*, decltype(args)*>*>(ctx);
      std::apply([&](const auto&... x) { self->first->body(const_cast<std::decay_t<decltype(x)>&>(x)...); },
                 *self->second);
    };
    std::pair<Launch*, decltype(args)*> ctx{this, &args};
    run_launch(LaunchInfo{cfg.grid, cfg.block, cfg.shared_bytes, kernel, file, line}, thread, &ctx);
  }
};
template <class F> Launch<F> launch(const LaunchConfig& cfg, const char* kernel, const char* file, int line, F body) {
  return Launch<F>{cfg, kernel, file, line, std::move(body)};
}
}  // namespace gpusim
