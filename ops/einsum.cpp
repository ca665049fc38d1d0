// einsum: a product of tensors summed over the letters the output leaves out ("bij,bjk->bik" is a
// batched matmul, "bhqd,bhkd->bhqk" attention's scores, "ii->i" a diagonal). Two algorithms:
//   naive   the definition's loops: each output element sums the operands' product over every
//           value of the summed letters (ops/einsum.h, the same loop as on CUDA);
//   matmul  two operands become one batched GEMM, as PyTorch's einsum does: the letters split
//           into batch (in both and the output), M (first and output), N (second and output)
//           and K (both, summed); each operand is copied into [batch, M, K] / [batch, K, N]
//           order (letters only one operand sums are summed while copying), multiplied, and the
//           [batch, M, N] result copied into the output's letter order. Other equations (one
//           operand, three or four, a repeated letter) run the loops.
// Its backward is einsum again: the gradient of an operand is the einsum of dy with the other
// operands, written back to that operand's letters.
#include <algorithm>
#include <cctype>
#include <type_traits>

#include "core/parallel.h"
#include "ops/cpu_util.h"
#include "ops/einsum.h"
#include "ops/gemm.h"

namespace opscope {

namespace {

[[noreturn]] void einsum_error(const std::string& equation, const std::string& what, const std::string& hint = {}) {
  throw Error("einsum: \"" + equation + "\": " + what,
              hint.empty() ? "letters name axes: \"bij,bjk->bik\" multiplies along j and keeps b, i, k" : hint);
}

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// One term's letters with "..." as the marker '.' (at most once).
std::vector<char> term_letters(const std::string& term, const std::string& equation) {
  std::vector<char> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (ellipsis) einsum_error(equation, "\"...\" appears twice in \"" + term + "\"");
      ellipsis = true;
      out.push_back('.');
      i += 2;
    } else if (is_letter(term[i])) {
      out.push_back(term[i]);
    } else {
      einsum_error(equation, std::string("'") + term[i] + "' is not a letter",
                   "subscripts are letters a-z, A-Z and \"...\"");
    }
  }
  return out;
}

}  // namespace

Shape EinsumSpec::out_shape() const {
  Shape s;
  for (int l : output) s.push_back(sizes[static_cast<size_t>(l)]);
  return s;
}

std::string EinsumSpec::subscripts(const std::vector<int>& labels) const {
  std::string s;
  for (int l : labels) s += letters[static_cast<size_t>(l)];
  return s;
}

bool EinsumSpec::repeats_a_label() const {
  for (auto& op : operands) {
    std::vector<int> sorted = op;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return true;
  }
  return false;
}

