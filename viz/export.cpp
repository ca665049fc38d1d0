#include "viz/export.h"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/body.h"

namespace opscope::viz {

namespace {
std::string dot_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

std::string value_name(const Graph& g, int v) {
  const ValueInfo& vi = g.value(v);
  return vi.name.empty() ? "%" + std::to_string(v) : vi.name;
}
}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::vector<int> all;
  for (const Node& n : g.nodes()) all.push_back(n.id);
  return graph_to_dot(g, all);
}

std::string graph_to_dot(const Graph& g, const std::vector<int>& node_ids) { return graph_to_dot(g, node_ids, {}); }

std::string graph_to_dot(const Graph& g, const std::vector<int>& node_ids, const std::set<int>& expand) {
  // Expanded nodes and their bodies: "n3_1" is op 1 of node 3's body.
  std::map<int, std::shared_ptr<const NodeBody>> bodies;
  for (int id : node_ids)
    if (expand.count(id))
      if (auto b = node_body(g, g.node(id)); b && b->graph.num_nodes() > 0) bodies[id] = b;
  auto body_node_name = [](int id, int k) { return "n" + std::to_string(id) + "_" + std::to_string(k); };
  std::vector<const Node*> nodes;
  for (int id : node_ids) nodes.push_back(&g.node(id));
  std::string out =
      "digraph opscope {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  // Leaves (parameters, inputs, constants, gradient seeds) are drawn as their own nodes.
  std::vector<char> used(g.num_values(), 0), made(g.num_values(), 0);
  for (const Node* n : nodes) {
    for (int v : n->inputs) used[v] = 1;
    for (int v : n->outputs) made[v] = 1;
  }
  for (size_t v = 0; v < g.num_values(); ++v) {
    if (made[v] || !used[v]) continue;
    const ValueInfo& vi = g.value(static_cast<int>(v));  // leaves: also values a program reads but does not make
    const char* style = vi.kind == ValueKind::parameter   ? "shape=box, style=\"rounded,filled\", fillcolor=\"#fde68a\""
                        : vi.kind == ValueKind::grad_seed ? "shape=box, style=\"rounded,filled\", fillcolor=\"#fecaca\""
                        : vi.kind == ValueKind::constant  ? "shape=plaintext"
                                                         : "shape=box, style=\"rounded,filled\", fillcolor=\"#e5e7eb\"";
    out += "  v" + std::to_string(v) + " [label=\"" + dot_escape(value_name(g, static_cast<int>(v))) + "\\n" +
           shape_str(vi.meta.shape) + "\", " + style + "];\n";
  }
  // Nodes grouped by scope: one cluster per composite function.
  std::map<std::string, std::vector<int>> by_scope;
  // Backward nodes stay out of the clusters: the backward pass reads as its own lane.
  for (const Node* n : nodes) by_scope[n->phase == Phase::backward ? std::string() : n->scope].push_back(n->id);
  int cluster = 0;
  for (auto& [scope, ids] : by_scope) {
    std::string indent = "  ";
    if (!scope.empty()) {
      out += "  subgraph cluster_" + std::to_string(cluster++) + " {\n    label=\"" + dot_escape(scope) +
             "\"; style=dashed;\n";
      indent = "    ";
    }
    for (int id : ids) {
      const Node& n = g.node(id);
      const bool bwd = n.phase == Phase::backward;
      if (auto b = bodies.find(id); b != bodies.end()) {  // a frame holding the ops of its body
        const Graph& bg = b->second->graph;
        out += indent + "subgraph cluster_body_" + std::to_string(id) + " {\n" + indent + "  label=\"#" +
               std::to_string(id) + " " + dot_escape(n.op->name) +
               (n.op->origin.empty() ? "" : " (" + dot_escape(n.op->origin) + ")") +
               "\"; style=\"rounded\"; color=\"#6b7280\";\n";
        for (const Node& m : bg.nodes()) {
          const std::string var = m.outputs.empty() ? "" : bg.value(m.outputs[0]).name;
          out += indent + "  " + body_node_name(id, m.id) + " [label=\"#" + std::to_string(id) + "." +
                 std::to_string(m.id) + " " + dot_escape(m.label()) + (var.empty() ? "" : "\\n" + dot_escape(var)) +
                 "\", shape=box, style=\"rounded,filled\", fillcolor=\"" + (bwd ? "#fce7f3" : "#dbeafe") + "\"];\n";
          for (int bv : m.inputs) {
            const ValueInfo& bvi = bg.value(bv);
            if (bvi.producer >= 0 || b->second->input_index(bv) >= 0) continue;
            out += indent + "  " + body_node_name(id, m.id) + "_c" + std::to_string(bv) + " [label=\"" +
                   (bvi.constant.defined() && bvi.constant.numel() == 1 ? attr_value_str(bvi.constant.item())
                                                                        : shape_str(bvi.meta.shape)) +
                   "\", shape=plaintext];\n";
          }
        }
        out += indent + "}\n";
        continue;
      }
      std::string name = g.node_var_name(id);
      out += indent + "n" + std::to_string(id) + " [label=\"#" + std::to_string(id) + " " + dot_escape(n.label()) +
             (name.empty() ? "" : "\\n" + dot_escape(name)) + "\", shape=box, style=\"rounded,filled\", fillcolor=\"" +
             (bwd ? "#fbcfe8" : "#bfdbfe") + "\"];\n";
    }
    if (!scope.empty()) out += "  }\n";
  }
  // Where a value of `g` comes from: its producer, the body op of an expanded producer, or its leaf.
  auto source_of = [&](int v) {
    const ValueInfo& vi = g.value(v);
    if (!made[v]) return "v" + std::to_string(v);
    if (auto b = bodies.find(vi.producer);
        b != bodies.end() && static_cast<size_t>(vi.out_index) < b->second->outputs.size())
      if (const int k = b->second->graph.value(b->second->outputs[static_cast<size_t>(vi.out_index)]).producer; k >= 0)
        return body_node_name(vi.producer, k);
    return "n" + std::to_string(vi.producer);
  };
  // Inside expanded nodes: edges between the body's ops, from the node's inputs and its constants.
  for (auto& [id, b] : bodies) {
    const Graph& bg = b->graph;
    const Node& n = g.node(id);
    for (const Node& m : bg.nodes())
      for (int bv : m.inputs) {
        const ValueInfo& bvi = bg.value(bv);
        const int i = b->input_index(bv);
        const std::string from = bvi.producer >= 0 ? body_node_name(id, bvi.producer)
                                 : i >= 0          ? source_of(n.inputs[static_cast<size_t>(i)])
                                                   : body_node_name(id, m.id) + "_c" + std::to_string(bv);
        out += "  " + from + " -> " + body_node_name(id, m.id) + " [label=\"" + shape_str(bvi.meta.shape) + " " +
               dtype_name(bvi.meta.dtype) + "\"" + (n.phase == Phase::backward ? ", color=\"#db2777\"" : "") + "];\n";
      }
  }
  // Edges: from the producer (or leaf) of each input, labelled with the shape and dtype.
  for (const Node* n : nodes)
    for (int v : n->inputs) {
      if (bodies.count(n->id)) break;  // drawn into its body above
      const ValueInfo& vi = g.value(v);
      std::string from = source_of(v);
      std::string to = "n" + std::to_string(n->id);
      const std::string label = "label=\"" + shape_str(vi.meta.shape) + " " + dtype_name(vi.meta.dtype) + "\"";
      // A gradient passed between backward nodes is laid out reversed (drawn with its arrow
      // the right way): the gradient of node k then sits beside node k, mirroring the forward pass.
      const bool grad_flow = n->phase == Phase::backward && (vi.kind == ValueKind::grad_seed ||
                                                             (made[v] && g.node(vi.producer).phase == Phase::backward));
      // (dir=both with no head rather than dir=back: Graphviz 2.42 corrupts memory on dir=back in clusters.)
      if (grad_flow)
        out += "  " + to + " -> " + from + " [" + label + ", dir=both, arrowhead=none, color=\"#db2777\"];\n";
      else
        out += "  " + from + " -> " + to + " [" + label + (n->phase == Phase::backward ? ", color=\"#db2777\"" : "") +
               "];\n";
    }
  return out + "}\n";
}

