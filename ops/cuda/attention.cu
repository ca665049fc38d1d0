// CUDA scaled_dot_product_attention ("naive" and "flash") and attention_backward ("flash").
// q [B, T, D], k [B, S, D], v [B, S, Dv] after the batch axes are broadcast (dense copies when
// they differ). Masks: causal=True costs nothing; an explicit mask is expanded once into a dense
// additive [B, T, S] buffer (workspace), so O(T) memory holds only for masks given as causal.
//
//  naive: the course's three steps, each its own kernel: scores = Q·Kᵀ·scale + mask into a
//         T×S workspace buffer (the memory the tracker shows), a row softmax in place, O = P·V.
//  flash: one thread per query row, key/value tiles of kBc rows staged in shared memory; per tile
//         the thread scores its query against the tile, takes the tile max, rescales its running
//         output o and sum l by e^(m − m') once, and adds P·V_tile. No T×S buffer: O(T) memory.
//  backward (FlashAttention's recomputation, no T×S buffer):
//         kernel 1, per query row: L = logsumexp of the scores, Δ = rowsum(dO ∘ O), and
//                   dQ = scale·Σ_j P_ij (dO_i·V_j − Δ_i) K_j with P_ij = e^(s_ij − L_i);
//         kernel 2, per key row: dV_j = Σ_i P_ij dO_i, dK_j = scale·Σ_i P_ij (dO_i·V_j − Δ_i) Q_i.
// A fully masked row has output 0 and no gradient, as on the CPU.
#include <cmath>

#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {
namespace {

constexpr int kMaxHead = 128;  // D and Dv: each thread keeps a query row and an output row in registers
constexpr int kBr = 64;  // query rows (threads) per block
constexpr int kBc = 32;  // keys per shared-memory tile

template <class T> struct Attn {
  const T *q, *k, *v, *mask;  // mask: dense additive [B, T, S] or null
  int64_t T_, S, D, Dv;
  bool causal;
  T scale;
};

template <class T>
__device__ __forceinline__ T score(const Attn<T>& a, int64_t b, int64_t i, int64_t j, const T* qi, const T* kj) {
  if (a.causal && j > i) return T(-INFINITY);
  T s = 0;
  for (int64_t d = 0; d < a.D; ++d) s += qi[d] * kj[d];
  s *= a.scale;
  if (a.mask) s += a.mask[(b * a.T_ + i) * a.S + j];
  return s;
}

// --- naive ---------------------------------------------------------------------------------
template <class T> __global__ void attn_scores(Attn<T> a, T* scores, int64_t batch) {
  const int64_t n = batch * a.T_ * a.S;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % a.S, i = (e / a.S) % a.T_, b = e / (a.S * a.T_);
    scores[e] = score(a, b, i, j, a.q + (b * a.T_ + i) * a.D, a.k + (b * a.S + j) * a.D);
  }
}

template <class T> __global__ void attn_softmax_rows(T* p, int64_t S) {
  T* row = p + blockIdx.x * S;
  T m = -INFINITY;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) m = max(m, row[j]);
  m = block_max(m);
  if (m == T(-INFINITY)) {  // fully masked: zeros, not 0/0
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) row[j] = 0;
    return;
  }
  T s = 0;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) s += exp(row[j] - m);
  s = block_sum(s);
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) row[j] = exp(row[j] - m) / s;
}

template <class T>
__global__ void attn_pv(const T* p, const T* v, T* o, int64_t batch, int64_t Tq, int64_t S, int64_t Dv) {
  const int64_t n = batch * Tq * Dv;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t d = e % Dv, bi = e / Dv, b = bi / Tq;
    const T* pr = p + bi * S;
    const T* vb = v + b * S * Dv;
    T acc = 0;
    for (int64_t j = 0; j < S; ++j) acc += pr[j] * vb[j * Dv + d];
    o[e] = acc;
  }
}

