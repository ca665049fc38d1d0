#include "viz/concept_map_layout.h"

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "viz/graphviz_context.h"

namespace opscope::viz {

namespace {

void set(void* obj, const char* name, const std::string& value) {
  agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

std::string inches(float px) { return std::to_string(px / 72.f); }

}  // namespace

ConceptLayout layout_concepts(const ConceptFigure& f, const std::function<float(const std::string&)>& text_width,
                              float line_height) {
  ConceptLayout out;
  const size_t n = f.nodes.size();
  out.centers.resize(n);
  out.widths.resize(n);
  out.heights.resize(n);
  out.splines.resize(f.edges.size() + f.group_edges.size());
  out.group_boxes.assign(f.groups.size(), {{1, 1}, {0, 0}});
  if (n == 0) return out;
  for (size_t i = 0; i < n; ++i) {
    float w = 0;
    for (size_t k = 0; k < f.nodes[i].lines.size(); ++k)
      w = std::max(w, text_width(f.nodes[i].lines[k]) * (k ? 0.85f : 1.f));
    out.widths[i] = std::max(90.f, w + 36.f);  // room for the lesson badge
    out.heights[i] = line_height * (1.f + 0.9f * static_cast<float>(f.nodes[i].lines.size() - 1)) + 18.f;
  }
  std::lock_guard<std::mutex> graphviz(detail::graphviz_lock());  // (a layout job may be running)
  GVC_t* gvc = detail::layout_context();
  Agraph_t* root = agopen(const_cast<char*>("concepts"), Agdirected, nullptr);
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> guard(root, agclose);
  set(root, "rankdir", "LR");
  set(root, "nodesep", "0.22");
  set(root, "ranksep", "0.3");
  set(root, "compound", "true");  // an arrow may end at a group's frame
  std::vector<Agraph_t*> groups(f.groups.size());
  for (size_t g = 0; g < f.groups.size(); ++g) {
    std::string name = "cluster_" + std::to_string(g);
    groups[g] = agsubg(root, const_cast<char*>(name.c_str()), 1);
    set(groups[g], "label", f.groups[g]);
    set(groups[g], "fontsize", "20");  // room for the frame's title, drawn by the view
    set(groups[g], "labeljust", "l");
  }
  std::vector<Agnode_t*> nodes(n);
  for (size_t i = 0; i < n; ++i) {
    const int g = f.nodes[i].group;
    Agraph_t* parent = g >= 0 && static_cast<size_t>(g) < groups.size() ? groups[static_cast<size_t>(g)] : root;
    const std::string name = "c" + std::to_string(i);
    nodes[i] = agnode(parent, const_cast<char*>(name.c_str()), 1);
    set(nodes[i], "shape", "box");
    set(nodes[i], "fixedsize", "true");
    set(nodes[i], "label", "");
    set(nodes[i], "width", inches(out.widths[i]));
    set(nodes[i], "height", inches(out.heights[i]));
  }
  std::vector<Agedge_t*> edges(f.edges.size());
  for (size_t e = 0; e < f.edges.size(); ++e) {
    const std::string name = "e" + std::to_string(e);
    edges[e] = agedge(root, nodes[static_cast<size_t>(f.edges[e].first)], nodes[static_cast<size_t>(f.edges[e].second)],
                      const_cast<char*>(name.c_str()), 1);
    set(edges[e], "dir", "none");  // the view draws the heads
  }
  // One arrow into a group's frame stands for its whole group building on a concept.
  for (size_t e = 0; e < f.group_edges.size(); ++e) {
    const auto [from, g] = f.group_edges[e];
    size_t first = n;
    for (size_t i = 0; i < n && first == n; ++i)
      if (f.nodes[i].group == g) first = i;
    if (first == n) {
      edges.push_back(nullptr);
      continue;
    }
    const std::string name = "g" + std::to_string(e);
    Agedge_t* ge = agedge(root, nodes[static_cast<size_t>(from)], nodes[first], const_cast<char*>(name.c_str()), 1);
    set(ge, "dir", "none");
    set(ge, "lhead", "cluster_" + std::to_string(g));
    edges.push_back(ge);
  }
  if (gvLayout(gvc, root, "dot") != 0) throw Error("Graphviz could not lay out the knowledge map");
  const boxf bb = GD_bb(root);
  auto flip = [&](pointf p) { return Point{static_cast<float>(p.x - bb.LL.x), static_cast<float>(bb.UR.y - p.y)}; };
  out.width = static_cast<float>(bb.UR.x - bb.LL.x);
  out.height = static_cast<float>(bb.UR.y - bb.LL.y);
  for (size_t i = 0; i < n; ++i) out.centers[i] = flip(ND_coord(nodes[i]));
  for (size_t e = 0; e < edges.size(); ++e)
    if (edges[e] && ED_spl(edges[e]) && ED_spl(edges[e])->size > 0) {
      const bezier& bz = ED_spl(edges[e])->list[0];
      for (int k = 0; k < bz.size; ++k) out.splines[e].push_back(flip(bz.list[k]));
    }
  for (size_t g = 0; g < groups.size(); ++g) {
    const boxf cb = GD_bb(groups[g]);
    const Point a = flip(cb.LL), b = flip(cb.UR);
    out.group_boxes[g] = {{std::min(a.x, b.x), std::min(a.y, b.y)}, {std::max(a.x, b.x), std::max(a.y, b.y)}};
  }
  gvFreeLayout(gvc, root);
  return out;
}

}  // namespace opscope::viz
