// Scaled dot-product attention O = softmax(Q·Kᵀ·scale + mask)·V, with two algorithms side by
// side, and its dedicated backward op attention_backward.
//
// Shape letters: T queries, S keys/values, D head size (q, k), Dv value size; batch axes (all
// but the last two) of q, k and v broadcast NumPy-style.
//
// Design (why it looks like this):
// - One forward op, one output O [..., T, Dv]. Shape inference does not know the algorithm, so
//   the two algorithms cannot have different outputs; both compute O only.
//   * "naive" materialises the T×S matrix: scores = Q·Kᵀ·scale + mask (causal: −inf above the
//     diagonal), a stable softmax in place, then O = P·V. The T×S buffer comes from
//     k.workspace, so the memory tracker shows its real cost (T·S·4 bytes in float32: 64 MiB
//     at T = S = 4096) as peak workspace.
//   * "flash" tiles queries (kBlockRows) and keys (kBlockCols) and keeps, per query row, the
//     running max m and sum l of the online softmax: for each key tile
//         m' = max(m, rowmax(S_tile)), P = exp(S_tile − m'), l = l·e^(m−m') + Σ P,
//         O = O·e^(m−m') + P·V_tile,
//     and O /= l at the end. It never holds more than one kBlockRows×kBlockCols tile of
//     scores: O(tile) workspace whatever T and S are. Tile products are Eigen GEMMs.
// - Backward: the forward saves q, k, v, O (and the mask when given), not the T×S
//   probabilities. attention_backward(q, k, v, O, dO, mask?) recomputes them tile by tile
//   (FlashAttention's backward): a first sweep over the key tiles rebuilds each row's
//   logsumexp L = m + log l, then per tile P = exp(S − L), dV += Pᵀ·dO, dP = dO·Vᵀ,
//   dS = P ∘ (dP − Δ) with Δ = rowsum(dO ∘ O), dQ += dS·K·scale, dK += dSᵀ·Q·scale.
//   Recomputing S costs two more Q·Kᵀ products instead of T×S saved bytes: the
//   compute-for-memory trade of checkpointing.
// - Masks: a float mask is added to the scores; an int64 mask means 1 = keep, 0 = masked
//   (−inf). Either broadcasts to [..., T, S]. causal=True keeps key j for query i when j <= i
//   (top-left aligned, as PyTorch's is_causal). The mask gets no gradient.
// - A fully masked row (every score −inf) has no softmax; both algorithms define its output
//   as 0 (and its gradients as 0), rather than the NaN of 0/0.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

constexpr int64_t kBlockRows = 64;  // query rows per tile (flash, backward)
constexpr int64_t kBlockCols = 64;  // keys per tile

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MatMap = Eigen::Map<RowMat<T>>;
template <class T>
using ConstMatMap = Eigen::Map<const RowMat<T>>;
template <class T>
using RowArray = Eigen::Array<T, 1, Eigen::Dynamic>;
template <class T>
using RowMap = Eigen::Map<RowArray<T>>;
template <class T>
using ConstRowMap = Eigen::Map<const RowArray<T>>;

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// o = exp(v), with exactly 0 where exp would be subnormal: Eigen's exp(−inf) is about 5e-309
// in float64, and a masked score must weigh exactly 0 (as in ops/softmax.cpp).
template <class T, class Expr>
void assign_exp_flushed(RowMap<T> o, const Expr& v) {
  static const T kLowest = std::log(std::numeric_limits<T>::min());
  o = v.exp();
  if (o.size() > 0 && v.minCoeff() < kLowest) o = (v < kLowest).select(static_cast<T>(0), o);
}

