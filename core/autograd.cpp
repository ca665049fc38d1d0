// Dynamic-mode reverse-mode autodiff: walks the tape backwards from y, calls each op's
// backward formula to append backward nodes (phase = backward), then runs them through the
// executor one step at a time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <unordered_set>

#include "core/autograd.h"
#include "core/error.h"
#include "core/workspace.h"

namespace opscope {

namespace {

// Appends backward nodes for one forward node F. Values are graph value ids.
class BackwardBuilder final : public GradCtx {
 public:
  BackwardBuilder(Workspace& ws, Graph& g, int forward_node, const std::unordered_map<int, int>& grads)
      : ws_(ws), g_(g), fid_(forward_node), grads_(grads) {
    // Copies: formulas hold these references while call() grows the graph's vectors.
    for (int v : g_.node(fid_).inputs) in_meta_.push_back(g_.value(v).meta);
    for (int v : g_.node(fid_).outputs) out_meta_.push_back(g_.value(v).meta);
    attrs_ = g_.node(fid_).attrs;
  }

  Val grad_output(size_t i) override {
    const Node& f = g_.node(fid_);
    auto it = grads_.find(f.outputs.at(i));
    if (it == grads_.end()) {  // an output nobody used: its gradient is zero
      const TensorMeta m = out_meta_.at(i);
      return call("expand", {scalar(0.0, m.dtype)}, {{"shape", m.shape}});
    }
    return {this, it->second};
  }
  Val input(size_t i) override { return saved(SavedRef::input, i); }
  Val output(size_t i) override { return saved(SavedRef::output, i); }
  const Attrs& attrs() const override { return attrs_; }
  const TensorMeta& input_meta(size_t i) const override { return in_meta_.at(i); }
  const TensorMeta& output_meta(size_t i) const override { return out_meta_.at(i); }
  size_t num_inputs() const override { return in_meta_.size(); }
  bool needs_grad(size_t i) const override { return g_.value(g_.node(fid_).inputs.at(i)).requires_grad; }
  const TensorMeta& meta(int v) const override { return g_.value(v).meta; }

  Val scalar(double value, DType dtype) override {
    ValueInfo v;
    v.meta = {{}, dtype, Device::cpu};
    v.kind = ValueKind::constant;
    v.constant = Tensor::scalar(value, dtype, MemCategory::temporary);
    // The run frees the tensor; the figure still writes the number in (as %.4g would: the
    // usual 0, 1 and 2 without a trip through printf).
    if (std::abs(value) < 10000 && value == static_cast<int>(value)) {  // (range first: a cast out of it is undefined)
      v.origin = std::to_string(static_cast<int>(value));
    } else {
      char text[32];
      std::snprintf(text, sizeof text, "%.4g", value);
      v.origin = text;
    }
    return {this, g_.add_value(std::move(v))};
  }

  std::vector<Val> call_op(const OpDef& op, const std::vector<Val>& inputs, const AttrMap& attrs) override {
    Attrs resolved = op.resolve(attrs);
    std::vector<TensorMeta> in_meta;
    Node n;
    for (auto& v : inputs) {
      in_meta.push_back(g_.value(v.id).meta);
      n.inputs.push_back(v.id);
    }
    Device dev = op_device(in_meta);
    for (auto& m : in_meta) m.device = dev;  // constants follow the data
    auto out_meta = ws_.infer(op, in_meta, resolved);
    const Node& f = g_.node(fid_);
    n.op = &op;
    n.attrs = std::move(resolved);
    n.algo = default_algorithm_on(op, dev);
    n.phase = Phase::backward;
    n.scope = f.scope;
    n.frames = f.frames;
    n.forward_of = fid_;
    n.symbolic = f.symbolic;
    if (op.body) n.body = op.body(in_meta, n.attrs);
    if (op.cost) n.flops = op.cost(in_meta, out_meta, n.attrs, n.algo).flops;
    const int id = static_cast<int>(g_.num_nodes());
    std::vector<Val> outs;
    for (size_t i = 0; i < out_meta.size(); ++i) {
      ValueInfo v;
      v.meta = out_meta[i];
      v.producer = id;
      v.out_index = static_cast<int>(i);
      int vid = g_.add_value(std::move(v));
      n.outputs.push_back(vid);
      outs.push_back({this, vid});
    }
    g_.add_node(std::move(n));
    if (!op.output_name_suffix.empty() && inputs.size() == 1 && !g_.value(inputs[0].id).name.empty())
      g_.value(outs[0].id).name = g_.value(inputs[0].id).name + op.output_name_suffix;
    return outs;
  }

