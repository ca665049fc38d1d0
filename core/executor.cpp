#include "core/executor.h"

#include <cmath>

#include "core/device.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/journal.h"
#include "core/program.h"
#include "core/workspace.h"

namespace opscope {

namespace {
// A backward step frees what its forward node kept (a statement's journal may keep it to put back).
void release_saved(Workspace& ws, const Graph& g, Node& n) {
  if (ChangeJournal* j = ws.journal(); j && &g == &ws.graph()) j->keep_saved(n.id, n.saved, n.saved_released);
  for (auto& s : n.saved)
    if (s.tensor.defined()) {
      s.tensor.storage().drop_saved_ref();
      s.tensor = Tensor();
    }
  n.saved_released = true;
}
}  // namespace

std::vector<Tensor> Executor::run_node(int node_id, const std::vector<Tensor>& inputs,
                                       const std::vector<int>& released_saved_of, const FinishFn* finish, Graph* graph,
                                       const std::vector<Tensor>* outputs_into) {
  interrupt::check();  // a step boundary: nothing of this step has happened yet
  Graph& g = graph ? *graph : ws_.graph();
  Node& n = g.node(node_id);
  const OpDef& op = *n.op;
  const bool listening = !listeners_.empty();
  CategoryBytes before{};
  if (listening) before = ws_.tracker().live();

  // The node runs where its outputs live; 0-d inputs from another device (constants such as
  // the 2 in x * 2) are copied there. Kernels that need dense data get it; strided views are
  // copied (both counted as temporary).
  const Device dev =
      n.outputs.empty() ? (inputs.empty() ? Device::cpu : inputs[0].device()) : g.value(n.outputs[0]).meta.device;
  std::vector<Tensor> contiguous_inputs;
  const std::vector<Tensor>* ins = &inputs;
  bool all_ready = true;
  for (auto& t : inputs) all_ready = all_ready && t.device() == dev && (op.accepts_strided || t.is_contiguous());
  if (!all_ready) {
    contiguous_inputs.reserve(inputs.size());
    for (auto& t : inputs) {
      Tensor moved = t.device() == dev ? t : t.to(dev, MemCategory::temporary);
      contiguous_inputs.push_back(op.accepts_strided ? moved : moved.contiguous(MemCategory::temporary));
    }
    ins = &contiguous_inputs;
  }
  const KernelFn* kernel = op.find_kernel(dev, n.algo);
  if (!kernel) {
    std::string algos;
    for (auto& [key, _] : op.kernels)
      if (key.first == dev) algos += (algos.empty() ? "" : ", ") + key.second;
    throw Error(op.name + ": no kernel for algorithm '" + n.algo + "' on " + device_name(dev),
                algos.empty() ? std::string("this op has no ") + device_name(dev) + " kernels"
                              : "available on " + std::string(device_name(dev)) + ": " + algos);
  }

  std::vector<TensorMeta> out_meta;
  out_meta.reserve(n.outputs.size());
  for (int v : n.outputs) out_meta.push_back(g.value(v).meta);
  std::vector<Tensor> outs(n.outputs.size());
  const MemCategory cat = n.phase == Phase::backward ? MemCategory::gradient : MemCategory::activation;
  if (outputs_into) outs = *outputs_into;
  if (!op.makes_views)
    for (size_t i = 0; i < outs.size(); ++i)
      if (!outs[i].defined()) outs[i] = Tensor::empty(out_meta[i].shape, out_meta[i].dtype, cat, dev);

  // What the kernel writes besides its outputs (an update over its parameter, batch_norm's
  // running statistics) is kept for the statement's rollback first.
  if (ChangeJournal* j = ws_.journal(); j && has_side_effects(n)) {
    if (op.updates_input0) j->keep_data(inputs.at(0));
    else
      for (size_t i = 1; i < inputs.size(); ++i)
        if (is_floating(inputs[i].dtype())) j->keep_data(inputs[i]);
  }
  KernelCtx ctx{op, *ins, n.attrs, out_meta, outs, ws_, cat, n.body.get()};
  // A device kernel is queued on a stream; the step waits for it, so stepping shows finished
  // results and the time is the device's own (events around the launches), not the queueing.
  DeviceBackend* backend = dev == Device::cpu ? nullptr : device_backend(dev);
  if (backend) backend->begin_step();
  auto t0 = std::chrono::steady_clock::now();
  (*kernel)(ctx);
  auto t1 = std::chrono::steady_clock::now();
  int64_t device_ns = -1;
  if (backend) {
    try {  // a kernel's fault (an illegal address) surfaces here, at the step's synchronisation
      device_ns = backend->end_step();
    } catch (const Error& e) {
      throw Error(op.name + " (algo=\"" + n.algo + "\", node #" + std::to_string(node_id) + "): " + e.what(), e.hint());
    }
  }
  contiguous_inputs.clear();

  n.stats.runs++;
  n.stats.last_time_ns =
      device_ns >= 0 ? device_ns : std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
  if (ws_.anomaly()) check_anomaly(ws_, g, node_id, outs);
  for (int f : released_saved_of) release_saved(ws_, g, g.node(f));
  StepEvent ev;
  std::vector<TensorMeta> in_meta;
  if (listening)
    for (auto& t : inputs) {
      ev.input_shapes.push_back(t.shape());
      in_meta.push_back({t.shape(), t.dtype(), t.device()});
    }
  // The caller's bookkeeping (values freed after their last use, gradients delivered) belongs to
  // this step: the timeline point and the event's memory are taken after it.
  if (finish) (*finish)(outs);
  ++steps_;
  ws_.tracker().record_step(steps_, node_id);

  if (listening) {
    ev.step = steps_;
    ev.graph = &g;
    ev.node = node_id;
    ev.phase = n.phase;
    ev.op = &op;
    ev.algo = n.algo;
    for (auto& m : out_meta) ev.output_shapes.push_back(m.shape);
    ev.mem_before = before;
    ev.mem_after = ws_.tracker().live();
    ev.time_ns = n.stats.last_time_ns;
    if (op.cost) ev.cost = n.stats.cost = op.cost(in_meta, out_meta, n.attrs, n.algo);
    ev.saved_released_of = released_saved_of;
    for (auto& [_, fn] : listeners_) fn(ev);
  }
  return outs;
}

void run_kernel(Workspace& ws, const Node& n, const std::vector<TensorMeta>& out_meta,
                const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, MemCategory category) {
  const OpDef& op = *n.op;
  const Device dev = !out_meta.empty() ? out_meta[0].device : inputs.empty() ? Device::cpu : inputs[0].device();
  std::vector<Tensor> ins;
  ins.reserve(inputs.size());
  for (auto& t : inputs) {
    Tensor moved = t.device() == dev ? t : t.to(dev, MemCategory::temporary);
    ins.push_back(op.accepts_strided ? moved : moved.contiguous(MemCategory::temporary));
  }
  const KernelFn* kernel = op.find_kernel(dev, n.algo);
  if (!kernel) throw Error(op.name + ": no kernel for algorithm '" + n.algo + "' on " + device_name(dev));
  outputs.resize(out_meta.size());
  if (!op.makes_views)
    for (size_t i = 0; i < outputs.size(); ++i)
      if (!outputs[i].defined()) outputs[i] = Tensor::empty(out_meta[i].shape, out_meta[i].dtype, category, dev);
  KernelCtx ctx{op, ins, n.attrs, out_meta, outputs, ws, category, n.body.get()};
  (*kernel)(ctx);
}

std::vector<Tensor> Executor::evaluate(Graph& g, int node_id, const std::vector<Tensor>& inputs) {
  const Node& n = g.node(node_id);
  std::vector<TensorMeta> out_meta;
  for (int v : n.outputs) out_meta.push_back(g.value(v).meta);
  std::vector<Tensor> outs;
  run_kernel(ws_, n, out_meta, inputs, outs, MemCategory::input);
  return outs;
}

int Executor::add_listener(StepListener fn) {
  listeners_.emplace_back(next_listener_, std::move(fn));
  return next_listener_++;
}

void Executor::remove_listener(int id) {
  std::erase_if(listeners_, [id](auto& p) { return p.first == id; });
}

// ---------------------------------------------------------------------------------------------

// dst += src (same shape, dst contiguous float).
void accumulate_into(Tensor& dst, const Tensor& s) {  // s: contiguous, dst's dtype
  if (dst.device() != Device::cpu) {
    device_backend(dst.device())->add_into(dst, s.device() == dst.device() ? s : s.to(dst.device()));
    return;
  }
  visit_dtype(dst.dtype(), [&](auto z) {
    using T = decltype(z);
    T* d = dst.data<T>();
    const T* p = s.data<T>();
    for (int64_t i = 0, n = dst.numel(); i < n; ++i) d[i] += p[i];
  });
}

Tensor accumulated_grad(Workspace& ws, const std::shared_ptr<TensorImpl>& leaf, const Tensor& g, bool& in_place) {
  ChangeJournal* j = ws.journal();
  if (!leaf->grad) {
    if (j) j->keep_grad(leaf);
    in_place = false;
    return g.cast(leaf->dtype, MemCategory::gradient);
  }
  Tensor add = g.dtype() == leaf->dtype ? g.contiguous() : g.cast(leaf->dtype);
  in_place = !(j && j->keep_grad(leaf));
  if (in_place) return add;
  Tensor sum = Tensor(leaf->grad).clone(MemCategory::gradient);  // the journal keeps the old one as it is
  accumulate_into(sum, add);
  return sum;
}

ScheduleRun::ScheduleRun(Workspace& ws, std::vector<int> nodes, std::unordered_map<int, Tensor> env,
                         std::vector<Sink> sinks, bool retain_saved)
    : ws_(ws), nodes_(std::move(nodes)), env_(std::move(env)), retain_saved_(retain_saved) {
  Graph& g = ws_.graph();
  last_use_.reserve(2 * nodes_.size());  // grown once, not rehashed on the way
  last_backward_.reserve(nodes_.size());
  env_.reserve(2 * nodes_.size());
  for (size_t p = 0; p < nodes_.size(); ++p) {
    const Node& n = g.node(nodes_[p]);
    for (int v : n.inputs) last_use_[v] = p;
    if (n.forward_of >= 0) last_backward_[n.forward_of] = p;
  }
  for (auto& s : sinks) sinks_[s.value_id].push_back(s.leaf);
  // Gradients that need no node (the seed passed straight through, as by add) arrive now.
  std::vector<Delivery> ready;
  for (auto& [v, _] : sinks_)
    if (auto it = env_.find(v); it != env_.end())
      for (auto& d : prepare(v, it->second)) ready.push_back(std::move(d));
  commit(ready);
}

std::vector<ScheduleRun::Delivery> ScheduleRun::prepare(int v, const Tensor& t) const {
  std::vector<Delivery> out;
  auto s = sinks_.find(v);
  if (s == sinks_.end()) return out;
  for (auto& weak : s->second) {
    auto leaf = weak.lock();
    if (!leaf) continue;
    // Every allocation happens here, before any leaf changes: a failure changes nothing.
    bool in_place = false;
    Tensor grad = accumulated_grad(ws_, leaf, t, in_place);
    out.push_back({leaf, std::move(grad), in_place});
  }
  return out;
}

void ScheduleRun::commit(std::vector<Delivery>& ds) {
  for (auto& d : ds) {
    if (d.accumulate) {
      Tensor acc(d.leaf->grad);
      accumulate_into(acc, d.grad);
    } else {
      d.leaf->grad = d.grad.impl_ptr();
    }
  }
}

Tensor ScheduleRun::lookup(int v, const Node& consumer) {
  if (auto it = env_.find(v); it != env_.end()) return it->second;
  Graph& g = ws_.graph();
  const ValueInfo& info = g.value(v);
  if (info.constant.defined()) return info.constant;
  if (consumer.forward_of >= 0) {
    const Node& f = g.node(consumer.forward_of);
    for (auto& s : f.saved)
      if (s.value_id == v) {
        if (!s.tensor.defined()) break;
        return s.tensor;
      }
    throw Error("backward: the tensor saved by node #" + std::to_string(f.id) + " (" + f.op->name +
                    ") was already freed",
                "saved tensors are freed after their backward runs; pass retain_graph=True to backward twice");
  }
  throw Error("internal: value " + std::to_string(v) + " is not available to node #" + std::to_string(consumer.id));
}

void ScheduleRun::step() {
  if (done()) return;
  Graph& g = ws_.graph();
  const int id = nodes_[pos_];
  std::vector<Tensor> ins;
  {
    const Node& n = g.node(id);
    ins.reserve(n.inputs.size());
    for (int v : n.inputs) ins.push_back(lookup(v, n));
  }
  std::vector<int> release;
  const int fwd = g.node(id).forward_of;
  if (!retain_saved_ && fwd >= 0 && last_backward_[fwd] == pos_) {
    Node& f = g.node(fwd);
    if (f.saved.empty()) {  // nothing to free, nothing to report
      if (ChangeJournal* j = ws_.journal()) j->keep_saved(fwd, f.saved, f.saved_released);
      f.saved_released = true;
    } else {
      release.push_back(fwd);
    }
  }
  // Captures two pointers, which std::function keeps in place (a wider capture is a heap
  // allocation per backward step).
  const Executor::FinishFn finish = [this, &ins](std::vector<Tensor>& outs) {
    const Node& n = ws_.graph().node(nodes_[pos_]);
    std::vector<Delivery> ready;
    for (size_t i = 0; i < outs.size(); ++i)
      for (auto& d : prepare(n.outputs[i], outs[i])) ready.push_back(std::move(d));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (last_use_.count(n.outputs[i])) env_[n.outputs[i]] = outs[i];
      outs[i] = Tensor();  // a value nobody reads again is freed by this step
    }
    commit(ready);
    ins.clear();
    for (int v : n.inputs)
      if (auto it = last_use_.find(v); it != last_use_.end() && it->second == pos_) env_.erase(v);
  };
  std::vector<Tensor> outs = ws_.executor().run_node(id, ins, release, &finish);
  ++pos_;
}

}  // namespace opscope
