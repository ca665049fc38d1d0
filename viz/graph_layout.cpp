#include "viz/graph_layout.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include "core/body.h"
#include "core/error.h"
#include "viz/graphviz_context.h"

namespace opscope::viz {

const char* phase_filter_name(PhaseFilter f) {
  switch (f) {
    case PhaseFilter::forward_only: return "forward";
    case PhaseFilter::backward_only: return "backward";
    case PhaseFilter::both: return "both";
  }
  return "?";
}

float estimate_text_width(const std::string& s) {
  // UTF-8 continuation bytes do not start a glyph.
  int glyphs = 0;
  for (unsigned char c : s) glyphs += (c & 0xC0) != 0x80;
  return 7.f * static_cast<float>(glyphs);
}

int GraphLayout::find(const std::string& key) const {
  for (size_t i = 0; i < boxes.size(); ++i)
    if (boxes[i].key == key) return static_cast<int>(i);
  return -1;
}

int GraphLayout::find_node(int node_id) const {
  if (node_id < 0 || node_id >= static_cast<int>(node_box.size())) return -1;
  return node_box[static_cast<size_t>(node_id)];
}

LayoutKey layout_key(const Graph& g, const LayoutOptions& o) {
  return {&g, o.only_nodes, g.version(), g.num_nodes(), o.filter, o.left_to_right, o.folded, o.expanded};
}

namespace {

const char* short_dtype(DType t) { return t == DType::f32 ? "f32" : t == DType::f64 ? "f64" : "i64"; }

bool visible(const Node& n, PhaseFilter f) {
  const bool bwd = n.phase == Phase::backward;
  return f == PhaseFilter::both || (f == PhaseFilter::backward_only) == bwd;
}

BoxKind leaf_kind(ValueKind k) {
  switch (k) {
    case ValueKind::parameter: return BoxKind::parameter;
    case ValueKind::constant: return BoxKind::constant;
    case ValueKind::grad_seed: return BoxKind::grad_seed;
    default: return BoxKind::input;
  }
}

// Which boxes the graph becomes under the options, and the edges between them.
struct Plan {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutEdge> edges;
  std::vector<int> node_box;
  // Expanded nodes: their body and the box of each of its nodes.
  struct Expanded {
    std::shared_ptr<const NodeBody> body;
    std::vector<int> box;  // body node -> box
  };
  std::map<int, Expanded> expanded;
};

// The box that hands value `out_index` of expanded node `e` to its readers: the body op making it.
int output_box(const Plan::Expanded& e, int out_index, int fallback) {
  if (out_index < 0 || static_cast<size_t>(out_index) >= e.body->outputs.size()) return fallback;
  const int producer = e.body->graph.value(e.body->outputs[static_cast<size_t>(out_index)]).producer;
  return producer >= 0 ? e.box[static_cast<size_t>(producer)] : fallback;
}

Plan plan_boxes(const Graph& g, const LayoutOptions& o) {
  Plan p;
  p.node_box.assign(g.num_nodes(), -1);
  std::map<std::string, int> by_key;
  auto text_w = [&](const std::string& s) { return o.text_width ? o.text_width(s) : estimate_text_width(s); };
  auto add_box = [&](LayoutBox b) {
    auto it = by_key.find(b.key);
    if (it != by_key.end()) return it->second;
    const float w = std::max(text_w(b.title), text_w(b.subtitle));
    b.width = std::max(64.f, w + 22.f);
    b.height = b.subtitle.empty() ? o.line_height + 12.f : 2.f * o.line_height + 12.f;
    p.boxes.push_back(std::move(b));
    return by_key[p.boxes.back().key] = static_cast<int>(p.boxes.size()) - 1;
  };

  // Op nodes (or the folded function holding them), in creation order: stable ids.
  std::vector<char> shown(g.num_nodes(), o.only_nodes.empty() ? 1 : 0);
  for (int id : o.only_nodes) shown[static_cast<size_t>(id)] = 1;
  std::map<std::string, int> folded_count;
  for (const Node& n : g.nodes()) {
    if (!visible(n, o.filter) || !shown[static_cast<size_t>(n.id)]) continue;
    if (!n.scope.empty() && o.folded.count(n.scope)) {
      folded_count[n.scope]++;
      LayoutBox b;
      b.key = "s:" + n.scope;
      b.kind = BoxKind::folded_scope;
      b.title = n.scope + "()";
      b.subtitle = "folded";
      b.family = "function";
      b.phase = n.phase;
      p.node_box[static_cast<size_t>(n.id)] = add_box(std::move(b));
      continue;
    }
    if (o.expanded.count(n.id)) {
      if (auto body = node_body(g, n); body && body->graph.num_nodes() > 0) {  // the ops inside, one box each
        Plan::Expanded& e = p.expanded[n.id];
        e.body = body;
        for (const Node& m : body->graph.nodes()) {
          LayoutBox b;
          b.key = "n" + std::to_string(n.id) + "." + std::to_string(m.id);
          b.node = n.id;
          b.body_node = m.id;
          b.phase = n.phase;
          b.family = m.op->family;
          b.title = "#" + std::to_string(n.id) + "." + std::to_string(m.id) + " " + m.label();
          b.subtitle = m.outputs.empty() ? "" : body->graph.value(m.outputs[0]).name;
          e.box.push_back(add_box(std::move(b)));
        }
        p.node_box[static_cast<size_t>(n.id)] = output_box(e, 0, e.box.back());
        continue;
      }
    }
    LayoutBox b;
    b.key = "n" + std::to_string(n.id);
    b.node = n.id;
    b.phase = n.phase;
    b.family = n.op ? n.op->family : "";
    b.title = "#" + std::to_string(n.id) + " " + (n.op ? n.label() : "?");
    std::string var = g.node_var_name(n.id);
    if (n.phase == Phase::backward && n.forward_of >= 0) {
      std::string fwd = g.node_var_name(n.forward_of);
      b.subtitle = "grad of " + (fwd.empty() ? "#" + std::to_string(n.forward_of) : fwd);
    } else {
      b.subtitle = var;
    }
    p.node_box[static_cast<size_t>(n.id)] = add_box(std::move(b));
  }
  for (auto& b : p.boxes)
    if (b.kind == BoxKind::folded_scope) {
      b.subtitle = std::to_string(folded_count[b.title.substr(0, b.title.size() - 2)]) + " nodes (folded)";
      b.width = std::max(b.width, text_w(b.subtitle) + 22.f);
    }

  // Edges from each input's producer; a leaf (or a value whose producer is hidden) gets a box.
  std::map<std::tuple<int, int, int>, bool> seen;
  auto producer_box = [&](const ValueInfo& vi) {
    if (vi.producer < 0) return -1;
    const int box = p.node_box[static_cast<size_t>(vi.producer)];
    auto e = p.expanded.find(vi.producer);
    return e == p.expanded.end() || box < 0 ? box : output_box(e->second, vi.out_index, box);
  };
  // Where value v of `g` comes from, as a box: its producer's, or a box of its own (a leaf).
  auto source_box = [&](int v, Phase phase) {
    const ValueInfo& vi = g.value(v);
    if (const int from = producer_box(vi); from >= 0) return from;
    LayoutBox b;
    b.key = "v" + std::to_string(v);
    b.value = v;
    b.kind = vi.producer >= 0 ? BoxKind::input : leaf_kind(vi.kind);
    b.title = vi.name.empty() ? "%" + std::to_string(v) : vi.name;
    if (vi.kind == ValueKind::grad_seed) b.title = "seed " + b.title;
    b.subtitle = shape_str(vi.meta.shape);
    b.phase = phase;
    return add_box(std::move(b));
  };
  // `id` tells values apart (a value of g, or -2 - v for value v of a body).
  auto add_edge = [&](int from, int to, int value, int id, const TensorMeta& m) {
    if (from == to || seen[{from, to, id}]) return;
    seen[{from, to, id}] = true;
    LayoutEdge e;
    e.from = from;
    e.to = to;
    e.value = value;
    e.label = shape_str(m.shape) + " " + short_dtype(m.dtype);
    p.edges.push_back(std::move(e));
  };
  // Inside an expanded node: edges between its body's ops, from the node's inputs, and from the
  // body's own constants (boxes of their own).
  for (auto& [id, e] : p.expanded) {
    const Node& n = g.node(id);
    const Graph& bg = e.body->graph;
    for (const Node& m : bg.nodes())
      for (int bv : m.inputs) {
        const ValueInfo& bvi = bg.value(bv);
        const int i = e.body->input_index(bv);
        if (i >= 0 && static_cast<size_t>(i) < n.inputs.size()) {  // the node's input i, from wherever it comes
          const int v = n.inputs[static_cast<size_t>(i)];
          add_edge(source_box(v, n.phase), e.box[static_cast<size_t>(m.id)], v, v, bvi.meta);
          continue;
        }
        int from = bvi.producer >= 0 ? e.box[static_cast<size_t>(bvi.producer)] : -1;
        if (from < 0) {  // a constant of the body (the 1.0 of 1 - s)
          LayoutBox b;
          b.key = "n" + std::to_string(id) + ".v" + std::to_string(bv);
          b.node = id;
          b.kind = BoxKind::constant;
          b.title = !bvi.name.empty() ? bvi.name
                    : bvi.constant.defined() && bvi.constant.numel() == 1 ? attr_value_str(bvi.constant.item())
                                                                           : "%" + std::to_string(bv);
          b.subtitle = shape_str(bvi.meta.shape);
          b.phase = n.phase;
          from = add_box(std::move(b));
        }
        add_edge(from, e.box[static_cast<size_t>(m.id)], -1, -2 - bv, bvi.meta);
      }
  }
  for (const Node& n : g.nodes()) {
    const int to = p.node_box[static_cast<size_t>(n.id)];
    if (to < 0 || p.expanded.count(n.id)) continue;
    for (int v : n.inputs) add_edge(source_box(v, n.phase), to, v, v, g.value(v).meta);
  }
  // Both phases: each backward node points at the forward node it differentiates.
  if (o.filter == PhaseFilter::both)
    for (const Node& n : g.nodes()) {
      if (n.phase != Phase::backward || n.forward_of < 0) continue;
      const int from = p.node_box[static_cast<size_t>(n.id)], to = p.node_box[static_cast<size_t>(n.forward_of)];
      if (from < 0 || to < 0 || from == to || seen[{from, to, -1}]) continue;
      seen[{from, to, -1}] = true;
      LayoutEdge e;
      e.from = from;
      e.to = to;
      e.link = true;
      p.edges.push_back(std::move(e));
    }
  return p;
}

// A gradient passed from one backward node (or the seed) to another.
bool reversed_edge(const Plan& p, const LayoutEdge& e) {
  const LayoutBox& from = p.boxes[static_cast<size_t>(e.from)];
  const LayoutBox& to = p.boxes[static_cast<size_t>(e.to)];
  const bool from_grad = (from.kind == BoxKind::op && from.phase == Phase::backward) || from.kind == BoxKind::grad_seed;
  return !e.link && from_grad && to.phase == Phase::backward;
}

std::string inches(float px) { return std::to_string(px / 72.f); }

void set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

}  // namespace

GraphLayout layout_graph(const Graph& g, const LayoutOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Plan plan = plan_boxes(g, o);
  GraphLayout out;
  out.node_box = std::move(plan.node_box);
  if (plan.boxes.empty()) return out;

  GVC_t* gvc = detail::layout_context();
  Agraph_t* root = agopen(const_cast<char*>("opscope"), Agdirected, nullptr);
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> guard(root, agclose);
  set(root, "rankdir", o.left_to_right ? "LR" : "TB");
  set(root, "nodesep", "0.25");
  set(root, "forcelabels", "true");
  set(root, "ranksep", o.left_to_right ? "0.9" : "0.45");  // room for the shape labels
  // (ordering=out would keep siblings in creation order, but Graphviz 2.42 crashes with it and clusters)

  // Unfolded composite functions become clusters (a dashed frame with the function's name).
  std::map<std::string, Agraph_t*> clusters;
  std::map<int, Agraph_t*> body_clusters;
  std::vector<Agnode_t*> gv_nodes;
  for (size_t i = 0; i < plan.boxes.size(); ++i) {
    const LayoutBox& b = plan.boxes[i];
    Agraph_t* parent = root;
    // Only forward nodes are grouped by function: the backward pass runs in its own lane.
    if (b.node >= 0 && !g.node(b.node).scope.empty() && b.phase != Phase::backward) {
      const std::string& scope = g.node(b.node).scope;
      auto& c = clusters[scope];
      if (!c) {
        std::string name = "cluster_" + std::to_string(clusters.size());
        c = agsubg(root, const_cast<char*>(name.c_str()), 1);
        set(c, "label", scope + "()");
        set(c, "fontsize", "12");
      }
      parent = c;
    }
    if (b.node >= 0 && plan.expanded.count(b.node)) {  // an expanded node: its body in a frame of its own
      auto& c = body_clusters[b.node];
      if (!c) {
        std::string name = "cluster_body_" + std::to_string(b.node);
        c = agsubg(parent, const_cast<char*>(name.c_str()), 1);
        set(c, "label", "#" + std::to_string(b.node) + " " + g.node(b.node).op->name);
        set(c, "fontsize", "12");
      }
      parent = c;
    }
    Agnode_t* n = agnode(parent, const_cast<char*>(b.key.c_str()), 1);
    set(n, "shape", "box");
    set(n, "fixedsize", "true");
    set(n, "label", "");
    set(n, "width", inches(b.width));
    set(n, "height", inches(b.height));
    gv_nodes.push_back(n);
  }
  // Links (backward node -> its forward node) are not given to Graphviz: they must not move
  // anything, and Graphviz 2.42 crashes on constraint=false edges next to labels in clusters.
  std::vector<Agedge_t*> gv_edges(plan.edges.size(), nullptr);
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    const LayoutEdge& e = plan.edges[i];
    if (e.link) continue;
    std::string name = "e" + std::to_string(i);
    // Gradients flow against the forward direction: their edges are given to dot reversed, so
    // the gradient of node k sits next to node k and the backward lane mirrors the forward one.
    const bool rev = reversed_edge(plan, e);
    Agnode_t* tail = gv_nodes[static_cast<size_t>(rev ? e.to : e.from)];
    Agnode_t* head = gv_nodes[static_cast<size_t>(rev ? e.from : e.to)];
    Agedge_t* ge = agedge(root, tail, head, const_cast<char*>(name.c_str()), 1);
    // No arrows for Graphviz to clip (the view draws its own heads at the splines' ends):
    // Graphviz 2.42 corrupts memory clipping arrows of reversed edges inside clusters.
    set(ge, "dir", "none");
    // Shapes go in xlabels, placed after layout where they overlap nothing. (Real labels make dot
    // add label nodes, and Graphviz 2.42 double-frees those of edges within one rank.)
    if (o.edge_labels) {
      set(ge, "xlabel", e.label);
      set(ge, "fontsize", "11");
      set(ge, "fontname", "Helvetica");
    }
    gv_edges[i] = ge;
  }

