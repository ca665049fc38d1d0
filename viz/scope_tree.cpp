// [SECTION] index
//   scopes        which frame each forward box is laid out in (a weight: where its readers are)
//   jobs          which frames are dot runs of their own, which are drawn by dot inside one
//   items         the boxes, frames and ports of each run
//   edges         each edge split into pieces where it crosses frames
//   sizes         a run's frames sized by the runs before it
//   placement     every run placed in its parent's frame; the pieces joined again
#include "viz/scope_tree.h"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

namespace opscope::viz {

namespace {

// The frame's title as dot reserves room for it (fontsize 20, as the view draws it with [fold]).
std::string native_label(const PlannedCluster& c) {
  return c.label + (c.loop ? "  ×" + std::to_string(c.iterations) : c.node >= 0 ? "  [collapse]" : "  [fold]");
}

class Builder {
 public:
  Builder(const FigurePlan& plan, const std::vector<float>& widths) : p_(plan), widths_(widths) {
    const size_t nc = plan.clusters.size();
    depth_.assign(nc, 0);
    for (size_t c = 0; c < nc; ++c)
      for (int a = plan.clusters[c].parent; a >= 0; a = plan.clusters[static_cast<size_t>(a)].parent) ++depth_[c];
    children_.assign(nc + 1, {});
    for (size_t c = 0; c < nc; ++c)
      children_[static_cast<size_t>(plan.clusters[c].parent + 1)].push_back(static_cast<int>(c));
  }

  ScopeTree build() {
    place_boxes();
    t_.job_of_box.assign(p_.boxes.size(), -1);
    t_.job_of_cluster.assign(p_.clusters.size(), -1);
    job_cluster_.assign(p_.clusters.size(), -1);
    const bool flat = subtree_[0] <= p_.flat_limit;
    make_job(-1, flat);
    for (size_t i = 0; i < p_.boxes.size(); ++i)
      if (in_lane_[i]) t_.job_of_box[i] = scope_[i] < 0 ? root_job_ : job_cluster_[static_cast<size_t>(scope_[i])];
    add_items();
    add_edges();
    add_same_columns();
    return std::move(t_);
  }

 private:
  // [SECTION] scopes

  int parent(int c) const { return c < 0 ? -1 : p_.clusters[static_cast<size_t>(c)].parent; }
  int depth(int c) const { return c < 0 ? -1 : depth_[static_cast<size_t>(c)]; }
  int lca(int a, int b) const {
    while (a != b) {
      if (depth(a) >= depth(b)) a = parent(a);
      else b = parent(b);
    }
    return a;
  }

  // Each box in the lane and the frame it sits in. In a figure laid out in several runs a weight
  // or a constant sits in the innermost frame holding all of its readers (a layer's weights
  // inside the layer: no curve from outside every frame into each); a figure small enough for
  // one run keeps them outside its frames, as dot has always drawn it.
  void place_boxes() {
    const size_t nb = p_.boxes.size();
    in_lane_.assign(nb, 0);
    scope_.assign(nb, -1);
    int boxes = 0;
    for (size_t i = 0; i < nb; ++i) {
      in_lane_[i] = p_.one_dot || p_.boxes[i].lane == Lane::forward;
      scope_[i] = p_.box_cluster[i];
      boxes += in_lane_[i];
    }
    if (!p_.one_dot && boxes > p_.flat_limit) move_leaves_in();
    subtree_.assign(p_.clusters.size() + 1, 0);
    for (size_t i = 0; i < nb; ++i) {
      if (!in_lane_[i]) continue;
      for (int c = scope_[i]; c >= 0; c = parent(c)) ++subtree_[static_cast<size_t>(c + 1)];
      ++subtree_[0];
    }
  }

