// cumsum (a running sum along an axis: ONNX CumSum, with its exclusive and reverse variants) and
// triu / tril (the upper and lower triangles of the last two axes: ONNX Trilu, causal masks).
// Both are linear, so each one's backward is itself: cumsum's gradient runs the sum the other
// way, a triangle's gradient keeps the same triangle.
#include "core/parallel.h"
#include "ops/cpu_util.h"
#include "ops/geometry.h"

namespace opscope {
namespace {

using cpu::gc;

// cumsum along one line of n elements `inner` apart: y[i] = Σ_{j <= i} x[j] (exclusive: j < i;
// reverse: from the end).
template <class T> void cumsum_line(const T* x, T* y, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  T acc = 0;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = (reverse ? n - 1 - s : s) * inner;
    if (exclusive) {
      y[i] = acc;
      acc += x[i];
    } else {
      acc += x[i];
      y[i] = acc;
    }
  }
}

// triu keeps x[..., i, j] with j − i >= diagonal, tril with j − i <= diagonal; zeros elsewhere.
template <class T> void triangle(const T* x, T* y, int64_t planes, int64_t R, int64_t C, int64_t diagonal, bool upper) {
  parallel_for(planes, grain_for(static_cast<double>(R * C)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < C; ++j) {
          const int64_t e = (p * R + i) * C + j;
          const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
          y[e] = keep ? x[e] : T(0);
        }
  });
}

OpDef cumsum_def() {
  OpDef d = OpDef::declare("cumsum", "reduction",
                           "y[..., i, ...] = Σ_{j <= i} x[..., j, ...] along axis (exclusive: j < i; reverse: j >= i)",
                           {"x"});
  d.attrs = {make_attr("axis", AttrType::integer, int64_t{0}, "the axis summed along (negative counts from the end)"),
             make_attr("exclusive", AttrType::boolean, false, "leave each element out of its own sum (y[0] = 0)"),
             make_attr("reverse", AttrType::boolean, false, "sum from the end of the axis")};
  d.infer = [](const InferCtx& c) {
    c.expect_rank(0, 1);
    normalize_axis(c.attrs.i("axis"), static_cast<int64_t>(c.inputs[0].shape.size()), "cumsum");
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "sequential", [](KernelCtx& k) {
    const int64_t axis = normalize_axis(k.attrs.i("axis"), k.in(0).dim(), "cumsum");
    const GatherGeom g = gather_geom(k.in(0).shape(), axis, 0);
    const bool exclusive = k.attrs.b("exclusive"), reverse = k.attrs.b("reverse");
    visit_dtype(k.out().dtype(), [&](auto z) {
      using T = decltype(z);
      const T* x = k.in(0).data<T>();
      T* y = k.out().data<T>();
      parallel_for(g.outer * g.inner, grain_for(static_cast<double>(g.n)), [&](int64_t l0, int64_t l1) {
        for (int64_t l = l0; l < l1; ++l) {
          const int64_t off = (l / g.inner) * g.n * g.inner + l % g.inner;
          cumsum_line(x + off, y + off, g.n, g.inner, exclusive, reverse);
        }
      });
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("cumsum", {g.grad_output(0)},
                   {{"axis", g.attrs().i("axis")},
                    {"exclusive", g.attrs().b("exclusive")},
                    {"reverse", !g.attrs().b("reverse")}})};
  };
  d.backward_note =
      "dx = cumsum(dy) the other way along the axis (reverse flipped): x[j] reaches every y[i] with i >= j";
  d.cost = cpu::elementwise_cost(1);
  d.gradcheck = {gc({InputSpec{{3, 5}}}, {{"axis", int64_t{1}}}, "along rows"),
                 gc({InputSpec{{4, 2, 3}}}, {{"axis", int64_t{0}}, {"exclusive", true}}, "exclusive, first axis"),
                 gc({InputSpec{{2, 5}}}, {{"axis", int64_t{-1}}, {"reverse", true}, {"exclusive", true}},
                    "reverse and exclusive")};
  d.lab = cpu::lab_rows_cols({{"axis", int64_t{1}}});
  return d;
}

OPSCOPE_REGISTER_OPS(register_scan_ops) {
  registry.add(cumsum_def());
  for (bool upper : {true, false}) {
    OpDef d = OpDef::declare(upper ? "triu" : "tril", "shape",
                             upper ? "y[..., i, j] = x[..., i, j] where j − i >= diagonal, else 0 (the upper triangle)"
                                   : "y[..., i, j] = x[..., i, j] where j − i <= diagonal, else 0 (the lower triangle)",
                             {"x"});
    d.attrs = {make_attr("diagonal", AttrType::integer, int64_t{0},
                         "which diagonal bounds the triangle: 0 the main one, k > 0 above it, k < 0 below")};
    d.infer = [](const InferCtx& c) {
      c.expect_rank(0, 2);
      return std::vector<TensorMeta>{c.inputs[0]};
    };
    d.kernel(Device::cpu, "default", [upper](KernelCtx& k) {
      const Shape& s = k.in(0).shape();
      const int64_t R = s[s.size() - 2], C = s.back();
      if (k.out().numel() == 0) return;
      visit_dtype(k.out().dtype(), [&](auto z) {
        using T = decltype(z);
        triangle<T>(k.in(0).data<T>(), k.out().data<T>(), k.out().numel() / (R * C), R, C, k.attrs.i("diagonal"),
                    upper);
      });
    });
    d.elementwise = true;
    const std::string name = d.name;
    d.backward = [name](GradCtx& g) -> std::vector<Val> {
      return {g.call(name, {g.grad_output(0)}, {{"diagonal", g.attrs().i("diagonal")}})};
    };
    d.backward_note =
        std::string("dx = ") + name + "(dy): the kept elements pass their gradient, the zeroed ones get none";
    d.cost = cpu::elementwise_cost(0);
    d.gradcheck = {gc({InputSpec{{4, 5}}}, {}, "the main diagonal"),
                   gc({InputSpec{{2, 3, 4}}}, {{"diagonal", int64_t{1}}}, "above the diagonal, a batch"),
                   gc({InputSpec{{5, 3}}}, {{"diagonal", int64_t{-2}}}, "below the diagonal")};
    registry.add(std::move(d));
  }
}

}  // namespace
}  // namespace opscope
