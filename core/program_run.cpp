#include "core/program_run.h"

#include "core/error.h"
#include "core/workspace.h"

namespace opscope {

ProgramRun::ProgramRun(Workspace& ws, std::shared_ptr<const Program> program, std::unordered_map<int, Tensor> feeds,
                       bool stepping, bool side_effects)
    : ws_(ws),
      program_(std::move(program)),
      feeds_(std::move(feeds)),
      stepping_(stepping),
      side_effects_(side_effects) {
  const Program& p = *program_;
  const Graph& g = p.graph;
  outputs_ = p.outputs();
  for (size_t pos = 0; pos < p.schedule.size(); ++pos) {
    const Node& n = g.node(p.schedule[pos]);
    for (int v : n.inputs) {
      last_read_[v] = pos;
      if (n.phase == Phase::backward) read_by_backward_[v] = true;
    }
  }
  if (p.plan.enabled) {
    for (auto& iv : p.liveness()) root_last_[iv.value] = iv.last;
    auto alloc = ws_.allocator(Device::cpu);
    for (int64_t bytes : p.plan.buffer_bytes) {
      auto impl = std::make_shared<TensorImpl>();
      impl->storage = std::make_shared<Storage>(alloc, bytes, MemCategory::workspace);
      impl->shape = {bytes};
      impl->strides = {1};
      impl->dtype = DType::f32;  // a byte count; views give each value its own dtype
      arena_.emplace_back(impl);
    }
  }
}

ProgramRun::~ProgramRun() = default;

Tensor ProgramRun::lookup(int v) const {
  if (auto it = env_.find(v); it != env_.end()) return it->second;
  if (auto it = feeds_.find(v); it != feeds_.end()) return it->second;
  const ValueInfo& vi = program_->graph.value(v);
  if (vi.constant.defined()) return vi.constant;
  if (auto t = vi.tensor.lock(); t && t->storage) return Tensor(t);
  throw Error("run: the value '" + (vi.name.empty() ? "%" + std::to_string(v) : vi.name) + "' " +
                  shape_str(vi.meta.shape) + " is no longer available",
              vi.placeholder ? "feed it: run(..., " + vi.name + "=...)" : "compile the program again");
}

// The value's slice of its planned buffer, with the value's shape and dtype.
Tensor ProgramRun::buffer_view(int v) const {
  const ValueInfo& vi = program_->graph.value(v);
  const Tensor& buf = arena_.at(static_cast<size_t>(program_->plan.buffer_of.at(v)));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = buf.impl()->storage;
  impl->shape = vi.meta.shape;
  impl->strides = contiguous_strides(vi.meta.shape);
  impl->dtype = vi.meta.dtype;
  return Tensor(impl);
}

void ProgramRun::step() {
  if (done()) return;
  const Program& p = *program_;
  Graph& g = const_cast<Graph&>(p.graph);  // the executor counts runs and times in the node's stats
  const int id = p.schedule[pos_];
  const Node& n = g.node(id);
  if (!side_effects_ && n.op->updates_input0) {  // a measuring run leaves the parameters alone
    ++pos_;
    return;
  }
  std::vector<Tensor> ins;
  for (int v : n.inputs) ins.push_back(lookup(v));

  // batch_norm updates its running statistics in place, an optimizer its state (momentum,
  // Adam's m, v and step): a stepped run can rewind them, a measuring run or a replay of the
  // tape puts them back right after the step (a measuring run skips updates altogether).
  std::vector<std::pair<Tensor, Tensor>> side_effects;
  if (has_side_effects(n) && (stepping_ || !side_effects_))
    for (size_t i = 1; i < ins.size(); ++i)
      if (is_floating(ins[i].dtype())) side_effects.push_back({ins[i], ins[i].clone(MemCategory::temporary)});
  std::vector<Tensor> outs_into(n.outputs.size());
  bool given = false;
  if (n.op->updates_input0) {  // w ← w − lr·dw, written over the parameter itself
    if (stepping_) undo_updates_.push_back({ins[0], ins[0].clone(MemCategory::temporary)});
    outs_into[0] = ins[0];
    given = true;
  } else if (p.plan.enabled && !n.op->makes_views) {
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (p.plan.buffer_of.count(n.outputs[i])) {
        outs_into[i] = buffer_view(n.outputs[i]);
        given = true;
      }
  }
  const Executor::FinishFn finish = [&](std::vector<Tensor>& outs) {
    for (size_t i = 0; i < outs.size(); ++i) {
      const int v = n.outputs[i];
      // What the bytes are now: kept for backward, an activation, or a gradient.
      const MemCategory cat = read_by_backward_.count(v) && n.phase == Phase::forward ? MemCategory::saved
                              : n.phase == Phase::forward                             ? MemCategory::activation
                                                                                      : MemCategory::gradient;
      if (outs[i].defined() && !n.op->makes_views && !n.op->updates_input0 && outs[i].storage().category() != cat)
        outs[i].storage().set_category(cat);
      env_[v] = outs[i];
    }
    ins.clear();
    if (p.plan.enabled) {  // values read for the last time give their buffer back
      for (int v : n.inputs)
        if (auto it = last_read_.find(v); it != last_read_.end() && it->second == pos_) {
          auto r = root_last_.find(p.alias_root(v));
          if (r != root_last_.end() && r->second == pos_ && p.plan.buffer_of.count(r->first)) {
            Storage& s = arena_[static_cast<size_t>(p.plan.buffer_of.at(r->first))].storage();
            // Unless the value written in place now holds it.
            bool reused = false;
            for (int o : n.outputs)
              if (p.plan.buffer_of.count(o) && p.plan.buffer_of.at(o) == p.plan.buffer_of.at(r->first)) reused = true;
            if (!reused) s.set_category(MemCategory::workspace);
          }
          if (!outputs_.count(v)) env_.erase(v);
        }
    }
    if (pos_ + 1 == p.schedule.size() && side_effects_) deliver_gradients();
  };
  ws_.executor().run_node(id, ins, {}, &finish, &g, given ? &outs_into : nullptr);
  if (!side_effects_)
    for (auto& [t, before] : side_effects) t.copy_from(before);
  else
    for (auto& u : side_effects) undo_updates_.push_back(std::move(u));
  ++pos_;
}

// Gradients reach the leaves' .grad as in dynamic mode (accumulating).
void ProgramRun::deliver_gradients() {
  for (auto& [leaf_value, grad_value] : program_->grads) {
    Tensor leaf = lookup(leaf_value);
    Tensor g = env_.at(grad_value);
    if (leaf.grad().defined()) {
      bool in_place = false;
      Tensor add = accumulated_grad(ws_, leaf.impl_ptr(), g, in_place);
      if (in_place) {
        Tensor acc = leaf.grad();
        accumulate_into(acc, add);
      } else {
        leaf.set_grad(add);
      }
    } else {
      if (ChangeJournal* j = ws_.journal()) j->keep_grad(leaf.impl_ptr());
      // A gradient that is (a view of) a constant of the program is copied: .grad must own its data.
      const bool owned = program_->graph.value(program_->alias_root(grad_value)).producer >= 0 && g.is_contiguous();
      leaf.set_grad(owned && g.dtype() == leaf.dtype() ? g : g.cast(leaf.dtype(), MemCategory::gradient));
    }
  }
}

void ProgramRun::rewind() {
  for (auto it = undo_updates_.rbegin(); it != undo_updates_.rend(); ++it) it->first.copy_from(it->second);
  undo_updates_.clear();
  env_.clear();
  for (auto& b : arena_) b.storage().set_category(MemCategory::workspace);
  pos_ = 0;
}

std::vector<Tensor> ProgramRun::results() const {
  std::vector<Tensor> out;
  for (int v : program_->fetch) out.push_back(lookup(v));
  return out;
}

}  // namespace opscope