  void move_leaves_in() {
    std::vector<int> at(p_.boxes.size(), -2);  // per leaf: the innermost frame of its readers so far
    for (const auto& e : p_.edges) {
      const auto from = static_cast<size_t>(e.from);
      const LayoutBox& b = p_.boxes[from];
      if (e.kind == EdgeKind::link || !in_lane_[static_cast<size_t>(e.to)] || !in_lane_[from] || b.value < 0 ||
          p_.box_cluster[from] >= 0 || (b.kind != BoxKind::parameter && b.kind != BoxKind::constant))
        continue;
      const int s = scope_[static_cast<size_t>(e.to)];
      at[from] = at[from] == -2 ? s : lca(at[from], s);
    }
    for (size_t i = 0; i < at.size(); ++i)
      if (at[i] >= 0) scope_[i] = at[i];
  }

  // [SECTION] jobs

  // A job for cluster c (-1: the root), its children first. `flat`: c's whole subtree in one
  // dot run, its nested calls as dot's frames.
  int make_job(int c, bool flat) {
    ScopeTree::Job job;
    job.cluster = c;
    job.scope = c < 0 ? "" : p_.clusters[static_cast<size_t>(c)].key;
    std::vector<int> kids;
    if (flat) {
      std::function<void(int)> native = [&](int k) {
        for (int ch : children_[static_cast<size_t>(k + 1)]) {
          if (subtree_[static_cast<size_t>(ch + 1)] == 0) continue;
          job.native.push_back(ch);
          native(ch);
        }
      };
      native(c);
    } else {
      // Every call its own run: dot places frames of its own differently from one run to the next
      // (Graphviz 2.42 orders them by where they sit in memory), so a figure made of runs is only
      // the same each time without them.
      for (int ch : children_[static_cast<size_t>(c + 1)])
        if (subtree_[static_cast<size_t>(ch + 1)] > 0) kids.push_back(make_job(ch, false));
    }
    const int index = static_cast<int>(t_.jobs.size());
    for (int k : kids) t_.jobs[static_cast<size_t>(k)].parent = index;
    if (c >= 0) {
      job_cluster_[static_cast<size_t>(c)] = index;
      t_.job_of_cluster[static_cast<size_t>(c)] = index;
    } else {
      root_job_ = index;
    }
    for (int n : job.native) job_cluster_[static_cast<size_t>(n)] = index;
    for (int n : job.native) job.graph.clusters.push_back({native_label(p_.clusters[static_cast<size_t>(n)]), -1});
    for (size_t k = 0; k < job.native.size(); ++k) {  // a native frame inside another
      const int up = parent(job.native[k]);
      const auto it = std::find(job.native.begin(), job.native.end(), up);
      job.graph.clusters[k].parent = it == job.native.end() ? -1 : static_cast<int>(it - job.native.begin());
    }
    job.graph.scope = job.scope;
    // Without shape labels (a compact figure) dot's columns need no room for them.
    if (!p_.edge_labels) job.graph.dot_attributes.push_back({"ranksep", "0.15"});
    job.box_item.assign(p_.boxes.size(), -1);
    t_.jobs.push_back(std::move(job));
    return index;
  }

  int job_parent(int j) const { return t_.jobs[static_cast<size_t>(j)].parent; }
  int job_depth(int j) const {
    int d = 0;
    for (int a = job_parent(j); a >= 0; a = job_parent(a)) ++d;
    return d;
  }

  // [SECTION] items

  // Boxes in plan order; a child job's frame where its first box would be (dot keeps creation order).
  void add_items() {
    for (size_t i = 0; i < p_.boxes.size(); ++i) {
      const int j = t_.job_of_box[i];
      if (j < 0) continue;
      ScopeTree::Job& job = t_.jobs[static_cast<size_t>(j)];
      job.box_item[i] = static_cast<int>(job.graph.items.size());
      ScopeItem it;
      it.key = p_.boxes[i].key;
      it.width = widths_[i];
      it.height = p_.boxes[i].height;
      it.cluster = native_index(job, scope_[i]);
      job.graph.items.push_back(std::move(it));
      for (int a = j; job_parent(a) >= 0; a = job_parent(a)) frame_item(job_parent(a), a);
    }
  }

  int native_index(const ScopeTree::Job& job, int cluster) const {
    const auto it = std::find(job.native.begin(), job.native.end(), cluster);
    return it == job.native.end() ? -1 : static_cast<int>(it - job.native.begin());
  }

