// The memory passes. recompute (checkpointing) trades FLOPs for bytes: forward values that
// backward reads are either kept (checkpoints) or dropped after their last forward use and
// computed again, from the nearest kept values, just before backward needs them.
// plan_memory turns the schedule's liveness intervals into buffers: a value takes a free
// buffer (best fit) or its dying input's buffer in place, so one run allocates once.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "core/program.h"

namespace opscope {

namespace {

int64_t value_bytes(const Graph& g, int v) {
  const TensorMeta& m = g.value(v).meta;
  return shape_numel(m.shape) * static_cast<int64_t>(dtype_size(m.dtype));
}

}  // namespace

std::vector<std::string> pass_recompute(Program& p, const RecomputePolicy& policy) {
  std::vector<std::string> changes;
  if (policy.kind == RecomputePolicy::none) {
    changes.push_back(
        "no policy: every activation backward reads is kept (recompute=\"every:2\", \"marks\" or a byte budget)");
    return changes;
  }
  Graph& g = p.graph;
  std::unordered_map<int, size_t> pos_of;
  for (size_t i = 0; i < p.schedule.size(); ++i) pos_of[p.schedule[i]] = i;
  auto scheduled_forward = [&](int v) {
    int prod = g.value(v).producer;
    return prod >= 0 && pos_of.count(prod) && g.node(prod).phase == Phase::forward;
  };
  // Candidates: forward values some backward node reads, in forward order.
  std::vector<int> candidates;
  std::set<int> seen;
  for (int id : p.schedule) {
    const Node& n = g.node(id);
    if (n.phase != Phase::backward) continue;
    for (int v : n.inputs) {
      if (!scheduled_forward(v) || seen.count(v)) continue;
      const Node& prod = g.node(g.value(v).producer);
      if (prod.op->makes_views || prod.op->stateful || prod.op->random) continue;
      seen.insert(v);
      candidates.push_back(v);
    }
  }
  // Dropping pays only if something runs between the value's last forward read and its first
  // backward read (the last layer's output is read by backward right away: it stays).
  std::unordered_map<int, size_t> last_forward_read, first_backward_read;
  for (size_t pos = 0; pos < p.schedule.size(); ++pos) {
    const Node& n = g.node(p.schedule[pos]);
    for (int v : n.inputs) {
      if (n.phase == Phase::forward) last_forward_read[v] = pos;
      else if (!first_backward_read.count(v)) first_backward_read[v] = pos;
    }
  }
  std::erase_if(candidates, [&](int v) {
    const size_t from = last_forward_read.count(v) ? last_forward_read[v] : pos_of[g.value(v).producer];
    return first_backward_read[v] <= from + 1;
  });
  std::sort(candidates.begin(), candidates.end(),
            [&](int a, int b) { return pos_of[g.value(a).producer] < pos_of[g.value(b).producer]; });
  std::set<int> dropped;
  int64_t kept_bytes = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const int v = candidates[i];
    bool keep = true;
    if (policy.kind == RecomputePolicy::every_k) keep = policy.k <= 1 || (i + 1) % static_cast<size_t>(policy.k) == 0;
    else if (policy.kind == RecomputePolicy::marks) keep = g.value(v).checkpoint;
    else if (policy.kind == RecomputePolicy::within_budget) keep = kept_bytes + value_bytes(g, v) <= policy.budget;
    if (keep) kept_bytes += value_bytes(g, v);
    else dropped.insert(v);
  }
  if (dropped.empty()) {
    changes.push_back("the policy keeps every activation: nothing to recompute");
    return changes;
  }
  std::set<int> kept;
  for (int v : candidates)
    if (!dropped.count(v)) kept.insert(v);

