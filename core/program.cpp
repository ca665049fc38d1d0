// compile_program and the passes that only rewrite the node list: autodiff, dead-code
// elimination, common-subexpression elimination and constant folding. Fusion, recomputation
// and memory planning have files of their own.
#include "core/program.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "core/autograd.h"
#include "core/error.h"
#include "core/workspace.h"

namespace opscope {

namespace {

std::string node_str(const Graph& g, int id) {
  const Node& n = g.node(id);
  std::string var = g.node_var_name(id);
  return "#" + std::to_string(id) + " " + n.label() + (var.empty() ? "" : " → " + var);
}

int64_t value_bytes(const Graph& g, int v) {
  const TensorMeta& m = g.value(v).meta;
  return shape_numel(m.shape) * static_cast<int64_t>(dtype_size(m.dtype));
}

// Replaces value `from` by `to` in every scheduled node's inputs and in the program's outputs.
void replace_uses(Program& p, const std::unordered_map<int, int>& repl) {
  if (repl.empty()) return;
  auto fix = [&](int& v) {
    for (auto it = repl.find(v); it != repl.end(); it = repl.find(v)) v = it->second;
  };
  for (int id : p.schedule)
    for (int& v : p.graph.node(id).inputs) fix(v);
  for (int& v : p.fetch) fix(v);
  for (auto& [leaf, g] : p.grads) fix(g);
}

}  // namespace

bool has_side_effects(const Node& n) { return n.phase == Phase::update || n.op->updates_input0 || n.op->stateful; }

std::string RecomputePolicy::describe() const {
  switch (kind) {
    case none: return "off";
    case every_k: return "keep every " + std::to_string(k) + (k == 2 ? "nd" : k == 3 ? "rd" : "th") + " activation";
    case marks: return "keep the checkpoint(...) marks";
    case within_budget: return "keep activations within " + bytes_str(budget);
  }
  return "?";
}

// --- Program ------------------------------------------------------------------------------------

std::set<int> Program::outputs() const {
  std::set<int> out(fetch.begin(), fetch.end());
  for (auto& [leaf, g] : grads) out.insert(g);
  return out;
}

int Program::alias_root(int v) const {
  for (;;) {
    const ValueInfo& vi = graph.value(v);
    if (vi.producer < 0) return v;
    const Node& n = graph.node(vi.producer);
    if (n.op->makes_views && !n.inputs.empty()) v = n.inputs[0];
    else if (n.op->updates_input0) v = n.inputs[0];  // written over the parameter
    else return v;
  }
}

std::vector<LiveInterval> Program::liveness() const {
  std::unordered_map<int, size_t> def, last;
  std::vector<int> order;
  for (size_t pos = 0; pos < schedule.size(); ++pos) {
    const Node& n = graph.node(schedule[pos]);
    for (int v : n.inputs) {
      int r = alias_root(v);
      if (def.count(r)) last[r] = pos;
    }
    for (int v : n.outputs) {
      int r = alias_root(v);
      if (r != v) continue;  // a view or an in-place update: no memory of its own
      def[v] = pos;
      last[v] = pos;
      order.push_back(v);
    }
  }
  std::vector<LiveInterval> out;
  std::set<int> caller_owned;  // the caller's values (and what they look at): alive to the end
  for (int o : outputs()) caller_owned.insert(alias_root(o));
  for (int v : order)
    out.push_back({v, def[v], caller_owned.count(v) ? schedule.size() : last[v], value_bytes(graph, v)});
  return out;
}

int64_t Program::held_activation_bytes() const {
  size_t boundary = schedule.size();
  for (size_t pos = 0; pos < schedule.size(); ++pos)
    if (graph.node(schedule[pos]).phase == Phase::backward) {
      boundary = pos;
      break;
    }
  int64_t held = 0;
  for (auto& iv : liveness())
    if (iv.def < boundary && iv.last >= boundary && graph.node(graph.value(iv.value).producer).phase == Phase::forward)
      held += iv.bytes;
  return held;
}

double Program::flops() const {
  double f = 0;
  for (int id : schedule) f += node_cost(graph, graph.node(id)).flops;
  return f;
}

double Program::bytes_moved() const {
  double b = 0;
  for (int id : schedule) {
    Cost c = node_cost(graph, graph.node(id));
    b += c.bytes_read + c.bytes_written;
  }
  return b;
}

int64_t Program::peak_bytes() const {
  std::set<int> caller_owned;
  for (int o : outputs()) caller_owned.insert(alias_root(o));
  int64_t outs = 0, all = 0;
  for (auto& iv : liveness()) {
    all += iv.bytes;
    if (caller_owned.count(iv.value)) outs += iv.bytes;
  }
  return plan.enabled ? plan.planned_bytes + outs : all;
}

// --- passes -------------------------------------------------------------------------------------

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
      {"autodiff", "append the backward graph for the requested gradients (and the SGD updates of a training step)"},
      {"dce", "dead-code elimination: drop nodes no output, gradient or update needs"},
      {"cse", "common-subexpression elimination: the same op on the same inputs runs once"},
      {"constant_folding", "nodes whose inputs are all constants run at compile time"},
      {"fuse_elementwise",
       "chains of elementwise ops become one fused node: one pass over the data (and a gradient's matmul folds into "
       "its SGD update)"},
      {"recompute", "checkpointing: drop activations after forward, recompute them in backward"},
      {"plan_memory", "liveness → buffers reused (and written in place) so one run allocates once"},
  };
  return passes;
}

