// [SECTION] index
//   colours      by progress, for both themes
//   layout       re-laid out when the labels change (another language, an edited map)
//   drawing      frames, arrows, boxes, lesson badges, the legend
//   the view     fit, pan, zoom, hover and click
#include "viz/concept_map.h"

#include <algorithm>
#include <cmath>

namespace opscope::viz {

namespace {

// [SECTION] colours
struct StatusColors {
  ImU32 fill, border;
};
StatusColors status_colors(ConceptStatus st, bool dark) {
  switch (st) {
    case ConceptStatus::learned:
      return dark ? StatusColors{IM_COL32(20, 83, 45, 255), IM_COL32(74, 222, 128, 255)}
                  : StatusColors{IM_COL32(187, 247, 208, 255), IM_COL32(21, 128, 61, 255)};
    case ConceptStatus::in_progress:
      return dark ? StatusColors{IM_COL32(113, 63, 18, 255), IM_COL32(251, 191, 36, 255)}
                  : StatusColors{IM_COL32(254, 240, 138, 255), IM_COL32(180, 83, 9, 255)};
    case ConceptStatus::not_yet: break;
  }
  return dark ? StatusColors{IM_COL32(40, 44, 52, 255), IM_COL32(100, 116, 139, 255)}
              : StatusColors{IM_COL32(248, 250, 252, 255), IM_COL32(148, 163, 184, 255)};
}

// [SECTION] layout
std::string layout_signature(const ConceptFigure& f) {
  std::string sig = f.title;
  for (const auto& n : f.nodes)
    for (const auto& l : n.lines) sig += "\n" + l;
  for (const auto& g : f.groups) sig += "\n#" + g;
  return sig;
}

void ensure_layout(ConceptMapState& s, const ConceptFigure& f, ImFont* font, float font_scale) {
  const std::string sig = layout_signature(f);
  if (sig == s.laid_out_for) return;
  const float px = font->FontSize;
  s.layout = layout_concepts(
      f,
      [font, px, font_scale](const std::string& t) {
        return font->CalcTextSizeA(px, FLT_MAX, 0.f, t.c_str()).x / font_scale;
      },
      px / font_scale);
  s.laid_out_for = sig;
  s.fit = true;
}

void draw_arrow(ImDrawList* dl, const std::vector<ImVec2>& p, ImU32 col, float z) {
  for (size_t k = 0; k + 3 < p.size(); k += 3)
    dl->AddBezierCubic(p[k], p[k + 1], p[k + 2], p[k + 3], col, 1.5f * std::max(0.7f, z));
  if (p.size() < 2) return;
  ImVec2 tip = p.back(), from = p[p.size() - 2];
  ImVec2 d(tip.x - from.x, tip.y - from.y);
  const float len = std::sqrt(d.x * d.x + d.y * d.y);
  if (len < 1e-3f) return;
  d = ImVec2(d.x / len, d.y / len);
  const float sz = 9.f * std::max(0.6f, z);
  const ImVec2 n(-d.y, d.x), base(tip.x - d.x * sz, tip.y - d.y * sz);
  dl->AddTriangleFilled(tip, ImVec2(base.x + n.x * sz * 0.45f, base.y + n.y * sz * 0.45f),
                        ImVec2(base.x - n.x * sz * 0.45f, base.y - n.y * sz * 0.45f), col);
}

}  // namespace

// [SECTION] the view
int draw_concept_map(ConceptMapState& s, const ConceptFigure& f, const Theme& th, const Fonts& fonts, float font_scale,
                     ImVec2 size) {
  ImFont* font = fonts.ui ? fonts.ui : ImGui::GetFont();
  ensure_layout(s, f, font, font_scale);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  size = ImVec2(std::max(size.x > 0 ? size.x : avail.x, 50.f), std::max(size.y > 0 ? size.y : avail.y, 50.f));
  const ImVec2 c0 = ImGui::GetCursorScreenPos(), c1(c0.x + size.x, c0.y + size.y);
  ImGui::InvisibleButton("concept_map", size, ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool hovered_canvas = ImGui::IsItemHovered();
  ImGuiIO& io = ImGui::GetIO();
  const ConceptLayout& L = s.layout;
  const float title_h = font->FontSize * 1.6f, legend_h = font->FontSize * 1.6f;
  if (s.fit) {
    const float zx = (size.x - 40) / std::max(1.f, L.width),
                zy = (size.y - 40 - title_h - legend_h) / std::max(1.f, L.height);
    s.zoom = std::clamp(std::min(zx, zy), 0.3f, 1.5f);
    s.pan =
        ImVec2((size.x - L.width * s.zoom) * 0.5f, title_h + (size.y - title_h - legend_h - L.height * s.zoom) * 0.5f);
    s.fit = false;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    s.pan.x += io.MouseDelta.x;
    s.pan.y += io.MouseDelta.y;
  }
  if (hovered_canvas && io.MouseWheel != 0) {
    const float old = s.zoom;
    s.zoom = std::clamp(s.zoom * std::pow(1.15f, io.MouseWheel), 0.3f, 3.f);
    const ImVec2 m(io.MousePos.x - c0.x, io.MousePos.y - c0.y);
    s.pan = ImVec2(m.x - (m.x - s.pan.x) * (s.zoom / old), m.y - (m.y - s.pan.y) * (s.zoom / old));
  }
  const float z = s.zoom;
  auto at = [&](Point p) { return ImVec2(c0.x + s.pan.x + p.x * z, c0.y + s.pan.y + p.y * z); };
  const float text_px = font->FontSize * z / font_scale;

  // [SECTION] drawing
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->PushClipRect(c0, c1, true);
  dl->AddRectFilled(c0, c1, th.canvas);
  for (size_t g = 0; g < L.group_boxes.size(); ++g) {
    const auto& [mn, mx] = L.group_boxes[g];
    if (mn.x > mx.x) continue;
    const ImVec2 a = at(mn), b = at(mx);
    dl->AddRectFilled(a, b, th.dark ? IM_COL32(30, 34, 42, 255) : IM_COL32(241, 245, 249, 255), 10.f * z);
    dl->AddRect(a, b, th.cluster_border, 10.f * z, 0, 1.2f);
    dl->AddText(font, text_px * 0.95f, ImVec2(a.x + 8 * z, a.y + 4 * z), th.text_dim, f.groups[g].c_str());
  }
  for (size_t e = 0; e < L.splines.size(); ++e) {
    std::vector<ImVec2> p;
    for (const auto& q : L.splines[e]) p.push_back(at(q));
    draw_arrow(dl, p, th.edge, z);
  }
  s.drawn.clear();
  s.hovered = -1;
  int clicked = -1;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const ConceptNode& n = f.nodes[i];
    const ImVec2 c = at(L.centers[i]);
    const ImVec2 a(c.x - L.widths[i] * z / 2, c.y - L.heights[i] * z / 2),
        b(c.x + L.widths[i] * z / 2, c.y + L.heights[i] * z / 2);
    const StatusColors col = status_colors(n.status, th.dark);
    const bool hov = hovered_canvas && ImGui::IsMouseHoveringRect(a, b);
    if (hov) s.hovered = static_cast<int>(i);
    dl->AddRectFilled(a, b, col.fill, 8.f * z);
    dl->AddRect(a, b, hov ? th.selected : col.border, 8.f * z, 0, (hov ? 2.5f : 1.5f) * std::max(0.7f, z));
    // The lesson's number in a disc on the left; the label lines centred in the rest.
    const float r = text_px * 0.75f;
    const ImVec2 disc(a.x + r + 6 * z, c.y);
    dl->AddCircleFilled(disc, r, col.border);
    const ImVec2 bs = font->CalcTextSizeA(text_px * 0.8f, FLT_MAX, 0, n.badge.c_str());
    dl->AddText(font, text_px * 0.8f, ImVec2(disc.x - bs.x / 2, disc.y - bs.y / 2),
                th.dark ? th.canvas : IM_COL32(255, 255, 255, 255), n.badge.c_str());
    float total = 0;
    for (size_t k = 0; k < n.lines.size(); ++k) total += text_px * (k ? 0.85f : 1.f) * 1.15f;
    float y = c.y - total / 2;
    const float mid = (disc.x + r + b.x) / 2;
    for (size_t k = 0; k < n.lines.size(); ++k) {
      const float px = text_px * (k ? 0.85f : 1.f);
      const ImVec2 ts = font->CalcTextSizeA(px, FLT_MAX, 0, n.lines[k].c_str());
      dl->AddText(font, px, ImVec2(mid - ts.x / 2, y + (px * 1.15f - ts.y) / 2), k ? th.text_dim : th.text,
                  n.lines[k].c_str());
      y += px * 1.15f;
    }
    s.drawn.push_back({static_cast<int>(i), n.id, a, b, n.status, n.lines.empty() ? "" : n.lines[0]});
  }
  // The title and the legend.
  dl->AddText(font, font->FontSize * 1.05f, ImVec2(c0.x + 12, c0.y + 8), th.text, f.title.c_str());
  ImVec2 p(c0.x + 12, c1.y - legend_h + 4);
  for (ConceptStatus st : {ConceptStatus::learned, ConceptStatus::in_progress, ConceptStatus::not_yet}) {
    const StatusColors col = status_colors(st, th.dark);
    const float h = font->FontSize * 0.9f;
    dl->AddRectFilled(p, ImVec2(p.x + h * 1.6f, p.y + h), col.fill, 4.f);
    dl->AddRect(p, ImVec2(p.x + h * 1.6f, p.y + h), col.border, 4.f);
    const std::string& word = f.legend[static_cast<int>(st)];
    dl->AddText(font, font->FontSize * 0.85f, ImVec2(p.x + h * 1.6f + 6, p.y), th.text_dim, word.c_str());
    p.x += h * 1.6f + 6 + font->CalcTextSizeA(font->FontSize * 0.85f, FLT_MAX, 0, word.c_str()).x + 18;
  }
  dl->PopClipRect();
  if (s.hovered >= 0) {
    if (!f.nodes[static_cast<size_t>(s.hovered)].tooltip.empty())
      ImGui::SetTooltip("%s", f.nodes[static_cast<size_t>(s.hovered)].tooltip.c_str());
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) && ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).x == 0 &&
        ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).y == 0)
      clicked = s.hovered;
  }
  return clicked;
}

}  // namespace opscope::viz
