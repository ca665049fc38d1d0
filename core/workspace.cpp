#include "core/workspace.h"

#include <cmath>

#include "core/device.h"
#include "core/error.h"

namespace opscope {

namespace {
thread_local Workspace* g_current = nullptr;
}

Workspace& current_workspace() {
  if (!g_current) {
    static Workspace* default_ws = new Workspace();  // lives for the whole program
    g_current = default_ws;
  }
  return *g_current;
}

WorkspaceScope::WorkspaceScope(Workspace& ws) : prev_(&current_workspace()) { g_current = &ws; }
WorkspaceScope::~WorkspaceScope() { g_current = prev_; }

Workspace::Workspace() : tracker_(std::make_shared<MemoryTracker>()), allocators_(kNumDevices), executor_(*this) {
  allocators_[static_cast<int>(Device::cpu)] = std::make_shared<CpuCachingAllocator>(tracker_);
}

Workspace::~Workspace() { graph_.clear(); }

std::shared_ptr<Allocator> Workspace::allocator(Device d) {
  auto& a = allocators_[static_cast<int>(d)];
  if (!a) {  // a device's allocator is made the first time a tensor goes there
    if (!device_available(d)) throw Error(device_missing_message(d), "tensors can live on the cpu");
    a = device_backend(d)->make_allocator(tracker_);
  }
  return a;
}

void Workspace::set_default_device(Device d) {
  if (!device_available(d)) throw Error(device_missing_message(d), "new tensors stay on the cpu");
  default_device_ = d;
}

Device op_device(const std::vector<TensorMeta>& inputs) {
  for (auto& m : inputs)
    if (!m.shape.empty()) return m.device;
  return inputs.empty() ? Device::cpu : inputs[0].device;
}

const std::string& default_algorithm_on(const OpDef& op, Device d) {
  if (d == Device::cpu || op.find_kernel(d, op.default_algorithm())) return op.default_algorithm();
  if (const std::string& preferred = op.device_default[static_cast<int>(d)]; !preferred.empty()) return preferred;
  // One algorithm on the device is its default there; with several, the device's default is
  // said when its kernels register (add_kernel's device_default), never left to their order.
  const std::string* only = nullptr;
  for (auto& a : op.algorithms)
    if (op.find_kernel(d, a)) {
      if (only) return op.default_algorithm();
      only = &a;
    }
  return only ? *only : op.default_algorithm();  // none: the executor explains which devices have kernels
}

void Workspace::set_allocator(Device d, std::shared_ptr<Allocator> a) {
  allocators_[static_cast<int>(d)] = std::move(a);
}

void Workspace::push_scope(const std::string& name, bool call_frame) {
  scope_stack_.push_back({scope_, call_frame});
  scope_ = scope_.empty() ? name : scope_ + "/" + name;
  if (call_frame) frames_.push_back({NodeFrame::call, next_frame_id_++, 0});
}

void Workspace::pop_scope() {
  if (scope_stack_.empty()) return;
  const bool call_frame = scope_stack_.back().second;
  scope_ = scope_stack_.back().first;
  scope_stack_.pop_back();
  for (size_t i = frames_.size(); call_frame && i-- > 0;)
    if (frames_[i].kind == NodeFrame::call) {
      frames_.resize(i);
      break;
    }
}

void Workspace::push_loop() { frames_.push_back({NodeFrame::loop, next_frame_id_++, 0}); }

void Workspace::set_loop_iteration(int i) {
  if (!frames_.empty() && frames_.back().kind == NodeFrame::loop) frames_.back().iteration = i;
}

void Workspace::pop_loop() {
  for (size_t i = frames_.size(); i-- > 0;)
    if (frames_[i].kind == NodeFrame::loop) {
      frames_.resize(i);
      break;
    }
}

void Workspace::reset_graph() {
  graph_.clear();
  tracker_->clear_timeline();
}

int Workspace::value_of(const Tensor& t) {
  TensorImpl* impl = t.impl();
  int id = impl->value_id;
  if (ValueInfo* found = graph_.find_value(id); found && found->tensor.lock().get() == impl) {
    ValueInfo& v = *found;
    if (v.requires_grad == impl->requires_grad) return id;
    if (v.producer < 0) {  // a leaf whose flag changed since the graph first saw it
      v.requires_grad = impl->requires_grad;
      v.kind = impl->requires_grad ? ValueKind::parameter : ValueKind::input;
      return id;
    }
    // An op's output made a parameter afterwards: from here on it is a new leaf.
  }
  ValueInfo v;
  v.meta = {t.shape(), t.dtype(), t.device()};
  v.kind = impl->requires_grad ? ValueKind::parameter : ValueKind::input;
  v.name = impl->name;
  v.requires_grad = impl->requires_grad;
  v.tensor = t.impl_ptr();
  // Literals such as the 2 of `a * 2` die with their statement; the graph keeps small ones so
  // the tape can be replayed (:replay) and compiled programs can read them.
  constexpr int64_t kKeptConstantElements = 64;
  if (!impl->requires_grad && impl->storage && t.numel() <= kKeptConstantElements && impl->name.empty()) v.constant = t;
  impl->value_id = graph_.add_value(std::move(v));
  return impl->value_id;
}

Tensor Workspace::placeholder(const std::string& name, const Shape& shape, DType dtype) {
  Tensor t = Tensor::symbolic(shape, dtype);
  t.impl()->name = name;
  const int v = value_of(t);
  graph_.value(v).placeholder = true;
  return t;
}

std::vector<TensorMeta> Workspace::infer(const OpDef& op, const std::vector<TensorMeta>& inputs,
                                         const Attrs& attrs) const {
  const int n = static_cast<int>(inputs.size());
  if (n < op.min_inputs || (op.max_inputs >= 0 && n > op.max_inputs)) {
    std::string names;
    for (auto& s : op.input_names) names += (names.empty() ? "" : ", ") + s;
    std::string want = op.min_inputs == op.max_inputs ? std::to_string(op.min_inputs)
                       : op.max_inputs < 0            ? "at least " + std::to_string(op.min_inputs)
                                           : std::to_string(op.min_inputs) + " or " + std::to_string(op.max_inputs);
    throw Error(op.name + ": expects " + want + " input" + (want == "1" ? "" : "s") + " (" + names + "), got " +
                    std::to_string(n),
                op.name + "(" + names + ")");
  }
  const Device d = op_device(inputs);
  for (int i = 0; i < n; ++i)
    if (inputs[i].device != d && !inputs[i].shape.empty())
      throw Error(op.name + ": inputs are on different devices (" + device_name(d) + " and " +
                      device_name(inputs[i].device) + ")",
                  "move them to one device with x.to(\"cpu\") or x.to(\"cuda\")");
  InferCtx ctx{op, inputs, attrs};
  auto out = op.infer(ctx);
  for (auto& m : out) m.device = d;
  return out;
}

Tensor Workspace::call(std::string_view name, const std::vector<Tensor>& inputs, const AttrMap& attrs,
                       std::string_view algo) {
  const OpDef& op = OpRegistry::instance().get(name);
  return call_multi(op, inputs, op.resolve(attrs), algo).at(0);
}

std::vector<Tensor> Workspace::call_multi(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                          std::string_view algo) {
  std::vector<TensorMeta> in_meta;
  in_meta.reserve(inputs.size());
  bool any_grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) throw Error(op.name + ": input " + std::to_string(i + 1) + " is None");
    in_meta.push_back({t.shape(), t.dtype(), t.device()});
    any_grad = any_grad || t.requires_grad();
  }
  auto out_meta = infer(op, in_meta, attrs);
  std::string_view chosen = algo.empty() ? std::string_view(default_algorithm_on(op, op_device(in_meta))) : algo;
  if (std::find(op.algorithms.begin(), op.algorithms.end(), chosen) == op.algorithms.end()) {
    std::string all;
    for (auto& a : op.algorithms) all += (all.empty() ? "\"" : ", \"") + a + "\"";
    throw Error(op.name + ": unknown algorithm \"" + std::string(chosen) + "\"",
                "algorithms of " + op.name + ": " + all);
  }
  const bool rg = grad_enabled_ && op.differentiable && any_grad;
  if (!static_mode_)
    for (auto& t : inputs)
      if (t.is_symbolic())
        throw Error(op.name + ": '" + (t.name().empty() ? std::string("an input") : t.name()) +
                        "' is symbolic (made in static mode) and has no values to compute with",
                    "switch back with :mode static, or run(...) it to get values");

  const Graph::Mark mark = graph_.mark();
  try {
    Node node;
    node.op = &op;
    node.attrs = attrs;
    node.algo = std::string(chosen);
    node.phase = phase_;
    node.scope = scope_;
    node.frames = frames_;
    node.inputs.reserve(inputs.size());
    for (auto& t : inputs) node.inputs.push_back(value_of(t));
    const int id = static_cast<int>(graph_.num_nodes());
    for (size_t i = 0; i < out_meta.size(); ++i) {
      ValueInfo v;
      v.meta = out_meta[i];
      v.producer = id;
      v.out_index = static_cast<int>(i);
      v.requires_grad = rg;
      node.outputs.push_back(graph_.add_value(std::move(v)));
    }
    node.symbolic = static_mode_;
    if (op.body) node.body = op.body(in_meta, attrs);
    if (op.cost) node.flops = op.cost(in_meta, out_meta, attrs, chosen).flops;
    graph_.add_node(std::move(node));
    if (static_mode_) return symbolic_outputs(id, rg);
    std::vector<Tensor> outs = executor_.run_node(id, inputs);
    Node& n = graph_.node(id);
    for (size_t i = 0; i < outs.size(); ++i) {
      TensorImpl* impl = outs[i].impl();
      if (op.makes_views) {  // a view gets its own handle so its metadata is its own
        outs[i] = Tensor(std::make_shared<TensorImpl>(*impl));
        impl = outs[i].impl();
        impl->grad.reset();
        impl->name.clear();
      }
      impl->value_id = n.outputs[i];
      impl->requires_grad = rg;
      impl->from_op = true;
      graph_.value(n.outputs[i]).tensor = outs[i].impl_ptr();
    }
    if (rg) {
      for (const SavedRef& s : op.saves) {
        if (s.kind == SavedRef::input && s.index >= static_cast<int>(inputs.size())) continue;  // optional, not given
        const Tensor& t = s.kind == SavedRef::input ? inputs[s.index] : outs[s.index];
        int v = s.kind == SavedRef::input ? n.inputs[s.index] : n.outputs[s.index];
        t.storage().add_saved_ref();
        n.saved.push_back({v, t});
      }
    }
    return outs;
  } catch (...) {
    graph_.rollback(mark);
    throw;
  }
}

