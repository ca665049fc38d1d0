// Reductions: sum, mean, max, var over any set of axes, and sum_to (the engine's broadcast
// reduction, which autograd inserts wherever an input was broadcast).
//
// Every kernel views its input as [A, R, B] and reduces the middle axis R. Reduced axes that
// form one consecutive block (the common cases: the last axis, all axes, a leading block)
// need no copy; sum, mean and max over several blocks reduce one block at a time; var over
// several blocks permutes them to the end first, into workspace memory. Groups, strips of
// columns and chunks of one long row are spread over the thread pool, each output element
// reduced in an order fixed by the shape: the same bits for any thread count.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "core/parallel.h"
#include "ops/cpu_util.h"

namespace opscope {
namespace {

using cpu::gc;

AttrSpec attr(std::string name, AttrType type, AttrValue default_value, std::string doc, bool required = false) {
  return make_attr(std::move(name), type, std::move(default_value), std::move(doc), {}, {}, {}, required);
}

// ---------------------------------------------------------------------------------------------
// Axes and shapes

// The reduced axes of `shape` for the attribute `axes` (empty = all): in range, no duplicates,
// sorted. A 0-d tensor has nothing to reduce (axis 0 / -1 are accepted, as NumPy does).
std::vector<int64_t> reduce_axes(const Shape& shape, const std::vector<int64_t>& axes, const std::string& op) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    if (a < -std::max<int64_t>(rank, 1) || a >= std::max<int64_t>(rank, 1))
      throw Error(op + ": axis " + std::to_string(a) + " is out of range for a tensor of shape " + shape_str(shape) +
                      " (rank " + std::to_string(rank) + ")",
                  "valid axes are " + std::to_string(-std::max<int64_t>(rank, 1)) + " .. " +
                      std::to_string(std::max<int64_t>(rank, 1) - 1) + "; negative axes count from the end");
    const int64_t n = normalize_axis(a, rank, op.c_str());
    if (rank == 0) continue;
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw Error(op + ": axis " + std::to_string(n) + " appears more than once in axes=" + attr_value_str(axes) +
                      " for a tensor of shape " + shape_str(shape),
                  "list each axis once (axis -1 and axis " + std::to_string(rank - 1) + " are the same axis here)");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The shape after reducing `axes`: reduced dims become 1 (keepdim) or disappear.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced) out.push_back(shape[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Number of elements that reduce into one output element.
int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[a];
  return n;
}

bool consecutive(const std::vector<int64_t>& axes) {
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  return true;
}

// The axes sum_to reduces to go from `from` down to `to` (NumPy broadcasting read backwards:
// leading dims of `from` are summed away, dims where `to` has 1 are summed keeping the 1);
// nullopt when `to` does not broadcast to `from`.
std::optional<std::vector<int64_t>> sum_to_axes(const Shape& from, const Shape& to) {
  if (to.size() > from.size()) return std::nullopt;
  const size_t lead = from.size() - to.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < lead; ++i) axes.push_back(static_cast<int64_t>(i));
  for (size_t i = 0; i < to.size(); ++i) {
    const int64_t f = from[lead + i];
    if (to[i] == f) continue;
    if (to[i] != 1) return std::nullopt;
    axes.push_back(static_cast<int64_t>(lead + i));
  }
  return axes;
}

// ---------------------------------------------------------------------------------------------
// Kernels

// The input seen as [A, R, B] with R the reduced elements; `data` is contiguous in that layout.
struct ReduceView {
  Tensor data;
  int64_t A = 1, R = 1, B = 1;
};

ReduceView reduce_view(const KernelCtx& k, const Tensor& x, const std::vector<int64_t>& axes) {
  ReduceView v;
  const Shape& s = x.shape();
  const int64_t rank = x.dim();
  if (axes.empty()) {  // nothing to reduce: every element is its own output
    v.data = x;
    v.A = x.numel();
    return v;
  }
  if (consecutive(axes)) {
    v.data = x;
    for (int64_t i = 0; i < rank; ++i) {
      if (i < axes.front()) v.A *= s[i];
      else if (i <= axes.back()) v.R *= s[i];
      else v.B *= s[i];
    }
    return v;
  }
  // Kept axes first (in order), reduced axes last: [A, R, 1] after one copy.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (!std::binary_search(axes.begin(), axes.end(), i)) perm.push_back(i), v.A *= s[i];
  for (int64_t a : axes) perm.push_back(a), v.R *= s[a];
  Tensor moved = x.view_permute(perm);
  v.data = k.workspace(moved.shape(), x.dtype());
  v.data.copy_from(moved);
  return v;
}

enum class ReduceKind { sum, mean, max, var };

// The max of n contiguous elements; NaN if any is NaN (as NumPy and PyTorch). Eigen's
// NaN-propagating maxCoeff (and hasNaN) are several times slower than its plain max and sum,
// so: the plain max of each L1-sized chunk, and its sum while the chunk is in cache as a
// cheap NaN probe (NaN in, NaN out; an exact check only when the sum is NaN, as +inf + -inf is).
template <class T> T max_of(const T* p, int64_t n) {
  using Col = Eigen::Array<T, Eigen::Dynamic, 1>;
  if constexpr (!std::is_floating_point_v<T>) {
    return Eigen::Map<const Col>(p, n).maxCoeff();
  } else {
    constexpr int64_t kChunk = 4096;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; i += kChunk) {
      Eigen::Map<const Col> chunk(p + i, std::min(kChunk, n - i));
      m = std::max(m, chunk.maxCoeff());
      if (std::isnan(chunk.sum()) && chunk.hasNaN()) return std::numeric_limits<T>::quiet_NaN();
    }
    return m;
  }
}