// ---------------------------------------------------------------------------------------------
// Batch bookkeeping: the output batch (broadcast of q, k, v batch axes) and, for each input,
// the element offset of its matrix for each output batch index.
bool broadcast_batch(const Shape& a, const Shape& b, Shape& out) { return try_broadcast_shapes(a, b, out); }

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// Offsets of the (contiguous) tensor's matrices for each index of `batch` (broadcast axes: 0).
std::vector<int64_t> batch_offsets(const Tensor& t, const Shape& batch) {
  const Shape& s = t.shape();
  const int64_t own = static_cast<int64_t>(s.size()) - 2, nb = static_cast<int64_t>(batch.size());
  const Strides st = contiguous_strides(s);
  Strides bs(batch.size(), 0);
  for (int64_t i = 0; i < own; ++i)
    if (s[i] != 1) bs[nb - own + i] = st[i];
  return cpu::batch_offsets(batch, bs);
}

// The mask as the kernels read it: broadcast to [batch..., T, S] by strides (0 on broadcast
// axes), never copied to its full size.
template <class T>
struct MaskView {
  const T* additive = nullptr;     // float mask (cast to T)
  const int64_t* keep = nullptr;   // int64 mask: 0 = masked
  int64_t rs = 0, cs = 0;          // row (query) and column (key) strides
  std::vector<int64_t> offsets;    // per output batch index
  Tensor held;                     // keeps a cast copy alive
  bool causal = false;

  bool any() const { return additive || keep || causal; }
  // scores[r, c] (+)= mask for query rows i0.., key columns j0.. of batch b; ld = row stride of scores.
  void apply(T* scores, int64_t ld, int64_t b, int64_t i0, int64_t rows, int64_t j0, int64_t cols) const {
    if (additive) {
      const T* m = additive + offsets[b];
      for (int64_t r = 0; r < rows; ++r) {
        T* s = scores + r * ld;
        const T* mr = m + (i0 + r) * rs + j0 * cs;
        if (cs == 1) for (int64_t c = 0; c < cols; ++c) s[c] += mr[c];
        else for (int64_t c = 0; c < cols; ++c) s[c] += mr[c * cs];
      }
    } else if (keep) {
      const int64_t* m = keep + offsets[b];
      for (int64_t r = 0; r < rows; ++r) {
        T* s = scores + r * ld;
        const int64_t* mr = m + (i0 + r) * rs + j0 * cs;
        for (int64_t c = 0; c < cols; ++c)
          if (mr[c * cs] == 0) s[c] = kNegInf<T>;
      }
    }
    if (causal)  // key j is visible to query i when j <= i
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t first_hidden = std::max<int64_t>(0, i0 + r + 1 - j0);
        T* s = scores + r * ld;
        for (int64_t c = first_hidden; c < cols; ++c) s[c] = kNegInf<T>;
      }
  }
  // Causal tiles entirely above the diagonal hold nothing visible: skipped.
  bool tile_hidden(int64_t i0, int64_t rows, int64_t j0) const { return causal && j0 > i0 + rows - 1; }
};

template <class T>
MaskView<T> make_mask(const KernelCtx& k, size_t mask_input, const Shape& batch, int64_t Tq, int64_t S) {
  MaskView<T> m;
  m.causal = k.attrs.b("causal");
  if (k.inputs.size() <= mask_input) return m;
  const Tensor& mask = k.in(mask_input);
  Shape full = batch;
  full.push_back(Tq);
  full.push_back(S);
  if (mask.dtype() == DType::i64) {
    m.held = mask;
    m.keep = mask.data<int64_t>();
  } else {
    m.held = cpu::as_dtype(mask, dtype_of<T>());
    m.additive = m.held.template data<T>();
  }
  const Strides st = cpu::broadcast_strides(m.held, full);
  const int64_t nb = static_cast<int64_t>(batch.size());
  m.rs = st[nb];
  m.cs = st[nb + 1];
  m.offsets = cpu::batch_offsets(batch, Strides(st.begin(), st.begin() + nb));
  return m;
}

double resolve_scale(double scale, int64_t D) {
  return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(D, 1)));
}

// Everything a kernel needs about one call: sizes, the batch, per-input offsets.
struct Problem {
  int64_t Tq = 0, S = 0, D = 0, Dv = 0, batches = 1;
  Shape batch;
  std::vector<int64_t> qo, ko, vo;
  double scale = 1;
};

