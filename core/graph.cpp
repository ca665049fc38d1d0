#include "core/graph.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace opscope {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::update: return "update";
  }
  return "?";
}

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::op_output: return "value";
    case ValueKind::parameter: return "parameter";
    case ValueKind::input: return "input";
    case ValueKind::constant: return "constant";
    case ValueKind::grad_seed: return "grad_seed";
  }
  return "?";
}

std::string Node::label() const {
  if (!fused.empty()) {  // fused(mul → add → gelu)
    std::string chain;
    for (auto& f : fused) chain += (chain.empty() ? "" : " → ") + f.op->name;
    return "fused(" + chain + ")";
  }
  std::string a = attrs.str();
  if (!algo.empty() && op && algo != op->default_algorithm()) a += (a.empty() ? "algo=" : ", algo=") + algo;
  return a.empty() ? op->name : op->name + "(" + a + ")";
}

Cost node_cost(const Graph& g, const Node& n) {
  if (!n.op->cost) return {};
  // Asked for every node a dropped tape held: the metadata is copied into vectors kept per
  // thread and per length, whose shapes reuse their memory, rather than into new ones.
  struct Scratch {
    std::vector<std::vector<TensorMeta>> by_length;
    std::vector<TensorMeta>& fill(const Graph& g, const ValueIds& ids) {
      if (by_length.size() <= ids.size()) by_length.resize(ids.size() + 1);
      std::vector<TensorMeta>& v = by_length[ids.size()];
      v.resize(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) v[i] = g.value(ids[i]).meta;
      return v;
    }
  };
  thread_local Scratch in, out;
  thread_local int depth = 0;  // an @op's cost asks for its body's nodes: those get their own
  if (depth > 0) {
    Scratch own_in, own_out;
    return n.op->cost(own_in.fill(g, n.inputs), own_out.fill(g, n.outputs), n.attrs, n.algo);
  }
  struct Depth {
    int& d;
    explicit Depth(int& x) : d(++x) {}
    ~Depth() { --d; }
  } level(depth);
  return n.op->cost(in.fill(g, n.inputs), out.fill(g, n.outputs), n.attrs, n.algo);
}

int Graph::add_value(ValueInfo&& v) {
  ++version_;
  return values_.push(std::move(v));
}

int Graph::add_node(Node&& n) {
  n.id = nodes_.end_id();
  ++version_;
  return nodes_.push(std::move(n));
}

void Graph::missing(const char* what, int id) {
  throw Error("internal: " + std::string(what) + " #" + std::to_string(id) + " is not in the graph",
              "it was rolled back, cleared by :reset, or dropped from the tape once no tensor could reach it");
}

void Graph::name_value(int id, const std::string& name) {
  ValueInfo* v = values_.find(id);
  if (!v || v->name == name) return;
  v->name = name;
  ++version_;  // the figure shows names (a box's subtitle): a view laid out before `y = ...` named it lays out again
}

std::string Graph::node_var_name(int id) const {
  const Node& n = node(id);
  return n.outputs.empty() ? std::string() : value(n.outputs[0]).name;
}

namespace {
// A tensor that still points at a value that goes forgets it (it becomes a leaf again).
void forget_value(ValueInfo& v, int id) {
  if (auto t = v.tensor.lock(); t && t->value_id == id) t->value_id = -1;
}
void release_saved_refs(Node& n) {
  for (auto& s : n.saved)
    if (s.tensor.defined()) s.tensor.storage().drop_saved_ref();
}
}  // namespace

void Graph::rollback(const Mark& m) {
  const auto& vids = values_.ids();
  for (size_t i = 0; i < vids.size(); ++i)
    if (vids[i] >= static_cast<int>(m.values)) forget_value(values_.items()[i], vids[i]);
  for (Node& n : nodes_.items())
    if (n.id >= static_cast<int>(m.nodes)) release_saved_refs(n);
  nodes_.truncate(static_cast<int>(m.nodes));
  values_.truncate(static_cast<int>(m.values));
  drops_ = m.drops;
  ++version_;
}

void Graph::clear() { rollback({0, 0}); }

Graph Graph::copy_structure() const {
  Graph g;
  g.values_ = values_;
  g.nodes_ = nodes_;
  for (auto& n : g.nodes_.items()) n.saved.clear();  // the copy owns no saved tensors
  return g;
}