// One reduction of x seen as [A, R, B] (contiguous) into out[A·B]: the groups a of [a0, a1)
// and, within each, the columns [b0, b1). Each output element is reduced in the same order
// whatever the ranges, so splitting groups or columns over threads changes no bit.
template <class T> struct Reduction {
  const T* x;
  T* out;
  int64_t A, R, B;
  ReduceKind kind;
  T inv_r{}, inv_dof{};  // mean and var (float only): 1/R and 1/(R - correction)
};

template <class T> void reduce_block(const Reduction<T>& d, int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  using Col = Eigen::Array<T, Eigen::Dynamic, 1>;
  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  using StridedRow = Eigen::Map<const Row>;
  const int64_t R = d.R, B = d.B, n = b1 - b0;
  Row acc(B > 1 ? n : 0), mean_row(B > 1 && d.kind == ReduceKind::var ? n : 0);
  for (int64_t a = a0; a < a1; ++a) {
    const T* src = d.x + a * R * B;
    if (B == 1) {  // one contiguous row of R elements
      Eigen::Map<const Col> row(src, R);
      switch (d.kind) {
        case ReduceKind::sum: d.out[a] = row.sum(); break;
        case ReduceKind::mean: d.out[a] = row.sum() * d.inv_r; break;
        case ReduceKind::max: d.out[a] = max_of(src, R); break;
        case ReduceKind::var: {
          const T m = row.sum() * d.inv_r;
          d.out[a] = (row - m).square().sum() * d.inv_dof;  // two passes: no cancellation
          break;
        }
      }
      continue;
    }
    // R rows of B contiguous elements: accumulate row by row (each step vectorizes over B).
    Eigen::Map<Row> dst(d.out + a * B + b0, n);
    auto row = [&](int64_t r) { return StridedRow(src + r * B + b0, n); };
    if (d.kind == ReduceKind::max) {
      acc = row(0);
      for (int64_t r = 1; r < R; ++r) {
        const T* p = src + r * B + b0;
        for (int64_t j = 0; j < n; ++j) acc[j] = (p[j] > acc[j] || p[j] != p[j]) ? p[j] : acc[j];  // NaN wins
      }
      dst = acc;
      continue;
    }
    acc.setZero();
    for (int64_t r = 0; r < R; ++r) acc += row(r);
    if (d.kind == ReduceKind::sum) {
      dst = acc;
    } else if (d.kind == ReduceKind::mean) {
      dst = acc * d.inv_r;
    } else {
      mean_row = acc * d.inv_r;
      acc.setZero();
      for (int64_t r = 0; r < R; ++r) acc += (row(r) - mean_row).square();
      dst = acc * d.inv_dof;
    }
  }
}