 private:
  Val saved(SavedRef::Kind kind, size_t i) {
    const Node& f = g_.node(fid_);
    bool listed = std::any_of(f.op->saves.begin(), f.op->saves.end(),
                              [&](const SavedRef& s) { return s.kind == kind && s.index == static_cast<int>(i); });
    if (!listed)
      throw Error("internal: the backward of '" + f.op->name + "' uses " +
                  (kind == SavedRef::input ? "input " : "output ") + std::to_string(i) + ", which it does not save");
    return {this, kind == SavedRef::input ? f.inputs.at(i) : f.outputs.at(i)};
  }

  Workspace& ws_;
  Graph& g_;
  int fid_;
  const std::unordered_map<int, int>& grads_;
  std::vector<TensorMeta> in_meta_, out_meta_;
  Attrs attrs_;
};

// Slices whose readers tile one axis of a tensor (q, k, v = qkv[..., 0:256], [256:512],
// [512:768]; x[:, t] for every t of a loop): their backward formulas would each make a
// zero tensor the size of the whole and put dy in a window of it, then add those up. Their
// gradients are instead held back here and joined with one concat, once every reader is done.
struct WindowGrad {
  int64_t start = 0;  // the slice's window along the axis
  int dy = -1;  // the slice's output gradient
  int node = -1;  // the slice
};

// A tensor's held-back slice gradients, with how many slices read it and the axis they tile.
struct HeldSlices {
  std::vector<WindowGrad> slices;  // in the order they arrived
  size_t readers = 0;
  int64_t axis = 0;
};

class WindowJoins {
 public:
  WindowJoins(const Graph& g, const std::vector<int>& needed) : g_(g), needed_(needed) {}

  // Holds back forward node `id`'s gradient when it is one of such slices (else false: it is
  // differentiated as any node).
  bool defer(int id, const std::unordered_map<int, int>& grads) {
    const Node& f = g_.node(id);
    if (!f.op->gradient_window || f.inputs.size() != 1 || f.outputs.size() != 1) return false;
    const int in = f.inputs[0];
    const std::optional<int64_t> axis = tiled_axis(in);
    if (!axis) return false;
    const auto w = f.op->gradient_window(f.attrs, g_.value(in).meta);
    pending_[in].push_back({w->start, grads.at(f.outputs[0]), id});
    return true;
  }
  // The held-back gradients of `v`'s slices, once: nothing when none was held back.
  std::optional<HeldSlices> take(int v) {
    auto it = pending_.find(v);
    if (it == pending_.end()) return std::nullopt;
    HeldSlices held = held_of(v, std::move(it->second));
    pending_.erase(it);
    return held;
  }
  // What is left after the walk: slices of tensors no node made (a parameter sliced).
  std::vector<std::pair<int, HeldSlices>> rest() {
    std::vector<std::pair<int, HeldSlices>> left;
    for (auto& [v, slices] : pending_) left.emplace_back(v, held_of(v, std::move(slices)));
    pending_.clear();
    return left;
  }

 private:
  // The axis that `in`'s readers tile, each reading a contiguous window of it; nothing if
  // another node reads it or the windows leave a gap or overlap.
  std::optional<int64_t> tiled_axis(int in) {
    if (auto it = tiled_.find(in); it != tiled_.end()) return it->second;
    return tiled_[in] = find_tiled_axis(in);
  }
  HeldSlices held_of(int v, std::vector<WindowGrad> slices) {
    return {std::move(slices), readers_.at(v).size(), *tiled_.at(v)};
  }
  std::optional<int64_t> find_tiled_axis(int in) {
    if (readers_.empty())
      for (int id : needed_)
        for (int v : g_.node(id).inputs) readers_[v].push_back(id);
    const std::vector<int>& readers = readers_[in];
    if (readers.size() < 2) return std::nullopt;  // one slice: its own formula is as cheap
    const TensorMeta& meta = g_.value(in).meta;
    std::vector<AxisWindow> windows;
    for (int id : readers) {
      const Node& r = g_.node(id);
      if (!r.op->gradient_window || r.inputs.size() != 1) return std::nullopt;
      const auto w = r.op->gradient_window(r.attrs, meta);
      if (!w || (!windows.empty() && w->axis != windows.front().axis)) return std::nullopt;
      windows.push_back(*w);
    }
    std::sort(windows.begin(), windows.end(),
              [](const AxisWindow& a, const AxisWindow& b) { return a.start < b.start; });
    int64_t next = 0;
    for (const AxisWindow& w : windows) {
      if (w.start != next || w.len <= 0) return std::nullopt;
      next += w.len;
    }
    const int64_t axis = windows.front().axis;
    if (next != meta.shape[static_cast<size_t>(axis)]) return std::nullopt;
    return axis;
  }