// --- flash forward -------------------------------------------------------------------------
template <class T> __global__ void attn_flash_forward(Attn<T> a, T* out) {
  extern __shared__ unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);
  T* Vs = Ks + kBc * a.D;
  const int64_t b = blockIdx.y, i = blockIdx.x * int64_t(kBr) + threadIdx.x;
  const bool active = i < a.T_;
  T q[kMaxHead], o[kMaxHead];
  for (int d = 0; d < a.D; ++d) q[d] = active ? a.q[(b * a.T_ + i) * a.D + d] : T(0);
  for (int d = 0; d < a.Dv; ++d) o[d] = 0;
  T m = -INFINITY, l = 0;
  for (int64_t j0 = 0; j0 < a.S; j0 += kBc) {
    const int64_t nj = min(int64_t(kBc), a.S - j0);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < nj * a.D; e += blockDim.x) Ks[e] = a.k[(b * a.S + j0) * a.D + e];
    for (int64_t e = threadIdx.x; e < nj * a.Dv; e += blockDim.x) Vs[e] = a.v[(b * a.S + j0) * a.Dv + e];
    __syncthreads();
    if (!active) continue;
    T s[kBc];
    T tile_max = -INFINITY;
    for (int jj = 0; jj < nj; ++jj) {
      s[jj] = score(a, b, i, j0 + jj, q, Ks + jj * a.D);
      tile_max = max(tile_max, s[jj]);
    }
    if (tile_max == T(-INFINITY)) continue;  // nothing visible in this tile
    const T m_new = max(m, tile_max), alpha = exp(m - m_new);
    l *= alpha;
    for (int d = 0; d < a.Dv; ++d) o[d] *= alpha;
    for (int jj = 0; jj < nj; ++jj) {
      const T p = exp(s[jj] - m_new);
      l += p;
      for (int d = 0; d < a.Dv; ++d) o[d] += p * Vs[jj * a.Dv + d];
    }
    m = m_new;
  }
  if (!active) return;
  const T inv = l > T(0) ? T(1) / l : T(0);  // fully masked row: 0
  for (int d = 0; d < a.Dv; ++d) out[(b * a.T_ + i) * a.Dv + d] = o[d] * inv;
}

// --- flash backward ------------------------------------------------------------------------
template <class T> __global__ void attn_backward_rows(Attn<T> a, const T* O, const T* dO, T* dq, T* L, T* delta) {
  extern __shared__ unsigned char smem_raw[];
  T* Ks = reinterpret_cast<T*>(smem_raw);
  T* Vs = Ks + kBc * a.D;
  const int64_t b = blockIdx.y, i = blockIdx.x * int64_t(kBr) + threadIdx.x;
  const bool active = i < a.T_;
  const int64_t row = b * a.T_ + i;
  T q[kMaxHead], g[kMaxHead], acc[kMaxHead];
  T dlt = 0;
  for (int d = 0; d < a.D; ++d) q[d] = active ? a.q[row * a.D + d] : T(0), acc[d] = 0;
  for (int d = 0; d < a.Dv; ++d) {
    g[d] = active ? dO[row * a.Dv + d] : T(0);
    dlt += active ? g[d] * O[row * a.Dv + d] : T(0);
  }
  // Sweep 1: the row's logsumexp.
  T m = -INFINITY, l = 0;
  for (int64_t j0 = 0; j0 < a.S; j0 += kBc) {
    const int64_t nj = min(int64_t(kBc), a.S - j0);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < nj * a.D; e += blockDim.x) Ks[e] = a.k[(b * a.S + j0) * a.D + e];
    __syncthreads();
    if (!active) continue;
    for (int jj = 0; jj < nj; ++jj) {
      const T s = score(a, b, i, j0 + jj, q, Ks + jj * a.D);
      if (s == T(-INFINITY)) continue;
      if (s > m) l = l * exp(m - s) + T(1), m = s;
      else l += exp(s - m);
    }
  }
  const T lse = l > T(0) ? m + log(l) : T(-INFINITY);
  // Sweep 2: dQ.
  for (int64_t j0 = 0; j0 < a.S; j0 += kBc) {
    const int64_t nj = min(int64_t(kBc), a.S - j0);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < nj * a.D; e += blockDim.x) Ks[e] = a.k[(b * a.S + j0) * a.D + e];
    for (int64_t e = threadIdx.x; e < nj * a.Dv; e += blockDim.x) Vs[e] = a.v[(b * a.S + j0) * a.Dv + e];
    __syncthreads();
    if (!active || lse == T(-INFINITY)) continue;
    for (int jj = 0; jj < nj; ++jj) {
      const T s = score(a, b, i, j0 + jj, q, Ks + jj * a.D);
      if (s == T(-INFINITY)) continue;
      const T p = exp(s - lse);
      T dp = 0;
      for (int d = 0; d < a.Dv; ++d) dp += g[d] * Vs[jj * a.Dv + d];
      const T ds = p * (dp - dlt) * a.scale;
      for (int d = 0; d < a.D; ++d) acc[d] += ds * Ks[jj * a.D + d];
    }
  }
  if (!active) return;
  for (int d = 0; d < a.D; ++d) dq[row * a.D + d] = acc[d];
  L[row] = lse;
  delta[row] = dlt;
}