  // The item of child job `child` in job `j`, made on first use.
  int frame_item(int j, int child) {
    ScopeTree::Job& job = t_.jobs[static_cast<size_t>(j)];
    for (size_t k = 0; k < job.child_job.size(); ++k)
      if (job.child_job[k] == child) return job.child_item[k];
    ScopeItem it;
    it.key = "frame:" + t_.jobs[static_cast<size_t>(child)].scope;
    it.kind = ScopeItem::frame;
    job.child_item.push_back(static_cast<int>(job.graph.items.size()));
    job.child_job.push_back(child);
    job.graph.items.push_back(std::move(it));
    return job.child_item.back();
  }

  int port(int j, int box, ScopeItem::Kind kind) {
    const auto key = std::make_tuple(j, box, static_cast<int>(kind));
    if (auto it = ports_.find(key); it != ports_.end()) return it->second;
    ScopeTree::Job& job = t_.jobs[static_cast<size_t>(j)];
    ScopeItem it;
    it.key = (kind == ScopeItem::port_in ? "in:" : "out:") + p_.boxes[static_cast<size_t>(box)].key;
    it.kind = kind;
    job.graph.items.push_back(std::move(it));
    return ports_[key] = static_cast<int>(job.graph.items.size()) - 1;
  }

  // [SECTION] edges

  // Box `box`'s item in job j: the box itself, or the frame of the child job (`below`) holding it.
  int item_in(int j, int box, int below) {
    return below < 0 ? t_.jobs[static_cast<size_t>(j)].box_item[static_cast<size_t>(box)] : frame_item(j, below);
  }

  int add_edge(int j, int from, int to, const std::string& label, bool reversed) {
    auto& g = t_.jobs[static_cast<size_t>(j)].graph;
    g.edges.push_back({from, to, label, reversed});
    return static_cast<int>(g.edges.size()) - 1;
  }

  // The same piece serves every edge of one value through it (one curve into a frame fans out inside).
  int shared_edge(int j, int from, int to, int value_box, const std::string& label, bool* fresh) {
    const auto key = std::make_tuple(j, from, to, value_box);
    auto it = shared_.find(key);
    *fresh = it == shared_.end();
    if (!*fresh) return it->second;
    return shared_[key] = add_edge(j, from, to, label, false);
  }

  void add_edges() {
    t_.pieces.assign(p_.edges.size(), {});
    for (size_t ei = 0; ei < p_.edges.size(); ++ei) {
      const LayoutEdge& e = p_.edges[ei];
      if (e.kind == EdgeKind::link) continue;
      const int u = e.from, v = e.to;
      const int ju = t_.job_of_box[static_cast<size_t>(u)], jv = t_.job_of_box[static_cast<size_t>(v)];
      if (ju < 0 || jv < 0) continue;
      const bool backward = p_.boxes[static_cast<size_t>(u)].lane == Lane::backward &&
                            p_.boxes[static_cast<size_t>(v)].lane == Lane::backward;
      const std::string label = p_.edge_labels && e.kind == EdgeKind::forward ? e.label : "";
      auto& pieces = t_.pieces[ei];
      if (ju == jv) {
        const auto& job = t_.jobs[static_cast<size_t>(ju)];
        const int edge = add_edge(ju, job.box_item[static_cast<size_t>(u)], job.box_item[static_cast<size_t>(v)], label,
                                  p_.one_dot && e.kind == EdgeKind::gradient && backward);
        pieces.push_back({ju, edge, true});
        continue;
      }
      std::vector<int> up{ju}, down{jv};  // the jobs from u's up to (not) their common one, and v's
      while (up.back() != down.back()) {
        if (job_depth(up.back()) >= job_depth(down.back())) up.push_back(job_parent(up.back()));
        else down.push_back(job_parent(down.back()));
      }
      const int top = up.back();
      up.pop_back();
      down.pop_back();
      bool fresh = false;
      for (size_t k = 0; k < up.size(); ++k) {  // out of each frame through its port on the right
        const int j = up[k];
        const int from = item_in(j, u, k == 0 ? -1 : up[k - 1]);
        pieces.push_back({j, shared_edge(j, from, port(j, u, ScopeItem::port_out), u, "", &fresh), false});
      }
      const int from = item_in(top, u, up.empty() ? -1 : up.back());
      const int to = item_in(top, v, down.empty() ? -1 : down.back());
      const int edge = shared_edge(top, from, to, u, label, &fresh);
      pieces.push_back({top, edge, fresh});
      for (size_t k = down.size(); k-- > 0;) {  // into each frame through its port on the left
        const int j = down[k];
        const int to_item = item_in(j, v, k == 0 ? -1 : down[k - 1]);
        pieces.push_back({j, shared_edge(j, port(j, u, ScopeItem::port_in), to_item, u, "", &fresh), false});
      }
    }
  }

