// fuse_elementwise: a chain of pointwise ops (OpDef::pointwise) whose intermediate values
// nobody else reads becomes one `fused_elementwise` node. Its kernel computes the whole chain chunk by chunk,
// so the intermediates never travel to memory: for gelu(x*w + b) the unfused graph reads and
// writes three full tensors, the fused one reads x once and writes y once.
#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "core/program.h"
#include "core/workspace.h"

namespace opscope {

namespace {

// "leaky_relu/0.10000000000000001": the op and its formula's numbers, exactly (%.17g).
std::string instruction_head(const Node& n) {
  std::string head = n.op->name;
  for (double v : n.op->formula_params(n.attrs)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "/%.17g", v);
    head += buf;
  }
  return head;
}

// Does `op` run where these values live? (fused ops exist only on the devices with kernels)
bool has_kernel_on(const OpDef& op, Device d) { return op.find_kernel(d, default_algorithm_on(op, d)) != nullptr; }

struct Group {
  std::vector<int> members;  // node ids in schedule order
  int tail = -1;  // the value the last member writes
  Shape shape;
  DType dtype;
  Phase phase;
  std::set<int> inputs;  // values read from outside the group
};

// An op that absorbs the producer of one of its inputs (OpDef::absorbs): with a training
// step's sgd_update over a matmul's gradient, w ← w − lr·(a·b) becomes one GEMM accumulating
// into the parameter, so the gradient (as big as the parameter) is never stored.
void fuse_absorbed_producers(Program& p, std::unordered_map<int, int>& readers, const std::set<int>& outputs,
                             std::vector<std::string>& changes) {
  Graph& g = p.graph;
  std::set<int> scheduled(p.schedule.begin(), p.schedule.end());
  std::unordered_map<int, int> replace;  // absorbing node -> fused node
  std::set<int> removed;
  for (int u : p.schedule) {
    const Node& upd = g.node(u);
    for (const AbsorbRule& rule : upd.op->absorbs) {
      if (rule.input < 0 || static_cast<size_t>(rule.input) >= upd.inputs.size()) continue;
      const int dw = upd.inputs[static_cast<size_t>(rule.input)];
      const int prod = g.value(dw).producer;
      if (prod < 0 || !scheduled.count(prod) || removed.count(prod) || readers[dw] != 1 || outputs.count(dw)) continue;
      const Node& mm = g.node(prod);
      const OpDef* into = OpRegistry::instance().find(rule.into);
      if (mm.op->name != rule.producer || !into || mm.outputs.size() != 1) continue;
      if (rule.when && !rule.when(upd.attrs, upd.inputs.size())) continue;
      ValueIds inputs = upd.inputs;
      inputs.erase(inputs.begin() + rule.input);
      inputs.insert(inputs.begin() + rule.input, mm.inputs.begin(), mm.inputs.end());
      // Fusing must lose no conversion (every value of one dtype) and the fused op must accept
      // the inputs on their device.
      const TensorMeta out = g.value(upd.outputs.at(0)).meta;
      std::vector<TensorMeta> metas;
      bool fits = g.value(dw).meta.dtype == out.dtype && has_kernel_on(*into, out.device);
      for (int v : inputs) {
        metas.push_back(g.value(v).meta);
        fits = fits && g.value(v).meta.dtype == out.dtype && g.value(v).meta.device == out.device;
      }
      Attrs attrs;
      try {
        AttrMap given;  // the update's attributes that the fused op declares
        for (auto& [name, value] : upd.attrs.to_map())
          if (into->find_attr(name)) given.push_back({name, value});
        attrs = into->resolve(given);
        fits = fits && into->infer(InferCtx{*into, metas, attrs}).at(0).shape == out.shape;
      } catch (const Error&) {
        fits = false;
      }
      if (!fits) continue;
      Node f;
      f.op = into;
      f.algo = default_algorithm_on(*into, out.device);
      f.attrs = attrs;
      f.inputs = inputs;
      f.outputs = upd.outputs;
      f.phase = upd.phase;
      f.symbolic = true;
      f.scope = upd.scope;
      f.fused = {mm, upd};
      const int fid = g.add_node(std::move(f));
      for (int v : g.node(fid).outputs) g.value(v).producer = fid;
      replace[u] = fid;
      removed.insert(prod);
      const std::string wname = g.value(g.node(fid).inputs[0]).name;
      changes.push_back(
          "fused #" + std::to_string(prod) + " " + rule.producer + " into its update #" + std::to_string(u) + " as #" +
          std::to_string(fid) + " " + g.node(fid).label() + ": the gradient of " +
          (wname.empty() ? std::string("a parameter") : wname) + " " + shape_str(g.value(dw).meta.shape) + " (" +
          bytes_str(shape_numel(g.value(dw).meta.shape) * static_cast<int64_t>(dtype_size(g.value(dw).meta.dtype))) +
          ") is never stored");
      break;
    }
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
  const OpDef& fused_op = OpRegistry::instance().get("fused_elementwise");
  bool fused_runs_on[kNumDevices];  // asked once per device, not per node
  for (int d = 0; d < kNumDevices; ++d) fused_runs_on[d] = has_kernel_on(fused_op, static_cast<Device>(d));
  auto fusible = [&](const Node& n) {
    if (!n.op->is_pointwise() || n.outputs.size() != 1) return false;
    const TensorMeta& m = g.value(n.outputs[0]).meta;
    // One floating dtype throughout, on a device where the fused kernel runs.
    if (!is_floating(m.dtype) || !fused_runs_on[static_cast<int>(m.device)]) return false;
    for (int v : n.inputs)
      if (g.value(v).meta.dtype != m.dtype || g.value(v).meta.device != m.device) return false;
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
      // The fused kernels' limits (kMaxFusedOps instructions, kMaxFusedInputs inputs).
      size_t inputs = G.inputs.size();
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const int w = n.inputs[i];
        const bool seen =
            w == v || G.inputs.count(w) || std::find(n.inputs.begin(), n.inputs.begin() + i, w) != n.inputs.begin() + i;
        inputs += seen ? 0 : 1;
      }
      if (G.members.size() >= kMaxFusedOps || inputs > kMaxFusedInputs) continue;
      joined = it->second;
      break;
    }
    if (joined < 0) {
      groups.push_back({{}, -1, m.shape, m.dtype, n.phase, {}});
      joined = static_cast<int>(groups.size()) - 1;
    }
    Group& G = groups[static_cast<size_t>(joined)];
    for (int w : n.inputs)
      if (w != G.tail) G.inputs.insert(w);
    if (G.tail >= 0) group_of_tail.erase(G.tail);
    G.members.push_back(id);
    G.tail = n.outputs[0];
    group_of_tail[G.tail] = joined;
    group_of_node[id] = joined;
  }

