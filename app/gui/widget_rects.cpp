#include "app/gui/widget_rects.h"

#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cstring>

namespace opscope::app {

void note_widget(WidgetRects& into, const char* label) {
  const ImGuiContext& g = *ImGui::GetCurrentContext();
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  // Clipped to what is visible: a button scrolled out of its panel cannot be clicked.
  const ImRect clip = g.CurrentWindow ? g.CurrentWindow->ClipRect : ImRect(a, b);
  WidgetRect w;
  const char* hashes = std::strstr(label, "##");
  w.label = hashes ? std::string(label, hashes) : std::string(label);
  w.x0 = std::max(a.x, clip.Min.x), w.y0 = std::max(a.y, clip.Min.y);
  w.x1 = std::min(b.x, clip.Max.x), w.y1 = std::min(b.y, clip.Max.y);
  if (w.x1 <= w.x0 || w.y1 <= w.y0) return;
  w.enabled = (g.LastItemData.InFlags & ImGuiItemFlags_Disabled) == 0;
  into.push_back(std::move(w));
}

void note_panel(WidgetRects& into, const char* label) {
  const ImGuiWindow& window = *ImGui::GetCurrentContext()->CurrentWindow;
  const ImRect outer = window.Rect(), clip = window.ParentWindow ? window.ParentWindow->ClipRect : outer;
  WidgetRect w{label, std::max(outer.Min.x, clip.Min.x), std::max(outer.Min.y, clip.Min.y),
               std::min(outer.Max.x, clip.Max.x), std::min(outer.Max.y, clip.Max.y), true};
  if (w.x1 <= w.x0 || w.y1 <= w.y0) return;
  w.scroll_y = window.Scroll.y, w.scroll_max_y = window.ScrollMax.y;
  into.push_back(std::move(w));
}

bool noted(WidgetRects& into, bool pressed, const char* label) {
  note_widget(into, label);
  return pressed;
}

}  // namespace opscope::app