template <class T>
__global__ void attn_backward_keys(Attn<T> a, const T* dO, const T* L, const T* delta, T* dk, T* dv) {
  extern __shared__ unsigned char smem_raw[];
  T* Qs = reinterpret_cast<T*>(smem_raw);
  T* Gs = Qs + kBc * a.D;
  const int64_t b = blockIdx.y, j = blockIdx.x * int64_t(kBr) + threadIdx.x;
  const bool active = j < a.S;
  const int64_t row = b * a.S + j;
  T kj[kMaxHead], vj[kMaxHead], gk[kMaxHead], gv[kMaxHead];
  for (int d = 0; d < a.D; ++d) kj[d] = active ? a.k[row * a.D + d] : T(0), gk[d] = 0;
  for (int d = 0; d < a.Dv; ++d) vj[d] = active ? a.v[row * a.Dv + d] : T(0), gv[d] = 0;
  for (int64_t i0 = 0; i0 < a.T_; i0 += kBc) {
    const int64_t ni = min(int64_t(kBc), a.T_ - i0);
    __syncthreads();
    for (int64_t e = threadIdx.x; e < ni * a.D; e += blockDim.x) Qs[e] = a.q[(b * a.T_ + i0) * a.D + e];
    for (int64_t e = threadIdx.x; e < ni * a.Dv; e += blockDim.x) Gs[e] = dO[(b * a.T_ + i0) * a.Dv + e];
    __syncthreads();
    if (!active) continue;
    for (int ii = 0; ii < ni; ++ii) {
      const int64_t i = i0 + ii;
      const T lse = L[b * a.T_ + i];
      if (lse == T(-INFINITY)) continue;
      const T s = score(a, b, i, j, Qs + ii * a.D, kj);
      if (s == T(-INFINITY)) continue;
      const T p = exp(s - lse);
      T dp = 0;
      for (int d = 0; d < a.Dv; ++d) {
        gv[d] += p * Gs[ii * a.Dv + d];
        dp += Gs[ii * a.Dv + d] * vj[d];
      }
      const T ds = p * (dp - delta[b * a.T_ + i]) * a.scale;
      for (int d = 0; d < a.D; ++d) gk[d] += ds * Qs[ii * a.D + d];
    }
  }
  if (!active) return;
  for (int d = 0; d < a.D; ++d) dk[row * a.D + d] = gk[d];
  for (int d = 0; d < a.Dv; ++d) dv[row * a.Dv + d] = gv[d];
}

template <class T> __global__ void mask_to_additive(const void* mask, bool is_int, StridedIndex im, T* out, int64_t n) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t off = offset_of(im, e);
    if (is_int) out[e] = static_cast<const int64_t*>(mask)[off] ? T(0) : T(-INFINITY);
    else out[e] = static_cast<const T*>(mask)[off];
  }
}

