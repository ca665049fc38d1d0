// [SECTION] index
//   helpers    labels of values and dtypes, which nodes a filter shows
//   planner    the boxes the graph becomes (what graph_figure.h leaves in), their edges, frames
//   anchors    which forward box each backward box hangs under
//   plan       the planner's result as plain data
#include "viz/layout_plan.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "core/body.h"
#include "viz/graph_figure.h"

namespace opscope::viz {

namespace {

// [SECTION] helpers

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

// [SECTION] planner

// A name in a folded box's lines: its end, the part that tells it apart ("…layer_0.ln_1.weight").
constexpr size_t kDetailChars = 30, kValueNameChars = 14;
std::string shortened(const std::string& name, size_t most) {
  if (name.size() <= most) return name;
  size_t from = name.size() - (most - 1);
  while (from < name.size() && (static_cast<unsigned char>(name[from]) & 0xC0) == 0x80)
    ++from;  // a whole UTF-8 character
  return "…" + name.substr(from);
}

struct Plan {  // the planner's working state; the plan it hands on is a FigurePlan
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
  Planner(const Graph& g, const LayoutOptions& o)
      : g_(g), o_(o), fc_(figure_content(g, o.only_nodes)), loops_(loop_counts(g)) {
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
    b.height = static_cast<float>(lines) * o_.line_height +
               static_cast<float>(b.details.size()) * 0.9f * o_.line_height + 12.f;
  }

