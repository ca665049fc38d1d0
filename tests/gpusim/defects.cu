// Kernels with one defect each, for the simulator's checks (tests/test_gpusim.cpp). Compiled for
// the simulated GPU only, through the same rewrite as ops/cuda. Each launcher returns normally
// only when the check missed the defect.
#include <cuda_runtime.h>

#include "tests/gpusim/defects.h"

namespace gpusim_defects {

constexpr int kTile = 32;

// ops/cuda/matmul.cu's mm_tiled with its second __syncthreads removed: the next iteration's
// stores into As/Bs (line 23, 24) race with the reads of the current tile (line 26).
__global__ void mm_tiled_missing_barrier(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i = blockIdx.y * kTile + ty, j = blockIdx.x * kTile + tx;
  float acc = 0;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    As[ty][tx] = i < M && k0 + tx < K ? A[i * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = k0 + ty < K && j < N ? B[(k0 + ty) * N + j] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
  }
  if (i < M && j < N) C[i * N + j] = acc;
}

// An off-by-one bound: thread n reads x[n], one past the end.
__global__ void copy_off_by_one(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i % n] = x[i];
}

// A float4 view of a float array that starts one float in: 16-byte loads at 4-byte alignment.
__global__ void unaligned_float4(const float* x, float* y, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 v = reinterpret_cast<const float4*>(x + 1)[i];
    y[i] = v.x + v.y + v.z + v.w;
  }
}

// Threads past n return before the barrier the others wait at.
__global__ void barrier_after_return(float* y, int n) {
  const int i = threadIdx.x;
  if (i >= n) return;
  __shared__ float s[64];
  s[i] = float(i);
  __syncthreads();
  y[i] = s[(i + 1) % n];
}

// Half a warp calls a full-mask shuffle: the mask never completes.
__global__ void half_warp_shuffle(float* y) {
  float v = float(threadIdx.x);
  if (threadIdx.x < 16) v += __shfl_xor_sync(0xffffffffu, v, 1);
  y[threadIdx.x] = v;
}

void launch_missing_barrier(const float* A, const float* B, float* C, int n) {
  mm_tiled_missing_barrier<<<dim3((n + 31) / 32, (n + 31) / 32), dim3(32, 32)>>>(A, B, C, n, n, n);
}
void launch_off_by_one(const float* x, float* y, int n) { copy_off_by_one<<<(n + 1 + 63) / 64, 64>>>(x, y, n); }
void launch_unaligned_float4(const float* x, float* y, int n4) { unaligned_float4<<<1, 64>>>(x, y, n4); }
void launch_barrier_after_return(float* y, int n) { barrier_after_return<<<1, 64>>>(y, n); }
void launch_half_warp_shuffle(float* y) { half_warp_shuffle<<<1, 32>>>(y); }

}  // namespace gpusim_defects
