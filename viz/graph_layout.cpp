// [SECTION] index
//   options and keys     phase filter names, text widths, layout keys, which calls fold
//   plan                 the boxes the graph becomes (what graph_figure.h leaves in), their edges
//   dot                  Graphviz lays out a set of boxes: the forward lane, or everything
//   lanes                the backward lane mirrored under the forward one, and its curves
//   layout_graph         the two put together
#include "viz/graph_layout.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <cmath>
#include <map>
#include <memory>

#include "core/body.h"
#include "core/body.h"
#include "core/error.h"
#include "viz/edge_router.h"
#include "viz/graph_figure.h"
#include "viz/graphviz_context.h"

namespace opscope::viz {

// [SECTION] options and keys

const char* phase_filter_name(PhaseFilter f) {
  switch (f) {
    case PhaseFilter::forward_only: return "forward";
    case PhaseFilter::backward_only: return "backward";
    case PhaseFilter::both: return "both";
  }
  return "?";
}

const char* box_kind_name(BoxKind k) {
  switch (k) {
    case BoxKind::op: return "op";
    case BoxKind::parameter: return "parameter";
    case BoxKind::input: return "input";
    case BoxKind::constant: return "constant";
    case BoxKind::grad_seed: return "grad_seed";
    case BoxKind::folded_scope: return "folded";
  }
  return "?";
}

const char* edge_kind_name(EdgeKind k) {
  switch (k) {
    case EdgeKind::forward: return "forward";
    case EdgeKind::gradient: return "gradient";
    case EdgeKind::saved: return "saved";
    case EdgeKind::link: return "link";
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
  return {&g, o.only_nodes, g.version(), g.num_nodes(), o.filter, o.folded, o.unfolded, o.expanded, o.lanes};
}

std::vector<std::string> search_boxes(const GraphLayout& l, const Graph& g, const std::string& query) {
  std::vector<std::string> hits;
  if (query.empty()) return hits;
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string q = lower(query);
  auto has = [&](const std::string& text) { return lower(text).find(q) != std::string::npos; };
  for (const auto& b : l.boxes) {
    bool hit = has(b.title) || has(b.subtitle) || lower(b.family) == q;
    for (int id : b.nodes) {  // what a folded call holds is still found
      if (hit || id >= static_cast<int>(g.num_nodes())) break;
      const Node& n = g.node(id);
      hit = has("#" + std::to_string(id) + " " + node_title(g, n)) || has(g.node_var_name(id)) || (n.op && lower(n.op->family) == q);
    }
    if (hit) hits.push_back(b.key);
  }
  return hits;
}

bool call_folded(const LayoutOptions& o, const std::string& key, const std::string& name) {
  const size_t slash = name.rfind('/');
  const std::string last = slash == std::string::npos ? name : name.substr(slash + 1);
  if (o.unfolded.count(key)) return false;
  if (o.folded.count(key)) return true;
  if (o.unfolded.count(name)) return false;
  return o.folded.count(name) > 0 || o.folded.count(last) > 0;
}

std::vector<FoldableCall> foldable_calls(const Graph& g, const std::vector<int>& only_nodes) {
  const FigureContent fc = figure_content(g, only_nodes);
  std::vector<FoldableCall> calls;
  std::map<std::string, size_t> index;
  for (const Node& n : g.nodes()) {
    if (fc.nodes[static_cast<size_t>(n.id)] != NodeShown::shown) continue;
    const Node& owner = n.phase == Phase::backward && n.forward_of >= 0 ? g.node(n.forward_of) : n;
    int depth = 0;
    for (const FigureFrame& f : node_frames(g, owner)) {
      if (f.kind != FigureFrame::call) continue;
      auto [it, fresh] = index.emplace(f.key, calls.size());
      if (fresh) calls.push_back({f.key, f.name, depth, 0, {}});
      calls[it->second].nodes++;
      calls[it->second].node_ids.push_back(n.id);
      ++depth;
    }
  }
  std::stable_sort(calls.begin(), calls.end(), [](const FoldableCall& a, const FoldableCall& b) { return a.depth < b.depth; });
  return calls;
}

FoldedToFit fold_to_fit(const Graph& g, const LayoutOptions& o, float min_zoom,
                        const std::function<float(const GraphLayout&)>& zoom_to_fit, int focus) {
  FoldedToFit r;
  LayoutOptions now = o;
  r.layout = layout_graph(g, now);
  for (int round = 0; round < 8 && zoom_to_fit(r.layout) < min_zoom; ++round) {
    std::vector<FoldableCall> cands;
    for (const FoldableCall& c : foldable_calls(g, o.only_nodes)) {
      if (o.unfolded.count(c.key) || o.unfolded.count(c.name) || call_folded(now, c.key, c.name)) continue;
      if (std::find(c.node_ids.begin(), c.node_ids.end(), focus) != c.node_ids.end()) continue;
      cands.push_back(c);
    }
    if (cands.empty()) break;
    std::stable_sort(cands.begin(), cands.end(), [](const FoldableCall& a, const FoldableCall& b) {
      return a.depth != b.depth ? a.depth < b.depth : a.nodes > b.nodes;
    });
    // The figure's extent grows about linearly with its boxes: fold enough nodes at once.
    const float excess = 1.f - zoom_to_fit(r.layout) / min_zoom;
    const int need = std::max(1, static_cast<int>(excess * static_cast<float>(r.layout.boxes.size())));
    int removed = 0;
    for (const FoldableCall& c : cands) {
      if (c.depth != cands.front().depth || removed >= need) break;
      r.folded.insert(c.key);
      now.folded.insert(c.key);
      removed += c.nodes;
    }
    r.layout = layout_graph(g, now);
  }
  r.fits = zoom_to_fit(r.layout) >= min_zoom;
  return r;
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

std::string value_label(const Graph& g, int v) {
  const ValueInfo& vi = g.value(v);
  return vi.name.empty() ? "%" + std::to_string(v) : vi.name;
}

// [SECTION] plan

// A frame drawn around forward boxes: an unfolded call, or the shown iteration of a loop.
struct PlannedCluster {
  std::string key, scope, label;
  int parent = -1;
  int node = -1;  // an expanded node's body
  bool loop = false;
  int iterations = 0;
};

struct Plan {
  std::vector<LayoutBox> boxes;
  std::vector<LayoutEdge> edges;
  std::vector<int> node_box;
  std::vector<PlannedCluster> clusters;
  std::vector<int> box_cluster;  // the innermost frame of each forward-lane box, -1: none
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

class Planner {
 public:
  Planner(const Graph& g, const LayoutOptions& o) : g_(g), o_(o), fc_(figure_content(g, o.only_nodes)), loops_(loop_counts(g)) {
    p_.node_box.assign(g.num_nodes(), -1);
  }

  Plan plan() {
    for (const Node& n : g_.nodes())
      if (fc_.nodes[static_cast<size_t>(n.id)] == NodeShown::shown && visible(n, o_.filter)) add_node(n);
    describe_folded_boxes();
    add_edges();
    if (o_.filter == PhaseFilter::both) add_links();
    for (auto& b : p_.boxes) size_box(b);
    p_.box_cluster.resize(p_.boxes.size(), -1);
    return std::move(p_);
  }

 private:
  float text_w(const std::string& s) const { return o_.text_width ? o_.text_width(s) : estimate_text_width(s); }

  void size_box(LayoutBox& b) const {
    float w = std::max(text_w(b.title), text_w(b.subtitle));
    for (auto& d : b.details) w = std::max(w, 0.9f * text_w(d));
    b.width = std::max(64.f, w + 22.f);
    const int lines = 1 + !b.subtitle.empty();
    b.height = static_cast<float>(lines) * o_.line_height + static_cast<float>(b.details.size()) * 0.9f * o_.line_height + 12.f;
  }

  int add_box(LayoutBox b) {
    auto it = by_key_.find(b.key);
    if (it != by_key_.end()) return it->second;
    p_.boxes.push_back(std::move(b));
    return by_key_[p_.boxes.back().key] = static_cast<int>(p_.boxes.size()) - 1;
  }

  // The frame cluster of path[0..depth): created on first use, parents first.
  int cluster_of(const std::vector<FigureFrame>& path, size_t depth) {
    int parent = -1;
    for (size_t i = 0; i < depth; ++i) {
      const FigureFrame& f = path[i];
      auto [it, fresh] = cluster_index_.emplace(f.key, static_cast<int>(p_.clusters.size()));
      if (fresh) {
        PlannedCluster c;
        c.key = f.key;
        c.parent = parent;
        c.loop = f.kind == FigureFrame::loop;
        if (c.loop) {
          const int id = std::stoi(f.key.substr(f.key.find('@') + 1));
          c.iterations = loops_.count(id) ? loops_.at(id).iterations : 1;
          c.label = "loop: last of " + std::to_string(c.iterations) + (c.iterations == 1 ? " iteration" : " iterations");
        } else {
          c.scope = f.name;
          c.label = f.label;
        }
        p_.clusters.push_back(std::move(c));
      }
      parent = it->second;
    }
    return parent;
  }

  void add_node(const Node& n) {
    // A backward node folds and groups with the forward node it differentiates.
    const Node& owner = n.phase == Phase::backward && n.forward_of >= 0 ? g_.node(n.forward_of) : n;
    const std::vector<FigureFrame> path = node_frames(g_, owner);
    size_t folded_at = path.size();
    for (size_t i = 0; i < path.size() && folded_at == path.size(); ++i)
      if (path[i].kind == FigureFrame::call && call_folded(o_, path[i].key, path[i].name)) folded_at = i;
    const bool forward = n.phase == Phase::forward;
    if (folded_at == path.size() && o_.expanded.count(n.id) && add_expanded(n, forward ? cluster_of(path, path.size()) : -2)) return;
    LayoutBox b;
    b.phase = n.phase;
    b.lane = forward ? Lane::forward : Lane::backward;
    int bi;
    if (folded_at < path.size()) {
      const FigureFrame& f = path[folded_at];
      b.key = (forward ? "s:" : "b:") + f.key;
      b.kind = BoxKind::folded_scope;
      b.scope_key = f.key;
      b.title = forward ? f.label : "grad of " + f.label;
      b.family = "function";
      bi = add_box(std::move(b));
      p_.boxes[static_cast<size_t>(bi)].nodes.push_back(n.id);
    } else {
      b.key = "n" + std::to_string(n.id);
      b.node = n.id;
      b.family = n.op ? n.op->family : "";
      b.title = "#" + std::to_string(n.id) + " " + node_title(g_, n);
      const std::string var = g_.node_var_name(n.id);
      if (n.phase == Phase::backward && n.forward_of >= 0 && var.empty()) {
        const std::string fwd = g_.node_var_name(n.forward_of);
        b.subtitle = "grad of " + (fwd.empty() ? "#" + std::to_string(n.forward_of) : fwd);
      } else {
        b.subtitle = var;
      }
      bi = add_box(std::move(b));
    }
    p_.node_box[static_cast<size_t>(n.id)] = bi;
    if (forward) {
      if (box_frames_.size() <= static_cast<size_t>(bi)) box_frames_.resize(static_cast<size_t>(bi) + 1, -2);
      if (box_frames_[static_cast<size_t>(bi)] == -2) box_frames_[static_cast<size_t>(bi)] = cluster_of(path, folded_at);
    }
  }

  void set_frame(int box, int frame) {
    if (box_frames_.size() <= static_cast<size_t>(box)) box_frames_.resize(static_cast<size_t>(box) + 1, -2);
    box_frames_[static_cast<size_t>(box)] = frame;
  }

  // An expanded node (an @op, a fused node): a box per op of its body, forward ones in a frame of
  // their own inside `parent` (-2: a backward node, no frame). False: it has no body to show.
  bool add_expanded(const Node& n, int parent) {
    auto body = node_body(g_, n);
    if (!body || body->graph.num_nodes() == 0) return false;
    Plan::Expanded& e = p_.expanded[n.id];
    e.body = body;
    int frame = -2;
    if (parent != -2) {
      PlannedCluster c;
      c.key = "body@" + std::to_string(n.id);
      c.node = n.id;
      c.parent = parent;
      c.scope = c.label = "#" + std::to_string(n.id) + " " + (n.op ? n.op->name : "?");
      frame = static_cast<int>(p_.clusters.size());
      p_.clusters.push_back(std::move(c));
    }
    for (const Node& m : body->graph.nodes()) {
      LayoutBox b;
      b.key = "n" + std::to_string(n.id) + "." + std::to_string(m.id);
      b.node = n.id;
      b.body_node = m.id;
      b.phase = n.phase;
      b.lane = n.phase == Phase::forward ? Lane::forward : Lane::backward;
      b.family = m.op ? m.op->family : "";
      b.title = "#" + std::to_string(n.id) + "." + std::to_string(m.id) + " " + m.label();
      b.subtitle = m.outputs.empty() ? "" : body->graph.value(m.outputs[0]).name;
      const int bi = add_box(std::move(b));
      e.box.push_back(bi);
      set_frame(bi, frame);
    }
    p_.node_box[static_cast<size_t>(n.id)] = output_box(e, 0, e.box.back());
    return true;
  }

  // Inside an expanded node: edges between its body's ops, from the node's inputs, and from the
  // body's own constants (boxes of their own).
  void add_body_edges(const Node& n, const Plan::Expanded& e, const std::vector<std::vector<int>>& readers) {
    const Graph& bg = e.body->graph;
    for (const Node& m : bg.nodes())
      for (int bv : m.inputs) {
        const ValueInfo& bvi = bg.value(bv);
        const int to = e.box[static_cast<size_t>(m.id)];
        const int i = e.body->input_index(bv);
        if (i >= 0 && static_cast<size_t>(i) < n.inputs.size()) {  // the node's input i, from wherever it comes
          const int v = n.inputs[static_cast<size_t>(i)];
          const int from = source_box(v, readers[static_cast<size_t>(v)]);
          if (from >= 0) add_edge(from, to, v, v, g_.value(v).meta);
          continue;
        }
        int from = bvi.producer >= 0 ? e.box[static_cast<size_t>(bvi.producer)] : -1;
        if (from < 0) {  // a constant of the body (the 1.0 of 1 - s)
          LayoutBox b;
          b.key = "n" + std::to_string(n.id) + ".v" + std::to_string(bv);
          b.node = n.id;
          b.kind = BoxKind::constant;
          b.title = !bvi.name.empty() ? bvi.name
                    : bvi.constant.defined() && bvi.constant.numel() == 1 ? attr_value_str(bvi.constant.item())
                                                                           : "%" + std::to_string(bv);
          b.subtitle = shape_str(bvi.meta.shape);
          b.phase = n.phase;
          b.lane = p_.boxes[static_cast<size_t>(to)].lane;
          from = add_box(std::move(b));
          set_frame(from, box_frames_.size() > static_cast<size_t>(to) ? box_frames_[static_cast<size_t>(to)] : -2);
        }
        add_edge(from, to, -1, -2 - bv, bvi.meta);
      }
  }

  bool inside(const LayoutBox& b, int node) const { return std::find(b.nodes.begin(), b.nodes.end(), node) != b.nodes.end(); }

  // A folded call's box says what goes in and out, how many ops it holds and its parameters.
  void describe_folded_boxes() {
    consumers_.assign(g_.num_values(), {});
    for (const Node& n : g_.nodes())
      for (int v : n.inputs) consumers_[static_cast<size_t>(v)].push_back(n.id);
    for (auto& b : p_.boxes) {
      if (b.kind != BoxKind::folded_scope) continue;
      if (b.phase == Phase::backward) {
        b.subtitle = std::to_string(b.nodes.size()) + (b.nodes.size() == 1 ? " op" : " ops");
        continue;
      }
      std::vector<std::string> ins, params, outs;
      std::vector<int> seen;
      for (int id : b.nodes)
        for (int v : g_.node(id).inputs) {
          const ValueInfo& vi = g_.value(v);
          if ((vi.producer >= 0 && inside(b, vi.producer)) || is_inline_constant(vi) ||
              std::find(seen.begin(), seen.end(), v) != seen.end())
            continue;
          seen.push_back(v);
          if (vi.producer < 0 && vi.kind == ValueKind::parameter) params.push_back(value_label(g_, v));
          else  // an unnamed value by the node that made it ("#0 [8, 16]"), not by its id
            ins.push_back((vi.name.empty() && vi.producer >= 0 ? "#" + std::to_string(vi.producer) : value_label(g_, v)) + " " +
                          shape_str(vi.meta.shape));
        }
      for (int id : b.nodes)
        for (int v : g_.node(id).outputs)
          for (int c : consumers_[static_cast<size_t>(v)])
            if (!inside(b, c) && g_.node(c).phase == Phase::forward && p_.node_box[static_cast<size_t>(c)] >= 0) {
              outs.push_back((g_.value(v).name.empty() ? std::string() : g_.value(v).name + " ") + shape_str(g_.value(v).meta.shape));
              break;
            }
      auto join = [](const std::vector<std::string>& xs, size_t most) {
        std::string s;
        for (size_t i = 0; i < xs.size() && i < most; ++i) s += (i ? ", " : "") + xs[i];
        if (xs.size() > most) s += ", +" + std::to_string(xs.size() - most);
        return s;
      };
      b.subtitle = ins.empty() ? "" : "in " + join(ins, 2);
      if (!outs.empty()) b.details.push_back("out " + join(outs, 2));
      b.details.push_back(std::to_string(b.nodes.size()) + (b.nodes.size() == 1 ? " op" : " ops") +
                          (params.empty() ? "" : " · params " + join(params, 4)));
    }
  }

  Lane lane_of(int box) const { return p_.boxes[static_cast<size_t>(box)].lane; }

  void add_edges() {
    // Which boxes read each value, so a leaf read only inside one folded call folds into it.
    std::vector<std::vector<int>> readers(g_.num_values());
    for (const Node& n : g_.nodes()) {
      const int to = p_.node_box[static_cast<size_t>(n.id)];
      if (to < 0) continue;
      for (int v : n.inputs) {
        auto& r = readers[static_cast<size_t>(v)];
        if (std::find(r.begin(), r.end(), to) == r.end()) r.push_back(to);
      }
    }
    for (const Node& n : g_.nodes()) {
      const int to = p_.node_box[static_cast<size_t>(n.id)];
      if (to < 0) continue;
      if (auto ex = p_.expanded.find(n.id); ex != p_.expanded.end()) {
        add_body_edges(n, ex->second, readers);
        continue;
      }
      for (int v : n.inputs) {
        const int from = source_box(v, readers[static_cast<size_t>(v)]);
        if (from >= 0) add_edge(from, to, v, v, g_.value(v).meta);
      }
    }
  }

  // Where value v comes from, as a box: its producer's, or a box of its own (a leaf); -1: not drawn.
  int source_box(int v, const std::vector<int>& readers) {
    const ValueInfo& vi = g_.value(v);
    int from = vi.producer >= 0 ? p_.node_box[static_cast<size_t>(vi.producer)] : -1;
    if (from >= 0) {
      auto ex = p_.expanded.find(vi.producer);
      return ex == p_.expanded.end() ? from : output_box(ex->second, vi.out_index, from);
    }
    if (is_inline_constant(vi)) return -1;  // written into the node's title
    if (vi.producer < 0 && vi.kind != ValueKind::grad_seed && folded_into_one_call(readers)) return -1;
    return leaf_box(v, readers);
  }

  // `id` tells values apart (a value of the graph, or -2 - v for value v of a body).
  void add_edge(int from, int to, int value, int id, const TensorMeta& m) {
    if (from == to || seen_[{from, to, id}]) return;
    seen_[{from, to, id}] = true;
    LayoutEdge e;
    e.from = from;
    e.to = to;
    e.value = value;
    const bool into_backward = lane_of(to) == Lane::backward;
    const bool from_backward = lane_of(from) == Lane::backward;
    e.kind = !into_backward ? EdgeKind::forward : from_backward ? EdgeKind::gradient : EdgeKind::saved;
    e.label = shape_str(m.shape) + " " + short_dtype(m.dtype);
    p_.edges.push_back(std::move(e));
  }

  bool folded_into_one_call(const std::vector<int>& readers) const {
    if (readers.empty()) return false;
    const std::string& key = p_.boxes[static_cast<size_t>(readers[0])].scope_key;
    for (int r : readers)
      if (p_.boxes[static_cast<size_t>(r)].kind != BoxKind::folded_scope || p_.boxes[static_cast<size_t>(r)].scope_key != key) return false;
    return true;
  }

  // A leaf (or a value whose producer is not drawn) as its own box.
  int leaf_box(int v, const std::vector<int>& readers) {
    const ValueInfo& vi = g_.value(v);
    LayoutBox b;
    b.key = "v" + std::to_string(v);
    b.value = v;
    b.kind = vi.producer >= 0 ? BoxKind::input : leaf_kind(vi.kind);
    b.title = value_label(g_, v);
    if (vi.kind == ValueKind::grad_seed) b.title = "seed " + b.title;
    b.subtitle = shape_str(vi.meta.shape);
    if (vi.producer >= 0 && fc_.nodes[static_cast<size_t>(vi.producer)] == NodeShown::earlier_iteration)
      b.subtitle += " · earlier iteration";
    bool only_backward = !readers.empty();
    for (int r : readers) only_backward = only_backward && lane_of(r) == Lane::backward;
    b.lane = vi.kind == ValueKind::grad_seed || only_backward ? Lane::backward : Lane::forward;
    b.phase = b.lane == Lane::backward ? Phase::backward : Phase::forward;
    return add_box(std::move(b));
  }

  // Both phases: each backward node points at the forward node it differentiates.
  void add_links() {
    std::map<std::pair<int, int>, bool> seen;
    for (const Node& n : g_.nodes()) {
      if (n.phase != Phase::backward || n.forward_of < 0) continue;
      const int from = p_.node_box[static_cast<size_t>(n.id)], to = p_.node_box[static_cast<size_t>(n.forward_of)];
      if (from < 0 || to < 0 || from == to || seen[{from, to}]) continue;
      seen[{from, to}] = true;
      LayoutEdge e;
      e.from = from;
      e.to = to;
      e.kind = EdgeKind::link;
      e.link = true;
      p_.edges.push_back(std::move(e));
    }
  }

 public:
  // Called after plan(): the frame of each forward box.
  void assign_clusters(Plan& p) const {
    for (size_t i = 0; i < p.boxes.size() && i < box_frames_.size(); ++i)
      if (box_frames_[i] >= 0) p.box_cluster[i] = box_frames_[i];
  }

 private:
  const Graph& g_;
  const LayoutOptions& o_;
  FigureContent fc_;
  std::map<int, LoopCount> loops_;
  Plan p_;
  std::map<std::string, int> by_key_;
  std::map<std::string, int> cluster_index_;
  std::map<std::tuple<int, int, int>, bool> seen_;  // edges made: from, to, value
  std::vector<int> box_frames_;  // per box: its frame cluster (-1 none, -2 not a forward node box)
  std::vector<std::vector<int>> consumers_;  // per value: the nodes reading it
};

Plan plan_boxes(const Graph& g, const LayoutOptions& o) {
  Planner planner(g, o);
  Plan p = planner.plan();
  planner.assign_clusters(p);
  return p;
}

// [SECTION] dot

// Gradients passed between backward boxes, when one dot layout holds both phases.
bool reversed_edge(const Plan& p, const LayoutEdge& e) {
  const LayoutBox& from = p.boxes[static_cast<size_t>(e.from)];
  const LayoutBox& to = p.boxes[static_cast<size_t>(e.to)];
  return e.kind == EdgeKind::gradient && from.lane == Lane::backward && to.lane == Lane::backward;
}

std::string inches(float px) { return std::to_string(px / 72.f); }

constexpr float kRankSep = 54.f;  // between dot's columns, pixels

void set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

struct DotInput {
  std::vector<char> boxes;          // per plan box: laid out here
  std::vector<float> layout_width;  // per plan box: the width dot reserves (>= its drawn width)
  bool reverse_gradients = false;
  bool edge_labels = true;
  bool leaves_above = false;  // a leaf read by one box goes in that box's column
};

struct DotOutput {
  std::vector<Point> centers;                 // per plan box (those laid out)
  std::vector<std::vector<Point>> splines;    // per plan edge (those laid out)
  std::vector<Point> label_pos;
  std::vector<char> has_label;
  std::vector<std::pair<Point, Point>> cluster_box;  // per planned cluster; min > max: unused
  float width = 0, height = 0;
};

// Graphviz dot over the chosen boxes and the edges between them (links excluded: they must not
// move anything, and Graphviz 2.42 crashes on constraint=false edges next to labels in clusters).
DotOutput run_dot(const Plan& plan, const DotInput& in) {
  DotOutput out;
  out.centers.resize(plan.boxes.size());
  out.splines.resize(plan.edges.size());
  out.label_pos.resize(plan.edges.size());
  out.has_label.assign(plan.edges.size(), 0);
  out.cluster_box.assign(plan.clusters.size(), {{1, 1}, {0, 0}});
  GVC_t* gvc = detail::layout_context();
  Agraph_t* root = agopen(const_cast<char*>("opscope"), Agdirected, nullptr);
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> guard(root, agclose);
  set(root, "rankdir", "LR");
  set(root, "nodesep", "0.25");
  set(root, "forcelabels", "true");
  set(root, "ranksep", inches(kRankSep));  // room for the shape labels
  // (ordering=out would keep siblings in creation order, but Graphviz 2.42 crashes with it and clusters)

  std::vector<Agraph_t*> gv_clusters(plan.clusters.size(), nullptr);
  std::function<Agraph_t*(int)> cluster = [&](int ci) -> Agraph_t* {
    if (ci < 0) return root;
    if (!gv_clusters[static_cast<size_t>(ci)]) {
      const PlannedCluster& c = plan.clusters[static_cast<size_t>(ci)];
      Agraph_t* parent = cluster(c.parent);
      std::string name = "cluster_" + std::to_string(ci);
      Agraph_t* sg = agsubg(parent, const_cast<char*>(name.c_str()), 1);
      set(sg, "label", c.label + (c.loop ? "  ×" + std::to_string(c.iterations) : c.node >= 0 ? "  [collapse]" : "  [fold]"));
      // Room above the boxes for the title and for the saved-for-backward badges over them.
      set(sg, "fontsize", "20");
      set(sg, "labeljust", "l");
      gv_clusters[static_cast<size_t>(ci)] = sg;
    }
    return gv_clusters[static_cast<size_t>(ci)];
  };

  std::vector<Agnode_t*> gv_nodes(plan.boxes.size(), nullptr);
  for (size_t i = 0; i < plan.boxes.size(); ++i) {
    if (!in.boxes[i]) continue;
    const LayoutBox& b = plan.boxes[i];
    Agnode_t* n = agnode(cluster(plan.box_cluster[i]), const_cast<char*>(b.key.c_str()), 1);
    set(n, "shape", "box");
    set(n, "fixedsize", "true");
    set(n, "label", "");
    set(n, "width", inches(in.layout_width[i]));
    set(n, "height", inches(b.height));
    gv_nodes[i] = n;
  }
  // A parameter or input read by one box only sits right above it (the same column), as a
  // textbook figure hangs a layer's weights over it: a column saved per leaf.
  if (in.leaves_above) {
    int same = 0;
    for (size_t i = 0; i < plan.boxes.size(); ++i) {
      const LayoutBox& b = plan.boxes[i];
      if (!gv_nodes[i] || (b.kind != BoxKind::parameter && b.kind != BoxKind::input) || b.value < 0) continue;
      int reader = -1, readers = 0;
      for (const auto& e : plan.edges)
        if (e.from == static_cast<int>(i) && e.kind == EdgeKind::forward) {
          reader = e.to;
          ++readers;
        }
      if (readers != 1 || !gv_nodes[static_cast<size_t>(reader)] || plan.box_cluster[static_cast<size_t>(reader)] >= 0) continue;
      std::string name = "same" + std::to_string(same++);
      Agraph_t* sg = agsubg(root, const_cast<char*>(name.c_str()), 1);
      set(sg, "rank", "same");
      agsubnode(sg, gv_nodes[i], 1);
      agsubnode(sg, gv_nodes[static_cast<size_t>(reader)], 1);
    }
  }
  std::vector<Agedge_t*> gv_edges(plan.edges.size(), nullptr);
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    const LayoutEdge& e = plan.edges[i];
    if (e.kind == EdgeKind::link || !gv_nodes[static_cast<size_t>(e.from)] || !gv_nodes[static_cast<size_t>(e.to)]) continue;
    std::string name = "e" + std::to_string(i);
    // Gradients flow against the forward direction: given to dot reversed, the gradient of node
    // k sits next to node k.
    const bool rev = in.reverse_gradients && reversed_edge(plan, e);
    Agnode_t* tail = gv_nodes[static_cast<size_t>(rev ? e.to : e.from)];
    Agnode_t* head = gv_nodes[static_cast<size_t>(rev ? e.from : e.to)];
    Agedge_t* ge = agedge(root, tail, head, const_cast<char*>(name.c_str()), 1);
    // No arrows for Graphviz to clip (the view draws its own heads at the splines' ends):
    // Graphviz 2.42 corrupts memory clipping arrows of reversed edges inside clusters.
    set(ge, "dir", "none");
    // Shapes go in xlabels, placed after layout where they overlap nothing. (Real labels make dot
    // add label nodes, and Graphviz 2.42 double-frees those of edges within one rank.)
    if (in.edge_labels && e.kind == EdgeKind::forward) {
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
  for (size_t i = 0; i < plan.boxes.size(); ++i)
    if (gv_nodes[i]) out.centers[i] = flip(ND_coord(gv_nodes[i]));
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    Agedge_t* ge = gv_edges[i];
    if (!ge) continue;
    if (ED_spl(ge) && ED_spl(ge)->size > 0) {
      const bezier& bz = ED_spl(ge)->list[0];
      for (int k = 0; k < bz.size; ++k) out.splines[i].push_back(flip(bz.list[k]));
      if (in.reverse_gradients && reversed_edge(plan, plan.edges[i])) std::reverse(out.splines[i].begin(), out.splines[i].end());
    }
    if (ED_xlabel(ge) && ED_xlabel(ge)->set) {
      out.label_pos[i] = flip(ED_xlabel(ge)->pos);
      out.has_label[i] = 1;
    }
  }
  for (size_t ci = 0; ci < gv_clusters.size(); ++ci) {
    if (!gv_clusters[ci]) continue;
    const boxf cb = GD_bb(gv_clusters[ci]);
    const Point a = flip(cb.LL), b = flip(cb.UR);
    out.cluster_box[ci] = {{std::min(a.x, b.x), std::min(a.y, b.y)}, {std::max(a.x, b.x), std::max(a.y, b.y)}};
  }
  gvFreeLayout(gvc, root);
  return out;
}

// [SECTION] lanes

constexpr float kLaneGap = 64.f;     // between the forward and the backward lane
constexpr float kGroupGapX = 12.f;   // between boxes of one backward group
constexpr float kGroupGapY = 14.f;

// The backward boxes drawn under one forward box (its anchor), on a small grid (see arrange_group).
struct Group {
  int anchor = -1;              // forward box, -1: placed beside the group it feeds
  std::vector<int> boxes;
  std::vector<Point> offset;    // per box: its centre from the group's top middle
  float width = 0, height = 0;
  float main_y = 0;             // the first receiving box's centre, from the group's top
  bool sink = false;            // passes no gradient on (a parameter's gradient: db, dW)
  float cx = 0, top = 0;        // placement
};

int anchor_of(const Plan& p, const Graph& g, int bi) {
  const LayoutBox& b = p.boxes[static_cast<size_t>(bi)];
  auto forward_box = [&](int box) { return box >= 0 && p.boxes[static_cast<size_t>(box)].lane == Lane::forward ? box : -1; };
  if (b.kind == BoxKind::folded_scope) {
    for (size_t i = 0; i < p.boxes.size(); ++i)
      if (p.boxes[i].key == "s:" + b.scope_key) return static_cast<int>(i);
    const Node& n = g.node(b.nodes.front());
    return n.forward_of >= 0 ? forward_box(p.node_box[static_cast<size_t>(n.forward_of)]) : -1;
  }
  if (b.node < 0) return -1;
  const Node& n = g.node(b.node);
  if (n.phase == Phase::backward && n.forward_of >= 0) return forward_box(p.node_box[static_cast<size_t>(n.forward_of)]);
  if (n.phase == Phase::update && !n.inputs.empty())  // an optimizer step sits under its parameter
    for (const auto& e : p.edges)
      if (e.to == bi && e.value == n.inputs[0]) return forward_box(e.from);
  return -1;
}

// A staircase, so no curve has to pass through a box of the group: each box that receives a
// gradient from outside the group gets a row and a column of its own (left to right), what it
// passes the gradient to continues leftwards in its row, and the boxes that only read forward
// values (the transposes of a matmul's backward) sit above the box they feed, nearest the
// forward lane. A matmul: Bᵀ Aᵀ / dA · / · dB.
void arrange_group(const Plan& p, Group& grp) {
  std::map<int, int> row, col;
  auto in_group = [&](int b) { return std::find(grp.boxes.begin(), grp.boxes.end(), b) != grp.boxes.end(); };
  std::vector<int> receivers;
  for (int b : grp.boxes)
    for (const auto& e : p.edges)
      if (e.to == b && e.kind == EdgeKind::gradient && !in_group(e.from)) {
        receivers.push_back(b);
        break;
      }
  if (receivers.empty()) receivers.push_back(grp.boxes.back());
  grp.sink = true;
  for (int b : grp.boxes)
    for (const auto& e : p.edges)
      if (e.from == b && e.kind == EdgeKind::gradient && !in_group(e.to)) grp.sink = false;
  for (size_t i = 0; i < receivers.size(); ++i) {
    row[receivers[i]] = static_cast<int>(i);
    col[receivers[i]] = static_cast<int>(i);
  }
  // What a receiver feeds continues leftwards in its row (boxes are in creation order).
  for (int b : grp.boxes)
    for (const auto& e : p.edges)
      if (e.to == b && e.kind != EdgeKind::link && !row.count(b) && row.count(e.from) && in_group(e.from)) {
        row[b] = row[e.from];
        col[b] = col[e.from] - 1;
      }
  // The rest feed a placed box: above it, one row further up per step away from it.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = grp.boxes.rbegin(); it != grp.boxes.rend(); ++it) {
      const int b = *it;
      if (row.count(b)) continue;
      for (const auto& e : p.edges)
        if (e.from == b && e.kind != EdgeKind::link && row.count(e.to) && in_group(e.to)) {
          row[b] = std::min(row[e.to], 0) - 1;
          col[b] = col[e.to];
          changed = true;
          break;
        }
    }
  }
  for (int b : grp.boxes)
    if (!row.count(b)) {
      row[b] = -1;
      col[b] = 0;
    }
  int r0 = 0, c0 = 0, r1 = 0, c1 = 0;
  for (int b : grp.boxes) {
    r0 = std::min(r0, row[b]);
    r1 = std::max(r1, row[b]);
    c0 = std::min(c0, col[b]);
    c1 = std::max(c1, col[b]);
  }
  const size_t rows = static_cast<size_t>(r1 - r0 + 1), cols = static_cast<size_t>(c1 - c0 + 1);
  std::vector<std::vector<std::vector<int>>> cell(rows, std::vector<std::vector<int>>(cols));
  for (int b : grp.boxes) cell[static_cast<size_t>(row[b] - r0)][static_cast<size_t>(col[b] - c0)].push_back(b);
  auto w = [&](int b) { return p.boxes[static_cast<size_t>(b)].width; };
  std::vector<float> col_w(cols, 0), row_h(rows, 0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) {
      float cw = 0;
      for (int b : cell[r][c]) {
        cw += w(b) + (cw > 0 ? kGroupGapX : 0);
        row_h[r] = std::max(row_h[r], p.boxes[static_cast<size_t>(b)].height);
      }
      col_w[c] = std::max(col_w[c], cw);
    }
  for (size_t c = 0; c < cols; ++c) grp.width += col_w[c] + (c ? kGroupGapX : 0);
  for (size_t r = 0; r < rows; ++r) grp.height += row_h[r] + (r ? kGroupGapY : 0);
  grp.offset.assign(grp.boxes.size(), {});
  float y = 0;
  for (size_t r = 0; r < rows; ++r) {
    float x = -grp.width / 2;
    for (size_t c = 0; c < cols; ++c) {
      float cw = 0;
      for (int b : cell[r][c]) cw += w(b) + (cw > 0 ? kGroupGapX : 0);
      float bx = x + (col_w[c] - cw) / 2;
      for (int b : cell[r][c]) {
        const size_t k = static_cast<size_t>(std::find(grp.boxes.begin(), grp.boxes.end(), b) - grp.boxes.begin());
        grp.offset[k] = {bx + w(b) / 2, y + row_h[r] / 2};
        if (b == receivers.front()) grp.main_y = y + row_h[r] / 2;
        bx += w(b) + kGroupGapX;
      }
      x += col_w[c] + kGroupGapX;
    }
    y += row_h[r] + kGroupGapY;
  }
}

// Places a group at `top`, pushed down below each placed group it would overlap.
void place_group(std::vector<Group>& groups, size_t gi, float top, const std::vector<size_t>& placed) {
  Group& g = groups[gi];
  g.top = top;
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t pi : placed) {
      const Group& q = groups[pi];
      const bool x_overlap = std::abs(g.cx - q.cx) * 2 < g.width + q.width + 2 * kGroupGapX;
      const bool y_overlap = g.top < q.top + q.height + kGroupGapY && q.top < g.top + g.height + kGroupGapY;
      if (x_overlap && y_overlap) {
        g.top = q.top + q.height + kGroupGapY;
        moved = true;
      }
    }
  }
}