// A single long row (everything into one element): partial results over fixed chunks of R,
// combined in order (the chunks depend on R only, so the bits do not depend on the threads).
constexpr int64_t kRowChunk = 1 << 15;

template <class T> void reduce_long_row(const KernelCtx& k, const Reduction<T>& d) {
  const int64_t chunks = (d.R + kRowChunk - 1) / kRowChunk;
  Tensor partial_t = k.workspace({chunks}, dtype_of<T>());
  T* partial = partial_t.data<T>();
  auto chunk_pass = [&](ReduceKind kind, T shift) {
    parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const T* p = d.x + c * kRowChunk;
        const int64_t len = std::min(kRowChunk, d.R - c * kRowChunk);
        Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> v(p, len);
        if (kind == ReduceKind::max) partial[c] = max_of(p, len);
        else if (kind == ReduceKind::var) partial[c] = (v - shift).square().sum();
        else partial[c] = v.sum();
      }
    });
  };
  auto combine = [&](bool take_max) {  // in chunk order; for max, the first NaN wins
    T r = partial[0];
    for (int64_t c = 1; c < chunks; ++c) {
      if (!take_max) r += partial[c];
      else if (r == r && (partial[c] > r || partial[c] != partial[c])) r = partial[c];
    }
    return r;
  };
  if (d.kind == ReduceKind::max) {
    chunk_pass(ReduceKind::max, T(0));
    d.out[0] = combine(true);
    return;
  }
  chunk_pass(ReduceKind::sum, T(0));
  const T total = combine(false);
  if (d.kind == ReduceKind::sum) d.out[0] = total;
  else if (d.kind == ReduceKind::mean) d.out[0] = total * d.inv_r;
  else {
    chunk_pass(ReduceKind::var, total * d.inv_r);
    d.out[0] = combine(false) * d.inv_dof;
  }
}

// Columns per chunk when rows of B elements are reduced: a chunk is a strip of the input.
constexpr int64_t kColumnStrip = 256;

template <class T>
void reduce_into(const KernelCtx& k, const T* x, int64_t A, int64_t R, int64_t B, T* out, ReduceKind kind,
                 int64_t correction, int64_t count) {
  Reduction<T> d{x, out, A, R, B, kind};
  if constexpr (std::is_floating_point_v<T>) {  // inf for a count of 0 gives NaN, as NumPy's mean
    d.inv_r = static_cast<T>(1) / static_cast<T>(count);
    d.inv_dof = static_cast<T>(1) / static_cast<T>(count - correction);
  }
  const double work = static_cast<double>(R) * static_cast<double>(B);
  if (B == 1 && A == 1 && R > kRowChunk) return reduce_long_row(k, d);
  if (B == 1) {
    parallel_for(A, grain_for(work), [&](int64_t a0, int64_t a1) { reduce_block(d, a0, a1, 0, 1); });
    return;
  }
  // Items: (group, strip of columns), each a separate part of the output.
  const int64_t strips = (B + kColumnStrip - 1) / kColumnStrip;
  parallel_for(A * strips, grain_for(static_cast<double>(R) * std::min(B, kColumnStrip)), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t a = i / strips, b0 = (i % strips) * kColumnStrip;
      reduce_block(d, a, a + 1, b0, std::min(B, b0 + kColumnStrip));
    }
  });
}

