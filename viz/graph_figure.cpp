#include "viz/graph_figure.h"

#include <algorithm>
#include <cstdio>

namespace opscope::viz {

namespace {

std::vector<std::string> split_scope(const std::string& scope) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= scope.size() && !scope.empty()) {
    const size_t slash = scope.find('/', start);
    parts.push_back(scope.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

std::string short_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

// Consumers of each value among the nodes that may be shown.
std::vector<std::vector<int>> consumers_of(const Graph& g) {
  std::vector<std::vector<int>> c(g.num_values());
  for (const Node& n : g.nodes())
    for (int v : n.inputs) c[static_cast<size_t>(v)].push_back(n.id);
  return c;
}

// Marks the nodes that computed parameter `pv`'s initial value: its source value's producer, and
// upstream every node all of whose outputs only feed nodes already marked.
std::vector<int> mark_initialisation(const Graph& g, int pv, const std::vector<std::vector<int>>& consumers,
                                     std::vector<char>& init) {
  std::vector<int> marked;
  const int from = g.value(pv).initialised_from;
  if (from < 0 || !g.has_value(from)) return marked;
  auto only_feeds_init = [&](const Node& n) {
    for (int out : n.outputs)
      for (int c : consumers[static_cast<size_t>(out)])
        if (!init[static_cast<size_t>(c)]) return false;
    return true;
  };
  std::vector<int> stack;
  if (const int p = g.value(from).producer; p >= 0) stack.push_back(p);
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (!g.has_node(id)) continue;
    const Node& n = g.node(id);
    if (init[static_cast<size_t>(id)] || n.phase != Phase::forward || !only_feeds_init(n)) continue;
    init[static_cast<size_t>(id)] = 1;
    marked.push_back(id);
    for (int v : n.inputs)
      if (const int p = g.value(v).producer; p >= 0) stack.push_back(p);
  }
  std::sort(marked.begin(), marked.end());
  return marked;
}

}  // namespace

std::vector<FigureFrame> node_frames(const Graph& g, const Node& n) {
  (void)g;
  std::vector<FigureFrame> out;
  const std::vector<std::string> names = split_scope(n.scope);
  size_t calls = 0;
  for (const NodeFrame& f : n.frames) calls += f.kind == NodeFrame::call;
  // The language records one call frame per scope level; an imported model's nodes carry a
  // scope (a name prefix) without call frames, and each prefix is then one box.
  const bool zip = calls == names.size();
  std::string path;
  size_t level = 0;
  auto add_call = [&](const std::string& key_suffix) {
    path = path.empty() ? names[level] : path + "/" + names[level];
    out.push_back({FigureFrame::call, path + key_suffix, path, names[level] + "()"});
    ++level;
  };
  for (const NodeFrame& f : n.frames) {
    if (f.kind == NodeFrame::loop) out.push_back({FigureFrame::loop, "loop@" + std::to_string(f.id), "", ""});
    else if (zip) add_call("@" + std::to_string(f.id));
  }
  if (!zip)
    while (level < names.size()) add_call("");
  return out;
}

std::map<int, LoopCount> loop_counts(const Graph& g) {
  std::map<int, LoopCount> counts;
  for (const Node& n : g.nodes())
    for (const NodeFrame& f : n.frames)
      if (f.kind == NodeFrame::loop) {
        LoopCount& c = counts[f.id];
        c.last = std::max(c.last, f.iteration);
        c.iterations = c.last + 1;
      }
  return counts;
}

FigureContent figure_content(const Graph& g, const std::vector<int>& only_nodes) {
  FigureContent fc;
  fc.nodes.assign(g.num_nodes(), only_nodes.empty() ? NodeShown::shown : NodeShown::not_listed);
  for (int id : only_nodes) fc.nodes[static_cast<size_t>(id)] = NodeShown::shown;
  // A loop shows its last iteration; the nodes of the ones before stay out (the backward
  // nodes of those carry the same frames and go with them).
  const auto loops = loop_counts(g);
  for (const Node& n : g.nodes())
    for (const NodeFrame& f : n.frames)
      if (f.kind == NodeFrame::loop && f.iteration != loops.at(f.id).last &&
          fc.nodes[static_cast<size_t>(n.id)] == NodeShown::shown)
        fc.nodes[static_cast<size_t>(n.id)] = NodeShown::earlier_iteration;
  // A parameter's initialisation folds into the parameter.
  const auto consumers = consumers_of(g);
  std::vector<char> init(g.num_nodes(), 0);
  for (size_t v = 0; v < g.num_values(); ++v) {
    if (!g.has_value(static_cast<int>(v))) continue;  // dropped with a loop's tape
    const ValueInfo& vi = g.value(static_cast<int>(v));
    if (vi.producer >= 0 || vi.initialised_from < 0) continue;
    std::vector<int> marked = mark_initialisation(g, static_cast<int>(v), consumers, init);
    for (int id : marked)
      if (fc.nodes[static_cast<size_t>(id)] == NodeShown::shown)
        fc.nodes[static_cast<size_t>(id)] = NodeShown::initialisation;
    if (!marked.empty()) fc.init_nodes_of[static_cast<int>(v)] = std::move(marked);
  }
  return fc;
}

std::vector<int> initialisation_nodes(const Graph& g, int parameter_value) {
  const FigureContent fc = figure_content(g, {});
  auto it = fc.init_nodes_of.find(parameter_value);
  return it == fc.init_nodes_of.end() ? std::vector<int>{} : it->second;
}

// An unnamed number: a formula's constant, or a literal such as the 0.5 of `x * 0.5`.
bool is_inline_constant(const ValueInfo& v) {
  if (v.producer >= 0 || !v.meta.shape.empty() || !v.name.empty() || v.requires_grad) return false;
  return v.kind == ValueKind::constant || (v.kind == ValueKind::input && v.constant.defined());
}

namespace {
std::string constant_text(const ValueInfo& v) {
  if (!v.origin.empty()) return v.origin;
  if (v.constant.defined() && !v.constant.is_symbolic()) return short_number(v.constant.item());
  return "c";
}
}  // namespace

std::string node_title(const Graph& g, const Node& n) {
  if (!n.op) return "?";
  std::string label = n.label();
  bool any = false;
  for (int v : n.inputs) any = any || is_inline_constant(g.value(v));
  if (!any || !n.fused.empty()) return label;
  std::string operands;
  for (int v : n.inputs) {
    const ValueInfo& vi = g.value(v);
    operands += (operands.empty() ? "" : ", ") + (is_inline_constant(vi) ? constant_text(vi) : std::string("·"));
  }
  const size_t paren = label.find('(');
  if (paren == std::string::npos) return label + "(" + operands + ")";
  return label.substr(0, paren + 1) + operands + ", " + label.substr(paren + 1);
}

std::string saved_badge(const Graph& g, const std::vector<int>& nodes) {
  int64_t held = 0;
  bool saves = false;
  for (int id : nodes)
    for (const auto& st : g.node(id).saved) {
      saves = true;
      if (st.tensor.defined()) held += st.tensor.nbytes();
    }
  if (!saves) return {};
  return held > 0 ? "saved " + bytes_str(held) : "freed";
}

}  // namespace opscope::viz
