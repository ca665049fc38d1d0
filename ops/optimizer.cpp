// Optimizer steps as operators of phase `update`: sgd_update (momentum, weight decay,
// Nesterov), adam_update and adamw_update. Each writes the parameter (input 0) and its
// optimizer state (momentum buffer; Adam's m, v and step count) in place, so a training loop
// allocates nothing per step; output 0 is the parameter itself. A compiled training program
// (compile(loss, optimizer=opt)) runs the same ops, scheduled right after each gradient.
// The per-element formulas are in ops/optimizer_math.h, shared with the CUDA kernels.
#include "ops/cpu_util.h"
#include "ops/optimizer_math.h"

namespace opscope {
namespace {

// What the kernel writes in place must be the caller's own dense buffer.
void check_in_place(const KernelCtx& k, size_t i) {
  if (!k.in(i).is_contiguous())
    throw Error(
        k.op.name + ": '" + k.op.input_names[i] + "' must be a contiguous tensor: it is updated in place",
        "parameters and optimizer state are made whole (param(...), zeros(...)), not as views of other tensors");
}

// Input i has w's shape (and, for state written in place, w's dtype).
void check_like_w(const InferCtx& c, size_t i, bool same_dtype) {
  const std::string& name = c.op.input_names[i];
  const std::string n = name.back() == '?' ? name.substr(0, name.size() - 1) : name;
  if (c.inputs[i].shape != c.inputs[0].shape)
    c.fail("w is " + shape_str(c.inputs[0].shape) + " but " + n + " is " + shape_str(c.inputs[i].shape),
           n == "dw" ? "dw is w's gradient: same shape" : n + " is w's optimizer state: same shape as w");
  if (same_dtype && c.inputs[i].dtype != c.inputs[0].dtype)
    c.fail(n + " is " + dtype_name(c.inputs[i].dtype) + " but w is " + dtype_name(c.inputs[0].dtype),
           "optimizer state is updated in place: it has the parameter's dtype");
}

CostFn update_cost(double flops_per_element, int state_tensors) {
  return [=](const std::vector<TensorMeta>& in, const std::vector<TensorMeta>&, const Attrs&, std::string_view) {
    Cost c;
    for (auto& m : in) c.bytes_read += cpu::meta_bytes(m);
    c.bytes_written = (1 + state_tensors) * cpu::meta_bytes(in[0]);
    c.flops = flops_per_element * cpu::meta_numel(in[0]);
    return c;
  };
}

void declare_sgd(OpRegistry& registry) {
  OpDef d = OpDef::declare("sgd_update", "optimizer",
                           "g = dw + weight_decay·w; b ← momentum·b + g (g = b, or g + momentum·b with Nesterov); "
                           "w ← w − lr·g, in place (torch.optim.SGD)",
                           {"w", "dw", "momentum_buffer?"});
  d.attrs = {make_attr("lr", AttrType::real, 0.01, "the learning rate", 0.0),
             make_attr("momentum", AttrType::real, 0.0, "μ: the momentum buffer's decay (0 = plain SGD, no buffer)",
                       0.0),
             make_attr("weight_decay", AttrType::real, 0.0, "λ: an L2 penalty λ·w added to the gradient", 0.0),
             make_attr("nesterov", AttrType::boolean, false, "Nesterov momentum: step along g + μ·b")};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    check_like_w(c, 1, false);
    const double mu = c.attrs.f("momentum");
    if (c.inputs.size() > 2) check_like_w(c, 2, true);
    else if (mu > 0)
      c.fail("momentum=" + attr_value_str(mu) + " needs a momentum_buffer input",
             "sgd_update(w, dw, buffer, momentum=0.9)");
    if (c.attrs.b("nesterov") && mu == 0)
      c.fail("nesterov=True needs a momentum above 0", "SGD(params, lr, momentum=0.9, nesterov=True)");
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "default", [](KernelCtx& k) {
    check_in_place(k, 0);
    const bool has_buffer = k.inputs.size() > 2;
    if (has_buffer) check_in_place(k, 2);
    k.out() = k.in(0);  // the parameter itself
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const Tensor dw = cpu::as_dtype(k.in(1), k.in(0).dtype()).contiguous();
      const optim::Sgd<T> c{static_cast<T>(k.attrs.f("lr")), static_cast<T>(k.attrs.f("momentum")),
                            static_cast<T>(k.attrs.f("weight_decay")), k.attrs.b("nesterov")};
      T* w = k.in(0).data<T>();
      const T* g = dw.data<T>();
      T* b = has_buffer ? k.in(2).data<T>() : nullptr;
      for (int64_t i = 0, n = k.in(0).numel(); i < n; ++i) optim::sgd_element(c, w[i], g[i], b ? b + i : nullptr);
    });
  });
  d.makes_views = true;  // output 0 is w, updated in place (no allocation)
  d.accepts_strided = true;  // so w and its buffer reach the kernel as the caller's own tensors
  d.differentiable = false;
  d.updates_input0 = true;
  // Plain SGD over a matmul's gradient, w − lr·(a·b), is one GEMM (sgd_matmul_update, ops/fused.cpp):
  // the gradient is never stored. Momentum and weight decay read more than the gradient.
  d.absorbs = {{"matmul", 1, "sgd_matmul_update", [](const Attrs& a, size_t inputs) {
                  return inputs == 2 && a.f("momentum") == 0 && a.f("weight_decay") == 0;
                }}};
  const InputSpec w{{3, 4}};
  d.gradcheck = {cpu::gc({w, w}, {{"lr", 0.1}}, "plain"),
                 cpu::gc({w, w, w}, {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", true}},
                         "momentum buffer, weight decay, Nesterov")};
  d.cost = update_cost(4, 1);
  registry.add(std::move(d));
}