// Reduced axes in several separate blocks ([N, C, H, W] over 0, 2, 3: a bias gradient) are
// reduced one block at a time, the last first, each into a smaller workspace tensor: no
// permuted copy of the whole input. sum and max compose this way, and mean is the sum over
// the whole count; var is not (it takes the permuted copy of reduce_view).
template <class T>
void reduce_in_stages(const KernelCtx& k, const Tensor& x, const std::vector<int64_t>& axes, ReduceKind kind, T* out) {
  std::vector<std::pair<int64_t, int64_t>> blocks;  // [first, last] axes of each consecutive run
  for (int64_t a : axes) {
    if (!blocks.empty() && blocks.back().second + 1 == a) blocks.back().second = a;
    else blocks.push_back({a, a});
  }
  Shape shape = x.shape();
  const T* src = x.data<T>();
  Tensor stage;
  const int64_t count = reduced_count(x.shape(), axes);
  for (size_t bi = blocks.size(); bi-- > 0;) {
    const auto [first, last] = blocks[bi];
    int64_t A = 1, R = 1, B = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) (i < first ? A : i <= last ? R : B) *= shape[i];
    T* dst = out;
    Tensor next;
    if (bi > 0) {
      next = k.workspace({A * B}, dtype_of<T>());
      dst = next.data<T>();
    }
    const ReduceKind step = kind == ReduceKind::max ? ReduceKind::max : ReduceKind::sum;
    reduce_into<T>(k, src, A, R, B, dst, bi == 0 && kind == ReduceKind::mean ? ReduceKind::mean : step, 0,
                   bi == 0 ? count : R);
    for (int64_t i = first; i <= last; ++i) shape[i] = 1;
    stage = next;  // keeps this stage's buffer alive for the next one
    src = dst;
  }
}

// x reduced over `axes` (sorted) into out, in stages or through reduce_view.
template <class T>
void reduce_axes_into(const KernelCtx& k, const Tensor& x, const std::vector<int64_t>& axes, ReduceKind kind,
                      int64_t correction, T* out) {
  if (!axes.empty() && !consecutive(axes) && kind != ReduceKind::var) return reduce_in_stages<T>(k, x, axes, kind, out);
  const ReduceView v = reduce_view(k, x, axes);
  reduce_into<T>(k, v.data.template data<T>(), v.A, v.R, v.B, out, kind, correction, v.R);
}

KernelFn reduce_kernel(ReduceKind kind) {
  return [kind](KernelCtx& k) {
    const Tensor& x = k.in(0);
    const auto axes = reduce_axes(x.shape(), k.attrs.ints("axes"), k.op.name);
    if (k.out().numel() == 0) return;
    const int64_t correction = kind == ReduceKind::var && k.attrs.b("unbiased") ? 1 : 0;
    auto run = [&](auto z) {
      using T = decltype(z);
      reduce_axes_into<T>(k, x, axes, kind, correction, k.out().data<T>());
    };
    if (kind == ReduceKind::sum || kind == ReduceKind::max) visit_dtype(x.dtype(), run);
    else cpu::visit_float(x.dtype(), k.op.name, run);
  };
}

// argmax / argmin over the R axis of v: the index along it (ties: the first; NaN wins, as PyTorch).
template <class T> void arg_reduce_into(const ReduceView& v, int64_t* out, bool largest) {
  const T* x = v.data.template data<T>();
  for (int64_t a = 0; a < v.A; ++a)
    for (int64_t b = 0; b < v.B; ++b) {
      const T* p = x + a * v.R * v.B + b;
      int64_t best = 0;
      for (int64_t r = 1; r < v.R; ++r) {
        const T cur = p[r * v.B], top = p[best * v.B];
        if (top != top) break;  // NaN found first: it stays
        if (cur != cur || (largest ? cur > top : cur < top)) best = r;
      }
      out[a * v.B + b] = best;
    }
}

KernelFn arg_reduce_kernel(bool largest) {
  return [largest](KernelCtx& k) {
    const Tensor& x = k.in(0);
    const auto axes = reduce_axes(x.shape(), k.attrs.ints("axes"), k.op.name);
    if (k.out().numel() == 0) return;
    const ReduceView v = reduce_view(k, x, axes);
    visit_dtype(x.dtype(), [&](auto z) { arg_reduce_into<decltype(z)>(v, k.out().data<int64_t>(), largest); });
  };
}

// ---------------------------------------------------------------------------------------------
// Declarations