  // A parameter or input read by one box only sits right above it (the lanes' figure).
  void add_same_columns() {
    if (p_.one_dot) return;
    std::vector<int> readers(p_.boxes.size(), 0), reader(p_.boxes.size(), -1);
    for (const auto& e : p_.edges)
      if (e.kind == EdgeKind::forward) {
        ++readers[static_cast<size_t>(e.from)];
        reader[static_cast<size_t>(e.from)] = e.to;
      }
    for (size_t i = 0; i < p_.boxes.size(); ++i) {
      const LayoutBox& b = p_.boxes[i];
      const int j = t_.job_of_box[i];
      if (j < 0 || (b.kind != BoxKind::parameter && b.kind != BoxKind::input) || b.value < 0 || readers[i] != 1)
        continue;
      const int r = reader[i];
      if (t_.job_of_box[static_cast<size_t>(r)] != j) continue;
      ScopeTree::Job& job = t_.jobs[static_cast<size_t>(j)];
      const int li = job.box_item[i], ri = job.box_item[static_cast<size_t>(r)];
      if (job.graph.items[static_cast<size_t>(li)].cluster >= 0 ||
          job.graph.items[static_cast<size_t>(ri)].cluster >= 0)
        continue;
      job.graph.same_column.push_back({li, ri});
    }
  }