  const int64_t held_before = p.held_activation_bytes();
  // For each backward node reading dropped values: clone the chain that makes them, just before it.
  std::vector<int> schedule;
  std::unordered_map<int, int> recomputed;  // dropped value -> its recomputed copy (made once)
  double extra_flops = 0;
  int64_t dropped_bytes = 0;
  for (int v : dropped) dropped_bytes += value_bytes(g, v);
  std::function<int(int, std::vector<int>&)> recompute = [&](int v, std::vector<int>& out) -> int {
    if (auto it = recomputed.find(v); it != recomputed.end()) return it->second;
    const int prod_id = g.value(v).producer;
    Node clone = g.node(prod_id);
    // Inputs still alive in backward are read as they are; any other forward value is recomputed too.
    for (int& in : clone.inputs)
      if (scheduled_forward(in) && !kept.count(in) && !has_side_effects(g.node(g.value(in).producer)))
        in = recompute(in, out);
    clone.outputs.clear();
    clone.forward_of = -1;
    const int new_id = static_cast<int>(g.num_nodes());
    int result = -1;
    const Node& original = g.node(prod_id);
    for (int o : original.outputs) {
      ValueInfo vi = g.value(o);
      vi.producer = new_id;
      vi.tensor.reset();
      vi.constant = Tensor();
      vi.name = g.value(o).name.empty() ? "" : g.value(o).name + "'";  // h1' = h1 recomputed
      const int nv = g.add_value(std::move(vi));
      clone.outputs.push_back(nv);
      recomputed[o] = nv;
      if (o == v) result = nv;
    }
    extra_flops += node_cost(g, clone).flops;
    out.push_back(g.add_node(std::move(clone)));
    return result;
  };
  for (int id : p.schedule) {
    if (g.node(id).phase == Phase::backward) {
      ValueIds inputs = g.node(id).inputs;
      bool changed = false;
      for (int& in : inputs)
        if (dropped.count(in)) {
          in = recompute(in, schedule);
          changed = true;
        }
      if (changed) g.node(id).inputs = inputs;
    }
    schedule.push_back(id);
  }
  const double before = p.flops();
  p.schedule = std::move(schedule);
  place_updates(p);  // a recomputed value may read a parameter: its update waits for it
  std::string names;
  for (int v : dropped)
    names += (names.empty() ? "" : ", ") + (g.value(v).name.empty() ? "%" + std::to_string(v) : g.value(v).name);
  changes.push_back("policy: " + policy.describe() + "; dropped " + std::to_string(dropped.size()) + " of " +
                    std::to_string(candidates.size()) + " activations (" + names + "): " + bytes_str(dropped_bytes) +
                    " no longer held from forward to backward");
  changes.push_back("activations held from forward into backward: " + bytes_str(held_before) + " → " +
                    bytes_str(p.held_activation_bytes()));
  changes.push_back("recomputed in backward: " + std::to_string(recomputed.size()) + " values, +" +
                    std::to_string(static_cast<int64_t>(extra_flops)) + " FLOPs (" +
                    std::to_string(static_cast<int>(100.0 * extra_flops / std::max(before, 1.0) + 0.5)) + "% more)");
  return changes;
}

std::vector<std::string> pass_plan_memory(Program& p) {
  Graph& g = p.graph;
  MemoryPlan plan;
  plan.enabled = true;
  const std::set<int> outputs = p.outputs();
  std::set<int> caller_owned;  // outputs and what they look at: allocated on their own
  for (int o : outputs) caller_owned.insert(p.alias_root(o));
  std::vector<LiveInterval> live = p.liveness();
  // Naive allocation and the liveness bound, for the report.
  std::map<size_t, int64_t> delta;
  for (auto& iv : live) {
    if (caller_owned.count(iv.value)) continue;
    plan.naive_bytes += iv.bytes;
    delta[iv.def] += iv.bytes;
    delta[iv.last + 1] -= iv.bytes;
  }
  int64_t cur = 0;
  for (auto& [pos, d] : delta) {
    cur += d;
    plan.liveness_bytes = std::max(plan.liveness_bytes, cur);
  }

  std::unordered_map<int, const LiveInterval*> interval_of;
  for (auto& iv : live) interval_of[iv.value] = &iv;
  std::multimap<size_t, int> ending;  // last use -> buffer (freed after that position)
  std::multimap<int64_t, int> free_buffers;  // size -> buffer
  std::unordered_map<int, int> holder;  // buffer -> value
  size_t in_place_count = 0;
  for (auto& iv : live) {
    if (caller_owned.count(iv.value)) continue;
    // Buffers whose value was last read before this position are free again.
    while (!ending.empty() && ending.begin()->first < iv.def) {
      int b = ending.begin()->second;
      ending.erase(ending.begin());
      free_buffers.emplace(plan.buffer_bytes[static_cast<size_t>(b)], b);
    }
    const Node& n = g.node(g.value(iv.value).producer);
    int chosen = -1;
    if (n.op->elementwise) {  // in place over an input that dies here, same size and layout
      for (int in : n.inputs) {
        // Not over a buffer another input of this node reads through a view (h + h.T).
        bool viewed = false;
        for (int other : n.inputs) viewed = viewed || (other != in && p.alias_root(other) == in);
        if (viewed) continue;
        auto it = interval_of.find(in);
        if (it == interval_of.end() || it->second->last != iv.def || it->second->bytes != iv.bytes ||
            !plan.buffer_of.count(in) || g.value(in).meta.shape != g.value(iv.value).meta.shape)
          continue;
        const int b = plan.buffer_of[in];
        // Take the buffer out of the "ending" list: it passes straight to the new value.
        bool found = false;
        for (auto [e, stop] = ending.equal_range(iv.def); e != stop; ++e)
          if (e->second == b) {
            ending.erase(e);
            found = true;
            break;
          }
        if (!found) continue;
        chosen = b;
        plan.in_place.insert(iv.value);
        ++in_place_count;
        break;
      }
    }
    if (chosen < 0) {
      auto fit = free_buffers.lower_bound(iv.bytes);
      if (fit != free_buffers.end()) {
        chosen = fit->second;
        free_buffers.erase(fit);
      } else if (!free_buffers.empty()) {  // grow the largest free buffer rather than add one
        auto largest = std::prev(free_buffers.end());
        chosen = largest->second;
        free_buffers.erase(largest);
        plan.buffer_bytes[static_cast<size_t>(chosen)] = iv.bytes;
      } else {
        chosen = static_cast<int>(plan.buffer_bytes.size());
        plan.buffer_bytes.push_back(iv.bytes);
      }
    }
    plan.buffer_of[iv.value] = chosen;
    holder[chosen] = iv.value;
    ending.emplace(iv.last, chosen);
  }
  for (int64_t b : plan.buffer_bytes) plan.planned_bytes += b;
  p.plan = plan;
  std::vector<std::string> changes;
  changes.push_back(std::to_string(plan.buffer_of.size()) + " values in " + std::to_string(plan.buffer_bytes.size()) +
                    " buffers (" + std::to_string(in_place_count) + " written in place): " +
                    bytes_str(plan.naive_bytes) + " with one buffer per value → " + bytes_str(plan.planned_bytes) +
                    " (at most " + bytes_str(plan.liveness_bytes) + " are alive at once)");
  const std::vector<std::string> problems = check_memory_plan(p);
  if (!problems.empty()) throw Error("internal: the memory plan failed its liveness check: " + problems[0]);
  return changes;
}