void declare_adam(OpRegistry& registry, bool decoupled) {
  const std::string decay =
      decoupled ? "w ← w·(1 − lr·weight_decay) first (decoupled weight decay), g = dw; " : "g = dw + weight_decay·w; ";
  OpDef d = OpDef::declare(decoupled ? "adamw_update" : "adam_update", "optimizer",
                           decay +
                               "t ← t + 1, m ← β1·m + (1 − β1)·g, v ← β2·v + (1 − β2)·g², "
                               "w ← w − lr·(m/(1 − β1ᵗ)) / (sqrt(v/(1 − β2ᵗ)) + eps), all in place (torch.optim." +
                               (decoupled ? "AdamW)" : "Adam)"),
                           {"w", "dw", "exp_avg", "exp_avg_sq", "step"});
  d.attrs = {make_attr("lr", AttrType::real, 1e-3, "the learning rate", 0.0),
             make_attr("beta1", AttrType::real, 0.9, "decay of m, the running mean of g", 0.0, 1.0),
             make_attr("beta2", AttrType::real, 0.999, "decay of v, the running mean of g²", 0.0, 1.0),
             make_attr("eps", AttrType::real, 1e-8, "added to sqrt(v̂) so the step stays finite", 0.0),
             make_attr("weight_decay", AttrType::real, decoupled ? 1e-2 : 0.0,
                       decoupled ? "λ: w shrinks by lr·λ·w each step" : "λ: an L2 penalty λ·w added to the gradient",
                       0.0)};
  d.infer = [](const InferCtx& c) {
    c.expect_float(0);
    check_like_w(c, 1, false);
    check_like_w(c, 2, true);
    check_like_w(c, 3, true);
    if (!c.inputs[4].shape.empty() || c.inputs[4].dtype != DType::f32)
      c.fail("step must be a 0-d float32 tensor (the number of steps taken), got " + shape_str(c.inputs[4].shape) +
                 " " + dtype_name(c.inputs[4].dtype),
             "zeros([]) is a fresh step count, as PyTorch's state['step']");
    return std::vector<TensorMeta>{c.inputs[0]};
  };
  d.kernel(Device::cpu, "default", [decoupled](KernelCtx& k) {
    for (size_t i : {0, 2, 3, 4}) check_in_place(k, i);
    k.out() = k.in(0);
    float& t = *k.in(4).data<float>();
    t += 1;
    cpu::visit_float(k.in(0).dtype(), k.op.name, [&](auto z) {
      using T = decltype(z);
      const Tensor dw = cpu::as_dtype(k.in(1), k.in(0).dtype()).contiguous();
      const auto c = optim::adam_at_step<T>(static_cast<T>(k.attrs.f("lr")), static_cast<T>(k.attrs.f("beta1")),
                                            static_cast<T>(k.attrs.f("beta2")), static_cast<T>(k.attrs.f("eps")),
                                            static_cast<T>(k.attrs.f("weight_decay")), decoupled, static_cast<T>(t));
      T *w = k.in(0).data<T>(), *m = k.in(2).data<T>(), *v = k.in(3).data<T>();
      const T* g = dw.data<T>();
      for (int64_t i = 0, n = k.in(0).numel(); i < n; ++i) optim::adam_element(c, w[i], g[i], m[i], v[i]);
    });
  });
  d.makes_views = true;
  d.accepts_strided = true;
  d.differentiable = false;
  d.updates_input0 = true;
  const InputSpec w{{3, 4}}, v{{3, 4}, Domain::positive};  // v is a running mean of g²: positive
  const InputSpec step{{}, Domain::positive, 0, true, DType::f32};  // float32 whatever the case runs in
  d.gradcheck = {cpu::gc({w, w, w, v, step}, {{"lr", 0.01}, {"weight_decay", 0.1}}, "weight decay")};
  d.cost = update_cost(12, 2);
  registry.add(std::move(d));
}

OPSCOPE_REGISTER_OPS(register_optimizer_ops) {
  declare_sgd(registry);
  declare_adam(registry, false);
  declare_adam(registry, true);
}

}  // namespace
}  // namespace opscope
