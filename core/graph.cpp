#include "core/graph.h"

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
  values_.push_back(std::move(v));
  ++version_;
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_node(Node n) {
  n.id = static_cast<int>(nodes_.size());
  nodes_.push_back(std::move(n));
  ++version_;
  return nodes_.back().id;
}

void Graph::name_value(int id, const std::string& name) {
  if (id >= 0 && static_cast<size_t>(id) < values_.size()) values_[id].name = name;
}

std::string Graph::node_var_name(int id) const {
  const Node& n = node(id);
  return n.outputs.empty() ? std::string() : value(n.outputs[0]).name;
}

void Graph::rollback(const Mark& m) {
  // Tensors that still point at removed values forget them (they become leaves again).
  for (size_t v = m.values; v < values_.size(); ++v)
    if (auto t = values_[v].tensor.lock(); t && t->value_id == static_cast<int>(v)) t->value_id = -1;
  for (size_t i = m.nodes; i < nodes_.size(); ++i)
    for (auto& s : nodes_[i].saved)
      if (s.tensor.defined()) s.tensor.storage().drop_saved_ref();
  nodes_.resize(m.nodes);
  values_.resize(m.values);
  ++version_;
}

void Graph::clear() { rollback({0, 0}); }

Graph Graph::copy_structure() const {
  Graph g;
  g.values_ = values_;
  g.nodes_ = nodes_;
  for (auto& n : g.nodes_) n.saved.clear();  // the copy owns no saved tensors
  return g;
}

}  // namespace opscope
