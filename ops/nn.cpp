// Neural-network layers: linear (y = x·Wᵀ + b) and dropout (a deterministic counter-based
// mask). Backward formulas are compositions of registered ops (matmul, reshape, sum).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ops/cpu_util.h"
#include "ops/gemm.h"

namespace opscope {
namespace {

using cpu::gc;

// A view of `v` as a matrix [-1, n]; no node when it already is one.
Val as_rows(GradCtx& g, const Val& v, int64_t n) {
  const Shape s = v.shape();
  if (s.size() == 2) return v;
  int64_t rows = 1;  // explicit, not -1: n may be 0
  for (size_t i = 0; i + 1 < s.size(); ++i) rows *= s[i];
  return g.call("reshape", {v}, {{"shape", std::vector<int64_t>{rows, n}}});
}

// ---------------------------------------------------------------------------------------------
// linear: x [..., in], weight [out, in] (PyTorch's layout), bias [out].
std::vector<TensorMeta> infer_linear(const InferCtx& c) {
  const Shape &x = c.inputs[0].shape, &w = c.inputs[1].shape;
  if (x.empty()) c.fail("x must have at least one axis (its last axis holds the input features), got a 0-d scalar");
  if (w.size() != 2) c.fail("weight must be 2-D [out_features, in_features], got shape " + shape_str(w));
  for (size_t i = 0; i < c.inputs.size(); ++i) c.expect_float(i);
  const int64_t in = x.back(), out = w[0];
  if (w[1] != in)
    c.fail("input features differ: x " + shape_str(x) + " has " + std::to_string(in) + " in its last axis but weight " +
               shape_str(w) + " is [out=" + std::to_string(out) + ", in=" + std::to_string(w[1]) + "] (" +
               std::to_string(in) + " != " + std::to_string(w[1]) + ")",
           w[0] == in ? "weight is stored [out_features, in_features]; it looks transposed: use transpose(weight)"
                      : "weight must be [out_features, " + std::to_string(in) + "]");
  TensorMeta m;
  m.dtype = promote(c.inputs[0].dtype, c.inputs[1].dtype);
  if (c.inputs.size() == 3) {
    const Shape& b = c.inputs[2].shape;
    if (b != Shape{out})
      c.fail("bias has shape " + shape_str(b) + " but weight " + shape_str(w) + " has " + std::to_string(out) +
                 " outputs (bias must be [" + std::to_string(out) + "])",
             "bias holds one value per output feature");
    m.dtype = promote(m.dtype, c.inputs[2].dtype);
  }
  m.shape.assign(x.begin(), x.end() - 1);
  m.shape.push_back(out);
  return {m};
}

// y = x·Wᵀ (+ b): W [out, in] row-major is Wᵀ [in, out] column-major, the same bytes, so the
// product reads it in place (no transpose copy).
template <class T> void linear_kernel(KernelCtx& k, cpu::GemmAlgo algo) {
  Tensor& y = k.out();
  const DType dt = y.dtype();
  const Tensor x = cpu::as_dtype(k.in(0), dt), w = cpu::as_dtype(k.in(1), dt);
  const int64_t in = w.shape()[1], out = w.shape()[0],
                rows = in > 0 ? x.numel() / in : y.numel() / std::max<int64_t>(out, 1);
  if (y.numel() == 0) return;
  T* py = y.data<T>();
  if (k.inputs.size() == 3) {  // y = b broadcast over the rows, then y += x·Wᵀ
    const Tensor b = cpu::as_dtype(k.in(2), dt);
    const T* pb = b.data<T>();
    for (int64_t r = 0; r < rows; ++r) std::copy(pb, pb + out, py + r * out);
  }
  const T beta = k.inputs.size() == 3 ? T(1) : T(0);
  cpu::gemm<T>(algo, rows, out, in, {x.data<T>(), in, true}, {w.data<T>(), in, false}, T(1), beta, py, out);
}

// ---------------------------------------------------------------------------------------------
// dropout: keep element i when u(seed, i) >= p, u uniform in [0, 1) from a counter-based hash
// (splitmix64 finalizer), so the mask depends only on (seed, index): deterministic, the same
// in any evaluation order, and dropout(dy) in backward reproduces the forward mask.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline double dropout_uniform(uint64_t key, int64_t i) {
  return static_cast<double>(mix64(key + (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL) >> 11) * 0x1.0p-53;
}

std::vector<TensorMeta> infer_dropout(const InferCtx& c) {
  c.expect_float(0);
  if (c.attrs.f("p") >= 1.0)
    c.fail("p must be < 1, got " + std::to_string(c.attrs.f("p")),
           "p is the probability of dropping an element; p = 1 would drop all and divide by 1 - p = 0");
  return {c.inputs[0]};
}

template <class T> void dropout_kernel(KernelCtx& k) {
  const Tensor& x = k.in(0);
  Tensor& y = k.out();
  const double p = k.attrs.f("p");
  if (!k.attrs.b("training") || p == 0.0) {
    y.copy_from(x);
    return;
  }
  const uint64_t key = mix64(static_cast<uint64_t>(k.attrs.i("seed")) ^ 0x5851f42d4c957f2dULL);
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t i = 0, n = y.numel(); i < n; ++i) py[i] = dropout_uniform(key, i) >= p ? px[i] * scale : T(0);
}

OpDef linear_def() {
  OpDef d = OpDef::declare("linear", "nn",
                           "y = x·Wᵀ + b: y[..., o] = Σ_i x[..., i]·W[o, i] + b[o] (W is [out, in]; bias optional)",
                           {"x", "weight", "bias?"});
  d.infer = infer_linear;
  d.default_algo = cpu::gemm_algo_name(cpu::default_gemm());
  for (auto [name, algo] : {std::pair{"blas", cpu::GemmAlgo::blas}, std::pair{"eigen", cpu::GemmAlgo::eigen}})
    d.kernel(Device::cpu, name, [algo = algo](KernelCtx& k) {
      visit_dtype(k.out().dtype(), [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) linear_kernel<T>(k, algo);
      });
    });
  d.saves = {{SavedRef::input, 0}, {SavedRef::input, 1}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& xs = g.input_meta(0).shape;
    const int64_t out = g.input_meta(1).shape[0], in = g.input_meta(1).shape[1];
    Val dy = g.grad_output(0), dx, dw, db;
    if (g.needs_grad(0)) {
      if (xs.size() >= 2) dx = g.call("matmul", {dy, g.input(1)});  // [..., out] @ [out, in]
      else dx = g.call("reshape", {g.call("matmul", {as_rows(g, dy, out), g.input(1)})}, {{"shape", xs}});
    }
    const bool want_b = g.num_inputs() == 3 && g.needs_grad(2);
    if (g.needs_grad(1) || want_b) {
      Val dy2 = as_rows(g, dy, out);  // [rows, out]
      if (g.needs_grad(1)) dw = g.call("matmul", {g.call("transpose", {dy2}), as_rows(g, g.input(0), in)});
      if (want_b) db = g.call("sum", {dy2}, {{"axes", std::vector<int64_t>{0}}, {"keepdim", false}});
    }
    return {dx, dw, db};
  };
  d.backward_note = "dx = dy·W, dW = dy2ᵀ·x2 (dy, x as [rows, out], [rows, in]), db = Σ_rows dy";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    const double n_out = static_cast<double>(in[1].shape[0]), n_in = static_cast<double>(in[1].shape[1]);
    const double rows = cpu::meta_numel(out[0]) / std::max(1.0, n_out);
    c.flops = 2 * rows * n_in * n_out + (in.size() == 3 ? rows * n_out : 0);
    c.multiplications = rows * n_in * n_out;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  d.gradcheck = {gc({{{3, 4}}, {{5, 4}}, {{5}}}, {}, "2-D with bias"),
                 gc({{{2, 3, 4}}, {{5, 4}}, {{5}}}, {}, "batched x"), gc({{{3, 4}}, {{2, 4}}}, {}, "no bias"),
                 gc({{{4}}, {{3, 4}}, {{3}}}, {}, "1-D x")};
  return d;
}

