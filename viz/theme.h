// Colours, fonts and ImGui style of the GUI: a light and a dark theme, op-family colours,
// memory-category colours, a sans font with CJK glyphs merged when a CJK font is installed.
#pragma once
#include <imgui.h>

#include <string>

#include "core/memory.h"

namespace opscope::viz {

struct Theme {
  bool dark = false;
  ImU32 canvas, grid, text, text_dim, edge, edge_backward, link, edge_label_bg;
  ImU32 box_border, param_fill, input_fill, constant_fill, seed_fill, folded_fill, cluster_border;
  ImU32 backward_tint;  // backward boxes: the family colour mixed with this
  ImU32 selected, hovered;
  // The current step's outline. Kept one fixed, saturated colour in both themes and never used
  // for anything else, so the screenshot test can find it in the pixels.
  ImU32 highlight;
  ImU32 badge_fill, badge_text;
};

const Theme& theme(bool dark);
constexpr ImU32 kHighlightColor = IM_COL32(255, 140, 0, 255);

// Box fill for an op family ("matmul", "activation", ...); backward boxes get a tinted version.
ImU32 family_color(const Theme& t, const std::string& family, bool backward);
ImU32 category_color(MemCategory c, bool dark);

// Applies the theme to ImGui's style, scaled for HiDPI.
void apply_style(bool dark, float scale);

struct Fonts {
  ImFont* ui = nullptr;
  ImFont* mono = nullptr;
  ImFont* title = nullptr;
  bool cjk = false;            // CJK glyphs merged into ui
  std::string ui_path, cjk_path;
};
// Loads DejaVu Sans (or ImGui's built-in font when missing), WenQuanYi/Noto CJK merged when
// installed, and DejaVu Sans Mono; sizes multiplied by `scale`. Call before the first frame.
Fonts load_fonts(float scale);
// The CJK glyphs loaded (needs an ImGui context): the common simplified characters and the
// course's own words.
const ImWchar* cjk_glyph_ranges();

}  // namespace opscope::viz
