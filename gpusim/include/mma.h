// The simulator's WMMA: a fragment holds the warp's whole 16×16 (or 16×K) tile in every lane.
// load_matrix_sync: the warp's lanes split the tile as the GPU's do (lane l reads elements l,
// l+32, ... in row order of the fragment; NVIDIA leaves the real assignment opaque), so the
// counters see num_elements / 32 requests of 32 lanes per warp; the lanes then share what they
// read through a per-warp staging tile (host memory: not counted), between two warp barriers.
// store_matrix_sync: lane l writes the elements l, l+32, ...; mma_sync multiplies the inputs as
// the kernel rounded them (TF32: 10 mantissa bits, __float_to_tf32; half: binary16),
// accumulating in float, and counts the warp's FLOPs once. Each is a warp collective (a
// __syncwarp), as on the GPU.
#pragma once
#include <cstdint>
#include <cstring>

#include "cuda_fp16.h"
#include "cuda_runtime.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

// Rounds to TF32 (10 explicit mantissa bits), to nearest, ties away, as cvt.rna.tf32.f32 does.
inline float __float_to_tf32(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) != 0x7f800000u) x = (x + 0x1000u) & 0xffffe000u;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = rows * cols;
  using Storage = std::conditional_t<std::is_same_v<T, __half>, __half, float>;
  Storage x[rows * cols];
};

template <class Use, int M, int N, int K, class T, class L>
void fill_fragment(fragment<Use, M, N, K, T, L>& f, float v) {
  for (auto& e : f.x) e = v;
}

namespace detail {
constexpr int kMaxFragmentElements = 512;
// One tile per warp of the running block (at most 32 warps); lanes of one OS thread's blocks only.
inline thread_local float g_staging[32][kMaxFragmentElements];
inline unsigned linear_thread() {
  return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class L, class P>
void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const P* p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, L>;
  using S = typename F::Storage;
  static_assert(F::num_elements % 32 == 0 &&
                F::num_elements * sizeof(S) <= sizeof(float) * detail::kMaxFragmentElements);
  const unsigned t = detail::linear_thread();
  S* tile = reinterpret_cast<S*>(detail::g_staging[t / 32]);
  for (int e = int(t % 32); e < F::num_elements; e += 32) {  // this lane's share: one request per step of the warp
    const int r = e / F::cols, c = e % F::cols;
    tile[e] = std::is_same_v<L, col_major> ? p[size_t(c) * ldm + r] : p[size_t(r) * ldm + c];
  }
  __syncwarp();  // every lane's elements are in the tile
  for (int e = 0; e < F::num_elements; ++e) f.x[e] = tile[e];
  __syncwarp();  // every lane has read the tile before a later load of this warp overwrites it
}

template <int M, int N, int K, class T>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
  const int lane = int(threadIdx.x % 32);
  for (int e = lane; e < M * N; e += 32) {
    const int r = e / N, c = e % N;
    (layout == mem_row_major ? p[size_t(r) * ldm + c] : p[size_t(c) * ldm + r]) = f.x[e];
  }
  __syncwarp();
}

void note_mma_flops(uint64_t flops);

template <int M, int N, int K, class T, class LA, class LB, class TC>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, TC>& c) {
  __syncwarp();
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = c.x[i * N + j];
      for (int k = 0; k < K; ++k) acc += float(a.x[i * K + k]) * float(b.x[k * N + j]);
      out[i * N + j] = acc;
    }
  for (int e = 0; e < M * N; ++e) d.x[e] = out[e];
  if (threadIdx.x % 32 == 0) note_mma_flops(uint64_t(2) * M * N * K);
}

}  // namespace nvcuda::wmma