// --- host side -----------------------------------------------------------------------------
// The operands broadcast to the common batch, dense, in the output's dtype.
template <class T> struct Prepared {
  Tensor q, k, v, mask;
  Attn<T> a;
  int64_t batch;
};

template <class T> Prepared<T> prepare(const KernelCtx& k, size_t mask_index, const Shape& batch_shape) {
  Prepared<T> p;
  const DType dt = dtype_of<T>();
  auto full = [&](const Tensor& t) {
    Shape s = batch_shape;
    s.push_back(t.shape()[t.dim() - 2]);
    s.push_back(t.shape().back());
    Tensor c = t.dtype() == dt ? t : t.cast(dt);
    return dense(c.shape() == s ? c : c.view_expand(s));
  };
  p.q = full(k.in(0));
  p.k = full(k.in(1));
  p.v = full(k.in(2));
  p.batch = shape_numel(batch_shape);
  const int64_t Tq = p.q.shape()[p.q.dim() - 2], S = p.k.shape()[p.k.dim() - 2], D = p.q.shape().back(),
                Dv = p.v.shape().back();
  if (D > kMaxHead || Dv > kMaxHead)
    throw Error(k.op.name + ": the CUDA kernels take head sizes up to " + std::to_string(kMaxHead) +
                    ", got D=" + std::to_string(D) + ", Dv=" + std::to_string(Dv),
                "split the heads, or run on the cpu: x.to(\"cpu\")");
  if (k.inputs.size() > mask_index) {
    const Tensor& m = k.in(mask_index);
    Shape s = batch_shape;
    s.push_back(Tq);
    s.push_back(S);
    p.mask = k.workspace(s, dt);
    const StridedIndex im = strided_index(s, m.shape(), m.strides(), "attention mask");
    const int64_t n = shape_numel(s);
    if (n > 0) {
      Tensor mc = m.dtype() == DType::i64 || m.dtype() == dt ? m : m.cast(dt);
      mask_to_additive<T><<<grid_for(n), kThreads, 0, stream()>>>(mc.raw_data(), mc.dtype() == DType::i64, im,
                                                                  p.mask.template data<T>(), n);
      OPSCOPE_CUDA_LAUNCHED("mask_to_additive");
    }
  }
  const double scale = k.attrs.f("scale") > 0 ? k.attrs.f("scale") : 1.0 / std::sqrt(static_cast<double>(D));
  p.a = Attn<T>{p.q.template data<T>(),
                p.k.template data<T>(),
                p.v.template data<T>(),
                p.mask.defined() ? p.mask.template data<T>() : nullptr,
                Tq,
                S,
                D,
                Dv,
                k.attrs.b("causal"),
                static_cast<T>(scale)};
  return p;
}