  // A compact figure titles an op by its name alone ("#9 layer_norm", "#21 mul"): its attributes
  // and the constants written in ("mul(·, 0.01562)") are in the tooltip and the inspector.
  void shorten_title(LayoutBox& b) const {
    const size_t open = b.title.find('(');
    if (!o_.compact || open == std::string::npos) return;
    b.full_title = b.title;
    b.title.erase(open);
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
          c.label =
              "loop: last of " + std::to_string(c.iterations) + (c.iterations == 1 ? " iteration" : " iterations");
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
    if (folded_at == path.size() && o_.expanded.count(n.id) &&
        add_expanded(n, forward ? cluster_of(path, path.size()) : -2))
      return;
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
      shorten_title(b);
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
      if (box_frames_[static_cast<size_t>(bi)] == -2)
        box_frames_[static_cast<size_t>(bi)] = cluster_of(path, folded_at);
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
      shorten_title(b);
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
          b.title = !bvi.name.empty()                                     ? bvi.name
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

  // A folded call's box says what goes in and out, how many ops it holds and its parameters.
  void describe_folded_boxes() {
    consumers_.assign(g_.num_values(), {});
    for (const Node& n : g_.nodes())
      for (int v : n.inputs) consumers_[static_cast<size_t>(v)].push_back(n.id);
    for (size_t bi = 0; bi < p_.boxes.size(); ++bi) {
      LayoutBox& b = p_.boxes[bi];
      if (b.kind != BoxKind::folded_scope) continue;
      if (b.phase == Phase::backward) {
        b.subtitle = std::to_string(b.nodes.size()) + (b.nodes.size() == 1 ? " op" : " ops");
        continue;
      }
      auto inside = [&](int node) { return p_.node_box[static_cast<size_t>(node)] == static_cast<int>(bi); };
      // A value as "name [shape]", its name cut to its end when long (an imported model's names
      // repeat the module path).
      auto value = [&](const std::string& name, const Shape& shape) {
        return (name.empty() ? std::string() : shortened(name, kValueNameChars) + " ") + shape_str(shape);
      };
      std::vector<std::string> ins, params, outs;
      std::vector<int> seen;
      for (int id : b.nodes)
        for (int v : g_.node(id).inputs) {
          const ValueInfo& vi = g_.value(v);
          if ((vi.producer >= 0 && inside(vi.producer)) || is_inline_constant(vi) ||
              std::find(seen.begin(), seen.end(), v) != seen.end())
            continue;
          seen.push_back(v);
          if (vi.producer < 0 && vi.kind == ValueKind::parameter) params.push_back(value_label(g_, v));
          else  // an unnamed value by the node that made it ("#0 [8, 16]"), not by its id
            ins.push_back(
                value(vi.name.empty() && vi.producer >= 0 ? "#" + std::to_string(vi.producer) : value_label(g_, v),
                      vi.meta.shape));
        }
      for (int id : b.nodes)
        for (int v : g_.node(id).outputs)
          for (int c : consumers_[static_cast<size_t>(v)])
            if (!inside(c) && g_.node(c).phase == Phase::forward && p_.node_box[static_cast<size_t>(c)] >= 0) {
              outs.push_back(value(g_.value(v).name, g_.value(v).meta.shape));
              break;
            }
      // At most `most` names, and no line much wider than the box's title: an imported model's
      // names ("encoder.layers.encoder_layer_0.ln_1.weight") made folded boxes 1000 px wide.
      auto join = [](const std::vector<std::string>& xs, size_t most) {
        std::string s;
        size_t shown = 0;
        for (; shown < xs.size() && shown < most; ++shown) {
          const std::string x = shortened(xs[shown], kDetailChars);
          if (shown > 0 && s.size() + x.size() > kDetailChars) break;
          s += (shown ? ", " : "") + x;
        }
        if (xs.size() > shown) s += ", +" + std::to_string(xs.size() - shown);
        return s;
      };
      b.subtitle = ins.empty() ? "" : "in " + join(ins, 2);
      if (!outs.empty()) b.details.push_back("out " + join(outs, 2));
      // The weights by name when their names are short (a script's w1, b1), else how many.
      const std::string named = join(params, 4);
      const bool by_name = named.find("…") == std::string::npos && named.find(", +") == std::string::npos;
      b.details.push_back(std::to_string(b.nodes.size()) + (b.nodes.size() == 1 ? " op" : " ops") +
                          (params.empty() ? ""
                           : by_name
                               ? " · params " + named
                               : " · " + std::to_string(params.size()) + (params.size() == 1 ? " param" : " params")));
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
      if (p_.boxes[static_cast<size_t>(r)].kind != BoxKind::folded_scope ||
          p_.boxes[static_cast<size_t>(r)].scope_key != key)
        return false;
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

// [SECTION] anchors

// The forward box a backward box is drawn under: its forward node's (a folded call's backward
// box: the call's forward box), an optimizer step under its parameter; -1: none. `forward_scope`:
// each folded call's forward box by its call key.
int anchor_of(const Plan& p, const Graph& g, int bi, const std::map<std::string, int>& forward_scope) {
  const LayoutBox& b = p.boxes[static_cast<size_t>(bi)];
  auto forward_box = [&](int box) {
    return box >= 0 && p.boxes[static_cast<size_t>(box)].lane == Lane::forward ? box : -1;
  };
  if (b.kind == BoxKind::folded_scope) {
    if (auto it = forward_scope.find(b.scope_key); it != forward_scope.end()) return it->second;
    const Node& n = g.node(b.nodes.front());
    return n.forward_of >= 0 ? forward_box(p.node_box[static_cast<size_t>(n.forward_of)]) : -1;
  }
  if (b.node < 0) return -1;
  const Node& n = g.node(b.node);
  if (n.phase == Phase::backward && n.forward_of >= 0)
    return forward_box(p.node_box[static_cast<size_t>(n.forward_of)]);
  if (n.phase == Phase::update && !n.inputs.empty())  // an optimizer step sits under its parameter
    for (const auto& e : p.edges)
      if (e.to == bi && e.value == n.inputs[0]) return forward_box(e.from);
  return -1;
}

// The widest text the saved-for-backward badge of `nodes` can show while the figure stands: every
// tensor they save held ("saved 1.5 KiB"; a part of it may read "1023.9 KiB" of a total in MiB, and
// backward only frees: "freed"), "" when they save nothing.
std::string widest_badge(const Graph& g, const std::vector<int>& nodes) {
  int64_t bytes = 0;
  bool saves = false;
  for (int id : nodes)
    for (const auto& st : g.node(id).saved) {
      saves = true;
      if (!g.has_value(st.value_id)) return "saved 1023.9 KiB";
      const ValueInfo& v = g.value(st.value_id);
      bytes += shape_numel(v.meta.shape) * static_cast<int64_t>(dtype_size(v.meta.dtype));
    }
  if (!saves) return {};
  return "saved " + (bytes < (1 << 20) ? bytes_str(bytes) : std::string("1023.9 KiB"));
}

}  // namespace

// [SECTION] plan

FigurePlan plan_figure(const Graph& g, const LayoutOptions& o) {
  Planner planner(g, o);
  Plan p = planner.plan();
  planner.assign_clusters(p);
  FigurePlan f;
  std::map<std::string, int> forward_scope;
  for (size_t i = 0; i < p.boxes.size(); ++i)
    if (p.boxes[i].kind == BoxKind::folded_scope && p.boxes[i].lane == Lane::forward)
      forward_scope[p.boxes[i].scope_key] = static_cast<int>(i);
  f.anchor.assign(p.boxes.size(), -1);
  for (size_t i = 0; i < p.boxes.size(); ++i)
    if (p.boxes[i].lane == Lane::backward) f.anchor[i] = anchor_of(p, g, static_cast<int>(i), forward_scope);
  f.boxes = std::move(p.boxes);
  f.edges = std::move(p.edges);
  f.node_box = std::move(p.node_box);
  f.clusters = std::move(p.clusters);
  f.box_cluster = std::move(p.box_cluster);
  // The lanes hang the backward pass under the forward one. With nothing in the forward lane
  // (after a training loop inside a function only the last step's updates are held) there is
  // nothing to hang it from: one dot layout, as for the backward pass alone.
  const bool forward_lane =
      std::any_of(f.boxes.begin(), f.boxes.end(), [](const LayoutBox& b) { return b.lane == Lane::forward; });
  f.one_dot = !(o.lanes && o.filter != PhaseFilter::backward_only && forward_lane);
  f.edge_labels = o.edge_labels && !o.compact;
  f.line_height = o.line_height;
  f.flat_limit = o.flat_limit;
  f.label_width.reserve(f.edges.size());
  for (auto& e : f.edges) {
    f.label_width.push_back(o.text_width ? o.text_width(e.label) : 6.f * static_cast<float>(e.label.size()));
    e.label_width = f.label_width.back();  // (kept with the edge: labels are placed again after the layout)
  }
  // Room for the saved-for-backward badge the view draws over a box's top-right corner (at 0.78 of
  // the text size), as wide as its text may grow while the layout stands, so that no edge label is
  // placed under it (layout_wrap.h).
  for (auto& b : f.boxes) {
    const std::string widest = b.node >= 0                       ? widest_badge(g, {b.node})
                               : b.kind == BoxKind::folded_scope ? widest_badge(g, b.nodes)
                                                                 : "";
    if (!widest.empty())
      b.badge_width = 0.78f * (o.text_width ? o.text_width(widest) : estimate_text_width(widest)) + 10.f;
  }
  // (The view draws a frame's title at 0.85 of the text size, with its "[fold]" after it.)
  for (const auto& c : f.clusters)
    f.cluster_label_width.push_back(0.85f * (o.text_width ? o.text_width(c.label + "  [collapse]")
                                                          : estimate_text_width(c.label + "  [collapse]")));
  return f;
}

}  // namespace opscope::viz