// Recomputes liveness from the schedule on its own (not through Program::liveness) and checks
// every pair of values that share a buffer.
std::vector<std::string> check_memory_plan(const Program& p) {
  std::vector<std::string> problems;
  const Graph& g = p.graph;
  std::unordered_map<int, std::pair<size_t, size_t>> life;  // root value -> [def, last]
  auto root = [&](int v) {
    while (g.value(v).producer >= 0) {
      const Node& n = g.node(g.value(v).producer);
      if (!(n.op->makes_views || n.op->updates_input0) || n.inputs.empty()) break;
      v = n.inputs[0];
    }
    return v;
  };
  for (size_t pos = 0; pos < p.schedule.size(); ++pos) {
    const Node& n = g.node(p.schedule[pos]);
    for (int v : n.inputs)
      if (auto it = life.find(root(v)); it != life.end()) it->second.second = pos;
    for (int v : n.outputs)
      if (root(v) == v) life[v] = {pos, pos};
  }
  for (int o : p.outputs())
    if (auto it = life.find(root(o)); it != life.end()) it->second.second = p.schedule.size();
  std::map<int, std::vector<int>> by_buffer;
  for (auto& [v, b] : p.plan.buffer_of) {
    by_buffer[b].push_back(v);
    if (value_bytes(g, v) > p.plan.buffer_bytes.at(static_cast<size_t>(b)))
      problems.push_back("value " + std::to_string(v) + " does not fit buffer " + std::to_string(b));
    if (!life.count(v)) problems.push_back("value " + std::to_string(v) + " is planned but never written");
  }
  // Per buffer, in order of definition: each value must start after every earlier one ended,
  // except a value written in place over the one that dies where it starts.
  // Legal only where the node reads the earlier value directly and through no view (h + h.T).
  auto reads = [&](int later, int earlier) {
    bool direct = false;
    for (int v : g.node(g.value(later).producer).inputs) {
      if (v == earlier) direct = true;
      else if (root(v) == earlier) return false;
    }
    return direct;
  };
  for (auto& [b, vs] : by_buffer) {
    std::sort(vs.begin(), vs.end(), [&](int x, int y) { return life[x] < life[y]; });
    int latest = -1;  // the value with the latest end so far
    for (int v : vs) {
      if (latest >= 0) {
        auto [a0, a1] = life[latest];
        auto [b0, b1] = life[v];
        const bool disjoint = b0 > a1;
        const bool in_place = p.plan.in_place.count(v) && b0 == a1 && reads(v, latest);
        if (!disjoint && !in_place)
          problems.push_back("values " + std::to_string(latest) + " and " + std::to_string(v) +
                             " are alive together (" + std::to_string(a0) + ".." + std::to_string(a1) + " and " +
                             std::to_string(b0) + ".." + std::to_string(b1) + ") in buffer " + std::to_string(b));
        if (life[v].second < a1) continue;
      }
      latest = v;
    }
  }
  return problems;
}

}  // namespace opscope