Problem make_problem(const KernelCtx& k, const Tensor& q, const Tensor& kk, const Tensor& v) {
  Problem p;
  p.Tq = q.shape()[q.dim() - 2];
  p.D = q.shape().back();
  p.S = kk.shape()[kk.dim() - 2];
  p.Dv = v.shape().back();
  const Shape& os = k.out(0).shape();
  p.batch = batch_of(os);
  p.batches = shape_numel(p.batch);
  p.qo = batch_offsets(q, p.batch);
  p.ko = batch_offsets(kk, p.batch);
  p.vo = batch_offsets(v, p.batch);
  p.scale = resolve_scale(k.attrs.f("scale"), p.D);
  return p;
}

// Row softmax in place over `cols` scores; a fully masked row (max −inf) becomes all 0.
template <class T>
void softmax_row_inplace(T* row, int64_t cols) {
  RowMap<T> r(row, cols);
  const T m = cols > 0 ? r.maxCoeff() : kNegInf<T>;
  if (m == kNegInf<T>) {
    r.setZero();
    return;
  }
  assign_exp_flushed<T>(r, r - m);
  r *= static_cast<T>(1) / r.sum();
}

// ---------------------------------------------------------------------------------------------
// naive: the whole T×S score matrix in one workspace buffer (reused across the batch).
template <class T>
void attention_naive(KernelCtx& k) {
  const DType dt = k.out().dtype();
  Tensor q = cpu::as_dtype(k.in(0), dt), kk = cpu::as_dtype(k.in(1), dt), v = cpu::as_dtype(k.in(2), dt);
  const Problem p = make_problem(k, q, kk, v);
  const MaskView<T> mask = make_mask<T>(k, 3, p.batch, p.Tq, p.S);
  T* out = k.out().data<T>();
  if (k.out().numel() == 0) return;
  Tensor scores = k.workspace({p.Tq, p.S}, dt);  // the T×S matrix the flash algorithm avoids
  T* sp = scores.data<T>();
  const T scale = static_cast<T>(p.scale);
  for (int64_t b = 0; b < p.batches; ++b) {
    ConstMatMap<T> Q(q.data<T>() + p.qo[b], p.Tq, p.D), K(kk.data<T>() + p.ko[b], p.S, p.D),
        V(v.data<T>() + p.vo[b], p.S, p.Dv);
    MatMap<T> Sc(sp, p.Tq, p.S), O(out + b * p.Tq * p.Dv, p.Tq, p.Dv);
    Sc.noalias() = (Q * scale) * K.transpose();
    if (mask.any()) mask.apply(sp, p.S, b, 0, p.Tq, 0, p.S);
    for (int64_t i = 0; i < p.Tq; ++i) softmax_row_inplace<T>(sp + i * p.S, p.S);
    O.noalias() = Sc * V;
  }
}