struct Rect {
  float l, t, r, b;
};
Rect rect_of(const LayoutBox& b) {
  return {b.center.x - b.width / 2, b.center.y - b.height / 2, b.center.x + b.width / 2, b.center.y + b.height / 2};
}

// Dot reserved `layout_w` for a box drawn narrower: its edges' ends move onto the drawn border.
void clip_to_box(std::vector<Point>& s, const LayoutBox& from, const LayoutBox& to) {
  if (s.size() < 4) return;
  auto clip = [](Point& end, Point& ctrl, const LayoutBox& b) {
    const float half = b.width / 2;
    const float dx = std::clamp(end.x, b.center.x - half, b.center.x + half) - end.x;
    end.x += dx;
    ctrl.x += dx;
  };
  clip(s.front(), s[1], from);
  clip(s.back(), s[s.size() - 2], to);
}

void lay_out_lanes(const Graph& g, const LayoutOptions& o, Plan& plan, GraphLayout& out) {
  const size_t nb = plan.boxes.size();
  // The backward boxes, grouped under their forward boxes.
  std::vector<Group> groups;
  std::map<int, size_t> group_of_anchor;
  std::vector<int> loose;  // backward boxes without a forward box (the seed, ...)
  std::vector<int> box_group(nb, -1);
  for (size_t i = 0; i < nb; ++i) {
    if (plan.boxes[i].lane != Lane::backward) continue;
    const int a = anchor_of(plan, g, static_cast<int>(i));
    if (a < 0) {
      loose.push_back(static_cast<int>(i));
      continue;
    }
    auto [it, fresh] = group_of_anchor.emplace(a, groups.size());
    if (fresh) groups.push_back(Group{a, {}, {}, 0, 0, 0, 0});
    groups[it->second].boxes.push_back(static_cast<int>(i));
    box_group[i] = static_cast<int>(it->second);
    plan.boxes[i].anchor = plan.boxes[static_cast<size_t>(a)].key;
  }
  for (auto& grp : groups) arrange_group(plan, grp);

  // The forward lane by dot, each box as wide as the group under it.
  DotInput in;
  in.boxes.assign(nb, 0);
  in.layout_width.assign(nb, 0);
  in.edge_labels = o.edge_labels;
  in.leaves_above = true;
  for (size_t i = 0; i < nb; ++i) {
    in.boxes[i] = plan.boxes[i].lane == Lane::forward;
    in.layout_width[i] = plan.boxes[i].width;
  }
  // (A group may reach into the gap between columns: half of it.)
  for (auto& grp : groups) {
    float& w = in.layout_width[static_cast<size_t>(grp.anchor)];
    w = std::max(w, grp.width - kRankSep / 2);
  }
  const bool any_forward = std::find(in.boxes.begin(), in.boxes.end(), 1) != in.boxes.end();
  DotOutput d;
  if (any_forward) d = run_dot(plan, in);
  for (size_t i = 0; i < nb; ++i)
    if (in.boxes[i]) plan.boxes[i].center = d.centers[i];

  // The backward lane: each group under its anchor, the boxes that pass the gradient on along
  // one line (as the forward pass runs along one), what only reads forward values above it, the
  // parameters' gradients below. Where groups would overlap, the one whose anchor is nearer the
  // forward lane's bottom keeps its place (a mirror image) and the other moves down.
  const float lane_top = any_forward ? d.height + kLaneGap : 0.f;
  float main_line = lane_top, row_half = 0;
  for (auto& grp : groups) {
    if (grp.sink) continue;
    main_line = std::max(main_line, lane_top + grp.main_y);
    for (int b : grp.boxes) row_half = std::max(row_half, plan.boxes[static_cast<size_t>(b)].height / 2);
  }
  std::vector<float> mirror(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const LayoutBox& a = plan.boxes[static_cast<size_t>(groups[gi].anchor)];
    groups[gi].cx = a.center.x;
    mirror[gi] = d.height - (a.center.y + a.height / 2) + (groups[gi].sink ? 1e6f : 0.f);
  }
  std::vector<size_t> order(groups.size()), placed;
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mirror[a] < mirror[b]; });
  for (size_t gi : order) {
    const Group& grp = groups[gi];
    const float top = grp.sink ? main_line + row_half + 2 * kGroupGapY : main_line - grp.main_y;
    place_group(groups, gi, std::max(lane_top, top), placed);
    placed.push_back(gi);
  }
  // Boxes without an anchor (the gradient seed) sit right of the group they feed.
  for (int b : loose) {
    Group grp{-1, {b}, {}, 0, 0, 0, 0};
    arrange_group(plan, grp);
    int target = -1;
    for (const auto& e : plan.edges)
      if (e.from == b && e.kind != EdgeKind::link && box_group[static_cast<size_t>(e.to)] >= 0) target = box_group[static_cast<size_t>(e.to)];
    float top = main_line - grp.height / 2;
    if (target >= 0) {  // under the right end of the group it feeds, where backward starts
      const Group& t = groups[static_cast<size_t>(target)];
      grp.cx = t.cx + t.width / 2 - grp.width / 2;
      top = t.top + t.height + kGroupGapY;
    } else {
      grp.cx = (any_forward ? d.width : 0.f) + grp.width / 2 + kGroupGapX;
    }
    box_group[static_cast<size_t>(b)] = static_cast<int>(groups.size());
    groups.push_back(std::move(grp));
    place_group(groups, groups.size() - 1, top, placed);
    placed.push_back(groups.size() - 1);
  }
  for (auto& grp : groups)
    for (size_t k = 0; k < grp.boxes.size(); ++k)
      plan.boxes[static_cast<size_t>(grp.boxes[k])].center = {grp.cx + grp.offset[k].x, grp.top + grp.offset[k].y};
  if (!groups.empty()) out.backward_lane_top = lane_top;

  // Curves: dot's for the forward lane; the others routed between the placed boxes, the
  // short ones (within a group) first.
  std::vector<size_t> route;
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    LayoutEdge& e = plan.edges[i];
    const LayoutBox& from = plan.boxes[static_cast<size_t>(e.from)];
    const LayoutBox& to = plan.boxes[static_cast<size_t>(e.to)];
    if (e.kind == EdgeKind::link) {
      const Rect a = rect_of(from), b = rect_of(to);
      e.spline = {{from.center.x, a.t}, {from.center.x, a.t - 30}, {to.center.x, b.b + 30}, {to.center.x, b.b}};
    } else if (i < d.splines.size() && !d.splines[i].empty()) {  // no dot run without forward boxes
      e.spline = d.splines[i];
      clip_to_box(e.spline, from, to);
      e.label_pos = d.label_pos[i];
      e.has_label_pos = d.has_label[i];
      e.arrow_tip = e.spline.back();
      e.has_arrow = e.spline.size() >= 4;
    } else {
      route.push_back(i);
    }
  }
  auto span = [&](size_t i) {
    const LayoutEdge& e = plan.edges[i];
    const Point a = plan.boxes[static_cast<size_t>(e.from)].center, b = plan.boxes[static_cast<size_t>(e.to)].center;
    return std::abs(a.x - b.x) + std::abs(a.y - b.y) + (e.kind == EdgeKind::saved ? 1e5f : 0.f);
  };
  std::stable_sort(route.begin(), route.end(), [&](size_t a, size_t b) { return span(a) < span(b); });
  route_edges(plan.boxes, plan.edges, route);
  for (size_t ci = 0; ci < plan.clusters.size() && any_forward; ++ci) {
    const auto& [mn, mx] = d.cluster_box[ci];
    if (mn.x > mx.x) continue;
    const PlannedCluster& c = plan.clusters[ci];
    out.clusters.push_back({c.scope, c.node, c.key, c.loop, c.iterations, c.label, mn, mx});
  }
}