// FLOPs: `per_element` per element read; an axis set that is not one block adds a copy.
CostFn reduce_cost(double per_element) {
  return [per_element](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& attrs,
                       std::string_view) {
    Cost c;
    c.flops = per_element * cpu::meta_numel(in[0]);
    c.bytes_read = cpu::meta_bytes(in[0]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    try {  // a cost is asked only of valid calls; a bad axis list just means no copy estimate
      if (!consecutive(reduce_axes(in[0].shape, attrs.ints("axes"), "reduce"))) c.workspace_bytes = c.bytes_read;
    } catch (const Error&) {}
    return c;
  };
}

// dy reshaped to the keepdim shape, so that it broadcasts against x.
Val keepdim_shaped(GradCtx& g, const Val& dy, const Shape& keep) {
  return dy.shape() == keep ? dy : g.call("reshape", {dy}, {{"shape", keep}});
}

OpDef reduction(const std::string& name, const std::string& doc, bool needs_float) {
  OpDef d = OpDef::declare(name, "reduction", doc, {"x"});
  d.attrs = {
      attr("axes", AttrType::int_list, std::vector<int64_t>{},
           "axes to reduce (negative counts from the end); [] = all axes"),
      attr("keepdim", AttrType::boolean, false, "keep reduced axes as size 1 (the result broadcasts against x)"),
  };
  d.infer = [needs_float](const InferCtx& c) {
    if (needs_float && !is_floating(c.inputs[0].dtype))
      c.fail(std::string("expected a floating-point tensor for 'x', got ") + dtype_name(c.inputs[0].dtype),
             "convert it first: " + c.op.name + "(cast(x, dtype=\"float32\"))");
    const Shape& s = c.inputs[0].shape;
    const auto axes = reduce_axes(s, c.attrs.ints("axes"), c.op.name);
    TensorMeta m = c.inputs[0];
    m.shape = reduced_shape(s, axes, c.attrs.b("keepdim"));
    return std::vector<TensorMeta>{m};
  };
  d.cost = reduce_cost(1);
  return d;
}

// Float64 gradcheck cases shared by sum, mean and var: axis sets, keepdim, negative axes.
std::vector<GradcheckCase> reduction_cases(Domain domain) {
  const InputSpec x3{{2, 3, 4}, domain}, x2{{3, 4}, domain};
  using V = std::vector<int64_t>;
  return {gc({x3}, {}, "all axes"),
          gc({x2}, {{"axes", V{1}}}, "last axis"),
          gc({x3}, {{"axes", V{-1}}, {"keepdim", true}}, "negative axis, keepdim"),
          gc({x3}, {{"axes", V{0}}}, "leading axis"),
          gc({x3}, {{"axes", V{0, 2}}, {"keepdim", true}}, "axes 0 and 2 (a permuted copy), keepdim"),
          gc({x3}, {{"axes", V{1, 2}}}, "trailing block"),
          gc({x2}, {{"keepdim", true}}, "all axes, keepdim")};
}

OpDef sum_def() {
  OpDef d = reduction("sum", "y = Σ x over axes (int64 stays int64)", false);
  d.kernel(Device::cpu, "default", reduce_kernel(ReduceKind::sum));
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& xs = g.input_meta(0).shape;
    const Shape keep = reduced_shape(xs, reduce_axes(xs, g.attrs().ints("axes"), "sum"), true);
    Val dy = keepdim_shaped(g, g.grad_output(0), keep);
    return {keep == xs ? dy : g.call("expand", {dy}, {{"shape", xs}})};
  };
  d.backward_note = "dx = dy broadcast back over the reduced axes";
  d.gradcheck = reduction_cases(Domain::any);
  return d;
}

OpDef mean_def() {
  OpDef d = reduction("mean", "y = Σ x / n over axes (n = number of elements reduced)", true);
  d.kernel(Device::cpu, "default", reduce_kernel(ReduceKind::mean));
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& xs = g.input_meta(0).shape;
    const auto axes = reduce_axes(xs, g.attrs().ints("axes"), "mean");
    const Shape keep = reduced_shape(xs, axes, true);
    Val dy = keepdim_shaped(g, g.grad_output(0), keep) * (1.0 / static_cast<double>(reduced_count(xs, axes)));
    return {keep == xs ? dy : g.call("expand", {dy}, {{"shape", xs}})};
  };
  d.backward_note = "dx = dy / n broadcast back over the reduced axes";
  d.gradcheck = reduction_cases(Domain::any);
  return d;
}

