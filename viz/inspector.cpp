#include "viz/inspector.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/body.h"
#include "core/timing.h"
#include "viz/graph_figure.h"
#include "viz/graph_view.h"
#include "viz/words.h"

namespace opscope::viz {

namespace {

std::string strides_str(const Strides& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

std::string value_label(const Graph& g, int v) {
  const ValueInfo& vi = g.value(v);
  return vi.name.empty() ? "%" + std::to_string(v) : vi.name;
}

// The value's tensor while someone holds it (a symbolic tensor of static mode has no values).
const std::function<Tensor(int)>* g_live_value = nullptr;  // set for one draw_inspector call

Tensor live_tensor(const ValueInfo& vi, int v) {
  if (g_live_value && *g_live_value)
    if (Tensor t = (*g_live_value)(v); t.defined()) return t;
  if (vi.constant.defined()) return vi.constant;
  if (auto p = vi.tensor.lock(); p && p->storage) return Tensor(p);
  return {};
}

// Diverging map: blue (negative), near-white (0), red (positive).
ImU32 diverging(float t) {
  t = std::clamp(t, -1.f, 1.f);
  const float a = std::fabs(t);
  const ImVec4 neg(0.23f, 0.40f, 0.85f, 1), pos(0.85f, 0.20f, 0.20f, 1), mid(0.97f, 0.97f, 0.97f, 1);
  const ImVec4& e = t < 0 ? neg : pos;
  return ImGui::ColorConvertFloat4ToU32(
      ImVec4(mid.x + (e.x - mid.x) * a, mid.y + (e.y - mid.y) * a, mid.z + (e.z - mid.z) * a, 1));
}

void value_row(const Graph& g, int v, const char* role, InspectorState& s) {
  const ValueInfo& vi = g.value(v);
  Tensor t = live_tensor(vi, v);
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", role);
  ImGui::TableNextColumn();
  ImGui::PushID(v);
  if (ImGui::Selectable(value_label(g, v).c_str(), s.shown_value == v, ImGuiSelectableFlags_SpanAllColumns))
    s.shown_value = v;
  ImGui::PopID();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(shape_str(vi.meta.shape).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(t.defined() ? strides_str(t.strides()).c_str() : "-");
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(dtype_name(vi.meta.dtype));
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(device_name(vi.meta.device));
  ImGui::TableNextColumn();
  const int64_t bytes = shape_numel(vi.meta.shape) * static_cast<int64_t>(dtype_size(vi.meta.dtype));
  ImGui::Text("%s%s", bytes_str(bytes).c_str(), t.defined() ? "" : " (freed)");
}

void values_section(const Graph& g, int v, const Theme& th, const Fonts* fonts) {
  const ValueInfo& vi = g.value(v);
  Tensor t = live_tensor(vi, v);
  ImGui::Separator();
  ImGui::Spacing();
  ImGui::Text(tr("Values of %s %s"), value_label(g, v).c_str(), shape_str(vi.meta.shape).c_str());
  if (!t.defined()) {
    ImGui::TextDisabled("%s", tr("not held any more (freed after its last use)"));
    return;
  }
  const float width = ImGui::GetContentRegionAvail().x;
  draw_heatmap(t, th, std::min(width, 360.f));
  // The first numbers as a table.
  const int64_t rows = t.dim() >= 2 ? t.size(t.dim() - 2) : 1, cols = t.dim() >= 1 ? t.size(t.dim() - 1) : 1;
  const int64_t show_r = std::min<int64_t>(rows, 6), show_c = std::min<int64_t>(cols, 6);
  if (fonts && fonts->mono) ImGui::PushFont(fonts->mono);
  if (ImGui::BeginTable("values", static_cast<int>(show_c + (cols > show_c)),
                        ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    for (int64_t r = 0; r < show_r; ++r) {
      ImGui::TableNextRow();
      for (int64_t c = 0; c < show_c; ++c) {
        ImGui::TableNextColumn();
        ImGui::Text("%8.4g", t.numel() ? t.get(r * cols + c) : 0.0);
      }
      if (cols > show_c) {
        ImGui::TableNextColumn();
        ImGui::TextDisabled("...");
      }
    }
    ImGui::EndTable();
  }
  if (fonts && fonts->mono) ImGui::PopFont();
  if (rows > show_r || t.dim() > 2)
    ImGui::TextDisabled(tr("showing the first %lld x %lld of the last two axes"), (long long)show_r, (long long)show_c);
  Tensor gr = t.grad();
  if (gr.defined()) {
    ImGui::Spacing();
    ImGui::Text(tr("Gradient d%s"), value_label(g, v).c_str());
    draw_heatmap(gr, th, std::min(width, 360.f));
  }
}

}  // namespace

void draw_heatmap(const Tensor& t, const Theme& th, float max_width) {
  if (!t.defined() || t.numel() == 0) return;
  const int64_t rank = t.dim();
  const int64_t rows = rank >= 2 ? t.size(rank - 2) : 1, cols = rank >= 1 ? t.size(rank - 1) : 1;
  constexpr int64_t kMaxCells = 48;
  const int64_t sr = std::max<int64_t>(1, (rows + kMaxCells - 1) / kMaxCells),
                sc = std::max<int64_t>(1, (cols + kMaxCells - 1) / kMaxCells);
  const int64_t nr = (rows + sr - 1) / sr, nc = (cols + sc - 1) / sc;
  float vmax = 0;
  std::vector<float> vals(static_cast<size_t>(nr * nc));
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t c = 0; c < nc; ++c) {
      float x = static_cast<float>(t.get(r * sr * cols + c * sc));  // first plane of higher ranks
      vals[static_cast<size_t>(r * nc + c)] = x;
      if (std::isfinite(x)) vmax = std::max(vmax, std::fabs(x));
    }
  if (vmax == 0) vmax = 1;
  const float bar_w = 70.f;
  const float cell = std::clamp((max_width - bar_w) / static_cast<float>(nc), 3.f, 22.f);
  const float ch = std::min(cell, 160.f / static_cast<float>(nr) > 3.f ? cell : 3.f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  for (int64_t r = 0; r < nr; ++r)
    for (int64_t c = 0; c < nc; ++c) {
      ImVec2 a(p0.x + c * cell, p0.y + r * ch);
      dl->AddRectFilled(a, ImVec2(a.x + cell - (cell > 6 ? 1 : 0), a.y + ch - (ch > 6 ? 1 : 0)),
                        diverging(vals[r * nc + c] / vmax));
    }
  const float hm_w = nc * cell, hm_h = std::max(nr * ch, 40.f);
  dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p0.x + hm_w, p0.y + nr * ch), th.grid);
  // The colour bar: -max at the bottom, +max at the top.
  const ImVec2 b0(p0.x + hm_w + 10, p0.y);
  const int kSteps = 24;
  for (int i = 0; i < kSteps; ++i) {
    const float y0 = b0.y + hm_h * i / kSteps, y1 = b0.y + hm_h * (i + 1) / kSteps;
    dl->AddRectFilled(ImVec2(b0.x, y0), ImVec2(b0.x + 10, y1), diverging(1.f - 2.f * (i + 0.5f) / kSteps));
  }
  dl->AddRect(b0, ImVec2(b0.x + 10, b0.y + hm_h), th.box_border);
  char top[32], bottom[32];
  std::snprintf(top, sizeof top, "%+.3g", vmax);
  std::snprintf(bottom, sizeof bottom, "%+.3g", -vmax);
  dl->AddText(ImVec2(b0.x + 14, b0.y - 2), th.text_dim, top);
  dl->AddText(ImVec2(b0.x + 14, b0.y + hm_h - ImGui::GetTextLineHeight()), th.text_dim, bottom);
  ImGui::Dummy(ImVec2(hm_w + bar_w, hm_h + 4));
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const int64_t c = static_cast<int64_t>((m.x - p0.x) / cell), r = static_cast<int64_t>((m.y - p0.y) / ch);
    if (r >= 0 && r < nr && c >= 0 && c < nc)
      ImGui::SetTooltip("[%lld, %lld] = %g", (long long)(r * sr), (long long)(c * sc), vals[r * nc + c]);
  }
}

// A parameter made from computed values: the call that made it, and the nodes that computed its
// initial value (the figure folds them into the parameter's box).
void initialisation_section(const Graph& g, int v) {
  const ValueInfo& vi = g.value(v);
  if (vi.origin.empty() || vi.kind != ValueKind::parameter) return;
  ImGui::Text(tr("initialised by %s"), vi.origin.c_str());
  if (vi.origin_line > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("(line %d)", vi.origin_line);
  }
  const std::vector<int> init = initialisation_nodes(g, v);
  if (init.empty()) return;
  ImGui::TextDisabled("%zu node%s computed its first value (not part of the model, so not drawn):", init.size(),
                      init.size() == 1 ? "" : "s");
  for (int id : init) {
    const Node& n = g.node(id);
    std::string outs;
    for (int o : n.outputs)
      outs += (outs.empty() ? "" : ", ") + value_label(g, o) + " " + shape_str(g.value(o).meta.shape);
    ImGui::BulletText("#%d %s → %s", id, node_title(g, n).c_str(), outs.c_str());
  }
}

// A folded call: what goes in and out, the nodes inside, the bytes they keep for backward.
template <class Title> void folded_call_section(const Graph& g, const InspectorFrame& f, const Title& title) {
  const int bi = f.layout ? f.layout->find(f.selected) : -1;
  if (bi < 0) {
    title(f.selected.substr(2));
    ImGui::TextDisabled("%s", tr("a folded call: click it in the graph to unfold"));
    return;
  }
  const LayoutBox& b = f.layout->boxes[static_cast<size_t>(bi)];
  title(b.title);
  if (!b.subtitle.empty()) ImGui::TextUnformatted(b.subtitle.c_str());
  for (const auto& d : b.details) ImGui::TextUnformatted(d.c_str());
  const std::string saved = saved_badge(g, b.nodes);
  if (!saved.empty()) ImGui::Text("%s for backward", saved.c_str());
  ImGui::TextDisabled("%s", tr("click it in the graph (or zoom into it) to unfold"));
  ImGui::Spacing();
  for (int id : b.nodes)
    ImGui::BulletText("#%d %s  %s", id, node_title(g, g.node(id)).c_str(), g.node_var_name(id).c_str());
}

void draw_inspector(InspectorState& s, const InspectorFrame& f) {
  g_live_value = &f.live_value;
  const Graph& g = *f.graph;
  const Theme& th = *f.theme;
  if (f.selected.empty()) {
    ImGui::TextDisabled("%s", tr("Click a node in the graph to inspect it."));
    return;
  }
  auto title = [&](const std::string& text) {
    if (f.fonts && f.fonts->title) ImGui::PushFont(f.fonts->title);
    ImGui::TextUnformatted(text.c_str());
    if (f.fonts && f.fonts->title) ImGui::PopFont();
  };
  const int node = node_of_key(f.selected);
  if (f.selected[0] == 'v') {  // a leaf value
    const int v = std::stoi(f.selected.substr(1));
    if (!g.has_value(v)) return;
    const ValueInfo& vi = g.value(v);
    title(value_label(g, v));
    ImGui::TextDisabled("%s%s", value_kind_name(vi.kind), vi.requires_grad ? ", requires grad" : "");
    if (ImGui::BeginTable("io", 7, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
      value_row(g, v, "value", s);
      ImGui::EndTable();
    }
    initialisation_section(g, v);
    values_section(g, v, th, f.fonts);
    return;
  }
  if (f.selected.rfind("s:", 0) == 0 || f.selected.rfind("b:", 0) == 0) {
    folded_call_section(g, f, title);
    return;
  }
  if (!g.has_node(node)) return;
  const Node& n = g.node(node);
  title("#" + std::to_string(n.id) + " " + (n.op ? n.op->name : "?"));
  ImGui::SameLine();
  ImGui::TextDisabled("%s · %s%s", n.op ? n.op->family.c_str() : "", phase_name(n.phase),
                      n.scope.empty() ? "" : (" · in " + n.scope + "()").c_str());
  if (n.op) ImGui::TextWrapped("%s", n.op->doc.c_str());
  if (n.forward_of >= 0) ImGui::Text(tr("gradient of #%d %s"), n.forward_of, g.node(n.forward_of).op->name.c_str());
  // A fused node unfolds into the ops it replaced: one pass over the data instead of several.
  if (!n.fused.empty()) {
    ImGui::Text("fuses %zu ops (the compiler's fuse_elementwise pass):", n.fused.size());
    for (const Node& m : n.fused) {
      std::string outs;
      for (int v : m.outputs)
        outs += (outs.empty() ? "" : ", ") + value_label(g, v) + " " + shape_str(g.value(v).meta.shape);
      ImGui::BulletText("#%d %s → %s", m.id, m.label().c_str(), outs.c_str());
    }
    const Cost fused = node_cost(g, n);
    double unfused = 0;
    for (const Node& m : n.fused) {
      const Cost c = node_cost(g, m);
      unfused += c.bytes_read + c.bytes_written;
    }
    ImGui::TextDisabled("bytes moved: %s fused, %s as separate ops",
                        bytes_str(static_cast<int64_t>(fused.bytes_read + fused.bytes_written)).c_str(),
                        bytes_str(static_cast<int64_t>(unfused)).c_str());
  }
  // An @op's node runs its body as its kernel: the ops inside, traced for these shapes.
  if (n.body) {
    if (n.op && !n.op->origin.empty()) ImGui::TextDisabled("%s", n.op->origin.c_str());
    ImGui::Text("its kernel runs %zu ops (double-click the node to show them in the graph):",
                n.body->graph.num_nodes());
    const Graph& bg = n.body->graph;
    for (const Node& m : bg.nodes()) {
      std::string outs;
      for (int v : m.outputs)
        outs += (outs.empty() ? "" : ", ") + (bg.value(v).name.empty() ? "%" + std::to_string(v) : bg.value(v).name) +
                " " + shape_str(bg.value(v).meta.shape);
      ImGui::BulletText("#%d.%d %s → %s", n.id, m.id, m.label().c_str(), outs.c_str());
    }
  }
  const std::string attrs = n.attrs.str(true);
  if (!attrs.empty() || !n.algo.empty())
    ImGui::Text("attributes: %s%s%s", attrs.c_str(), attrs.empty() || n.algo.empty() ? "" : ", ",
                n.algo.empty() ? "" : ("algo=" + n.algo).c_str());
  if (s.shown_value < 0 || (std::find(n.inputs.begin(), n.inputs.end(), s.shown_value) == n.inputs.end() &&
                            std::find(n.outputs.begin(), n.outputs.end(), s.shown_value) == n.outputs.end()))
    s.shown_value = n.outputs.empty() ? -1 : n.outputs[0];
  ImGui::Spacing();
  if (ImGui::BeginTable("io", 7,
                        ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerH)) {
    for (const char* h : {"", tr("name"), tr("shape"), tr("strides"), tr("dtype"), tr("device"), tr("bytes")})
      ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (size_t i = 0; i < n.inputs.size(); ++i) value_row(g, n.inputs[i], ("in " + std::to_string(i)).c_str(), s);
    for (size_t i = 0; i < n.outputs.size(); ++i) value_row(g, n.outputs[i], ("out " + std::to_string(i)).c_str(), s);
    ImGui::EndTable();
  }
  // Saved tensors: what this op's backward formula needs, held until its backward runs.
  if (!n.saved.empty()) {
    ImGui::Spacing();
    ImGui::TextUnformatted(tr("Saved for backward:"));
    for (const auto& st : n.saved) {
      const ValueInfo& vi = g.value(st.value_id);
      const int64_t bytes = shape_numel(vi.meta.shape) * static_cast<int64_t>(dtype_size(vi.meta.dtype));
      ImGui::BulletText("%s %s  %s  %s", value_label(g, st.value_id).c_str(), shape_str(vi.meta.shape).c_str(),
                        bytes_str(bytes).c_str(), st.tensor.defined() ? tr("held") : tr("freed by its backward"));
    }
  }
  const Cost c = node_cost(g, n);
  ImGui::Spacing();
  ImGui::Text(tr("Cost: %.3g FLOPs, reads %s, writes %s"), c.flops,
              bytes_str(static_cast<int64_t>(c.bytes_read)).c_str(),
              bytes_str(static_cast<int64_t>(c.bytes_written)).c_str());
  if (n.stats.runs)
    ImGui::TextWrapped(tr("Last run: %s (%lld runs)"), duration_text(static_cast<double>(n.stats.last_time_ns)).c_str(),
                       (long long)n.stats.runs);
  else ImGui::TextDisabled("%s", tr("not run yet"));
  if (s.shown_value >= 0) values_section(g, s.shown_value, th, f.fonts);
}

}  // namespace opscope::viz