// Before the lanes (and for the backward pass alone): one dot layout of every box.
void lay_out_with_dot(Plan& plan, const LayoutOptions& o, GraphLayout& out) {
  DotInput in;
  in.boxes.assign(plan.boxes.size(), 1);
  in.layout_width.resize(plan.boxes.size());
  for (size_t i = 0; i < plan.boxes.size(); ++i) in.layout_width[i] = plan.boxes[i].width;
  in.reverse_gradients = true;
  in.edge_labels = o.edge_labels;
  // Backward boxes stay out of the frames: the backward pass reads as its own lane.
  DotOutput d = run_dot(plan, in);
  for (size_t i = 0; i < plan.boxes.size(); ++i) plan.boxes[i].center = d.centers[i];
  for (size_t i = 0; i < plan.edges.size(); ++i) {
    LayoutEdge& e = plan.edges[i];
    if (e.kind == EdgeKind::link) {  // one curve bowing away from the flow, from centre to centre
      const Point a = plan.boxes[static_cast<size_t>(e.from)].center, b = plan.boxes[static_cast<size_t>(e.to)].center;
      const float bow = 0.25f * (std::abs(b.x - a.x) + std::abs(b.y - a.y)) + 20.f;
      e.spline = {a, {a.x, a.y + bow}, {b.x, b.y + bow}, b};
      continue;
    }
    e.spline = d.splines[i];
    if (e.spline.size() >= 4) {
      e.arrow_tip = e.spline.back();
      e.has_arrow = true;
    }
    e.label_pos = d.label_pos[i];
    e.has_label_pos = d.has_label[i];
  }
  for (size_t ci = 0; ci < plan.clusters.size(); ++ci) {
    const auto& [mn, mx] = d.cluster_box[ci];
    if (mn.x > mx.x) continue;
    const PlannedCluster& c = plan.clusters[ci];
    out.clusters.push_back({c.scope, c.node, c.key, c.loop, c.iterations, c.label, mn, mx});
  }
}

