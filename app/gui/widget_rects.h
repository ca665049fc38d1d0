// Where the last frame drew what a person acts on, by the words on it, for the human-input tests
// (tests/human/): a test finds a button as a person does, by its label, and clicks its middle with
// a real mouse event (xdotool on the desktop, Chromium's Input events in the browser). The label
// is the English word whatever language the window speaks, so a scenario runs in both.
#pragma once
#include <string>
#include <vector>

namespace opscope::app {

struct WidgetRect {
  std::string label;  // what it says in English (ImGui's "##id" part cut off), or a panel's name
  float x0, y0, x1, y1;  // window pixels (ImGui's coordinates)
  bool enabled;  // drawn greyed out (ImGui::BeginDisabled) or not
  float scroll_y = -1.f, scroll_max_y = -1.f;  // a panel's: how far its content is scrolled, of how far it can be
};
using WidgetRects = std::vector<WidgetRect>;

// Notes the item ImGui drew last (a button, an input, a tab, a child window just ended) as
// `label`; an empty label takes the item's own, less its "##" part.
void note_widget(WidgetRects& into, const char* label);
// Notes the child window being drawn (call it just before EndChild) as the panel `label`,
// with its scroll position: a test sees the wheel scroll it.
void note_panel(WidgetRects& into, const char* label);
// The same, then returns `pressed`: `if (noted(w, ImGui::Button("Run"), "Run"))`.
bool noted(WidgetRects& into, bool pressed, const char* label);

}  // namespace opscope::app
