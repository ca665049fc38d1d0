#include "app/gui/widget_rects.h"

#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cstring>

namespace opscope::app {

namespace {
// `label` at the rectangle a..b as far as `clip` shows it; nothing when none of it shows (a
// button scrolled out of its panel cannot be clicked).
WidgetRect* note_visible(WidgetRects& into, const char* label, ImVec2 a, ImVec2 b, const ImRect& clip, bool enabled) {
  const char* hashes = std::strstr(label, "##");
  WidgetRect w{hashes ? std::string(label, hashes) : std::string(label),
               std::max(a.x, clip.Min.x),
               std::max(a.y, clip.Min.y),
               std::min(b.x, clip.Max.x),
               std::min(b.y, clip.Max.y),
               enabled};
  if (w.x1 <= w.x0 || w.y1 <= w.y0) return nullptr;
  into.push_back(std::move(w));
  return &into.back();
}
}  // namespace

void note_widget(WidgetRects& into, const char* label) {
  const ImGuiContext& g = *ImGui::GetCurrentContext();
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  note_visible(into, label, a, b, g.CurrentWindow ? g.CurrentWindow->ClipRect : ImRect(a, b),
               (g.LastItemData.InFlags & ImGuiItemFlags_Disabled) == 0);
}

void note_panel(WidgetRects& into, const char* label) {
  const ImGuiWindow& window = *ImGui::GetCurrentContext()->CurrentWindow;
  const ImRect outer = window.Rect();
  if (WidgetRect* w = note_visible(into, label, outer.Min, outer.Max,
                                   window.ParentWindow ? window.ParentWindow->ClipRect : outer, true))
    w->scroll_y = window.Scroll.y, w->scroll_max_y = window.ScrollMax.y;
}

bool noted(WidgetRects& into, bool pressed, const char* label) {
  note_widget(into, label);
  return pressed;
}

}  // namespace opscope::app