  const Graph& g_;
  const std::vector<int>& needed_;
  std::unordered_map<int, std::vector<int>> readers_;  // value -> the needed nodes reading it
  std::unordered_map<int, std::optional<int64_t>> tiled_;
  std::map<int, std::vector<WindowGrad>> pending_;  // value -> its slices' held-back gradients
};

// dL/dv from its slices' gradients: one concat when every slice had one (their windows then
// tile the axis), else each slice's own formula, in the order they arrived, as if none was held
// back (a reader whose output nobody differentiates gives no gradient).
template <class Differentiate>
void join_window_gradients(Workspace& ws, Graph& g, std::unordered_map<int, int>& grads, int v, HeldSlices held,
                           Differentiate& differentiate) {
  std::vector<WindowGrad>& slices = held.slices;
  if (slices.size() != held.readers) {
    for (const WindowGrad& s : slices) differentiate(s.node);
    return;
  }
  std::sort(slices.begin(), slices.end(), [](const WindowGrad& a, const WindowGrad& b) { return a.start < b.start; });
  BackwardBuilder ctx(ws, g, slices.front().node, grads);
  std::vector<Val> parts;
  for (const WindowGrad& s : slices) parts.push_back(Val{&ctx, s.dy});
  grads[v] = ctx.call("concat", parts, {{"axis", held.axis}}).id;
}

}  // namespace

BackwardNodes append_backward_nodes(Workspace& ws, Graph& g, int yv, int seed_id,
                                    const std::function<bool(const Node&)>& include) {
  // Forward nodes on a path from a parameter to y, latest first. (A set, not a vector over
  // every id: a long session's ids run far past the nodes it still holds.)
  std::unordered_set<int> seen;
  std::vector<int> needed, stack;
  if (g.value(yv).producer >= 0 && include(g.node(g.value(yv).producer))) stack.push_back(g.value(yv).producer);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    needed.push_back(id);
    for (int v : g.node(id).inputs) {
      const ValueInfo& vi = g.value(v);
      if (vi.requires_grad && vi.producer >= 0 && !seen.count(vi.producer) && include(g.node(vi.producer)))
        stack.push_back(vi.producer);
    }
  }
  std::sort(needed.begin(), needed.end(), std::greater<int>());

  BackwardNodes out;
  std::unordered_map<int, int>& grads = out.grads;
  grads[yv] = seed_id;
  // dL/d(in) += d, as the formula of forward node `id` (whose ctx made d) gives it.
  auto accumulate = [&](BackwardBuilder& ctx, int in, Val d) {
    const TensorMeta target = g.value(in).meta;
    if (d.shape() != target.shape) d = ctx.call("sum_to", {d}, {{"shape", target.shape}});
    if (d.dtype() != target.dtype) d = ctx.call("cast", {d}, {{"dtype", std::string(dtype_name(target.dtype))}});
    if (auto it = grads.find(in); it != grads.end()) d = Val{&ctx, it->second} + d;
    grads[in] = d.id;
  };
  // Runs forward node `id`'s backward formula and adds what it gives to its inputs' gradients.
  auto differentiate = [&](int id) {
    const Node& f = g.node(id);
    if (f.saved_released && !f.op->saves.empty())
      throw Error("backward: the saved tensors of node #" + std::to_string(id) + " (" + f.op->name +
                      ") were freed by an earlier backward",
                  "to run backward twice through the same graph, pass retain_graph=True the first time");
    if (!f.op->backward) throw Error("internal: operator '" + f.op->name + "' has no backward");
    const size_t before = g.num_nodes();
    BackwardBuilder ctx(ws, g, id, grads);
    std::vector<Val> dins = f.op->backward(ctx);
    const ValueIds inputs = g.node(id).inputs;  // copied: adding nodes moves them
    for (size_t i = 0; i < inputs.size() && i < dins.size(); ++i)
      if (g.value(inputs[i]).requires_grad && dins[i].defined()) accumulate(ctx, inputs[i], dins[i]);
    if (g.num_nodes() == before) out.no_backward_nodes.push_back(id);
  };
  WindowJoins joins(g, needed);
  for (int id : needed) {
    for (int v : ValueIds(g.node(id).outputs))  // its output's readers are all done: join their slices
      if (auto held = joins.take(v)) join_window_gradients(ws, g, grads, v, std::move(*held), differentiate);
    const Node& f = g.node(id);
    bool has_grad = std::any_of(f.outputs.begin(), f.outputs.end(), [&](int v) { return grads.count(v); });
    if (!has_grad) continue;
    if (joins.defer(id, grads)) continue;
    differentiate(id);
  }
  for (auto& [v, held] : joins.rest()) join_window_gradients(ws, g, grads, v, std::move(held), differentiate);
  // The gradient of C is dC (once complete): stepping then reads dA = matmul(dC, B.T).
  for (auto& [v, gv] : grads)
    if (const std::string& name = g.value(v).name; !name.empty() && g.value(gv).name.empty())
      g.value(gv).name = "d" + name;
  return out;
}