std::vector<std::string> pass_autodiff(Workspace& ws, Program& p, const CompileOptions& opt) {
  std::vector<std::string> changes;
  if (p.fetch.empty()) return changes;
  Graph& g = p.graph;
  const int y = p.fetch[0];
  if (!g.value(y).requires_grad) {
    changes.push_back("no gradients: nothing " + (g.value(y).name.empty() ? std::string("y") : g.value(y).name) +
                      " depends on is a parameter (inference program)");
    return changes;
  }
  const TensorMeta ym = g.value(y).meta;
  if (shape_numel(ym.shape) != 1)
    throw Error("compile: " +
                    (g.value(y).name.empty() ? std::string("the first output") : "'" + g.value(y).name + "'") +
                    " has shape " + shape_str(ym.shape) + "; gradients start from a scalar loss",
                "reduce it (loss.sum(), mean(...)) or compile(y, grad=False) for an inference program");
  ValueInfo seed;
  seed.meta = ym;
  seed.kind = ValueKind::grad_seed;
  seed.name = "d" + (g.value(y).name.empty() ? std::string("y") : g.value(y).name);
  seed.constant = Tensor::full(ym.shape, 1.0, ym.dtype, MemCategory::gradient);
  const int seed_id = g.add_value(std::move(seed));
  const size_t first = g.num_nodes();
  std::set<int> scheduled(p.schedule.begin(), p.schedule.end());
  BackwardNodes bw = append_backward_nodes(ws, g, y, seed_id, [&](const Node& n) { return scheduled.count(n.id) > 0; });
  for (size_t id = first; id < g.num_nodes(); ++id) p.schedule.push_back(static_cast<int>(id));
  // Gradients of leaves: the requested ones, else every parameter.
  std::set<int> wrt(opt.wrt.begin(), opt.wrt.end());
  for (auto& [v, gv] : bw.grads) {
    const ValueInfo& vi = g.value(v);
    const bool leaf = vi.producer < 0 || !scheduled.count(vi.producer);
    if (!leaf || !vi.requires_grad || v == y) continue;
    if (wrt.empty() ? vi.kind == ValueKind::parameter : wrt.count(v) > 0) p.grads.push_back({v, gv});
  }
  std::sort(p.grads.begin(), p.grads.end());
  for (int w : opt.wrt)
    if (!g.value(w).requires_grad || (g.value(w).producer >= 0 && scheduled.count(g.value(w).producer)))
      changes.push_back("warning: " + (g.value(w).name.empty() ? "value " + std::to_string(w) : g.value(w).name) +
                        " is not a parameter: only parameters (param(...)) get gradients");
    else if (!bw.grads.count(w))
      changes.push_back("warning: " + (g.value(w).name.empty() ? "value " + std::to_string(w) : g.value(w).name) +
                        " does not affect the loss: its gradient is zero");
  changes.push_back("added " + std::to_string(g.num_nodes() - first) + " backward nodes for " +
                    std::to_string(p.grads.size()) + " gradients");
  if (opt.sgd_lr || opt.update) {  // a training step: each parameter is updated as soon as its gradient is ready
    std::vector<std::pair<int, int>> kept;  // gradients no update consumes stay in .grad
    size_t added = 0;
    for (auto& [leaf, gv] : p.grads) {
      std::optional<ParamUpdate> u;
      if (opt.update) {
        const ValueInfo& vi = g.value(leaf);
        Tensor param = vi.constant.defined() ? vi.constant : Tensor(vi.tensor.lock());
        if (param.defined()) u = opt.update(param);
      } else {
        u = ParamUpdate{"sgd_update", {{"lr", *opt.sgd_lr}}, {}};
      }
      if (!u) {
        kept.push_back({leaf, gv});
        continue;
      }
      Node n;
      n.op = &OpRegistry::instance().get(u->op);
      n.attrs = n.op->resolve(u->attrs);
      n.algo = n.op->default_algorithm();
      n.inputs = {leaf, gv};
      for (const Tensor& st : u->state) {  // optimizer state: held by the program, changed in place
        ValueInfo sv;
        sv.meta = {st.shape(), st.dtype(), st.device()};
        sv.kind = ValueKind::input;
        sv.name = st.name();
        sv.constant = st;
        sv.tensor = st.impl_ptr();
        n.inputs.push_back(g.add_value(std::move(sv)));
      }
      n.phase = Phase::update;
      n.symbolic = true;
      ValueInfo out;
      out.meta = g.value(leaf).meta;
      out.producer = static_cast<int>(g.num_nodes());
      out.name = g.value(leaf).name;
      n.outputs = {g.add_value(std::move(out))};
      p.schedule.push_back(g.add_node(std::move(n)));
      ++added;
    }
    std::string ops;  // "sgd_update" (or the optimizer's op)
    for (int id : p.schedule)
      if (g.node(id).phase == Phase::update && ops.find(g.node(id).op->name) == std::string::npos)
        ops += (ops.empty() ? "" : "/") + g.node(id).op->name;
    const std::string what = opt.update ? opt.update_name : "lr=" + attr_value_str(*opt.sgd_lr);
    changes.push_back(
        "added " + std::to_string(added) + " " + (ops.empty() ? std::string("update") : ops) + " nodes (" + what +
        "), each right after its gradient and the parameter's last reader: parameters" +
        (opt.update ? " and optimizer state" : "") + " change in place, each gradient dies at its update");
    p.grads = std::move(kept);
    place_updates(p);
  }
  return changes;
}