  std::vector<std::string> changes;
  std::unordered_map<int, int> replace_at;  // last member -> fused node
  std::set<int> removed;
  for (Group& G : groups) {
    if (G.members.size() < 2) continue;
    Node f;
    f.op = &fused_op;
    f.algo = default_algorithm_on(fused_op, g.value(G.tail).meta.device);
    f.phase = G.phase;
    f.symbolic = true;
    f.scope = g.node(G.members[0]).scope;
    std::map<int, int> input_index, result_index;  // value -> iK / rK
    std::string chain;
    double unfused_bytes = 0;
    for (size_t k = 0; k < G.members.size(); ++k) {
      const Node& m = g.node(G.members[k]);
      chain += (chain.empty() ? "" : ";") + instruction_head(m);
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
    changes.push_back("fused " + names + " into #" + std::to_string(fid) + " " + g.node(fid).label() +
                      ": bytes moved " + bytes_str(static_cast<int64_t>(unfused_bytes)) + " → " +
                      bytes_str(static_cast<int64_t>(fc.bytes_read + fc.bytes_written)));
  }
  std::vector<int> schedule;
  for (int id : p.schedule) {
    if (auto it = replace_at.find(id); it != replace_at.end()) schedule.push_back(it->second);
    else if (!removed.count(id)) schedule.push_back(id);
  }
  p.schedule = std::move(schedule);
  fuse_absorbed_producers(p, readers, outputs, changes);
  return changes;
}

}  // namespace opscope