OpDef max_def() {
  OpDef d = reduction("max", "y = max of x over axes", false);
  auto infer = d.infer;
  d.infer = [infer](const InferCtx& c) {
    const Shape& s = c.inputs[0].shape;
    for (int64_t a : reduce_axes(s, c.attrs.ints("axes"), "max"))
      if (s[a] == 0)
        c.fail("cannot take the max over axis " + std::to_string(a) + " of size 0 (shape " + shape_str(s) + ")",
               "an empty set has no maximum; check the shape, or reduce over other axes");
    return infer(c);
  };
  d.kernel(Device::cpu, "default", reduce_kernel(ReduceKind::max));
  d.saves = {{SavedRef::input, 0}, {SavedRef::output, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    // Ties share the gradient equally: mask marks every element equal to the max.
    const Shape& xs = g.input_meta(0).shape;
    const std::vector<int64_t>& axes = g.attrs().ints("axes");
    const Shape keep = reduced_shape(xs, reduce_axes(xs, axes, "max"), true);
    Val x = g.input(0);
    Val m = keepdim_shaped(g, g.output(0), keep);
    Val mask = g.call("cast", {g.call("eq", {x, m})}, {{"dtype", std::string(dtype_name(x.dtype()))}});
    Val count = g.call("sum", {mask}, {{"axes", axes}, {"keepdim", true}});
    return {mask * keepdim_shaped(g, g.grad_output(0), keep) / count};
  };
  d.backward_note = "dx = dy where x == max (split equally among ties), 0 elsewhere";
  const InputSpec x3{{2, 3, 4}, Domain::distinct}, x2{{3, 4}, Domain::distinct};
  using V = std::vector<int64_t>;
  d.gradcheck = {gc({x3}, {}, "all axes"), gc({x2}, {{"axes", V{1}}}, "last axis"),
                 gc({x3}, {{"axes", V{-2}}, {"keepdim", true}}, "negative middle axis, keepdim"),
                 gc({x3}, {{"axes", V{0, 2}}}, "axes 0 and 2 (a permuted copy)")};
  return d;
}

OpDef var_def() {
  OpDef d = reduction("var", "y = Σ (x - mean)² / (n - 1) over axes (/ n when unbiased=False)", true);
  d.attrs.push_back(attr("unbiased", AttrType::boolean, true, "divide by n - 1 (Bessel's correction) instead of n"));
  d.kernel(Device::cpu, "default", reduce_kernel(ReduceKind::var));
  d.saves = {{SavedRef::input, 0}};
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    const Shape& xs = g.input_meta(0).shape;
    const std::vector<int64_t>& given = g.attrs().ints("axes");
    const auto axes = reduce_axes(xs, given, "var");
    const Shape keep = reduced_shape(xs, axes, true);
    const double dof = static_cast<double>(reduced_count(xs, axes)) - (g.attrs().b("unbiased") ? 1.0 : 0.0);
    Val x = g.input(0);
    Val centered = x - g.call("mean", {x}, {{"axes", given}, {"keepdim", true}});
    return {keepdim_shaped(g, g.grad_output(0), keep) * centered * (2.0 / dof)};
  };
  d.backward_note = "dx = dy * 2 (x - mean) / (n - 1)   (/ n when unbiased=False)";
  d.cost = reduce_cost(3);
  d.gradcheck = reduction_cases(Domain::any);
  d.gradcheck.push_back(gc({{{3, 4}}}, {{"axes", std::vector<int64_t>{0}}, {"unbiased", false}}, "biased"));
  return d;
}