void place_updates(Program& p) {
  const Graph& g = p.graph;
  std::vector<int> updates, others;
  for (int id : p.schedule) (g.node(id).op->updates_input0 ? updates : others).push_back(id);
  if (updates.empty()) return;
  // For each update: the position in `others` after which it may run.
  std::unordered_map<int, std::vector<int>> after;  // position -> updates placed right after it
  std::vector<std::vector<int>> roots_read(others.size());  // alias roots each node reads
  for (size_t pos = 0; pos < others.size(); ++pos)
    for (int v : g.node(others[pos]).inputs) roots_read[pos].push_back(p.alias_root(v));
  for (int u : updates) {
    const Node& n = g.node(u);
    const int param = p.alias_root(n.inputs[0]);
    const std::set<int> needs(n.inputs.begin() + 1, n.inputs.end());  // the gradient (or what makes it)
    int last = -1;
    for (size_t pos = 0; pos < others.size(); ++pos) {
      bool after_it = std::find(roots_read[pos].begin(), roots_read[pos].end(), param) != roots_read[pos].end();
      for (int v : g.node(others[pos]).outputs) after_it = after_it || needs.count(v) > 0;
      if (after_it) last = static_cast<int>(pos);
    }
    after[last].push_back(u);
  }
  std::vector<int> schedule;
  if (auto it = after.find(-1); it != after.end()) schedule = it->second;
  for (size_t pos = 0; pos < others.size(); ++pos) {
    schedule.push_back(others[pos]);
    if (auto it = after.find(static_cast<int>(pos)); it != after.end())
      schedule.insert(schedule.end(), it->second.begin(), it->second.end());
  }
  p.schedule = std::move(schedule);
}

std::vector<std::string> pass_dce(Program& p) {
  Graph& g = p.graph;
  std::set<int> scheduled(p.schedule.begin(), p.schedule.end());
  std::set<int> needed;
  std::vector<int> stack;
  auto need_value = [&](int v) {
    int prod = g.value(v).producer;
    if (prod >= 0 && scheduled.count(prod) && !needed.count(prod)) stack.push_back(prod);
  };
  for (int v : p.outputs()) need_value(v);
  for (int id : p.schedule)
    if (has_side_effects(g.node(id)) && g.node(id).phase == Phase::update) stack.push_back(id);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (!needed.insert(id).second) continue;
    for (int v : g.node(id).inputs) need_value(v);
  }
  std::vector<std::string> changes;
  std::vector<int> kept;
  for (int id : p.schedule) {
    if (needed.count(id)) kept.push_back(id);
    else changes.push_back("removed " + node_str(g, id) + ": no output, gradient or update needs it");
  }
  p.schedule = std::move(kept);
  return changes;
}