EinsumSpec parse_einsum(const std::string& eq_in, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : eq_in)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<char>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(
        term_letters(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), eq_in));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    einsum_error(eq_in,
                 std::to_string(terms.size()) + " subscript terms for " + std::to_string(shapes.size()) + " operands",
                 "one comma-separated term per operand");
  if (shapes.size() > static_cast<size_t>(kEinsumMaxOperands))
    einsum_error(eq_in,
                 std::to_string(shapes.size()) + " operands; opscope's einsum takes up to " +
                     std::to_string(kEinsumMaxOperands),
                 "contract some of them first with a separate einsum");
  // How many axes "..." stands for in each operand, and in all (right-aligned, as NumPy).
  std::vector<int64_t> ell(shapes.size(), 0);
  int64_t ell_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t named = static_cast<int64_t>(std::count_if(terms[k].begin(), terms[k].end(), is_letter));
    const bool has_ell = std::find(terms[k].begin(), terms[k].end(), '.') != terms[k].end();
    const int64_t rank = static_cast<int64_t>(shapes[k].size());
    if (has_ell ? named > rank : named != rank)
      einsum_error(eq_in,
                   "operand " + std::to_string(k + 1) + " has shape " + shape_str(shapes[k]) + " (" +
                       std::to_string(rank) + " axes) but its subscripts name " + std::to_string(named),
                   "one letter per axis, or \"...\" for the leading ones");
    ell[k] = has_ell ? rank - named : 0;
    ell_rank = std::max(ell_rank, ell[k]);
  }
  // The output's letters: given, or "..." then the letters used once, alphabetically.
  std::vector<char> out;
  if (arrow != std::string::npos) {
    out = term_letters(eq.substr(arrow + 2), eq_in);
  } else {
    if (ell_rank > 0) out.push_back('.');
    std::vector<char> once;
    for (char c = 'A'; c <= 'z'; ++c) {
      if (!is_letter(c)) continue;
      int64_t uses = 0;
      for (auto& t : terms) uses += std::count(t.begin(), t.end(), c);
      if (uses == 1) once.push_back(c);
    }
    out.insert(out.end(), once.begin(), once.end());
  }
  // Labels: the output's first, then the summed letters in order of appearance. Ellipsis axes
  // are labels too, with letters no term uses.
  std::string used;
  for (auto& t : terms) used.append(t.begin(), t.end());
  used.append(out.begin(), out.end());
  std::vector<char> free_letters;
  for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
    if (used.find(c) == std::string::npos) free_letters.push_back(c);
  EinsumSpec s;
  std::vector<std::string> keys;  // a letter, or ".k" for ellipsis axis k
  auto label_of = [&](const std::string& key) {
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it != keys.end()) return static_cast<int>(it - keys.begin());
    keys.push_back(key);
    s.letters.push_back(key[0] == '.' ? free_letters.at(static_cast<size_t>(std::stoi(key.substr(1)))) : key[0]);
    s.sizes.push_back(-1);
    return static_cast<int>(keys.size() - 1);
  };
  auto expand = [&](const std::vector<char>& t, int64_t e) {  // keys of a term, "..." as e ellipsis axes
    std::vector<std::string> k;
    for (char c : t) {
      if (c != '.') k.push_back(std::string(1, c));
      else
        for (int64_t i = ell_rank - e; i < ell_rank; ++i) k.push_back("." + std::to_string(i));
    }
    return k;
  };
  for (const std::string& key : expand(out, ell_rank)) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      einsum_error(eq_in, "the output names '" + key + "' twice", "each output letter is one axis of the result");
    s.output.push_back(label_of(key));
  }
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> labels;
    const std::vector<std::string> ks = expand(terms[k], ell[k]);
    for (size_t a = 0; a < ks.size(); ++a) {
      const int l = label_of(ks[a]);
      const int64_t dim = shapes[k][a];
      int64_t& size = s.sizes[static_cast<size_t>(l)];
      if (size >= 0 && size != dim)
        einsum_error(eq_in,
                     "'" + std::string(1, s.letters[static_cast<size_t>(l)]) + "' is " + std::to_string(size) +
                         " in one place and " + std::to_string(dim) + " in operand " + std::to_string(k + 1) + " " +
                         shape_str(shapes[k]),
                     "a letter is one axis: its size must agree everywhere (opscope's einsum does not broadcast)");
      size = dim;
      labels.push_back(l);
    }
    s.operands.push_back(labels);
  }
  if (keys.size() > static_cast<size_t>(kEinsumMaxLabels))
    einsum_error(eq_in, std::to_string(keys.size()) + " letters; opscope's einsum takes up to " +
                            std::to_string(kEinsumMaxLabels));
  for (size_t l = 0; l < s.sizes.size(); ++l)
    if (s.sizes[l] < 0) einsum_error(eq_in, std::string("the output's '") + s.letters[l] + "' is in no operand");
  return s;
}

EinsumPlan einsum_plan(const EinsumSpec& s, const std::string& op) {
  EinsumPlan p;
  p.operands = static_cast<int>(s.operands.size());
  p.labels = static_cast<int>(s.sizes.size());
  p.out_labels = static_cast<int>(s.output.size());
  if (p.operands > kEinsumMaxOperands || p.labels > kEinsumMaxLabels)
    throw Error(op + ": too many operands or letters");
  for (int l = 0; l < p.labels; ++l) p.size[l] = s.sizes[static_cast<size_t>(l)];
  for (int l = p.out_labels; l < p.labels; ++l) p.summed *= p.size[l];
  for (int k = 0; k < p.operands; ++k) {
    const auto& labels = s.operands[static_cast<size_t>(k)];
    int64_t st = 1;
    for (size_t a = labels.size(); a-- > 0;) {
      p.stride[k][labels[a]] += st;
      st *= s.sizes[static_cast<size_t>(labels[a])];
    }
  }
  return p;
}

namespace {

using cpu::gc;

template <class T> void einsum_naive(const EinsumPlan& p, const std::vector<const T*>& ops, T* y, int64_t n) {
  const T* ptrs[kEinsumMaxOperands] = {};
  for (size_t k = 0; k < ops.size(); ++k) ptrs[k] = ops[k];
  parallel_for(n, grain_for(2.0 * static_cast<double>(p.summed)), [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) y[e] = einsum_element<T>(p, ptrs, e);
  });
}

// dst (row-major over `order`'s labels) = src summed over `summed`'s labels; `stride` is src's
// element stride per label.
template <class T>
void pack(const T* src, const int64_t* stride, const int64_t* size, const std::vector<int>& order,
          const std::vector<int>& summed, T* dst) {
  int64_t n = 1, m = 1;
  for (int l : order) n *= size[l];
  for (int l : summed) m *= size[l];
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0, rest = e;
    for (size_t i = order.size(); i-- > 0;) {
      off += (rest % size[order[i]]) * stride[order[i]];
      rest /= size[order[i]];
    }
    T acc = 0;
    for (int64_t r = 0; r < m; ++r) {
      int64_t o = off, q = r;
      for (size_t i = summed.size(); i-- > 0;) {
        o += (q % size[summed[i]]) * stride[summed[i]];
        q /= size[summed[i]];
      }
      acc += src[o];
    }
    dst[e] = acc;
  }
}