// Moves everything so the figure starts at (0, 0), and measures it.
// Above the forward lane, the band its title ("forward pass →") is drawn in at the figure's
// left edge: without it the title ran into the first input's box.
constexpr float kLaneTitleBand = 22.f;

// Moves the layout to start at (0, 0) and sets its size: boxes, frames, curves and edge labels
// (a label hanging past the leftmost box was cut at the figure's edge), and the lanes' title band.
void normalise(GraphLayout& out, const LayoutOptions& o) {
  float x0 = 1e30f, y0 = 1e30f, x1 = -1e30f, y1 = -1e30f;
  auto grow = [&](float x, float y) {
    x0 = std::min(x0, x);
    y0 = std::min(y0, y);
    x1 = std::max(x1, x);
    y1 = std::max(y1, y);
  };
  for (const auto& b : out.boxes) {
    grow(b.center.x - b.width / 2, b.center.y - b.height / 2);
    grow(b.center.x + b.width / 2, b.center.y + b.height / 2);
  }
  for (const auto& c : out.clusters) {
    grow(c.min.x, c.min.y);
    grow(c.max.x, c.max.y);
  }
  for (const auto& e : out.edges) {
    if (e.link) continue;
    for (const auto& p : e.spline) grow(p.x, p.y);
    if (e.has_label_pos && !e.label.empty()) {
      const float half = (o.text_width ? o.text_width(e.label) : 6.f * static_cast<float>(e.label.size())) / 2;
      grow(e.label_pos.x - half, e.label_pos.y - o.line_height / 2);
      grow(e.label_pos.x + half, e.label_pos.y + o.line_height / 2);
    }
  }
  if (x0 > x1) return;
  if (out.backward_lane_top >= 0) y0 -= kLaneTitleBand;
  auto move = [&](Point& p) { p = {p.x - x0, p.y - y0}; };
  for (auto& b : out.boxes) move(b.center);
  for (auto& c : out.clusters) {
    move(c.min);
    move(c.max);
  }
  for (auto& e : out.edges) {
    for (auto& p : e.spline) move(p);
    move(e.label_pos);
    move(e.arrow_tip);
  }
  if (out.backward_lane_top >= 0) out.backward_lane_top -= y0;
  out.width = x1 - x0;
  out.height = y1 - y0;
}

}  // namespace

// [SECTION] layout_graph

GraphLayout layout_graph(const Graph& g, const LayoutOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Plan plan = plan_boxes(g, o);
  GraphLayout out;
  out.node_box = plan.node_box;
  if (plan.boxes.empty()) return out;
  // The lanes hang the backward pass under the forward one. With nothing in the forward lane
  // (after a training loop inside a function only the last step's updates are held) there is
  // nothing to hang it from: one dot layout, as for the backward pass alone.
  const bool forward_lane =
      std::any_of(plan.boxes.begin(), plan.boxes.end(), [](const LayoutBox& b) { return b.lane == Lane::forward; });
  if (o.lanes && o.filter != PhaseFilter::backward_only && forward_lane) lay_out_lanes(g, o, plan, out);
  else lay_out_with_dot(plan, o, out);
  out.boxes = std::move(plan.boxes);
  out.edges = std::move(plan.edges);
  normalise(out, o);
  out.layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace opscope::viz