OpDef dropout_def() {
  OpDef d = OpDef::declare(
      "dropout", "nn",
      "y = x·mask/(1 - p), mask[i] = (u(seed, i) >= p) kept with probability 1 - p; y = x when not training", {"x"});
  AttrSpec p = make_attr("p", AttrType::real, 0.5, "probability of dropping an element (0 <= p < 1)");
  p.min = 0.0;
  p.max = 1.0;
  AttrSpec seed = make_attr("seed", AttrType::integer, int64_t{0}, "seed of the mask (same seed: same mask)");
  d.random = true;  // each call is a fresh sample of the mask: never merged by CSE, never recomputed
  seed.min = 0.0;
  d.attrs = {p, seed, make_attr("training", AttrType::boolean, true, "False: identity (inference)")};
  d.infer = infer_dropout;
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    visit_dtype(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) dropout_kernel<T>(k);
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    // The mask depends only on (seed, index), so dy goes through the same mask and scale.
    return {g.call("dropout", {g.grad_output(0)}, g.attrs().to_map())};
  };
  d.backward_note = "dx = dropout(dy) with the same p and seed: dy·mask/(1 - p) (nothing saved)";
  d.cost = cpu::elementwise_cost(2);
  d.gradcheck = {gc({{{4, 5}}}, {{"p", 0.5}, {"seed", int64_t{7}}}, "p = 0.5"),
                 gc({{{3, 4}}}, {{"p", 0.2}, {"seed", int64_t{1}}}, "p = 0.2"),
                 gc({{{3, 4}}}, {{"training", false}}, "inference: identity"), gc({{{2, 3}}}, {{"p", 0.0}}, "p = 0")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_nn_ops) {
  registry.add(linear_def());
  registry.add(dropout_def());
}

}  // namespace
}  // namespace opscope