TraceRecorder::TraceRecorder(Executor& ex) : ex_(ex) {
  id_ = ex_.add_listener([this](const StepEvent& e) {
    events_.push_back(e);
    // The node's label now (a fused node names its chain); the graph may be gone later.
    labels.push_back(e.graph && e.node >= 0 ? e.graph->node(e.node).label() : e.op ? e.op->name : "?");
  });
}

TraceRecorder::~TraceRecorder() { ex_.remove_listener(id_); }

std::string chrome_trace_json(const std::vector<StepEvent>& events, const std::vector<std::string>& labels) {
  nlohmann::json trace = nlohmann::json::array();
  trace.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "opscope executor"}}}});
  trace.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "steps"}}}});
  double ts = 0;  // microseconds; steps laid end to end in execution order
  for (size_t i = 0; i < events.size(); ++i) {
    const StepEvent& e = events[i];
    const double dur = std::max(0.001, static_cast<double>(e.time_ns) / 1000.0);
    nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
    for (auto& s : e.input_shapes) in.push_back(s);
    for (auto& s : e.output_shapes) out.push_back(s);
    trace.push_back({{"name", i < labels.size() ? labels[i] : "step"},
                     {"cat", phase_name(e.phase)},
                     {"ph", "X"},
                     {"pid", 1},
                     {"tid", 1},
                     {"ts", ts},
                     {"dur", dur},
                     {"args",
                      {{"step", e.step},
                       {"node", e.node},
                       {"phase", phase_name(e.phase)},
                       {"algo", e.algo},
                       {"inputs", in},
                       {"outputs", out},
                       {"flops", e.cost.flops},
                       {"bytes_read", e.cost.bytes_read},
                       {"bytes_written", e.cost.bytes_written},
                       {"saved_released_of", e.saved_released_of}}}});
    nlohmann::json mem = nlohmann::json::object();
    for (int c = 0; c < kNumCategories; ++c) mem[category_name(static_cast<MemCategory>(c))] = e.mem_after[c];
    trace.push_back({{"name", "memory (bytes)"}, {"ph", "C"}, {"pid", 1}, {"ts", ts + dur}, {"args", mem}});
    ts += dur;
  }
  return nlohmann::json{{"traceEvents", trace}, {"displayTimeUnit", "ns"}}.dump(1);
}

}  // namespace opscope::viz
