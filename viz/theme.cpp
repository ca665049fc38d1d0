#include "viz/theme.h"

#include "viz/palette.h"

#include <imgui_internal.h>

#include <array>
#include <filesystem>
#include <functional>

namespace opscope::viz {

namespace {

ImU32 u32(Rgb c, int alpha = 255) { return IM_COL32(c.r, c.g, c.b, alpha); }

// The figure's colours come from the palette the export shares; the rest is the window's own.
Theme make_theme(bool dark) {
  const FigurePalette& p = figure_palette(dark);
  Theme t;
  t.dark = dark;
  t.canvas = u32(p.canvas);
  t.grid = dark ? IM_COL32(34, 38, 46, 255) : IM_COL32(228, 231, 236, 255);
  t.text = u32(p.text);
  t.text_dim = u32(p.text_dim);
  t.edge = u32(p.edge);
  t.edge_backward = u32(p.edge_backward);
  t.link = u32(p.edge_backward, dark ? 100 : 110);
  t.edge_label_bg = u32(p.canvas, dark ? 215 : 225);
  t.box_border = u32(p.box_border);
  t.param_fill = u32(p.param_fill);
  t.input_fill = u32(p.input_fill);
  t.constant_fill = u32(p.constant_fill);
  t.seed_fill = u32(p.seed_fill);
  t.folded_fill = u32(p.folded_fill);
  t.cluster_border = u32(p.cluster_border);
  t.backward_tint = u32(p.backward_tint);
  t.selected = dark ? IM_COL32(96, 165, 250, 255) : IM_COL32(37, 99, 235, 255);
  t.hovered = dark ? IM_COL32(96, 165, 250, 150) : IM_COL32(59, 130, 246, 160);
  t.highlight = kHighlightColor;
  t.badge_fill = u32(p.badge_fill);
  t.badge_text = u32(p.badge_text);
  return t;
}

ImU32 mix(ImU32 a, ImU32 b, float t) {
  ImVec4 x = ImGui::ColorConvertU32ToFloat4(a), y = ImGui::ColorConvertU32ToFloat4(b);
  return ImGui::ColorConvertFloat4ToU32(
      ImVec4(x.x + (y.x - x.x) * t, x.y + (y.y - x.y) * t, x.z + (y.z - x.z) * t, x.w + (y.w - x.w) * t));
}

}  // namespace

const Theme& theme(bool dark) {
  static const Theme light = make_theme(false), night = make_theme(true);
  return dark ? night : light;
}

ImU32 family_color(const Theme& t, const std::string& family, bool backward) {
  return u32(family_fill(family, t.dark, backward));
}

ImU32 category_color(MemCategory c, bool dark) {
  static constexpr std::array<ImU32, kNumCategories> light{
      IM_COL32(234, 179, 8, 255),  // parameter
      IM_COL32(148, 163, 184, 255),  // input
      IM_COL32(59, 130, 246, 255),  // activation
      IM_COL32(139, 92, 246, 255),  // saved for backward
      IM_COL32(236, 72, 153, 255),  // gradient
      IM_COL32(22, 163, 74, 255),  // optimizer state
      IM_COL32(20, 184, 166, 255),  // workspace
      IM_COL32(203, 213, 225, 255),  // temporary
  };
  ImU32 col = light[static_cast<size_t>(c)];
  return dark ? mix(col, IM_COL32(0, 0, 0, 255), 0.15f) : col;
}

void apply_style(bool dark, float scale) {
  ImGuiStyle& s = ImGui::GetStyle();
  s = ImGuiStyle();
  if (dark) ImGui::StyleColorsDark(&s);
  else ImGui::StyleColorsLight(&s);
  s.WindowRounding = 6;
  s.ChildRounding = 6;
  s.FrameRounding = 5;
  s.GrabRounding = 5;
  s.PopupRounding = 6;
  s.TabRounding = 5;
  s.WindowBorderSize = 0;
  s.ChildBorderSize = 1;
  s.FramePadding = ImVec2(8, 4);
  s.ItemSpacing = ImVec2(8, 6);
  ImVec4* c = s.Colors;
  if (!dark) {
    c[ImGuiCol_WindowBg] = ImVec4(0.96f, 0.965f, 0.975f, 1);
    c[ImGuiCol_ChildBg] = ImVec4(1, 1, 1, 1);
    c[ImGuiCol_Button] = ImVec4(0.86f, 0.89f, 0.94f, 1);
    c[ImGuiCol_ButtonHovered] = ImVec4(0.75f, 0.82f, 0.95f, 1);
    c[ImGuiCol_Header] = ImVec4(0.85f, 0.89f, 0.96f, 1);
    c[ImGuiCol_FrameBg] = ImVec4(0.89f, 0.91f, 0.94f, 1);
    c[ImGuiCol_Border] = ImVec4(0.80f, 0.83f, 0.88f, 1);
  } else {
    c[ImGuiCol_WindowBg] = ImVec4(0.10f, 0.11f, 0.13f, 1);
    c[ImGuiCol_ChildBg] = ImVec4(0.13f, 0.14f, 0.17f, 1);
  }
  s.ScaleAllSizes(scale);
}

bool is_cjk_char(ImWchar c) {
  return (c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
         (c >= 0xFF00 && c <= 0xFFEF);
}

bool GlyphSet::add(const std::string& text) {
  bool added = false;
  const char* p = text.c_str();
  const char* end = p + text.size();
  while (p < end) {
    unsigned int c = 0;
    const int n = ImTextCharFromUtf8(&c, p, end);
    if (n <= 0) break;
    p += n;
    if (c >= 0x10000 || !is_cjk_char(static_cast<ImWchar>(c)) || contains(static_cast<ImWchar>(c))) continue;
    bits_[c / 32] |= 1u << (c % 32);
    ++count_;
    added = true;
  }
  if (added) changed = true;
  return added;
}

ImVector<ImWchar> GlyphSet::ranges() const {
  ImVector<ImWchar> out;
  for (unsigned c = 0; c < 0x10000; ++c) {
    if (!contains(static_cast<ImWchar>(c))) continue;
    unsigned last = c;
    while (last + 1 < 0x10000 && contains(static_cast<ImWchar>(last + 1))) ++last;
    out.push_back(static_cast<ImWchar>(c));
    out.push_back(static_cast<ImWchar>(last));
    c = last;
  }
  out.push_back(0);
  return out;
}

Fonts load_fonts(float scale, GlyphSet glyphs) {
  namespace fs = std::filesystem;
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  io.Fonts->Flags |= ImFontAtlasFlags_NoPowerOfTwoHeight;  // no empty half of a texture
  Fonts f;
  f.glyphs = std::move(glyphs);
  f.glyphs.changed = false;
  auto first_existing = [](std::initializer_list<const char*> paths) -> std::string {
    for (const char* p : paths)
      if (fs::exists(p)) return p;
    return {};
  };
  f.ui_path = first_existing({"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"});
  f.cjk_path = first_existing({"/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
                               "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
                               "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"});
  const std::string mono_path = first_existing({"/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"});
  // Latin, combining marks (x̂), Greek (formulas: σ, Σ, ∂), the superscript T of Bᵀ, arrows,
  // mathematical and technical symbols (⌊ ⌋) and a few shapes. (tests/lesson_glyphs.cpp checks
  // every character of the lessons has a glyph.)
  static const ImWchar ui_ranges[] = {0x0020, 0x00FF, 0x0300, 0x03FF, 0x1D00, 0x1D7F,
                                      0x2000, 0x23FF, 0x25A0, 0x25FF, 0};
  auto load = [&](const std::string& path, float px, const ImWchar* ranges) -> ImFont* {
    if (path.empty()) {
      ImFontConfig cfg;
      cfg.SizePixels = px;
      return io.Fonts->AddFontDefault(&cfg);
    }
    return io.Fonts->AddFontFromFileTTF(path.c_str(), px, nullptr, ranges);
  };
  f.baked = std::make_shared<const ImVector<ImWchar>>(f.glyphs.ranges());
  const bool any_cjk = !f.cjk_path.empty() && f.glyphs.size() > 0;
  auto merge_cjk = [&](float px) {
    ImFontConfig merge;
    merge.MergeMode = true;
    merge.OversampleH = 1;  // thousands of glyphs at most: keep the atlas small
    return io.Fonts->AddFontFromFileTTF(f.cjk_path.c_str(), px, &merge, f.baked->Data) != nullptr;
  };
  const float ui_px = 15.f * scale;
  f.ui = load(f.ui_path, ui_px, ui_ranges);
  f.cjk = !f.cjk_path.empty() && (!any_cjk || merge_cjk(ui_px));
  f.mono = load(mono_path, 14.f * scale, ui_ranges);
  if (any_cjk && f.cjk) merge_cjk(14.f * scale);  // the console prints what students type, Chinese included
  f.title = load(f.ui_path, 18.f * scale, ui_ranges);
  return f;
}

void reload_fonts(Fonts& fonts, float scale) {
  fonts = load_fonts(scale, std::move(fonts.glyphs));
  ImGui::GetIO().Fonts->Build();
}

bool rebuild_fonts_if_changed(Fonts& fonts, float scale) {
  if (!fonts.glyphs.changed || !fonts.cjk) return false;
  reload_fonts(fonts, scale);
  return true;
}

}  // namespace opscope::viz