  if (gvLayout(gvc, root, "dot") != 0) throw Error("Graphviz could not lay out the graph");
  const boxf bb = GD_bb(root);
  const float top = static_cast<float>(bb.UR.y), left = static_cast<float>(bb.LL.x);
  auto flip = [&](pointf p) { return Point{static_cast<float>(p.x) - left, top - static_cast<float>(p.y)}; };
  out.width = static_cast<float>(bb.UR.x - bb.LL.x);
  out.height = static_cast<float>(bb.UR.y - bb.LL.y);
  for (size_t i = 0; i < plan.boxes.size(); ++i) plan.boxes[i].center = flip(ND_coord(gv_nodes[i]));
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    LayoutEdge& e = plan.edges[i];
    Agedge_t* ge = gv_edges[i];
    if (!ge) {  // a link: one curve bowing away from the flow, from centre to centre
      const Point a = plan.boxes[static_cast<size_t>(e.from)].center, b = plan.boxes[static_cast<size_t>(e.to)].center;
      const float bow = 0.25f * (std::abs(b.x - a.x) + std::abs(b.y - a.y)) + 20.f;
      const Point off = o.left_to_right ? Point{0, bow} : Point{bow, 0};
      e.spline = {a, {a.x + off.x, a.y + off.y}, {b.x + off.x, b.y + off.y}, b};
      continue;
    }
    if (ED_spl(ge) && ED_spl(ge)->size > 0) {
      const bezier& bz = ED_spl(ge)->list[0];
      for (int k = 0; k < bz.size; ++k) e.spline.push_back(flip(bz.list[k]));
      if (reversed_edge(plan, e)) std::reverse(e.spline.begin(), e.spline.end());
      // The spline ends on the target's border; the head is drawn there, pointing along the curve.
      e.arrow_tip = e.spline.back();
      e.has_arrow = e.spline.size() >= 4;
    }
    if (ED_xlabel(ge) && ED_xlabel(ge)->set) {
      e.label_pos = flip(ED_xlabel(ge)->pos);
      e.has_label_pos = true;
    }
  }
  for (auto& [scope, c] : clusters) {
    const boxf cb = GD_bb(c);
    Point a = flip(cb.LL), b = flip(cb.UR);
    out.clusters.push_back({scope, -1, {std::min(a.x, b.x), std::min(a.y, b.y)}, {std::max(a.x, b.x), std::max(a.y, b.y)}});
  }
  for (auto& [node, c] : body_clusters) {
    const boxf cb = GD_bb(c);
    Point a = flip(cb.LL), b = flip(cb.UR);
    out.clusters.push_back({"#" + std::to_string(node) + " " + g.node(node).op->name, node,
                            {std::min(a.x, b.x), std::min(a.y, b.y)}, {std::max(a.x, b.x), std::max(a.y, b.y)}});
  }
  gvFreeLayout(gvc, root);
  out.boxes = std::move(plan.boxes);
  out.edges = std::move(plan.edges);
  out.layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace opscope::viz
