// fuse_elementwise: a chain of elementwise ops whose intermediate values nobody else reads
// becomes one `fused_elementwise` node. Its kernel computes the whole chain chunk by chunk,
// so the intermediates never travel to memory: for gelu(x*w + b) the unfused graph reads and
// writes three full tensors, the fused one reads x once and writes y once.
#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "core/program.h"

namespace opscope {

namespace {

bool fusible_op(const Node& n) {
  static const std::set<std::string> ops = {"add", "sub", "mul", "div", "maximum", "minimum", "neg", "exp",
                                            "log", "sqrt", "abs", "relu", "sigmoid", "tanh", "gelu", "leaky_relu"};
  return ops.count(n.op->name) > 0;
}

std::string attr_suffix(const Node& n) {
  if (n.op->name == "gelu") return "/" + n.attrs.s("approximate");
  if (n.op->name == "leaky_relu") {
    char buf[40];
    std::snprintf(buf, sizeof buf, "/%.17g", n.attrs.f("negative_slope"));  // exact: to_string keeps 6 decimals
    return buf;
  }
  return "";
}

struct Group {
  std::vector<int> members;  // node ids in schedule order
  int tail = -1;             // the value the last member writes
  Shape shape;
  DType dtype;
  Phase phase;
};

// A training step's update whose gradient comes straight from a matmul nothing else reads
// becomes one node, w ← w − lr·(a·b): a GEMM accumulating into the parameter, so the gradient
// (as big as the parameter) is never stored.
void fuse_gradient_updates(Program& p, std::unordered_map<int, int>& readers, const std::set<int>& outputs,
                           std::vector<std::string>& changes) {
  Graph& g = p.graph;
  const OpDef* fused_op = OpRegistry::instance().find("sgd_matmul_update");
  if (!fused_op) return;
  std::set<int> scheduled(p.schedule.begin(), p.schedule.end());
  std::unordered_map<int, int> replace;  // update node -> fused node
  std::set<int> removed;
  for (int u : p.schedule) {
    const Node& upd = g.node(u);
    // Plain SGD only: momentum and weight decay read more than the gradient.
    if (upd.op->name != "sgd_update" || upd.inputs.size() != 2 || upd.attrs.f("momentum") != 0 ||
        upd.attrs.f("weight_decay") != 0)
      continue;
    const int dw = upd.inputs[1];
    const int prod = g.value(dw).producer;
    if (prod < 0 || !scheduled.count(prod) || readers[dw] != 1 || outputs.count(dw)) continue;
    const Node& mm = g.node(prod);
    if (mm.op->name != "matmul" || g.value(dw).meta.device != Device::cpu || g.value(mm.inputs[0]).meta.shape.size() != 2 ||
        g.value(mm.inputs[1]).meta.shape.size() != 2 || g.value(dw).meta.dtype != g.value(upd.inputs[0]).meta.dtype)
      continue;
    Node f;
    f.op = fused_op;
    f.algo = fused_op->default_algorithm();
    f.attrs = fused_op->resolve({{"lr", upd.attrs.f("lr")}});
    f.inputs = {upd.inputs[0], mm.inputs[0], mm.inputs[1]};
    f.outputs = upd.outputs;
    f.phase = Phase::update;
    f.symbolic = true;
    f.scope = upd.scope;
    f.fused = {mm, upd};
    const int fid = g.add_node(std::move(f));
    for (int v : g.node(fid).outputs) g.value(v).producer = fid;
    replace[u] = fid;
    removed.insert(prod);
    const std::string wname = g.value(g.node(fid).inputs[0]).name;
    changes.push_back("fused #" + std::to_string(prod) + " matmul into its update #" + std::to_string(u) + " as #" +
                      std::to_string(fid) + " " + g.node(fid).label() + ": the gradient of " +
                      (wname.empty() ? std::string("a parameter") : wname) + " " + shape_str(g.value(dw).meta.shape) +
                      " (" + bytes_str(shape_numel(g.value(dw).meta.shape) *
                                       static_cast<int64_t>(dtype_size(g.value(dw).meta.dtype))) +
                      ") is never stored");
  }
  if (replace.empty()) return;
  std::vector<int> schedule;
  for (int id : p.schedule) {
    if (removed.count(id)) continue;
    auto it = replace.find(id);
    schedule.push_back(it == replace.end() ? id : it->second);
  }
  p.schedule = std::move(schedule);
  place_updates(p);
}

}  // namespace

std::vector<std::string> pass_fuse_elementwise(Program& p) {
  Graph& g = p.graph;
  // Who reads each value (scheduled nodes), and which values must stay visible.
  std::unordered_map<int, int> readers;
  for (int id : p.schedule)
    for (int v : g.node(id).inputs) readers[v]++;
  const std::set<int> outputs = p.outputs();
  auto fusible = [&](const Node& n) {
    if (!fusible_op(n) || n.outputs.size() != 1) return false;
    const TensorMeta& m = g.value(n.outputs[0]).meta;
    // The fused kernel is a CPU kernel: device programs keep their ops (each has a CUDA kernel).
    if (!is_floating(m.dtype) || m.device != Device::cpu) return false;
    for (int v : n.inputs)
      if (g.value(v).meta.dtype != m.dtype || g.value(v).meta.device != Device::cpu) return false;
    return true;
  };

  std::vector<Group> groups;
  std::unordered_map<int, int> group_of_tail;  // tail value -> group index
  std::unordered_map<int, int> group_of_node;
  for (int id : p.schedule) {
    const Node& n = g.node(id);
    if (!fusible(n)) continue;
    const TensorMeta& m = g.value(n.outputs[0]).meta;
    int joined = -1;
    for (int v : n.inputs) {
      auto it = group_of_tail.find(v);
      if (it == group_of_tail.end()) continue;
      Group& G = groups[static_cast<size_t>(it->second)];
      // The chain's value may disappear only if this node is its one reader and nobody asked for it.
      if (readers[v] != 1 || outputs.count(v) || G.shape != m.shape || G.dtype != m.dtype || G.phase != n.phase ||
          g.value(v).checkpoint)
        continue;
      joined = it->second;
      break;
    }
    if (joined < 0) {
      groups.push_back({{}, -1, m.shape, m.dtype, n.phase});
      joined = static_cast<int>(groups.size()) - 1;
    }
    Group& G = groups[static_cast<size_t>(joined)];
    if (G.tail >= 0) group_of_tail.erase(G.tail);
    G.members.push_back(id);
    G.tail = n.outputs[0];
    group_of_tail[G.tail] = joined;
    group_of_node[id] = joined;
  }

  std::vector<std::string> changes;
  std::unordered_map<int, int> replace_at;  // last member -> fused node
  std::set<int> removed;
  const OpDef& fused_op = OpRegistry::instance().get("fused_elementwise");
  for (Group& G : groups) {
    if (G.members.size() < 2) continue;
    Node f;
    f.op = &fused_op;
    f.algo = fused_op.default_algorithm();
    f.phase = G.phase;
    f.symbolic = true;
    f.scope = g.node(G.members[0]).scope;
    std::map<int, int> input_index, result_index;  // value -> iK / rK
    std::string chain;
    double unfused_bytes = 0;
    for (size_t k = 0; k < G.members.size(); ++k) {
      const Node& m = g.node(G.members[k]);
      chain += (chain.empty() ? "" : ";") + m.op->name + attr_suffix(m);
      for (int v : m.inputs) {
        if (auto r = result_index.find(v); r != result_index.end()) {
          chain += " r" + std::to_string(r->second);
          continue;
        }
        auto [it, fresh] = input_index.emplace(v, static_cast<int>(f.inputs.size()));
        if (fresh) f.inputs.push_back(v);
        chain += " i" + std::to_string(it->second);
      }
      result_index[m.outputs[0]] = static_cast<int>(k);
      Cost c = node_cost(g, m);
      unfused_bytes += c.bytes_read + c.bytes_written;
      f.fused.push_back(m);
    }
    f.attrs = fused_op.resolve({{"chain", chain}, {"shape", G.shape}});
    f.outputs = {G.tail};
    const int fid = g.add_node(std::move(f));
    g.value(G.tail).producer = fid;
    g.value(G.tail).out_index = 0;
    replace_at[G.members.back()] = fid;
    for (int id : G.members) removed.insert(id);
    Cost fc = node_cost(g, g.node(fid));
    std::string names;
    for (int id : G.members) names += (names.empty() ? "#" : ", #") + std::to_string(id);
    changes.push_back("fused " + names + " into #" + std::to_string(fid) + " " + g.node(fid).label() + ": bytes moved " +
                      bytes_str(static_cast<int64_t>(unfused_bytes)) + " → " +
                      bytes_str(static_cast<int64_t>(fc.bytes_read + fc.bytes_written)));
  }
  std::vector<int> schedule;
  for (int id : p.schedule) {
    if (auto it = replace_at.find(id); it != replace_at.end()) schedule.push_back(it->second);
    else if (!removed.count(id)) schedule.push_back(id);
  }
  p.schedule = std::move(schedule);
  fuse_gradient_updates(p, readers, outputs, changes);
  return changes;
}

}  // namespace opscope