// The batched GEMM of two operands (see the top of the file).
template <class T>
void einsum_matmul(const KernelCtx& k, const EinsumSpec& s, const EinsumPlan& p, const T* a, const T* b, T* y) {
  std::vector<int> batch, m, n, kk, a_only, b_only;
  auto in = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  for (int l = 0; l < p.labels; ++l) {
    const bool ia = in(s.operands[0], l), ib = in(s.operands[1], l), io = l < p.out_labels;
    if (ia && ib) (io ? batch : kk).push_back(l);
    else if (ia) (io ? m : a_only).push_back(l);
    else if (ib) (io ? n : b_only).push_back(l);
  }
  auto count = [&](const std::vector<int>& v) {
    int64_t c = 1;
    for (int l : v) c *= p.size[l];
    return c;
  };
  const int64_t B = count(batch), M = count(m), N = count(n), K = count(kk);
  const DType dt = k.out().dtype();
  Tensor at = k.workspace({B, M, K}, dt), bt = k.workspace({B, K, N}, dt), ct = k.workspace({B, M, N}, dt);
  auto cat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  pack(a, p.stride[0], p.size, cat(batch, m, kk), a_only, at.data<T>());
  pack(b, p.stride[1], p.size, cat(batch, kk, n), b_only, bt.data<T>());
  for (int64_t i = 0; i < B; ++i)
    cpu::gemm<T>(cpu::default_gemm(), false, false, M, N, K, T(1), at.data<T>() + i * M * K, K,
                 bt.data<T>() + i * K * N, N, T(0), ct.data<T>() + i * M * N, N);
  // The output's letters read from C [batch, M, N].
  int64_t c_stride[kEinsumMaxLabels] = {}, st = 1;
  const std::vector<int> c_order = cat(batch, m, n);
  for (size_t i = c_order.size(); i-- > 0;) {
    c_stride[c_order[i]] = st;
    st *= p.size[c_order[i]];
  }
  pack(ct.data<T>(), c_stride, p.size, s.output, {}, y);
}

KernelFn einsum_kernel(bool allow_matmul) {
  return [allow_matmul](KernelCtx& k) {
    std::vector<Shape> shapes;
    for (auto& t : k.inputs) shapes.push_back(t.shape());
    const EinsumSpec s = parse_einsum(k.attrs.s("equation"), shapes);
    const EinsumPlan p = einsum_plan(s, k.op.name);
    const DType dt = k.out().dtype();
    std::vector<Tensor> ins;
    for (auto& t : k.inputs) ins.push_back(cpu::as_dtype(t, dt));
    if (k.out().numel() == 0) return;
    visit_dtype(dt, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) {  // (BLAS has no integer products: int64 runs the loops)
        if (allow_matmul && ins.size() == 2 && !s.repeats_a_label()) {
          einsum_matmul<T>(k, s, p, ins[0].data<T>(), ins[1].data<T>(), k.out().data<T>());
          return;
        }
      }
      std::vector<const T*> ptrs;
      for (auto& t : ins) ptrs.push_back(t.data<T>());
      einsum_naive<T>(p, ptrs, k.out().data<T>(), k.out().numel());
    });
  };
}

// dx_i = einsum(dy and the other operands → operand i's letters). A letter of operand i that
// neither dy nor another operand has (summed by operand i alone) is broadcast back with expand.
std::vector<Val> einsum_backward(GradCtx& g) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < g.num_inputs(); ++i) shapes.push_back(g.input_meta(i).shape);
  const EinsumSpec s = parse_einsum(g.attrs().s("equation"), shapes);
  std::vector<Val> grads(g.num_inputs());
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    if (!g.needs_grad(i)) continue;
    std::vector<int> own = s.operands[i];
    std::vector<int> sorted = own;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw Error("einsum: the gradient of an operand that repeats a letter (a diagonal, \"" + s.subscripts(own) +
                      "\") is not "
                      "implemented",
                  "take the diagonal another way (e.g. multiply by eye(n) and sum) when it needs a gradient");
    std::string eq = s.subscripts(s.output);
    std::vector<Val> ins = {g.grad_output(0)};
    std::vector<int> reachable = s.output;
    for (size_t j = 0; j < g.num_inputs(); ++j) {
      if (j == i) continue;
      eq += "," + s.subscripts(s.operands[j]);
      ins.push_back(g.input(j));
      reachable.insert(reachable.end(), s.operands[j].begin(), s.operands[j].end());
    }
    std::vector<int> kept;
    Shape kept_shape;
    for (int l : own)
      if (std::find(reachable.begin(), reachable.end(), l) != reachable.end()) kept.push_back(l);
    eq += "->" + s.subscripts(kept);
    Val d = g.call("einsum", ins, {{"equation", eq}});
    if (kept.size() != own.size()) {  // put back the letters only operand i summed, as size-1 axes, and broadcast
      std::vector<int64_t> with_ones;
      for (int l : own)
        with_ones.push_back(std::find(kept.begin(), kept.end(), l) != kept.end() ? s.sizes[static_cast<size_t>(l)] : 1);
      d = g.call("reshape", {d}, {{"shape", with_ones}});
      d = g.call("expand", {d}, {{"shape", std::vector<int64_t>(shapes[i].begin(), shapes[i].end())}});
    }
    grads[i] = d;
  }
  return grads;
}