std::unique_ptr<ScheduleRun> Workspace::build_backward(const Tensor& y, const Tensor& grad, bool retain_graph) {
  if (!y.defined()) throw Error("backward: the tensor is None");
  if (!y.requires_grad())
    throw Error("backward: this tensor does not require a gradient (nothing it depends on is a parameter)",
                "make inputs parameters: param(...) or requires_grad=True, and don't compute it under no_grad");
  if (!grad.defined() && y.numel() != 1)
    throw Error("backward: y has shape " + shape_str(y.shape()) + "; only a scalar can start backward on its own",
                "reduce it first (backward(y.sum())) or pass dL/dy: backward(y, grad) with grad of shape " +
                    shape_str(y.shape()));
  if (grad.defined() && grad.shape() != y.shape())
    throw Error("backward: grad has shape " + shape_str(grad.shape()) + " but y has shape " + shape_str(y.shape()));

  const Graph::Mark mark = graph_.mark();
  try {
    const TensorImpl* yi = y.impl();
    const ValueInfo* yinfo = graph_.find_value(yi->value_id);
    const bool in_graph = yinfo && yinfo->tensor.lock().get() == yi;
    if (yi->from_op && !in_graph)
      throw Error("backward: the graph that computed this tensor was cleared, so its inputs cannot be reached",
                  "compute it again after the reset, then call backward");
    const int yv = value_of(y);
    Tensor seed = grad.defined() ? grad.cast(y.dtype(), MemCategory::gradient).to(y.device(), MemCategory::gradient)
                                 : Tensor::full(y.shape(), 1.0, y.dtype(), MemCategory::gradient, y.device());
    ValueInfo sv;
    sv.meta = {y.shape(), y.dtype(), y.device()};
    sv.kind = ValueKind::grad_seed;
    sv.name = "d" + (y.name().empty() ? std::string("y") : y.name());
    const int seed_id = graph_.add_value(std::move(sv));

    BackwardNodes bw = append_backward_nodes(*this, graph_, yv, seed_id, [](const Node&) { return true; });
    std::unordered_map<int, int>& grads = bw.grads;
    std::vector<int>& no_backward_nodes = bw.no_backward_nodes;

    std::vector<ScheduleRun::Sink> sinks;
    for (auto& [v, gv] : grads) {
      const ValueInfo& vi = graph_.value(v);
      if (vi.producer < 0 && vi.requires_grad && v != yv) sinks.push_back({gv, vi.tensor});
    }
    if (graph_.value(yv).producer < 0) {  // y is itself a leaf: its gradient is the seed
      bool in_place = false;
      Tensor g = accumulated_grad(*this, y.impl_ptr(), seed, in_place);
      Tensor leaf(y.impl_ptr());
      if (in_place) {
        Tensor acc = leaf.grad();
        accumulate_into(acc, g);
      } else {
        leaf.set_grad(g);
      }
    }
    if (!retain_graph)
      for (int id : no_backward_nodes) {
        Node& f = graph_.node(id);
        if (journal_) journal_->keep_saved(id, f.saved, f.saved_released);
        for (auto& s : f.saved)
          if (s.tensor.defined()) {
            s.tensor.storage().drop_saved_ref();
            s.tensor = Tensor();
          }
        f.saved_released = true;
      }
    std::vector<int> schedule;
    for (size_t id = mark.nodes; id < graph_.num_nodes(); ++id) schedule.push_back(static_cast<int>(id));
    // The seed and the constants of the formulas belong to this run: freed after their last use.
    std::unordered_map<int, Tensor> env{{seed_id, seed}};
    for (size_t v = mark.values; v < graph_.num_values(); ++v)
      if (graph_.value(static_cast<int>(v)).constant.defined()) {
        env[static_cast<int>(v)] = graph_.value(static_cast<int>(v)).constant;
        graph_.value(static_cast<int>(v)).constant = Tensor();
      }
    return std::make_unique<ScheduleRun>(*this, std::move(schedule), std::move(env), std::move(sinks), retain_graph);
  } catch (...) {
    graph_.rollback(mark);
    throw;
  }
}

void Workspace::backward(const Tensor& y, const Tensor& grad, bool retain_graph) {
  auto run = build_backward(y, grad, retain_graph);
  run->run_all();
}

}  // namespace opscope
