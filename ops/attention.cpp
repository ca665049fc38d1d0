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
//     scores per thread: O(tile) workspace whatever T and S are. Tile products go to OpenBLAS.
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
// - The tile loops are in ops/cpu/attention.cpp (built per instruction set); here batch
//   indices and query blocks are spread over the thread pool, each thread with its own
//   scratch (the workspace the memory tracker and the cost model show is one per thread).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "ops/cpu/kernels.h"
#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;
using cpu::kRowSumFloat32Rtol;
using cpu::with_float32_rtol;

constexpr int64_t kBlockRows = cpu::kAttentionBlockRows;  // query rows per tile (flash, backward)
constexpr int64_t kBlockCols = cpu::kAttentionBlockCols;  // keys per tile

// ---------------------------------------------------------------------------------------------
// Batch bookkeeping: the output batch (broadcast of q, k, v batch axes) and, for each input,
// the element offset of its matrix for each output batch index.
bool broadcast_batch(const Shape& a, const Shape& b, Shape& out) { return try_broadcast_shapes(a, b, out); }

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// One of q, k, v, o, dO as the kernels read it, in place when it can be: its last axis must
// be adjacent elements and its rows must not overlap (else one dense copy, kept in `held`).
// The heads of a projection, qkv[:, :, 0:256].reshape(N, T, H, D).permute(0, 2, 1, 3), are
// such a view: rows of D elements, ld = 3·H·D apart. Sets the row stride `ld` and the element
// offset of the operand's matrix for each index of `batch` (broadcast axes: 0).
template <class T>
const T* operand(const Tensor& x, const Shape& batch, std::vector<Tensor>& held, int64_t& ld,
                 std::vector<int64_t>& offsets) {
  Tensor t = cpu::as_dtype(x, dtype_of<T>());
  const int64_t r = t.dim(), rows = t.shape()[r - 2], cols = t.shape()[r - 1];
  auto row_stride = [&] { return rows > 1 ? t.strides()[r - 2] : std::max<int64_t>(cols, 1); };
  if ((cols > 1 && t.strides()[r - 1] != 1) || row_stride() < cols) t = t.contiguous(MemCategory::temporary);
  ld = row_stride();
  const int64_t own = r - 2, nb = static_cast<int64_t>(batch.size());
  Strides bs(batch.size(), 0);
  for (int64_t i = 0; i < own; ++i)
    if (t.shape()[i] != 1) bs[nb - own + i] = t.strides()[i];
  offsets = cpu::batch_offsets(batch, bs);
  held.push_back(t);
  return t.data<T>();
}

double resolve_scale(double scale, int64_t D) {
  return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(D, 1)));
}

// Everything a kernel reads, with the tensors and offset vectors it points into kept alive.
template <class T> struct Prepared {
  cpu::AttentionArgs<T> args;
  Shape batch;
  int64_t batches = 1;
  std::vector<Tensor> held;  // cast or contiguous copies
  std::vector<int64_t> qo, ko, vo, mo, oo, go;
};

// The mask as the kernels read it: broadcast to [batch..., T, S] by strides (0 on broadcast
// axes), never copied to its full size.
template <class T> void prepare_mask(const KernelCtx& k, size_t mask_input, Prepared<T>& p) {
  cpu::AttentionArgs<T>& a = p.args;
  a.causal = k.attrs.b("causal");
  if (k.inputs.size() <= mask_input) return;
  const Tensor& mask = k.in(mask_input);
  Shape full = p.batch;
  full.push_back(a.Tq);
  full.push_back(a.S);
  Tensor m = mask.dtype() == DType::i64 ? mask : cpu::as_dtype(mask, dtype_of<T>());
  p.held.push_back(m);
  if (m.dtype() == DType::i64) a.keep = m.data<int64_t>();
  else a.additive = m.template data<T>();
  const Strides st = cpu::broadcast_strides(m, full);
  const int64_t nb = static_cast<int64_t>(p.batch.size());
  a.mask_rs = st[nb];
  a.mask_cs = st[nb + 1];
  p.mo = cpu::batch_offsets(p.batch, Strides(st.begin(), st.begin() + nb));
  a.mask_offsets = p.mo.data();
}

