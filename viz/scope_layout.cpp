#include "viz/scope_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "viz/graphviz_context.h"

namespace opscope::viz {

namespace {

std::string inches(float px) { return std::to_string(px / 72.f); }

void set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

std::string num(float v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(v));
  return buf;
}

// A lone box: no dot run for it (a call of one op, a folded call's only child).
ScopeLayout lone_item(const ScopeGraph& g) {
  ScopeLayout out;
  const ScopeItem& it = g.items.front();
  out.centers = {{it.width / 2, it.height / 2}};
  out.width = it.width;
  out.height = it.height;
  return out;
}

}  // namespace

std::string ScopeGraph::signature() const {
  std::string s = scope + "\n";
  for (const auto& it : items)
    s += it.key + " " + std::to_string(static_cast<int>(it.kind)) + " " + num(it.width) + " " + num(it.height) + " " +
         std::to_string(it.cluster) + "\n";
  for (const auto& e : edges)
    s += std::to_string(e.from) + ">" + std::to_string(e.to) + (e.reversed ? "r " : " ") + e.label + "\n";
  for (const auto& c : clusters) s += "c " + std::to_string(c.parent) + " " + c.label + "\n";
  for (const auto& [a, b] : same_column) s += "s " + std::to_string(a) + " " + std::to_string(b) + "\n";
  for (const auto& [k, v] : dot_attributes) s += "a " + k + "=" + v + "\n";
  return s;
}

