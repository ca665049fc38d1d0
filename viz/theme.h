// Colours, fonts and ImGui style of the GUI: a light and a dark theme, op-family colours,
// memory-category colours, a sans font with CJK glyphs merged when a CJK font is installed.
#pragma once
#include <imgui.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// The CJK characters the font atlas bakes. Dear ImGui bakes an atlas once, and baking the
// 2,500 common characters took most of the browser's start-up; so the atlas holds the Chinese
// the program shows (the lessons and the knowledge map, given when they open) and grows by
// what appears later (what the student types, what a statement prints): a new character marks
// the set changed, and the window bakes the atlas again before its next frame.
class GlyphSet {
 public:
  // Adds the wide characters (CJK, fullwidth forms) of UTF-8 `text`; true if any was new.
  bool add(const std::string& text);
  bool contains(ImWchar c) const { return c < bits_.size() * 32 && (bits_[c / 32] >> (c % 32) & 1u); }
  size_t size() const { return count_; }
  ImVector<ImWchar> ranges() const;  // for ImFontAtlas: pairs of first, last, then 0
  bool changed = false;  // added to since the atlas was baked

 private:
  std::vector<uint32_t> bits_ = std::vector<uint32_t>(0x10000 / 32);
  size_t count_ = 0;
};

// True for the characters the CJK font supplies (DejaVu Sans has no glyph for them).
bool is_cjk_char(ImWchar c);

struct Fonts {
  ImFont* ui = nullptr;
  ImFont* mono = nullptr;
  ImFont* title = nullptr;
  bool cjk = false;  // a CJK font was found: the glyphs of `glyphs` are merged into ui and mono
  std::string ui_path, cjk_path;
  GlyphSet glyphs;
  // The CJK ranges in the atlas, which reads them when it is built: on the heap, so that
  // copying a Fonts leaves them where the atlas looks.
  std::shared_ptr<const ImVector<ImWchar>> baked;
};
// Loads DejaVu Sans (or ImGui's built-in font when missing), WenQuanYi/Noto CJK merged when
// installed (the characters of `glyphs`), and DejaVu Sans Mono; sizes multiplied by `scale`.
// Call before the first frame.
Fonts load_fonts(float scale, GlyphSet glyphs = {});
// Bakes the atlas again at `scale` (View > Zoom), with the same characters.
void reload_fonts(Fonts& fonts, float scale);
// Bakes the atlas again when fonts.glyphs changed (between frames, before NewFrame); true when
// it did, and the renderer must upload the atlas again.
bool rebuild_fonts_if_changed(Fonts& fonts, float scale);

}  // namespace opscope::viz
