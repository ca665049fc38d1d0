#include "core/graph.h"

#include <unordered_map>
#include <unordered_set>

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
  std::vector<TensorMeta> in, out;
  for (int v : n.inputs) in.push_back(g.value(v).meta);
  for (int v : n.outputs) out.push_back(g.value(v).meta);
  return n.op->cost(in, out, n.attrs, n.algo);
}

int Graph::add_value(ValueInfo v) {
  ++version_;
  return values_.push(std::move(v));
}

int Graph::add_node(Node n) {
  n.id = nodes_.end_id();
  ++version_;
  return nodes_.push(std::move(n));
}

void Graph::missing(const char* what, int id) {
  throw Error("internal: " + std::string(what) + " #" + std::to_string(id) + " is not in the graph",
              "it was rolled back, cleared by :reset, or dropped from the tape once no tensor could reach it");
}

void Graph::name_value(int id, const std::string& name) {
  if (ValueInfo* v = values_.find(id)) v->name = name;
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
  std::unordered_set<int> keep_nodes, keep_values;
  std::vector<int> work;  // nodes to visit
  auto keep_value = [&](int v) {
    if (v < first_value || !keep_values.insert(v).second) return;
    if (const ValueInfo* vi = values_.find(v); vi && vi->producer >= first_node) work.push_back(vi->producer);
  };
  // Backward nodes by the forward node they differentiate: a kept forward keeps its backward.
  std::unordered_map<int, std::vector<int>> backward_of;
  for (const Node& n : nodes_.items())
    if (n.id >= first_node && n.forward_of >= 0) backward_of[n.forward_of].push_back(n.id);
  // The graph's own references to tensors (saved for backward) keep nothing alive: a relu's
  // output its own node saved is dead once nobody else holds it.
  std::unordered_map<const TensorImpl*, long> held_by_graph;
  for (const Node& n : nodes_.items())
    if (n.id >= first_node)
      for (const SavedTensor& s : n.saved)
        if (s.tensor.defined()) ++held_by_graph[s.tensor.impl()];
  // Roots: values whose tensor someone outside the graph holds (not only the graph's copy of a
  // small constant or a saved tensor) and that still is that value; what is pinned; and every
  // node below `from` (kept), whose backward nodes may be new.
  const auto& vids = values_.ids();
  for (size_t i = 0; i < vids.size(); ++i) {
    if (vids[i] < first_value) continue;
    const ValueInfo& vi = values_.items()[i];
    auto t = vi.tensor.lock();
    if (!t || t->value_id != vids[i]) continue;
    long graph_owned = 1 + (vi.constant.defined() && vi.constant.impl() == t.get() ? 1 : 0);  // our lock, the constant
    if (auto h = held_by_graph.find(t.get()); h != held_by_graph.end()) graph_owned += h->second;
    if (t.use_count() > graph_owned) keep_value(vids[i]);
  }
  for (int v : pinned_values) keep_value(v);
  // An optimizer's step writes its parameter (input 0) in place, so nothing holds its outputs:
  // each parameter's last step stays, with the pass it used (a training loop's last iteration).
  std::unordered_map<int, int> last_update;  // parameter value -> its last update node
  for (const Node& n : nodes_.items())
    if (n.id >= first_node && n.phase == Phase::update && !n.inputs.empty()) last_update[n.inputs[0]] = n.id;
  for (const auto& entry : last_update) work.push_back(entry.second);
  for (int id : pinned_nodes)
    if (id >= first_node) work.push_back(id);
  for (auto& [fwd, bwds] : backward_of)
    if (fwd < first_node) work.insert(work.end(), bwds.begin(), bwds.end());
  while (!work.empty()) {
    const int id = work.back();
    work.pop_back();
    if (id < first_node || !keep_nodes.insert(id).second) continue;
    const Node* n = nodes_.find(id);
    if (!n) continue;
    for (int v : n->inputs) keep_value(v);
    for (int v : n->outputs) keep_value(v);
    if (n->forward_of >= first_node) work.push_back(n->forward_of);
    if (auto it = backward_of.find(id); it != backward_of.end()) work.insert(work.end(), it->second.begin(), it->second.end());
  }
  // The cost of what goes is taken before its values do.
  for (Node& n : nodes_.items())
    if (n.id >= first_node && !keep_nodes.count(n.id)) {
      if (n.stats.runs > 0) dropped.flops += node_cost(*this, n).flops * static_cast<double>(n.stats.runs);
      release_saved_refs(n);
    }
  dropped.nodes = static_cast<int64_t>(
      nodes_.retain_if([&](int id, const Node&) { return id < first_node || keep_nodes.count(id) > 0; }));
  dropped.values = static_cast<int64_t>(values_.retain_if([&](int id, ValueInfo& v) {
    if (id < first_value || keep_values.count(id)) return true;
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