Cost einsum_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a,
                 std::string_view) {
  Cost c;
  for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
  c.bytes_written = cpu::meta_bytes(out[0]);
  try {  // products over every combination of the letters: (operands − 1) multiplications and an add each
    std::vector<Shape> shapes;
    for (auto& m : in) shapes.push_back(m.shape);
    const EinsumSpec s = parse_einsum(a.s("equation"), shapes);
    double combos = 1;
    for (int64_t size : s.sizes) combos *= static_cast<double>(size);
    c.multiplications = combos * static_cast<double>(std::max<size_t>(1, in.size() - 1));
    c.flops = c.multiplications + combos;
  } catch (const Error&) {}
  return c;
}

OPSCOPE_REGISTER_OPS(register_einsum_ops) {
  OpDef d = OpDef::declare(
      "einsum", "matmul",
      "y[out letters] = Σ over the other letters of Π operands[their letters] (\"bij,bjk->bik\": a batched "
      "matmul; \"...\" the shared leading axes)",
      {"operands..."});
  d.max_inputs = kEinsumMaxOperands;
  d.attrs = {make_attr("equation", AttrType::string, std::string(), "the subscripts: \"ij,jk->ik\"", {}, {}, {}, true)};
  d.infer = [](const InferCtx& c) {
    std::vector<Shape> shapes;
    DType dt = c.inputs[0].dtype;
    for (auto& m : c.inputs) {
      shapes.push_back(m.shape);
      dt = promote(dt, m.dtype);
    }
    try {
      const EinsumSpec s = parse_einsum(c.attrs.s("equation"), shapes);
      TensorMeta m = c.inputs[0];
      m.shape = s.out_shape();
      m.dtype = dt;
      return std::vector<TensorMeta>{m};
    } catch (const Error& e) {
      c.fail(std::string(e.what()).substr(8), e.hint());  // without "einsum: ": the context adds the op's name
    }
  };
  d.kernel(Device::cpu, "matmul", einsum_kernel(true));
  d.default_algo = "matmul";
  d.kernel(Device::cpu, "naive", einsum_kernel(false));
  for (int i = 0; i < kEinsumMaxOperands; ++i) d.saves.push_back({SavedRef::input, i});
  d.backward = einsum_backward;
  d.backward_note =
      "d(operand i) = einsum(dy, the other operands -> operand i's letters) (letters only it summed: expanded back)";
  d.cost = einsum_cost;
  const InputSpec a{{2, 3, 4}}, b{{2, 4, 5}};
  d.gradcheck = {gc({a, b}, {{"equation", std::string("bij,bjk->bik")}}, "batched matmul"),
                 gc({InputSpec{{2, 2, 3, 4}}, InputSpec{{2, 2, 5, 4}}}, {{"equation", std::string("bhqd,bhkd->bhqk")}},
                    "attention's scores"),
                 gc({InputSpec{{3, 4}}}, {{"equation", std::string("ij->j")}}, "a column sum"),
                 gc({InputSpec{{3}}, InputSpec{{4}}}, {{"equation", std::string("i,j")}},
                    "outer product, implicit output"),
                 gc({InputSpec{{2, 3, 4}}, InputSpec{{4, 3}}}, {{"equation", std::string("...ij,ji->...")}},
                    "ellipsis, a trace of a product"),
                 gc({InputSpec{{2, 3}}, InputSpec{{3, 4}}, InputSpec{{4}}}, {{"equation", std::string("ij,jk,k->i")}},
                    "three operands")};
  d.lab = {
      "B M K N: bmk,bkn->bmn",
      {8, 256, 256, 256},
      4,
      [](const std::vector<int64_t>& s) {
        return cpu::lab_case({{s[0], s[1], s[2]}, {s[0], s[2], s[3]}}, {{"equation", std::string("bmk,bkn->bmn")}});
      },
      "naive"};
  registry.add(std::move(d));
}

}  // namespace
}  // namespace opscope