std::vector<std::string> pass_cse(Program& p) {
  Graph& g = p.graph;
  std::map<std::string, int> seen;  // op, algo, attributes, inputs -> node
  std::unordered_map<int, int> repl;
  std::vector<std::string> changes;
  std::vector<int> kept;
  for (int id : p.schedule) {
    Node& n = g.node(id);
    for (int& v : n.inputs)
      if (auto it = repl.find(v); it != repl.end()) v = it->second;
    if (has_side_effects(n) || n.op->random) {
      kept.push_back(id);
      continue;
    }
    std::string key = n.op->name + "|" + n.algo + "|" + n.attrs.str(true) + "|";
    for (int v : n.inputs) key += std::to_string(v) + ",";
    auto [it, fresh] = seen.emplace(key, id);
    if (fresh) {
      kept.push_back(id);
      continue;
    }
    const Node& first = g.node(it->second);
    for (size_t i = 0; i < n.outputs.size(); ++i) repl[n.outputs[i]] = first.outputs[i];
    changes.push_back("merged " + node_str(g, id) + " into #" + std::to_string(first.id) +
                      " (same op on the same inputs)");
  }
  p.schedule = std::move(kept);
  replace_uses(p, repl);
  return changes;
}

std::vector<std::string> pass_constant_folding(Workspace& ws, Program& p) {
  Graph& g = p.graph;
  constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;  // a constant is kept in the program
  // Tensors a side-effecting node reads may change from run to run (batch_norm's running
  // statistics): whatever reads them is computed when the program runs.
  std::set<int> mutable_values;
  for (int id : p.schedule)
    if (has_side_effects(g.node(id)))
      for (int v : g.node(id).inputs) mutable_values.insert(p.alias_root(v));
  auto is_constant = [&](int v) {
    const ValueInfo& vi = g.value(v);
    return vi.constant.defined() && !vi.placeholder && !vi.requires_grad && vi.kind != ValueKind::parameter &&
           vi.kind != ValueKind::grad_seed && !mutable_values.count(p.alias_root(v));
  };
  std::vector<std::string> changes;
  std::vector<int> kept;
  for (int id : p.schedule) {
    const Node& n = g.node(id);
    bool foldable = !has_side_effects(n) && !n.inputs.empty() && n.phase == Phase::forward;
    int64_t out_bytes = 0;
    for (int v : n.inputs) foldable = foldable && is_constant(v);
    for (int v : n.outputs) out_bytes += value_bytes(g, v);
    if (!foldable || out_bytes > kMaxFoldedBytes) {
      kept.push_back(id);
      continue;
    }
    std::vector<Tensor> ins;
    for (int v : n.inputs) ins.push_back(g.value(v).constant);
    std::vector<Tensor> outs = ws.executor().evaluate(g, id, ins);
    for (size_t i = 0; i < outs.size(); ++i) {
      ValueInfo& vi = g.value(n.outputs[i]);
      vi.constant = outs[i];
      vi.kind = ValueKind::constant;
      vi.producer = -1;
    }
    changes.push_back("folded " + node_str(g, id) + " into a constant " + shape_str(g.value(n.outputs[0]).meta.shape));
  }
  p.schedule = std::move(kept);
  return changes;
}

std::shared_ptr<Program> replay_program(const Graph& tape) {
  auto p = std::make_shared<Program>();
  p->graph = tape.copy_structure();
  const Graph& g = p->graph;
  std::vector<char> available(g.num_values(), 0);
  for (size_t k = 0; k < g.value_count(); ++k) {  // ids may have gaps: a long session's tape was dropped
    const ValueInfo& vi = g.values()[k];
    const size_t v = static_cast<size_t>(g.value_ids()[k]);
    if (vi.producer >= 0) continue;
    auto t = vi.tensor.lock();
    available[v] = vi.constant.defined() || (t && t->storage);
  }
  for (const Node& n : g.nodes()) {
    if (n.phase != Phase::forward || n.symbolic) continue;
    for (int v : n.inputs)
      if (!available[static_cast<size_t>(v)]) {
        const ValueInfo& vi = g.value(v);
        throw Error("replay: node #" + std::to_string(n.id) + " (" + n.op->name + ") reads " +
                        (vi.name.empty() ? "a value" : "'" + vi.name + "'") + " " + shape_str(vi.meta.shape) +
                        " that is no longer alive",
                    "replay works while the tape's inputs are held by variables; compute again and :replay");
      }
    for (int v : n.outputs) available[static_cast<size_t>(v)] = 1;
    p->schedule.push_back(n.id);
  }
  if (p->schedule.empty())
    throw Error("replay: the tape has no forward nodes", "compute something first, e.g. y = relu(x @ w)");
  return p;
}