// Static mode: the outputs are shapes without data. Concrete leaves the node reads (parameters,
// constants such as the 2 of `x * 2`) are held by the graph, so the program can run after the
// statement that made them is gone.
std::vector<Tensor> Workspace::symbolic_outputs(int id, bool requires_grad) {
  Node& n = graph_.node(id);
  for (int v : n.inputs) {
    ValueInfo& vi = graph_.value(v);
    if (auto t = vi.tensor.lock(); t && t->storage && !vi.constant.defined()) vi.constant = Tensor(t);
  }
  std::vector<Tensor> outs;
  for (int v : n.outputs) {
    const TensorMeta& m = graph_.value(v).meta;
    Tensor t = Tensor::symbolic(m.shape, m.dtype, m.device);
    t.impl()->value_id = v;
    t.impl()->requires_grad = requires_grad;
    t.impl()->from_op = true;
    graph_.value(v).tensor = t.impl_ptr();
    outs.push_back(std::move(t));
  }
  return outs;
}

void Workspace::zero_grad(const std::vector<Tensor>& tensors) {
  for (auto& t : tensors) {
    if (journal_ && t.impl()->grad) journal_->keep_grad(t.impl_ptr());
    t.impl()->grad.reset();
  }
}

void check_anomaly(Workspace&, const Graph& g, int node_id, const std::vector<Tensor>& outputs) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& t = outputs[o];
    if (!is_floating(t.dtype())) continue;
    int64_t bad = -1;
    bool nan = false;
    visit_dtype(t.dtype(), [&](auto z) {
      using T = decltype(z);
      Tensor c = t.device() == Device::cpu ? t.contiguous() : t.to(Device::cpu, MemCategory::temporary);
      const T* p = c.data<T>();
      for (int64_t i = 0, n = c.numel(); i < n; ++i)
        if (!std::isfinite(static_cast<double>(p[i]))) {
          bad = i;
          nan = std::isnan(static_cast<double>(p[i]));
          break;
        }
    });
    if (bad < 0) continue;
    const Node& n = g.node(node_id);
    std::string ins;
    for (int v : n.inputs) {
      const ValueInfo& vi = g.value(v);
      ins +=
          (ins.empty() ? "" : ", ") + (vi.name.empty() ? std::string("?") : vi.name) + " " + shape_str(vi.meta.shape);
    }
    throw Error("anomaly: node #" + std::to_string(node_id) + " (" + n.op->name + ", " + phase_name(n.phase) +
                    ") produced " + (nan ? "NaN" : "Inf") + " at element " + std::to_string(bad) + " of its output " +
                    shape_str(t.shape()) + "; inputs: " + ins,
                !n.op->anomaly_hint.empty() ? n.op->anomaly_hint
                                            : "check the inputs of this op for large or invalid values");
  }
}

}  // namespace opscope