// q, k, v (inputs 0..2) as T, the batch, the scale, and the mask at input `mask_input`.
template <class T> Prepared<T> prepare(const KernelCtx& k, const Shape& out_batch, size_t mask_input) {
  Prepared<T> p;
  const Tensor &q = k.in(0), &kk = k.in(1), &v = k.in(2);
  cpu::AttentionArgs<T>& a = p.args;
  a.Tq = q.shape()[q.dim() - 2];
  a.D = q.shape().back();
  a.S = kk.shape()[kk.dim() - 2];
  a.Dv = v.shape().back();
  a.scale = static_cast<T>(resolve_scale(k.attrs.f("scale"), a.D));
  p.batch = out_batch;
  p.batches = shape_numel(p.batch);
  a.q = operand<T>(q, p.batch, p.held, a.ldq, p.qo);
  a.k = operand<T>(kk, p.batch, p.held, a.ldk, p.ko);
  a.v = operand<T>(v, p.batch, p.held, a.ldv, p.vo);
  a.q_offsets = p.qo.data();
  a.k_offsets = p.ko.data();
  a.v_offsets = p.vo.data();
  prepare_mask(k, mask_input, p);
  return p;
}

// Work per thread: a chunk of naive batches, flash query blocks or backward batches is worth
// ~32K multiply-adds. The cost model below uses the same numbers for the workspace it reports
// (one scratch per thread that runs).
double tile_work(int64_t rows, int64_t S, int64_t D, int64_t Dv) {
  return 2.0 * static_cast<double>(rows) * static_cast<double>(S) * static_cast<double>(D + Dv);
}
int64_t flash_blocks(int64_t Tq) { return (Tq + kBlockRows - 1) / kBlockRows; }
int64_t naive_grain(int64_t Tq, int64_t S, int64_t D, int64_t Dv) { return grain_for(tile_work(Tq, S, D, Dv)); }
int64_t flash_grain(int64_t Tq, int64_t S, int64_t D, int64_t Dv) {
  return grain_for(tile_work(std::min(Tq, kBlockRows), S, D, Dv));
}
int64_t backward_grain(int64_t Tq, int64_t S, int64_t D, int64_t Dv) { return grain_for(3 * tile_work(Tq, S, D, Dv)); }

// One thread's share of a scratch buffer, rounded up to whole 64-byte lines: every thread's
// slice then starts at the same alignment as the first, and the kernels (OpenBLAS, Eigen's
// vectorised sums) take the same path whichever thread runs a batch. Slices at odd offsets
// gave float64 results an ulp apart from run to run at two threads.
int64_t per_thread(int64_t elements, double element_bytes) {
  const int64_t line = std::max<int64_t>(1, static_cast<int64_t>(64 / element_bytes));
  return (elements + line - 1) / line * line;
}

// ---------------------------------------------------------------------------------------------
// naive: the whole T×S score matrix per batch index, one buffer per thread.
template <class T> void attention_naive(KernelCtx& k) {
  Prepared<T> p = prepare<T>(k, batch_of(k.out().shape()), 3);
  cpu::AttentionArgs<T>& a = p.args;
  a.out = k.out().data<T>();
  if (k.out().numel() == 0) return;
  const int64_t grain = naive_grain(a.Tq, a.S, a.D, a.Dv);
  const int workers = parallel_workers(p.batches, grain);
  const int64_t per = per_thread(a.Tq * a.S, sizeof(T));
  Tensor scores = k.workspace({workers, per}, dtype_of<T>());  // the T×S matrix the flash algorithm avoids
  T* sp = scores.data<T>();
  parallel_for_indexed(p.batches, grain, [&](int worker, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) cpu::kern<T>().attention_naive_batch(a, b, sp + worker * per);
  });
}