TapeDrops Graph::drop_unreachable(const Mark& from, const std::vector<int>& pinned_nodes,
                                  const std::vector<int>& pinned_values) {
  const int first_node = static_cast<int>(from.nodes), first_value = static_cast<int>(from.values);
  TapeDrops dropped;
  if (nodes_.end_id() <= first_node && values_.end_id() <= first_value) return dropped;
  // Runs at the end of every statement and every few hundred loop iterations: everything is
  // indexed by position among the items held at or above `from` (no hashing, no per-node
  // allocation), so a look costs O(nodes held).
  auto& nodes = nodes_.items();
  auto& values = values_.items();
  const size_t node_base = nodes_.lower_index(first_node), value_base = values_.lower_index(first_value);
  std::vector<char> keep_node(nodes.size() - node_base, 0), keep_value_at(values.size() - value_base, 0);
  std::vector<size_t> work;  // positions of nodes to visit
  auto push_node = [&](int id) {
    if (id < first_node) return;
    if (const std::ptrdiff_t p = nodes_.index_of(id); p >= 0) work.push_back(static_cast<size_t>(p));
  };
  auto keep_value = [&](int v) {
    if (v < first_value) return;
    const std::ptrdiff_t p = values_.index_of(v);
    if (p < 0 || keep_value_at[static_cast<size_t>(p) - value_base]) return;
    keep_value_at[static_cast<size_t>(p) - value_base] = 1;
    push_node(values[static_cast<size_t>(p)].producer);
  };
  // Backward nodes by the forward node they differentiate (a kept forward keeps its backward),
  // as linked lists through positions: first_backward[forward's] -> next_backward[...].
  constexpr size_t none = static_cast<size_t>(-1);
  std::vector<size_t> first_backward(keep_node.size(), none), next_backward(keep_node.size(), none);
  for (size_t p = node_base; p < nodes.size(); ++p) {
    const int f = nodes[p].forward_of;
    if (f < 0) continue;
    if (f < first_node) {  // below `from`: kept, so its new backward nodes are too
      work.push_back(p);
      continue;
    }
    if (const std::ptrdiff_t fp = nodes_.index_of(f); fp >= 0) {
      next_backward[p - node_base] = first_backward[static_cast<size_t>(fp) - node_base];
      first_backward[static_cast<size_t>(fp) - node_base] = p;
    }
  }
  // The graph's own references to tensors (saved for backward) keep nothing alive: a relu's
  // output its own node saved is dead once nobody else holds it.
  std::vector<const TensorImpl*> held_by_graph;
  for (size_t p = node_base; p < nodes.size(); ++p)
    for (const SavedTensor& s : nodes[p].saved)
      if (s.tensor.defined()) held_by_graph.push_back(s.tensor.impl());
  std::sort(held_by_graph.begin(), held_by_graph.end());
  // Roots: values whose tensor someone outside the graph holds (not only the graph's copy of a
  // small constant or a saved tensor) and that still is that value; what is pinned; and every
  // node below `from` (kept), whose backward nodes may be new.
  const auto& vids = values_.ids();
  for (size_t i = value_base; i < vids.size(); ++i) {
    const ValueInfo& vi = values[i];
    auto t = vi.tensor.lock();
    if (!t || t->value_id != vids[i]) continue;
    long graph_owned = 1 + (vi.constant.defined() && vi.constant.impl() == t.get() ? 1 : 0);  // our lock, the constant
    const auto [lo, hi] = std::equal_range(held_by_graph.begin(), held_by_graph.end(), t.get());
    graph_owned += hi - lo;
    if (t.use_count() > graph_owned) keep_value(vids[i]);
  }
  for (int v : pinned_values) keep_value(v);
  // An optimizer's step writes its parameter (input 0) in place, so nothing holds its outputs:
  // each parameter's last step stays, with the pass it used (a training loop's last iteration).
  std::unordered_map<int, size_t> last_update;  // parameter value -> its last update node
  for (size_t p = node_base; p < nodes.size(); ++p)
    if (nodes[p].phase == Phase::update && !nodes[p].inputs.empty()) last_update[nodes[p].inputs[0]] = p;
  for (const auto& entry : last_update) work.push_back(entry.second);
  for (int id : pinned_nodes) push_node(id);
  while (!work.empty()) {
    const size_t p = work.back();
    work.pop_back();
    if (keep_node[p - node_base]) continue;
    keep_node[p - node_base] = 1;
    const Node& n = nodes[p];
    for (int v : n.inputs) keep_value(v);
    for (int v : n.outputs) keep_value(v);
    push_node(n.forward_of);
    for (size_t b = first_backward[p - node_base]; b != none; b = next_backward[b - node_base]) work.push_back(b);
  }
  // The cost of what goes is taken before its values do.
  for (size_t p = node_base; p < nodes.size(); ++p)
    if (!keep_node[p - node_base]) {
      Node& n = nodes[p];
      if (n.stats.runs > 0)
        dropped.flops += (n.flops >= 0 ? n.flops : node_cost(*this, n).flops) * static_cast<double>(n.stats.runs);
      release_saved_refs(n);
    }
  size_t at = 0;  // retain_if visits every item in order
  dropped.nodes = static_cast<int64_t>(nodes_.retain_if([&](int, const Node&) {
    const size_t p = at++;
    return p < node_base || keep_node[p - node_base];
  }));
  at = 0;
  dropped.values = static_cast<int64_t>(values_.retain_if([&](int id, ValueInfo& v) {
    const size_t p = at++;
    if (p < value_base || keep_value_at[p - value_base]) return true;
    forget_value(v, id);
    return false;
  }));
  if (dropped.nodes || dropped.values) ++version_;
  drops_.nodes += dropped.nodes;
  drops_.values += dropped.values;
  drops_.flops += dropped.flops;
  return dropped;
}

}  // namespace opscope