// Above 48 KiB of dynamic shared memory (float64 with D = Dv = 128) a kernel must opt in.
template <class K> void allow_shared(K kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    OPSCOPE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

Shape batch_of(const Tensor& out) { return Shape(out.shape().begin(), out.shape().end() - 2); }

template <class T> void attention_forward(KernelCtx& k, bool flash) {
  const Tensor& out = k.out();
  if (out.numel() == 0) return;
  Prepared<T> p = prepare<T>(k, 3, batch_of(out));
  const Attn<T>& a = p.a;
  if (a.S == 0) {  // no keys: every row fully masked
    Tensor o = out;
    o.fill(0);
    return;
  }
  if (p.batch > 65535) throw Error(k.op.name + ": the CUDA kernels take up to 65535 matrices in a batch");
  if (flash) {
    const dim3 grid(static_cast<unsigned>((a.T_ + kBr - 1) / kBr), static_cast<unsigned>(p.batch));
    const size_t smem = sizeof(T) * kBc * (a.D + a.Dv);
    allow_shared(attn_flash_forward<T>, smem);
    attn_flash_forward<T><<<grid, kBr, smem, stream()>>>(a, out.data<T>());
    OPSCOPE_CUDA_LAUNCHED("attn_flash_forward");
    return;
  }
  Tensor scores = k.workspace(Shape{p.batch, a.T_, a.S}, dtype_of<T>());  // the T×S matrix naive pays for
  attn_scores<T><<<grid_for(p.batch * a.T_ * a.S), kThreads, 0, stream()>>>(a, scores.data<T>(), p.batch);
  OPSCOPE_CUDA_LAUNCHED("attn_scores");
  attn_softmax_rows<T><<<static_cast<unsigned>(p.batch * a.T_), 128, 0, stream()>>>(scores.data<T>(), a.S);
  OPSCOPE_CUDA_LAUNCHED("attn_softmax_rows");
  attn_pv<T><<<grid_for(p.batch * a.T_ * a.Dv), kThreads, 0, stream()>>>(scores.data<T>(), a.v, out.data<T>(), p.batch,
                                                                         a.T_, a.S, a.Dv);
  OPSCOPE_CUDA_LAUNCHED("attn_pv");
}

template <class T> void attention_backward(KernelCtx& k) {
  Tensor dq = k.out(0), dk = k.out(1), dv = k.out(2);
  const Shape batch_shape = batch_of(dq);
  if (dq.numel() == 0 && dk.numel() == 0 && dv.numel() == 0) return;
  dq.fill(0);
  dk.fill(0);
  dv.fill(0);
  Prepared<T> p = prepare<T>(k, 5, batch_shape);
  const Attn<T>& a = p.a;
  if (a.S == 0 || a.T_ == 0 || p.batch == 0) return;
  if (p.batch > 65535) throw Error(k.op.name + ": the CUDA kernels take up to 65535 matrices in a batch");
  auto full = [&](const Tensor& t) {
    Tensor c = t.dtype() == dtype_of<T>() ? t : t.cast(dtype_of<T>());
    return dense(c);
  };
  Tensor O = full(k.in(3)), dO = full(k.in(4));
  Tensor stats = k.workspace(Shape{int64_t{2}, p.batch * a.T_}, dtype_of<T>());  // L and Δ: O(T)
  T* L = stats.data<T>();
  T* delta = L + p.batch * a.T_;
  const size_t smem = sizeof(T) * kBc * (a.D + a.Dv);
  const dim3 grid_q(static_cast<unsigned>((a.T_ + kBr - 1) / kBr), static_cast<unsigned>(p.batch));
  allow_shared(attn_backward_rows<T>, smem);
  allow_shared(attn_backward_keys<T>, smem);
  attn_backward_rows<T><<<grid_q, kBr, smem, stream()>>>(a, O.data<T>(), dO.data<T>(), dq.data<T>(), L, delta);
  OPSCOPE_CUDA_LAUNCHED("attn_backward_rows");
  const dim3 grid_k(static_cast<unsigned>((a.S + kBr - 1) / kBr), static_cast<unsigned>(p.batch));
  attn_backward_keys<T><<<grid_k, kBr, smem, stream()>>>(a, dO.data<T>(), L, delta, dk.data<T>(), dv.data<T>());
  OPSCOPE_CUDA_LAUNCHED("attn_backward_keys");
}

OPSCOPE_CUDA_REGISTER(register_attention_kernels) {
  add_kernel("scaled_dot_product_attention", "flash", [](KernelCtx& k) {
    visit_float(k.out().dtype(), k.op.name, [&](auto z) { attention_forward<decltype(z)>(k, true); });
  });
  add_kernel("scaled_dot_product_attention", "naive", [](KernelCtx& k) {
    visit_float(k.out().dtype(), k.op.name, [&](auto z) { attention_forward<decltype(z)>(k, false); });
  });
  add_kernel("attention_backward", "flash", [](KernelCtx& k) {
    visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { attention_backward<decltype(z)>(k); });
  });
}

}  // namespace
}  // namespace opscope::cuda
