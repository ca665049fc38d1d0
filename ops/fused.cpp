// Operators the static-graph compiler makes: `fused_elementwise` (a chain of elementwise ops
// run in one pass over the data, as XLA and TorchInductor do) and `sgd_matmul_update` (a
// gradient's matmul folded into its SGD update; sgd_update itself is in ops/optimizer.cpp).
//
// A fused chain is an attribute string, one instruction per replaced op (ops/pointwise_op.h):
//   "mul i0 i1;add r0 i2;gelu/0 r1"
// iK is the fused node's K-th input, rK the result of instruction K; the last is the output.
// Each chunk of a row is computed through every instruction while it sits in L1, so the
// intermediate tensors of the unfused graph are never written to memory. The instructions
// run the pointwise formulas (ops/pointwise.h), vectorised where that is faster.
#include <Eigen/Core>

#include "ops/cpu_util.h"
#include "ops/pointwise_cpu.h"
#include "ops/pointwise_op.h"

namespace opscope {
namespace {

constexpr int64_t kChunk = 512;  // elements per chunk: registers of 8 instructions stay in L1

void fused_kernel(KernelCtx& k) {
  const std::vector<FusedInstruction> prog = parse_fused_chain(k.attrs.s("chain"), k.inputs.size());
  Tensor& out = k.out();
  const Shape& shape = out.shape();
  const int64_t n = out.numel();
  if (n == 0) return;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t inner = rank == 0 ? 1 : shape.back();
  cpu::visit_float(out.dtype(), "fused_elementwise", [&](auto z) {
    using T = decltype(z);
    const size_t ni = k.inputs.size();
    std::vector<Tensor> ins;
    std::vector<Strides> strides;
    for (size_t i = 0; i < ni; ++i) {
      ins.push_back(cpu::as_dtype(k.in(i), out.dtype()));
      strides.push_back(cpu::broadcast_strides(ins.back(), shape));
    }
    // Registers: one chunk per instruction, plus a gather buffer per input that is not a plain row.
    std::vector<T> regs(prog.size() * kChunk), gathered(ni * kChunk);
    std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(rank - 1, 0)), 0);
    std::vector<int64_t> row_off(ni);
    T* o = out.data<T>();
    for (int64_t row = 0; row * inner < n; ++row) {
      for (size_t i = 0; i < ni; ++i) {
        int64_t off = 0;
        for (int64_t d = 0; d + 1 < rank; ++d) off += idx[d] * strides[i][d];
        row_off[i] = off;
      }
      for (int64_t c0 = 0; c0 < inner; c0 += kChunk) {
        const int64_t len = std::min(kChunk, inner - c0);
        std::vector<const T*> src(ni);
        for (size_t i = 0; i < ni; ++i) {
          const T* base = ins[i].template data<T>() + row_off[i];
          const int64_t s = rank == 0 ? 1 : strides[i][rank - 1];
          if (s == 1) {
            src[i] = base + c0;
          } else {  // broadcast along the row (stride 0) or strided: gather the chunk
            T* g = gathered.data() + i * kChunk;
            for (int64_t j = 0; j < len; ++j) g[j] = base[(c0 + j) * s];
            src[i] = g;
          }
        }
        for (size_t p = 0; p < prog.size(); ++p) {
          const FusedInstruction& in = prog[p];
          auto operand = [&](int a) -> const T* {
            const size_t index = static_cast<size_t>(in.index[a]);
            return in.kind[a] == 'i' ? src[index] : regs.data() + index * kChunk;
          };
          // The last instruction writes straight into the output (after every input of the chunk was read).
          T* dst = p + 1 == prog.size() ? o + row * inner + c0 : regs.data() + p * kChunk;
          cpu::pointwise_chunk<T>(in.formula, operand(0), in.arity > 1 ? operand(1) : nullptr, dst, len, in.params);
        }
      }
      for (int64_t d = rank - 2; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

// Validates the chain against the inputs and gives the output meta (shape from the attribute).
std::vector<TensorMeta> infer_fused(const InferCtx& c) {
  parse_fused_chain(c.attrs.s("chain"), c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) c.expect_float(i);
  TensorMeta m{c.attrs.ints("shape"), c.inputs.at(0).dtype, c.inputs.at(0).device};
  for (auto& in : c.inputs) broadcast_shapes(in.shape, m.shape, "fused_elementwise");
  return {m};
}

OpDef fused_elementwise_def() {
  OpDef d =
      OpDef::declare("fused_elementwise", "fused",
                     "y = the chain of elementwise ops in `chain`, computed in one pass (no intermediate tensors)",
                     {"x..."});
  d.attrs = {make_attr("chain", AttrType::string, std::string("neg i0"),
                       "instructions: \"mul i0 i1;add r0 i2;gelu/0 r1\""),
             make_attr("shape", AttrType::int_list, std::vector<int64_t>{}, "the output shape")};
  d.infer = infer_fused;
  d.elementwise = true;
  d.kernel(Device::cpu, "default", fused_kernel);
  d.accepts_strided = true;
  d.differentiable = false;  // made by the compiler after autodiff
  using V = std::vector<int64_t>;
  d.gradcheck = {
      cpu::gc({{{3, 4}}, {{4}}}, {{"chain", std::string("mul i0 i1;add r0 i0;gelu/1 r1")}, {"shape", V{3, 4}}}),
      cpu::gc({{{2, 3}, Domain::positive}, {{2, 1}}},
              {{"chain", std::string("log i0;leaky_relu/0.2 r0;maximum r1 i1;softplus/2/1 r2")}, {"shape", V{2, 3}}},
              "parameters, broadcast column")};
  // Fusion saves memory traffic, not arithmetic: each instruction costs the FLOPs of its op
  // on the output's size; only the bytes are those of one pass.
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& a, std::string_view) {
    Cost c;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    const TensorMeta& y = out.at(0);
    c.bytes_written = cpu::meta_bytes(y);
    for (const FusedInstruction& ins : parse_fused_chain(a.s("chain"), in.size())) {
      const OpDef* op = OpRegistry::instance().find(pointwise::name_of(ins.formula));
      c.flops += op && op->cost ? op->cost(std::vector<TensorMeta>(static_cast<size_t>(ins.arity), y), {y},
                                           op->resolve({}), "default")
                                      .flops
                                : cpu::meta_numel(y);
    }
    return c;
  };
  return d;
}

OpDef sgd_matmul_update_def() {
  OpDef d = OpDef::declare(
      "sgd_matmul_update", "optimizer",
      "w ← w − lr·(a·b): a gradient's matmul accumulated straight into the parameter (the gradient is never stored)",
      {"w", "a", "b"});
  d.attrs = {make_attr("lr", AttrType::real, 0.01, "the learning rate", 0.0)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    for (size_t i = 0; i < 3; ++i) c.expect_rank(i, 2, 2);
    const Shape &w = c.inputs[0].shape, &a = c.inputs[1].shape, &b = c.inputs[2].shape;
    if (a[1] != b[0] || w[0] != a[0] || w[1] != b[1])
      c.fail("w " + shape_str(w) + " cannot take a·b with a " + shape_str(a) + " and b " + shape_str(b),
             "w is [M, N], a [M, K], b [K, N]");
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.accepts_strided = true;  // a is usually a transposed view (xᵀ): read in place through its strides
  d.gradcheck = {cpu::gc({{{3, 5}}, {{3, 4}}, {{4, 5}}}, {{"lr", 0.1}})};
  d.kernel(Device::cpu, "eigen", [](KernelCtx& k) {
    cpu::visit_float(k.in(0).dtype(), "sgd_matmul_update", [&](auto z) {
      using T = decltype(z);
      using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      using Strided = Eigen::Map<const Mat, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
      Tensor a = cpu::as_dtype(k.in(1), k.in(0).dtype()), b = cpu::as_dtype(k.in(2), k.in(0).dtype());
      auto map = [](const Tensor& t) {
        return Strided(t.data<T>(), t.shape()[0], t.shape()[1],
                       Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(t.strides()[0], t.strides()[1]));
      };
      const T lr = static_cast<T>(k.attrs.f("lr"));
      Tensor& out = k.out();  // w itself in a compiled program
      if (out.raw_data() != k.in(0).raw_data()) out.copy_from(k.in(0));
      Eigen::Map<Mat> w(out.data<T>(), out.shape()[0], out.shape()[1]);
      w.noalias() -= lr * (map(a) * map(b));
    });
  });
  d.differentiable = false;
  d.updates_input0 = true;
  d.cost = [](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>&, const Attrs&, std::string_view) {
    Cost c;
    const double m = static_cast<double>(in[1].shape[0]), kk = static_cast<double>(in[1].shape[1]),
                 n = static_cast<double>(in[2].shape[1]);
    c.flops = 2 * m * kk * n + 2 * m * n;
    c.multiplications = m * kk * n;
    c.bytes_read = cpu::meta_bytes(in[0]) + cpu::meta_bytes(in[1]) + cpu::meta_bytes(in[2]);
    c.bytes_written = cpu::meta_bytes(in[0]);
    return c;
  };
  return d;
}

OPSCOPE_REGISTER_OPS(register_fused_ops) {
  registry.add(fused_elementwise_def());
  registry.add(sgd_matmul_update_def());
}

}  // namespace
}  // namespace opscope