// Graphviz dot over the items and edges. (Graphviz 2.42's crashes shaped this: no arrows for it
// to clip, no `ordering=out` with clusters, shape labels as xlabels, no constraint=false edges.)
ScopeLayout lay_out_scope(const ScopeGraph& g) {
  const auto t0 = std::chrono::steady_clock::now();
  if (g.items.size() == 1 && g.edges.empty() && g.clusters.empty()) return lone_item(g);
  ScopeLayout out;
  out.centers.resize(g.items.size());
  out.splines.resize(g.edges.size());
  out.label_pos.resize(g.edges.size());
  out.has_label.assign(g.edges.size(), 0);
  out.cluster_box.assign(g.clusters.size(), {{1, 1}, {0, 0}});
  if (g.items.empty()) return out;
  std::lock_guard<std::mutex> graphviz(detail::graphviz_lock());  // Graphviz keeps global state
  GVC_t* gvc = detail::layout_context();
  Agraph_t* root = agopen(const_cast<char*>("opscope"), Agdirected, nullptr);
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> guard(root, agclose);
  set(root, "rankdir", "LR");
  set(root, "nodesep", "0.25");
  set(root, "forcelabels", "true");
  set(root, "ranksep", inches(kRankSep));
  for (const auto& [k, v] : g.dot_attributes) set(root, k.c_str(), v);

  std::vector<Agraph_t*> gv_clusters(g.clusters.size(), nullptr);
  std::function<Agraph_t*(int)> cluster = [&](int ci) -> Agraph_t* {
    if (ci < 0) return root;
    if (!gv_clusters[static_cast<size_t>(ci)]) {
      const ScopeCluster& c = g.clusters[static_cast<size_t>(ci)];
      Agraph_t* parent = cluster(c.parent);
      std::string name = "cluster_" + std::to_string(ci);
      Agraph_t* sg = agsubg(parent, const_cast<char*>(name.c_str()), 1);
      set(sg, "label", c.label);
      // Room above the boxes for the title and for the saved-for-backward badges over them.
      set(sg, "fontsize", "20");
      set(sg, "labeljust", "l");
      gv_clusters[static_cast<size_t>(ci)] = sg;
    }
    return gv_clusters[static_cast<size_t>(ci)];
  };

  std::vector<Agnode_t*> nodes(g.items.size(), nullptr);
  std::vector<Agnode_t*> ins, outs;
  for (size_t i = 0; i < g.items.size(); ++i) {
    const ScopeItem& it = g.items[i];
    Agnode_t* n = agnode(cluster(it.cluster), const_cast<char*>(it.key.c_str()), 1);
    set(n, "shape", "box");
    set(n, "fixedsize", "true");
    set(n, "label", "");
    const bool port = it.kind == ScopeItem::port_in || it.kind == ScopeItem::port_out;
    set(n, "width", inches(port ? 1.f : it.width));
    set(n, "height", inches(port ? 1.f : it.height));
    nodes[i] = n;
    if (it.kind == ScopeItem::port_in) ins.push_back(n);
    if (it.kind == ScopeItem::port_out) outs.push_back(n);
  }
  // Ports: where edges enter the frame on its left, where they leave it on its right.
  auto rank = [&](const std::vector<Agnode_t*>& ports, const char* name, const char* where) {
    if (ports.empty()) return;
    Agraph_t* sg = agsubg(root, const_cast<char*>(name), 1);
    set(sg, "rank", where);
    for (Agnode_t* n : ports) agsubnode(sg, n, 1);
  };
  rank(ins, "ports_in", "min");
  rank(outs, "ports_out", "max");
  // A parameter or input read by one box only sits right above it (the same column), as a
  // textbook figure hangs a layer's weights over it.
  int same = 0;
  for (const auto& [leaf, reader] : g.same_column) {
    std::string name = "same" + std::to_string(same++);
    Agraph_t* sg = agsubg(root, const_cast<char*>(name.c_str()), 1);
    set(sg, "rank", "same");
    agsubnode(sg, nodes[static_cast<size_t>(leaf)], 1);
    agsubnode(sg, nodes[static_cast<size_t>(reader)], 1);
  }
  std::vector<Agedge_t*> edges(g.edges.size(), nullptr);
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const ScopeEdge& e = g.edges[i];
    std::string name = "e" + std::to_string(i);
    Agnode_t* tail = nodes[static_cast<size_t>(e.reversed ? e.to : e.from)];
    Agnode_t* head = nodes[static_cast<size_t>(e.reversed ? e.from : e.to)];
    Agedge_t* ge = agedge(root, tail, head, const_cast<char*>(name.c_str()), 1);
    // No arrows for Graphviz to clip (the view draws its own heads at the splines' ends):
    // Graphviz 2.42 corrupts memory clipping arrows of reversed edges inside clusters.
    set(ge, "dir", "none");
    // Shapes go in xlabels, placed after layout where they overlap nothing. (Real labels make dot
    // add label nodes, and Graphviz 2.42 double-frees those of edges within one rank.)
    if (!e.label.empty()) {
      set(ge, "xlabel", e.label);
      set(ge, "fontsize", "11");
      set(ge, "fontname", "Helvetica");
    }
    edges[i] = ge;
  }

  if (gvLayout(gvc, root, "dot") != 0) throw Error("Graphviz could not lay out the graph");
  const boxf bb = GD_bb(root);
  const float top = static_cast<float>(bb.UR.y), left = static_cast<float>(bb.LL.x);
  auto flip = [&](pointf p) { return Point{static_cast<float>(p.x) - left, top - static_cast<float>(p.y)}; };
  out.width = static_cast<float>(bb.UR.x - bb.LL.x);
  out.height = static_cast<float>(bb.UR.y - bb.LL.y);
  for (size_t i = 0; i < g.items.size(); ++i) out.centers[i] = flip(ND_coord(nodes[i]));
  for (size_t i = 0; i < g.edges.size(); ++i) {
    Agedge_t* ge = edges[i];
    if (ED_spl(ge) && ED_spl(ge)->size > 0) {
      const bezier& bz = ED_spl(ge)->list[0];
      for (int k = 0; k < bz.size; ++k) out.splines[i].push_back(flip(bz.list[k]));
      if (g.edges[i].reversed) std::reverse(out.splines[i].begin(), out.splines[i].end());
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
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace opscope::viz