// ---------------------------------------------------------------------------------------------
// flash: online softmax over key tiles, per block of query rows; one tile per thread.
template <class T> void attention_flash(KernelCtx& k) {
  Prepared<T> p = prepare<T>(k, batch_of(k.out().shape()), 3);
  cpu::AttentionArgs<T>& a = p.args;
  a.out = k.out().data<T>();
  if (k.out().numel() == 0) return;
  const int64_t blocks = flash_blocks(a.Tq), items = p.batches * blocks, grain = flash_grain(a.Tq, a.S, a.D, a.Dv);
  const int workers = parallel_workers(items, grain);
  const int64_t per = per_thread(cpu::attention_flash_scratch(a.Tq, a.S, a.D), sizeof(T));
  Tensor scratch = k.workspace({workers, per}, dtype_of<T>());  // O(tile) per thread, not O(T·S)
  T* sp = scratch.data<T>();
  parallel_for_indexed(items, grain, [&](int worker, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t b = i / blocks, r0 = (i % blocks) * kBlockRows;
      cpu::kern<T>().attention_flash_rows(a, b, r0, std::min(kBlockRows, a.Tq - r0), sp + worker * per);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// attention_backward: dQ, dK, dV by recomputing the softmax tile by tile, per batch index
// (dK and dV add up over the query blocks of their batch, so a batch stays on one thread).
template <class T> void attention_backward_kernel(KernelCtx& k) {
  for (int i = 0; i < 3; ++i) k.out(i).fill(0.0);
  Prepared<T> p = prepare<T>(k, batch_of(k.out(0).shape()), 5);
  cpu::AttentionArgs<T>& a = p.args;
  if (a.Tq == 0 || a.S == 0 || p.batches == 0) return;
  const DType dt = dtype_of<T>();
  a.o = operand<T>(k.in(3), p.batch, p.held, a.ldo, p.oo);
  a.dout = operand<T>(k.in(4), p.batch, p.held, a.lddo, p.go);
  a.o_offsets = p.oo.data();
  a.dout_offsets = p.go.data();
  a.dq = k.out(0).data<T>();
  a.dk = k.out(1).data<T>();
  a.dv = k.out(2).data<T>();
  const int64_t grain = backward_grain(a.Tq, a.S, a.D, a.Dv);
  const int workers = parallel_workers(p.batches, grain);
  const int64_t per = per_thread(cpu::attention_backward_scratch(a.Tq, a.S, a.D, a.Dv), sizeof(T));
  Tensor scratch = k.workspace({workers, per}, dt);
  T* sp = scratch.data<T>();
  parallel_for_indexed(p.batches, grain, [&](int worker, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) cpu::kern<T>().attention_backward_batch(a, b, sp + worker * per);
  });
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
    c.fail("k has S=" + std::to_string(d.S) + " keys but v has " + std::to_string(v[v.size() - 2]) + " values (" + all +
               ")",
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
  const DType dt =
      promote(promote(promote(c.inputs[0].dtype, c.inputs[1].dtype), c.inputs[2].dtype), c.inputs[4].dtype);
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

template <class F> KernelFn typed(F f) {
  return [f](KernelCtx& k) { cpu::visit_float(k.out(0).dtype(), k.op.name, [&](auto z) { f(k, z); }); };
}

OpDef scaled_dot_product_attention_def() {
  OpDef d = OpDef::declare("scaled_dot_product_attention", "attention",
                           "O = softmax(Q·Kᵀ·scale + mask)·V over the last two axes (scale 0: 1/sqrt(D); batch axes "
                           "broadcast)",
                           {"q", "k", "v", "mask?"});
  d.attrs = attention_attrs();
  d.accepts_strided = true;  // heads (permuted views of a projection) are read in place: operand()
  d.infer = infer_attention;
  d.kernel(Device::cpu, "flash", typed([](KernelCtx& k, auto z) { attention_flash<decltype(z)>(k); }));
  d.default_algo = "flash";
  d.kernel(Device::cpu, "naive", typed([](KernelCtx& k, auto z) { attention_naive<decltype(z)>(k); }));
  // Not the T×S probabilities: the backward recomputes them (the mask only when given).
  d.saves = {
      {SavedRef::input, 0}, {SavedRef::input, 1}, {SavedRef::input, 2}, {SavedRef::output, 0}, {SavedRef::input, 3}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    std::vector<Val> ins = {g.input(0), g.input(1), g.input(2), g.output(0), g.grad_output(0)};
    if (g.num_inputs() > 3) ins.push_back(g.input(3));
    auto grads =
        g.call_multi("attention_backward", ins, {{"causal", g.attrs().b("causal")}, {"scale", g.attrs().f("scale")}});
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
      c.workspace_bytes =
          parallel_workers(static_cast<int64_t>(batch), naive_grain(int64_t(Tq), int64_t(S), int64_t(D), int64_t(Dv))) *
          static_cast<double>(per_thread(int64_t(Tq * S), sz)) * sz;
    } else {
      // K and V are read once per block of query rows; nothing T×S touches memory.
      const double passes = std::ceil(Tq / static_cast<double>(kBlockRows));
      c.bytes_read = cpu::meta_bytes(in[0]) + passes * (cpu::meta_bytes(in[1]) + cpu::meta_bytes(in[2])) + mask_bytes;
      const int64_t items = static_cast<int64_t>(batch) * flash_blocks(int64_t(Tq));
      const int workers = parallel_workers(items, flash_grain(int64_t(Tq), int64_t(S), int64_t(D), int64_t(Dv)));
      c.workspace_bytes =
          static_cast<double>(workers *
                              per_thread(cpu::attention_flash_scratch(int64_t(Tq), int64_t(S), int64_t(D)), sz)) *
          sz;
    }
    return c;
  };
  const InputSpec q{{4, 3}}, k{{5, 3}}, v{{5, 3}};
  GradcheckCase float_mask = gc({q, k, v, InputSpec{{4, 5}, Domain::any, 0, false}}, {}, "float mask");
  GradcheckCase int_mask = gc({q, k, v, InputSpec{{4, 5}, Domain::mask, 0, false}}, {}, "int64 0/1 mask");
  d.gradcheck =
      with_float32_rtol({gc({q, k, v}, {}, "T=4, S=5, D=3"), gc({q, k, v}, {{"causal", true}}, "causal"), float_mask,
                         int_mask,
                         gc({q, k, v, InputSpec{{5}, Domain::any, 0, false}}, {{"causal", true}, {"scale", 0.7}},
                            "causal + broadcast float mask [S], scale 0.7"),
                         gc({{{2, 4, 3}}, {{2, 5, 3}}, {{2, 5, 2}}}, {}, "batch of 2, Dv=2"),
                         gc({{{2, 4, 3}}, {{5, 3}}, {{1, 5, 3}}}, {{"causal", true}}, "q batch 2, k and v broadcast")},
                        kRowSumFloat32Rtol);
  d.lab = {"T [D]: q, k, v are T×D",
           {1024, 64},
           1,
           [](const std::vector<int64_t>& s) {
             const int64_t t = s[0], dh = cpu::size_or(s, 1, 64);
             return cpu::lab_case({{t, dh}, {t, dh}, {t, dh}});
           },
           {}};
  return d;
}

OpDef attention_backward_def() {
  OpDef d = OpDef::declare("attention_backward", "attention",
                           "dQ, dK, dV of O = softmax(Q·Kᵀ·scale + mask)·V given dO: P = exp(S − L), "
                           "dS = P ∘ (dO·Vᵀ − rowsum(dO ∘ O)), dQ = dS·K·scale, dK = dSᵀ·Q·scale, dV = Pᵀ·dO",
                           {"q", "k", "v", "o", "dO", "mask?"});
  d.num_outputs = 3;
  d.attrs = attention_attrs();
  d.accepts_strided = true;
  d.infer = infer_attention_backward;
  d.kernel(Device::cpu, "flash", typed([](KernelCtx& k, auto z) { attention_backward_kernel<decltype(z)>(k); }));
  d.differentiable = false;
  d.checked_via = "scaled_dot_product_attention";
  // Cases for the CUDA tests (gradchecked through scaled_dot_product_attention); o need not be
  // the forward's output for the devices to agree.
  d.gradcheck = with_float32_rtol({gc({{{5, 4}}, {{6, 4}}, {{6, 3}}, {{5, 3}}, {{5, 3}}}),
                                   gc({{{2, 5, 4}}, {{2, 5, 4}}, {{2, 5, 4}}, {{2, 5, 4}}, {{2, 5, 4}}},
                                      {{"causal", true}}, "batch 2, causal")},
                                  kRowSumFloat32Rtol);
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
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
    const int workers =
        parallel_workers(static_cast<int64_t>(batch), backward_grain(int64_t(Tq), int64_t(S), int64_t(D), int64_t(Dv)));
    c.workspace_bytes =
        static_cast<double>(
            workers *
            per_thread(cpu::attention_backward_scratch(int64_t(Tq), int64_t(S), int64_t(D), int64_t(Dv)), sz)) *
        sz;
    return c;
  };
  return d;
}

OPSCOPE_REGISTER_OPS(register_attention_ops) {
  registry.add(scaled_dot_product_attention_def());
  registry.add(attention_backward_def());
}

}  // namespace
}  // namespace opscope