// ---------------------------------------------------------------------------------------------
// flash: online softmax over key tiles; O itself is the accumulator.
template <class T>
void attention_flash(KernelCtx& k) {
  const DType dt = k.out().dtype();
  Tensor q = cpu::as_dtype(k.in(0), dt), kk = cpu::as_dtype(k.in(1), dt), v = cpu::as_dtype(k.in(2), dt);
  const Problem p = make_problem(k, q, kk, v);
  const MaskView<T> mask = make_mask<T>(k, 3, p.batch, p.Tq, p.S);
  T* out = k.out().data<T>();
  if (k.out().numel() == 0) return;
  const int64_t br = std::min(kBlockRows, p.Tq), bc = std::max<int64_t>(1, std::min(kBlockCols, p.S));
  Tensor tile = k.workspace({br, bc}, dt), stats = k.workspace({2, br}, dt);  // O(tile), not O(T·S)
  T* sp = tile.data<T>();
  T* m = stats.data<T>();
  T* l = m + br;
  const T scale = static_cast<T>(p.scale);
  for (int64_t b = 0; b < p.batches; ++b) {
    const T* Qb = q.data<T>() + p.qo[b];
    const T* Kb = kk.data<T>() + p.ko[b];
    const T* Vb = v.data<T>() + p.vo[b];
    T* Ob = out + b * p.Tq * p.Dv;
    for (int64_t i0 = 0; i0 < p.Tq; i0 += br) {
      const int64_t rows = std::min(br, p.Tq - i0);
      ConstMatMap<T> Q(Qb + i0 * p.D, rows, p.D);
      MatMap<T> O(Ob + i0 * p.Dv, rows, p.Dv);
      O.setZero();
      std::fill(m, m + rows, kNegInf<T>);
      std::fill(l, l + rows, T(0));
      for (int64_t j0 = 0; j0 < p.S; j0 += bc) {
        if (mask.tile_hidden(i0, rows, j0)) break;  // later tiles are further right: hidden too
        const int64_t cols = std::min(bc, p.S - j0);
        ConstMatMap<T> K(Kb + j0 * p.D, cols, p.D), V(Vb + j0 * p.Dv, cols, p.Dv);
        MatMap<T> Sc(sp, rows, cols);
        Sc.noalias() = (Q * scale) * K.transpose();
        if (mask.any()) mask.apply(sp, cols, b, i0, rows, j0, cols);
        for (int64_t r = 0; r < rows; ++r) {
          RowMap<T> s(sp + r * cols, cols);
          const T m_new = std::max(m[r], s.maxCoeff());
          if (m_new == kNegInf<T>) {  // nothing visible in this row yet
            s.setZero();
            continue;
          }
          assign_exp_flushed<T>(s, s - m_new);
          const T alpha = std::exp(m[r] - m_new);  // 0 on the first visible tile (m = −inf)
          l[r] = l[r] * alpha + s.sum();
          if (alpha != T(1)) O.row(r) *= alpha;
          m[r] = m_new;
        }
        O.noalias() += Sc * V;
      }
      for (int64_t r = 0; r < rows; ++r) {
        if (l[r] > T(0)) O.row(r) *= static_cast<T>(1) / l[r];
        else O.row(r).setZero();  // fully masked row: 0 (see the top of the file)
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// attention_backward: dQ, dK, dV by recomputing the softmax tile by tile.
template <class T>
void attention_backward_kernel(KernelCtx& k) {
  const DType dt = k.out(0).dtype();
  Tensor q = cpu::as_dtype(k.in(0), dt), kk = cpu::as_dtype(k.in(1), dt), v = cpu::as_dtype(k.in(2), dt);
  Tensor o = cpu::as_dtype(k.in(3), dt), dout = cpu::as_dtype(k.in(4), dt);
  Problem p;
  p.Tq = q.shape()[q.dim() - 2];
  p.D = q.shape().back();
  p.S = kk.shape()[kk.dim() - 2];
  p.Dv = v.shape().back();
  p.batch = batch_of(k.out(0).shape());
  p.batches = shape_numel(p.batch);
  p.qo = batch_offsets(q, p.batch);
  p.ko = batch_offsets(kk, p.batch);
  p.vo = batch_offsets(v, p.batch);
  p.scale = resolve_scale(k.attrs.f("scale"), p.D);
  const std::vector<int64_t> oo = batch_offsets(o, p.batch), go = batch_offsets(dout, p.batch);
  const MaskView<T> mask = make_mask<T>(k, 5, p.batch, p.Tq, p.S);
  for (int i = 0; i < 3; ++i) k.out(i).fill(0.0);
  if (p.Tq == 0 || p.S == 0 || p.batches == 0) return;
  const int64_t br = std::min(kBlockRows, p.Tq), bc = std::min(kBlockCols, p.S);
  Tensor ptile = k.workspace({br, bc}, dt), dptile = k.workspace({br, bc}, dt), stats = k.workspace({4, br}, dt);
  T* pp = ptile.data<T>();
  T* dpp = dptile.data<T>();
  T* L = stats.data<T>();  // row logsumexp (−inf: fully masked row)
  T* delta = L + br;       // Δ = rowsum(dO ∘ O)
  T* m = L + 2 * br;       // running max and sum of sweep 1
  T* l = L + 3 * br;
  const T scale = static_cast<T>(p.scale);
  for (int64_t b = 0; b < p.batches; ++b) {
    const T* Qb = q.data<T>() + p.qo[b];
    const T* Kb = kk.data<T>() + p.ko[b];
    const T* Vb = v.data<T>() + p.vo[b];
    const T* Ob = o.data<T>() + oo[b];
    const T* dOb = dout.data<T>() + go[b];
    T* dQb = k.out(0).data<T>() + b * p.Tq * p.D;
    T* dKb = k.out(1).data<T>() + b * p.S * p.D;
    T* dVb = k.out(2).data<T>() + b * p.S * p.Dv;
    for (int64_t i0 = 0; i0 < p.Tq; i0 += br) {
      const int64_t rows = std::min(br, p.Tq - i0);
      ConstMatMap<T> Q(Qb + i0 * p.D, rows, p.D), dO(dOb + i0 * p.Dv, rows, p.Dv), O(Ob + i0 * p.Dv, rows, p.Dv);
      MatMap<T> dQ(dQb + i0 * p.D, rows, p.D);
      // Sweep 1: the row statistics, by the same online max/sum as the flash forward.
      std::fill(m, m + rows, kNegInf<T>);
      std::fill(l, l + rows, T(0));
      for (int64_t j0 = 0; j0 < p.S; j0 += bc) {
        if (mask.tile_hidden(i0, rows, j0)) break;
        const int64_t cols = std::min(bc, p.S - j0);
        MatMap<T> Sc(pp, rows, cols);
        Sc.noalias() = (Q * scale) * ConstMatMap<T>(Kb + j0 * p.D, cols, p.D).transpose();
        if (mask.any()) mask.apply(pp, cols, b, i0, rows, j0, cols);
        for (int64_t r = 0; r < rows; ++r) {
          RowMap<T> s(pp + r * cols, cols);
          const T m_new = std::max(m[r], s.maxCoeff());
          if (m_new == kNegInf<T>) continue;
          l[r] = l[r] * std::exp(m[r] - m_new) + (s - m_new).exp().sum();
          m[r] = m_new;
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        L[r] = l[r] > T(0) ? m[r] + std::log(l[r]) : kNegInf<T>;
        delta[r] = (dO.row(r).array() * O.row(r).array()).sum();
      }
      // Sweep 2: per tile P = exp(S − L), then the four gradient products.
      for (int64_t j0 = 0; j0 < p.S; j0 += bc) {
        if (mask.tile_hidden(i0, rows, j0)) break;
        const int64_t cols = std::min(bc, p.S - j0);
        ConstMatMap<T> K(Kb + j0 * p.D, cols, p.D), V(Vb + j0 * p.Dv, cols, p.Dv);
        MatMap<T> P(pp, rows, cols), dP(dpp, rows, cols);
        MatMap<T> dK(dKb + j0 * p.D, cols, p.D), dV(dVb + j0 * p.Dv, cols, p.Dv);
        P.noalias() = (Q * scale) * K.transpose();
        if (mask.any()) mask.apply(pp, cols, b, i0, rows, j0, cols);
        for (int64_t r = 0; r < rows; ++r) {
          RowMap<T> s(pp + r * cols, cols);
          if (L[r] == kNegInf<T>) s.setZero();  // fully masked row: no gradient
          else assign_exp_flushed<T>(s, s - L[r]);
        }
        dV.noalias() += P.transpose() * dO;                    // dV += Pᵀ·dO
        dP.noalias() = dO * V.transpose();                     // dP = dO·Vᵀ
        for (int64_t r = 0; r < rows; ++r)                     // dS = P ∘ (dP − Δ), in dP's buffer
          dP.row(r).array() = P.row(r).array() * (dP.row(r).array() - delta[r]);
        dQ.noalias() += (dP * scale) * K;                      // dQ += dS·K·scale
        dK.noalias() += (dP.transpose() * scale) * Q;          // dK += dSᵀ·Q·scale
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Shape inference.
struct Dims {
  int64_t Tq, S, D, Dv;
  Shape batch;
};

Dims check_qkv(const InferCtx& c) {
  const char* names[3] = {"q", "k", "v"};
  for (size_t i = 0; i < 3; ++i) {
    if (c.inputs[i].shape.size() < 2)
      c.fail(std::string(names[i]) + " has shape " + shape_str(c.inputs[i].shape) +
                 "; q, k and v need rank >= 2 ([..., T, D], [..., S, D], [..., S, Dv])",
             "one head of one sequence is a matrix: reshape a vector to [1, n]");
    c.expect_float(i);
  }
  const Shape &q = c.inputs[0].shape, &k = c.inputs[1].shape, &v = c.inputs[2].shape;
  const std::string all = "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v);
  Dims d;
  d.Tq = q[q.size() - 2];
  d.D = q.back();
  d.S = k[k.size() - 2];
  d.Dv = v.back();
  if (k.back() != d.D)
    c.fail("q has head size D=" + std::to_string(d.D) + " but k has D=" + std::to_string(k.back()) + " (" + all + ")",
           "the last axes of q and k must be equal: scores are q·kᵀ");
  if (v[v.size() - 2] != d.S)
    c.fail("k has S=" + std::to_string(d.S) + " keys but v has " + std::to_string(v[v.size() - 2]) + " values (" +
               all + ")",
           "the second-last axes of k and v must be equal: one value per key");
  Shape qk;
  if (!broadcast_batch(batch_of(q), batch_of(k), qk) || !broadcast_batch(qk, batch_of(v), d.batch))
    c.fail("batch axes of " + all + " cannot be broadcast", "batch axes must be equal or 1 (matched from the right)");
  return d;
}

void check_mask(const InferCtx& c, size_t i, const Dims& d) {
  if (c.inputs.size() <= i) return;
  const TensorMeta& m = c.inputs[i];
  if (m.dtype != DType::i64 && !is_floating(m.dtype))
    c.fail("mask must be float (added to the scores) or int64 (1 = keep, 0 = masked)");
  Shape full = d.batch;
  full.push_back(d.Tq);
  full.push_back(d.S);
  if (!can_broadcast_to(m.shape, full))
    c.fail("mask of shape " + shape_str(m.shape) + " cannot be broadcast to the scores " + shape_str(full) +
               " ([..., T, S])",
           "give a [T, S] mask, or one whose axes are equal to those of the scores or 1");
}

std::vector<TensorMeta> infer_attention(const InferCtx& c) {
  const Dims d = check_qkv(c);
  check_mask(c, 3, d);
  TensorMeta o;
  o.shape = d.batch;
  o.shape.push_back(d.Tq);
  o.shape.push_back(d.Dv);
  o.dtype = promote(promote(c.inputs[0].dtype, c.inputs[1].dtype), c.inputs[2].dtype);
  return {o};
}

std::vector<TensorMeta> infer_attention_backward(const InferCtx& c) {
  const Dims d = check_qkv(c);
  Shape o = d.batch;
  o.push_back(d.Tq);
  o.push_back(d.Dv);
  for (size_t i : {size_t{3}, size_t{4}}) {
    c.expect_float(i);
    if (c.inputs[i].shape != o)
      c.fail(std::string(i == 3 ? "o" : "dO") + " has shape " + shape_str(c.inputs[i].shape) + " but the output is " +
             shape_str(o));
  }
  check_mask(c, 5, d);
  const DType dt = promote(promote(promote(c.inputs[0].dtype, c.inputs[1].dtype), c.inputs[2].dtype), c.inputs[4].dtype);
  auto meta = [&](int64_t rows, int64_t cols) {
    TensorMeta m;
    m.shape = d.batch;
    m.shape.push_back(rows);
    m.shape.push_back(cols);
    m.dtype = dt;
    return m;
  };
  return {meta(d.Tq, d.D), meta(d.S, d.D), meta(d.S, d.Dv)};
}

std::vector<AttrSpec> attention_attrs() {
  return {make_attr("causal", AttrType::boolean, false, "hide key j from query i when j > i (top-left aligned)"),
          make_attr("scale", AttrType::real, 0.0, "score scale; 0 means 1/sqrt(D)", 0.0)};
}

template <class F>
KernelFn typed(F f) {
  return [f](KernelCtx& k) {
    cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { f(k, z); });
  };
}

OPSCOPE_REGISTER_OPS(register_attention_ops) {
  {
    OpDef d = OpDef::declare("scaled_dot_product_attention", "attention",
                             "O = softmax(Q·Kᵀ·scale + mask)·V over the last two axes (scale 0: 1/sqrt(D); batch axes "
                             "broadcast)",
                             {"q", "k", "v", "mask?"});
    d.attrs = attention_attrs();
    d.infer = infer_attention;
    // The first kernel registered is the default.
    d.kernel(Device::cpu, "flash", typed([](KernelCtx& k, auto z) { attention_flash<decltype(z)>(k); }));
    d.default_algo = "flash";
    d.kernel(Device::cpu, "naive", typed([](KernelCtx& k, auto z) { attention_naive<decltype(z)>(k); }));
    // Not the T×S probabilities: the backward recomputes them (the mask only when given).
    d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}, {SavedRef::input, 2}, {SavedRef::output, 0},
               {SavedRef::input, 3}};
    d.backward = [](GradCtx& g) -> std::vector<Val> {
      std::vector<Val> ins = {g.input(0), g.input(1), g.input(2), g.output(0), g.grad_output(0)};
      if (g.num_inputs() > 3) ins.push_back(g.input(3));
      auto grads = g.call_multi("attention_backward", ins,
                                {{"causal", g.attrs().b("causal")}, {"scale", g.attrs().f("scale")}});
      return {grads[0], grads[1], grads[2], Val{}};
    };
    d.backward_note = "dQ, dK, dV by attention_backward (recomputes the softmax tile by tile); the mask gets none";
    d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&,
                std::string_view algo) {
      Cost c;
      const Shape& q = in[0].shape;
      const double Tq = static_cast<double>(q[q.size() - 2]), D = static_cast<double>(q.back());
      const double S = static_cast<double>(in[1].shape[in[1].shape.size() - 2]);
      const double Dv = static_cast<double>(in[2].shape.back());
      const double batch = cpu::meta_numel(out[0]) / std::max(1.0, Tq * Dv);
      const double sz = static_cast<double>(dtype_size(out[0].dtype));
      c.multiplications = batch * Tq * S * (D + Dv);
      c.flops = batch * (2 * Tq * S * (D + Dv) + 5 * Tq * S);  // two GEMMs + softmax (exp counted as 1)
      double mask_bytes = in.size() > 3 ? cpu::meta_bytes(in[3]) : 0;
      c.bytes_written = cpu::meta_bytes(out[0]);
      if (algo == "naive") {
        // Scores written, read by the softmax, written back, read by P·V: the T×S round trips.
        const double ts = batch * Tq * S * sz;
        c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]) + cpu::meta_bytes(in[2]) + mask_bytes + 2 * ts;
        c.bytes_written += 2 * ts;
        c.workspace_bytes = Tq * S * sz;
      } else {
        // K and V are read once per block of query rows; nothing T×S touches memory.
        const double passes = std::ceil(Tq / static_cast<double>(kBlockRows));
        c.bytes_read = cpu::meta_bytes(in[0]) + passes * (cpu::meta_bytes(in[1]) + cpu::meta_bytes(in[2])) + mask_bytes;
        const double br = std::min<double>(kBlockRows, Tq), bc = std::min<double>(kBlockCols, S);
        c.workspace_bytes = (br * bc + 2 * br) * sz;
      }
      return c;
    };
    const InputSpec q{{4, 3}}, k{{5, 3}}, v{{5, 3}};
    GradcheckCase float_mask = gc({q, k, v, InputSpec{{4, 5}, Domain::any, 0, false}}, {}, "float mask");
    GradcheckCase int_mask = gc({q, k, v, InputSpec{{4, 5}, Domain::mask, 0, false}}, {}, "int64 0/1 mask");
    d.gradcheck = {gc({q, k, v}, {}, "T=4, S=5, D=3"),
                   gc({q, k, v}, {{"causal", true}}, "causal"),
                   float_mask,
                   int_mask,
                   gc({q, k, v, InputSpec{{5}, Domain::any, 0, false}}, {{"causal", true}, {"scale", 0.7}},
                      "causal + broadcast float mask [S], scale 0.7"),
                   gc({{{2, 4, 3}}, {{2, 5, 3}}, {{2, 5, 2}}}, {}, "batch of 2, Dv=2"),
                   gc({{{2, 4, 3}}, {{5, 3}}, {{1, 5, 3}}}, {{"causal", true}}, "q batch 2, k and v broadcast")};
    d.lab = {"T [D]: q, k, v are T×D", {1024, 64}, 1, [](const std::vector<int64_t>& s) {
               const int64_t t = s[0], dh = cpu::size_or(s, 1, 64);
               return cpu::lab_case({{t, dh}, {t, dh}, {t, dh}});
             }, {}};
    registry.add(std::move(d));
  }
  {
    OpDef d = OpDef::declare("attention_backward", "attention",
                             "dQ, dK, dV of O = softmax(Q·Kᵀ·scale + mask)·V given dO: P = exp(S − L), "
                             "dS = P ∘ (dO·Vᵀ − rowsum(dO ∘ O)), dQ = dS·K·scale, dK = dSᵀ·Q·scale, dV = Pᵀ·dO",
                             {"q", "k", "v", "o", "dO", "mask?"});
    d.num_outputs = 3;
    d.attrs = attention_attrs();
    d.infer = infer_attention_backward;
    d.kernel(Device::cpu, "flash", typed([](KernelCtx& k, auto z) { attention_backward_kernel<decltype(z)>(k); }));
    d.differentiable = false;
    d.checked_via = "scaled_dot_product_attention";
    // Cases for the CUDA tests (gradchecked through scaled_dot_product_attention); o need not be
    // the forward's output for the devices to agree.
    d.gradcheck = {gc({{{5, 4}}, {{6, 4}}, {{6, 3}}, {{5, 3}}, {{5, 3}}}),
                   gc({{{2, 5, 4}}, {{2, 5, 4}}, {{2, 5, 4}}, {{2, 5, 4}}, {{2, 5, 4}}}, {{"causal", true}}, "batch 2, causal")};
    d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&,
                std::string_view) {
      Cost c;
      const Shape& q = in[0].shape;
      const double Tq = static_cast<double>(q[q.size() - 2]), D = static_cast<double>(q.back());
      const double S = static_cast<double>(in[1].shape[in[1].shape.size() - 2]);
      const double Dv = static_cast<double>(in[2].shape.back());
      const double batch = cpu::meta_numel(out[0]) / std::max(1.0, Tq * D);
      const double sz = static_cast<double>(dtype_size(out[0].dtype));
      // Q·Kᵀ twice (statistics, then P), Pᵀ·dO, dO·Vᵀ, dS·K, dSᵀ·Q.
      c.multiplications = batch * Tq * S * (4 * D + 2 * Dv);
      c.flops = 2 * c.multiplications + batch * 8 * Tq * S;
      const double passes = std::ceil(Tq / static_cast<double>(kBlockRows));
      for (size_t i = 0; i < in.size(); ++i) c.bytes_read += (i == 1 || i == 2 ? passes : 1.0) * cpu::meta_bytes(in[i]);
      for (auto& m : out) c.bytes_written += cpu::meta_bytes(m);
      c.bytes_written += (passes - 1) * (cpu::meta_bytes(out[1]) + cpu::meta_bytes(out[2]));  // dK, dV accumulated
      const double br = std::min<double>(kBlockRows, Tq), bc = std::min<double>(kBlockCols, S);
      c.workspace_bytes = (2 * br * bc + 4 * br) * sz;
      return c;
    };
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