// --- compile ------------------------------------------------------------------------------------

namespace {

// Fails unless every fetch was made in static mode (a dynamic-mode tensor has no program).
void check_fetches_are_static(const Graph& wg, const CompileOptions& opt) {
  if (opt.fetch.empty()) throw Error("compile: nothing to compile", "compile(loss) with a tensor made in static mode");
  for (int v : opt.fetch) {
    const ValueInfo& vi = wg.value(v);
    const bool made_here = vi.producer >= 0 && wg.node(vi.producer).symbolic;
    if (!made_here && !vi.placeholder)
      throw Error("compile: " + (vi.name.empty() ? std::string("this tensor") : "'" + vi.name + "'") +
                      " was computed in dynamic mode: there is no program to compile",
                  "switch with :mode static (or a static: block), build the graph from input(...), then compile it");
  }
}

// The forward program: the symbolic nodes the fetches depend on, in creation order, and the
// placeholders they read.
void trace_forward(const Graph& wg, Program& p) {
  std::vector<char> needed(wg.num_nodes(), 0);
  std::vector<int> stack;
  for (int v : p.fetch)
    if (wg.value(v).producer >= 0) stack.push_back(wg.value(v).producer);
  std::set<int> placeholders;
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = 1;
    for (int v : wg.node(id).inputs) {
      const ValueInfo& vi = wg.value(v);
      if (vi.placeholder) placeholders.insert(v);
      if (vi.producer >= 0 && wg.node(vi.producer).symbolic && !needed[vi.producer]) stack.push_back(vi.producer);
    }
  }
  for (int v : p.fetch)
    if (wg.value(v).placeholder) placeholders.insert(v);
  for (size_t id = 0; id < needed.size(); ++id)
    if (needed[id]) p.schedule.push_back(static_cast<int>(id));
  p.placeholders.assign(placeholders.begin(), placeholders.end());
}

// One row of the :compile table: what a pass changed and the program's size after it.
void report_pass(Program& p, const std::string& name, bool enabled,
                 const std::function<std::vector<std::string>()>& pass) {
  PassReport r;
  r.pass = name;
  r.enabled = enabled;
  if (enabled && pass) {
    const auto t0 = std::chrono::steady_clock::now();
    r.changes = pass();
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  r.nodes = p.schedule.size();
  r.flops = p.flops();
  r.bytes_moved = p.bytes_moved();
  r.peak_bytes = p.peak_bytes();
  p.reports.push_back(std::move(r));
}

}  // namespace

std::shared_ptr<Program> compile_program(Workspace& ws, const CompileOptions& opt) {
  const Graph& wg = ws.graph();
  check_fetches_are_static(wg, opt);
  auto p = std::make_shared<Program>();
  p->graph = wg.copy_structure();
  p->fetch = opt.fetch;
  p->recompute = opt.recompute;
  trace_forward(wg, *p);
  // The starting point, so the table shows what each pass changed.
  report_pass(*p, "traced", true, {});
  p->reports.back().changes = {std::to_string(p->schedule.size()) + " forward nodes from " +
                               std::to_string(p->placeholders.size()) + " inputs"};
  auto run = [&](const std::string& name, const std::function<std::vector<std::string>()>& pass) {
    report_pass(*p, name, !opt.disabled.count(name), pass);
  };
  CompileOptions o = opt;
  if (!opt.gradients || opt.disabled.count("autodiff")) {
    o.sgd_lr.reset();
    o.update = nullptr;
  }
  if (opt.gradients) run("autodiff", [&] { return pass_autodiff(ws, *p, o); });
  else report_pass(*p, "autodiff", false, {});  // an inference program: shown, off
  run("dce", [&] { return pass_dce(*p); });
  run("cse", [&] { return pass_cse(*p); });
  run("constant_folding", [&] { return pass_constant_folding(ws, *p); });
  run("fuse_elementwise", [&] { return pass_fuse_elementwise(*p); });
  run("recompute", [&] { return pass_recompute(*p, opt.recompute); });
  run("plan_memory", [&] { return pass_plan_memory(*p); });
  return p;
}

}  // namespace opscope