OpDef sum_to_def() {
  OpDef d = OpDef::declare(
      "sum_to", "reduction",
      "y = x summed down to `shape` (the reverse of broadcasting: leading axes summed away, size-1 axes kept)", {"x"});
  d.attrs = {
      attr("shape", AttrType::int_list, std::vector<int64_t>{}, "target shape; must broadcast to x's shape", true)};
  d.infer = [](const InferCtx& c) {
    const Shape& from = c.inputs[0].shape;
    const Shape& to = c.attrs.ints("shape");
    if (!sum_to_axes(from, to))
      c.fail("cannot sum " + shape_str(from) + " down to " + shape_str(to) +
                 ": the target must broadcast to the input (align shapes from the right; each target dim must "
                 "equal the input's dim or be 1, and the target may not have more dims)",
             "sum_to reverses broadcasting: sum_to(x, shape=s) works when expand(zeros(s), x.shape) would");
    TensorMeta m = c.inputs[0];
    m.shape = to;
    return std::vector<TensorMeta>{m};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    const Tensor& x = k.in(0);
    if (k.out().numel() == 0) return;
    // The keepdim result of reducing these axes has the target's data layout.
    const std::vector<int64_t> axes = *sum_to_axes(x.shape(), k.attrs.ints("shape"));
    visit_dtype(x.dtype(), [&](auto z) {
      using T = decltype(z);
      reduce_axes_into<T>(k, x, axes, ReduceKind::sum, 0, k.out().data<T>());
    });
  });
  d.backward = [](GradCtx& g) -> std::vector<Val> {
    return {g.call("expand", {g.grad_output(0)}, {{"shape", g.input_meta(0).shape}})};
  };
  d.backward_note = "dx = expand(dy, x.shape)";
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&, std::string_view) {
    Cost c;
    c.flops = cpu::meta_numel(in[0]);
    c.bytes_read = cpu::meta_bytes(in[0]);
    c.bytes_written = cpu::meta_bytes(out[0]);
    return c;
  };
  using V = std::vector<int64_t>;
  const InputSpec x3{{2, 3, 4}};
  d.gradcheck = {gc({x3}, {{"shape", V{4}}}, "leading axes summed away"),
                 gc({x3}, {{"shape", V{3, 1}}}, "leading axis away, last kept as 1"),
                 gc({x3}, {{"shape", V{2, 1, 4}}}, "middle axis kept as 1"),
                 gc({x3}, {{"shape", V{}}}, "down to a scalar"), gc({x3}, {{"shape", V{2, 3, 4}}}, "identity")};
  return d;
}

// argmax (largest) or argmin: the index of the extreme element along one axis.
OpDef arg_extremum_def(bool largest) {
  const std::string name = largest ? "argmax" : "argmin";
  OpDef d = reduction(name,
                      "the index of the " + std::string(largest ? "largest" : "smallest") +
                          " element along one axis (int64; no axis: of the flattened x; ties: the first)",
                      false);
  d.attrs[0].doc = "the axis to search ([] = the flattened tensor); one axis at most";
  auto infer = d.infer;
  d.infer = [infer](const InferCtx& c) {
    const Shape& s = c.inputs[0].shape;
    if (c.attrs.ints("axes").size() > 1)
      c.fail("takes one axis, got axes=" + attr_value_str(c.attrs.ints("axes")),
             c.op.name + "(x, axis=1) for each row's index, " + c.op.name + "(x) for the flattened tensor");
    for (int64_t a : reduce_axes(s, c.attrs.ints("axes"), c.op.name))
      if (s[a] == 0)
        c.fail("axis " + std::to_string(a) + " of " + shape_str(s) + " is empty: it has no " +
               (c.op.name == "argmax" ? "largest" : "smallest") + " element");
    auto out = infer(c);
    out[0].dtype = DType::i64;
    return out;
  };
  d.kernel(Device::cpu, "default", arg_reduce_kernel(largest));
  d.differentiable = false;  // an index: piecewise constant, no gradient
  d.cost = reduce_cost(1);
  const InputSpec x{{4, 7}, Domain::distinct};  // no ties: both devices pick the same index
  d.gradcheck = {gc({x}, {{"axes", std::vector<int64_t>{1}}}, "rows"),
                 gc({x}, {{"axes", std::vector<int64_t>{0}}}, "columns"), gc({x}, {}, "flattened")};
  return d;
}

OPSCOPE_REGISTER_OPS(register_reduction_ops) {
  registry.add(sum_def());
  registry.add(mean_def());
  registry.add(max_def());
  registry.add(var_def());
  registry.add(arg_extremum_def(true));
  registry.add(arg_extremum_def(false));
  registry.add(sum_to_def());
}

}  // namespace
}  // namespace opscope