  const FigurePlan& p_;
  const std::vector<float>& widths_;
  ScopeTree t_;
  std::vector<int> depth_;
  std::vector<std::vector<int>> children_;  // per cluster + 1 (0: the root)
  std::vector<char> in_lane_;
  std::vector<int> scope_;  // per box: its frame, -1 the root
  std::vector<int> subtree_;  // per cluster + 1: boxes inside it, nested frames included
  std::vector<int> job_cluster_;  // per cluster: the job laying out its boxes
  int root_job_ = -1;
  std::map<std::tuple<int, int, int>, int> ports_;
  std::map<std::tuple<int, int, int, int>, int> shared_;
};

// [SECTION] placement

Point add(Point a, Point b) { return {a.x + b.x, a.y + b.y}; }

// Joins curve b onto curve a with a straight piece between a's end and b's start.
void join(std::vector<Point>& a, const std::vector<Point>& b) {
  if (b.size() < 4) return;
  if (a.size() < 4) {
    a = b;
    return;
  }
  const Point p = a.back(), q = b.front();
  a.push_back({p.x + (q.x - p.x) / 3, p.y + (q.y - p.y) / 3});
  a.push_back({p.x + 2 * (q.x - p.x) / 3, p.y + 2 * (q.y - p.y) / 3});
  a.insert(a.end(), b.begin(), b.end());
}

}  // namespace

ScopeTree build_scope_tree(const FigurePlan& plan, const std::vector<float>& widths) {
  return Builder(plan, widths).build();
}

// [SECTION] sizes

ScopeGraph sized_graph(const ScopeTree& t, size_t job, const std::vector<ScopeLayout>& done, const FigurePlan& plan) {
  const ScopeTree::Job& j = t.jobs[job];
  ScopeGraph g = j.graph;
  for (size_t k = 0; k < j.child_item.size(); ++k) {
    const ScopeTree::Job& child = t.jobs[static_cast<size_t>(j.child_job[k])];
    const ScopeLayout& l = done[static_cast<size_t>(j.child_job[k])];
    ScopeItem& it = g.items[static_cast<size_t>(j.child_item[k])];
    const float title = plan.cluster_label_width[static_cast<size_t>(child.cluster)];
    it.width = std::max(l.width, title) + 2 * kFramePad;
    it.height = l.height + kFramePad + kFrameBand;
  }
  return g;
}

ForwardLane place_scopes(const ScopeTree& t, const std::vector<ScopeLayout>& done, const FigurePlan& plan) {
  ForwardLane out;
  out.centers.assign(plan.boxes.size(), {});
  out.splines.assign(plan.edges.size(), {});
  out.label_pos.assign(plan.edges.size(), {});
  out.has_label.assign(plan.edges.size(), 0);
  if (t.jobs.empty()) return out;
  // Each job's top left corner, parents first (the root is last); each frame's rectangle.
  std::vector<Point> origin(t.jobs.size());
  std::vector<std::pair<Point, Point>> frame(t.jobs.size());
  for (size_t j = t.jobs.size(); j-- > 0;) {
    const ScopeTree::Job& job = t.jobs[j];
    const ScopeLayout& l = done[j];
    for (size_t k = 0; k < job.child_item.size(); ++k) {
      const auto c = static_cast<size_t>(job.child_job[k]);
      const float w =
          std::max(done[c].width, plan.cluster_label_width[static_cast<size_t>(t.jobs[c].cluster)]) + 2 * kFramePad;
      const float h = done[c].height + kFramePad + kFrameBand;
      const Point centre = add(origin[j], l.centers[static_cast<size_t>(job.child_item[k])]);
      frame[c] = {{centre.x - w / 2, centre.y - h / 2}, {centre.x + w / 2, centre.y + h / 2}};
      origin[c] = {frame[c].first.x + kFramePad, frame[c].first.y + kFrameBand};
    }
  }
  for (size_t i = 0; i < plan.boxes.size(); ++i) {
    const int j = t.job_of_box[i];
    if (j < 0) continue;
    out.centers[i] =
        add(origin[static_cast<size_t>(j)],
            done[static_cast<size_t>(j)].centers[static_cast<size_t>(t.jobs[static_cast<size_t>(j)].box_item[i])]);
  }
  // Frames in the plan's order: a job's from its parent, a frame dot drew from dot.
  for (size_t c = 0; c < plan.clusters.size(); ++c) {
    std::pair<Point, Point> r{{1, 1}, {0, 0}};
    if (const int j = t.job_of_cluster[c]; j >= 0 && t.jobs[static_cast<size_t>(j)].parent >= 0)
      r = frame[static_cast<size_t>(j)];
    for (size_t j = 0; j < t.jobs.size() && r.first.x > r.second.x; ++j) {
      const auto& native = t.jobs[j].native;
      const auto it = std::find(native.begin(), native.end(), static_cast<int>(c));
      if (it == native.end()) continue;
      const auto& [mn, mx] = done[j].cluster_box[static_cast<size_t>(it - native.begin())];
      if (mn.x <= mx.x) r = {add(origin[j], mn), add(origin[j], mx)};
    }
    if (r.first.x > r.second.x) continue;
    const PlannedCluster& pc = plan.clusters[c];
    out.clusters.push_back(
        {pc.scope, pc.node, pc.key, pc.loop, pc.iterations, pc.label, r.first, r.second, plan.cluster_label_width[c]});
  }
  for (size_t ei = 0; ei < plan.edges.size(); ++ei)
    for (const ScopeTree::Piece& piece : t.pieces[ei]) {
      const auto j = static_cast<size_t>(piece.job);
      const auto k = static_cast<size_t>(piece.edge);
      std::vector<Point> s = done[j].splines[k];
      for (Point& q : s) q = add(origin[j], q);
      join(out.splines[ei], s);
      if (piece.labelled && done[j].has_label[k]) {
        out.label_pos[ei] = add(origin[j], done[j].label_pos[k]);
        out.has_label[ei] = 1;
      }
    }
  out.width = done.back().width;
  out.height = done.back().height;
  return out;
}

}  // namespace opscope::viz
