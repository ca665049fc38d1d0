#include "core/body.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "core/error.h"
#include "core/executor.h"

namespace opscope {

int NodeBody::input_index(int v) const {
  auto it = std::find(inputs.begin(), inputs.end(), v);
  return it == inputs.end() ? -1 : static_cast<int>(it - inputs.begin());
}

int NodeBody::output_index(int v) const {
  auto it = std::find(outputs.begin(), outputs.end(), v);
  return it == outputs.end() ? -1 : static_cast<int>(it - outputs.begin());
}

std::shared_ptr<const NodeBody> node_body(const Graph& g, const Node& n) {
  if (n.body) return n.body;
  if (n.fused.empty()) return nullptr;
  // A fused node's chain reads and writes values of `g`: copy them into a graph of its own.
  auto body = std::make_shared<NodeBody>();
  Graph& bg = body->graph;
  std::unordered_map<int, int> local;  // value of g -> value of the body
  auto value = [&](int v, int producer, int out_index) {
    if (auto it = local.find(v); it != local.end()) return it->second;
    ValueInfo vi;
    vi.meta = g.value(v).meta;
    vi.name = g.value(v).name;
    vi.kind = producer >= 0                            ? ValueKind::op_output
              : g.value(v).kind == ValueKind::constant ? ValueKind::constant
                                                       : ValueKind::input;
    vi.constant = g.value(v).constant;
    vi.producer = producer;
    vi.out_index = out_index;
    return local[v] = bg.add_value(std::move(vi));
  };
  for (int v : n.inputs) body->inputs.push_back(value(v, -1, 0));
  for (const Node& m : n.fused) {
    Node c;
    c.op = m.op;
    c.attrs = m.attrs;
    c.algo = m.algo;
    c.phase = m.phase;
    c.symbolic = true;
    for (int v : m.inputs) c.inputs.push_back(value(v, -1, 0));
    const int id = static_cast<int>(bg.num_nodes());
    for (size_t k = 0; k < m.outputs.size(); ++k) c.outputs.push_back(value(m.outputs[k], id, static_cast<int>(k)));
    bg.add_node(std::move(c));
  }
  for (int v : n.outputs) body->outputs.push_back(value(v, -1, 0));
  return body;
}

Cost body_cost(const NodeBody& body) {
  Cost total;
  for (const Node& n : body.graph.nodes()) {
    const Cost c = node_cost(body.graph, n);
    total.flops += c.flops;
    total.bytes_read += c.bytes_read;
    total.bytes_written += c.bytes_written;
    total.multiplications += c.multiplications;
    total.workspace_bytes += c.workspace_bytes;
  }
  return total;
}

void run_body(const NodeBody& body, KernelCtx& k) {
  const Graph& g = body.graph;
  const size_t nv = g.num_values();
  std::vector<Tensor> env(nv);
  for (size_t i = 0; i < body.inputs.size(); ++i) env[static_cast<size_t>(body.inputs[i])] = k.inputs.at(i);
  // Each value is freed after the last body node reading it; the body's outputs live to the end.
  std::vector<int> last_use(nv, -1);
  for (const Node& n : g.nodes())
    for (int v : n.inputs) last_use[static_cast<size_t>(v)] = n.id;
  for (int v : body.outputs) last_use[static_cast<size_t>(v)] = INT_MAX;
  // A body node that makes output i writes it straight into the node's output buffer.
  std::vector<int> direct(nv, -1);
  for (size_t i = 0; i < body.outputs.size() && i < k.outputs.size(); ++i) {
    const int v = body.outputs[i];
    const ValueInfo& vi = g.value(v);
    if (vi.producer < 0 || g.node(vi.producer).op->makes_views || direct[static_cast<size_t>(v)] >= 0) continue;
    const Tensor& out = k.outputs[i];
    if (!out.defined() || !out.is_contiguous() || out.shape() != vi.meta.shape || out.dtype() != vi.meta.dtype)
      continue;
    direct[static_cast<size_t>(v)] = static_cast<int>(i);
  }
  auto read = [&](int v) -> Tensor {
    if (env[static_cast<size_t>(v)].defined()) return env[static_cast<size_t>(v)];
    if (g.value(v).constant.defined()) return g.value(v).constant;
    throw Error("internal: value " + std::to_string(v) + " of a body is not available");
  };
  std::vector<TensorMeta> out_meta;
  for (const Node& n : g.nodes()) {
    std::vector<Tensor> ins;
    ins.reserve(n.inputs.size());
    for (int v : n.inputs) ins.push_back(read(v));
    out_meta.clear();
    std::vector<Tensor> outs(n.outputs.size());
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      out_meta.push_back(g.value(n.outputs[j]).meta);
      if (const int i = direct[static_cast<size_t>(n.outputs[j])]; i >= 0) outs[j] = k.outputs[static_cast<size_t>(i)];
    }
    run_kernel(k.ws, n, out_meta, ins, outs, MemCategory::workspace);
    for (size_t j = 0; j < n.outputs.size(); ++j) env[static_cast<size_t>(n.outputs[j])] = std::move(outs[j]);
    ins.clear();
    for (int v : n.inputs)
      if (last_use[static_cast<size_t>(v)] == n.id) env[static_cast<size_t>(v)] = Tensor();
  }
  for (size_t i = 0; i < body.outputs.size() && i < k.outputs.size(); ++i) {
    const Tensor src = read(body.outputs[i]);
    Tensor& out = k.outputs[i];
    if (!out.defined()) {
      out = src;
      continue;
    }
    if (out.impl() == src.impl() || (!src.is_symbolic() && src.raw_data() == out.raw_data() && src.is_contiguous()))
      continue;  // written in place by the body node that made it
    out.copy_from(src);
  }
}

}  // namespace opscope
