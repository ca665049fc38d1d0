#include "viz/theme.h"

#include <array>
#include <filesystem>
#include <functional>

namespace opscope::viz {

namespace {

Theme make_light() {
  Theme t;
  t.dark = false;
  t.canvas = IM_COL32(248, 249, 251, 255);
  t.grid = IM_COL32(228, 231, 236, 255);
  t.text = IM_COL32(17, 24, 39, 255);
  t.text_dim = IM_COL32(85, 95, 110, 255);
  t.edge = IM_COL32(100, 116, 139, 255);
  t.edge_backward = IM_COL32(190, 24, 93, 255);
  t.link = IM_COL32(190, 24, 93, 110);
  t.edge_label_bg = IM_COL32(248, 249, 251, 225);
  t.box_border = IM_COL32(71, 85, 105, 255);
  t.param_fill = IM_COL32(253, 230, 138, 255);
  t.input_fill = IM_COL32(226, 232, 240, 255);
  t.constant_fill = IM_COL32(241, 245, 249, 255);
  t.seed_fill = IM_COL32(254, 202, 202, 255);
  t.folded_fill = IM_COL32(221, 214, 254, 255);
  t.cluster_border = IM_COL32(148, 163, 184, 255);
  t.backward_tint = IM_COL32(251, 207, 232, 255);
  t.selected = IM_COL32(37, 99, 235, 255);
  t.hovered = IM_COL32(59, 130, 246, 160);
  t.highlight = kHighlightColor;
  t.badge_fill = IM_COL32(124, 58, 237, 255);
  t.badge_text = IM_COL32(255, 255, 255, 255);
  return t;
}

Theme make_dark() {
  Theme t;
  t.dark = true;
  t.canvas = IM_COL32(22, 25, 31, 255);
  t.grid = IM_COL32(34, 38, 46, 255);
  t.text = IM_COL32(229, 231, 235, 255);
  t.text_dim = IM_COL32(156, 163, 175, 255);
  t.edge = IM_COL32(140, 150, 168, 255);
  t.edge_backward = IM_COL32(244, 114, 182, 255);
  t.link = IM_COL32(244, 114, 182, 100);
  t.edge_label_bg = IM_COL32(22, 25, 31, 215);
  t.box_border = IM_COL32(148, 163, 184, 255);
  t.param_fill = IM_COL32(113, 90, 20, 255);
  t.input_fill = IM_COL32(55, 65, 81, 255);
  t.constant_fill = IM_COL32(40, 44, 52, 255);
  t.seed_fill = IM_COL32(127, 29, 29, 255);
  t.folded_fill = IM_COL32(76, 29, 149, 255);
  t.cluster_border = IM_COL32(100, 116, 139, 255);
  t.backward_tint = IM_COL32(131, 24, 67, 255);
  t.selected = IM_COL32(96, 165, 250, 255);
  t.hovered = IM_COL32(96, 165, 250, 150);
  t.highlight = kHighlightColor;
  t.badge_fill = IM_COL32(139, 92, 246, 255);
  t.badge_text = IM_COL32(255, 255, 255, 255);
  return t;
}

ImU32 mix(ImU32 a, ImU32 b, float t) {
  ImVec4 x = ImGui::ColorConvertU32ToFloat4(a), y = ImGui::ColorConvertU32ToFloat4(b);
  return ImGui::ColorConvertFloat4ToU32(
      ImVec4(x.x + (y.x - x.x) * t, x.y + (y.y - x.y) * t, x.z + (y.z - x.z) * t, x.w + (y.w - x.w) * t));
}

struct FamilyColor {
  const char* family;
  ImU32 light, dark;
};
// Soft fills in the light theme, deep ones in the dark; none near the highlight orange.
constexpr std::array<FamilyColor, 14> kFamilies{{
    {"elementwise", IM_COL32(191, 219, 254, 255), IM_COL32(30, 64, 120, 255)},
    {"comparison", IM_COL32(199, 210, 254, 255), IM_COL32(49, 46, 129, 255)},
    {"activation", IM_COL32(187, 247, 208, 255), IM_COL32(20, 83, 45, 255)},
    {"reduction", IM_COL32(165, 243, 252, 255), IM_COL32(22, 78, 99, 255)},
    {"matmul", IM_COL32(196, 181, 253, 255), IM_COL32(76, 29, 149, 255)},
    {"conv", IM_COL32(233, 213, 255, 255), IM_COL32(88, 28, 135, 255)},
    {"shape", IM_COL32(226, 232, 240, 255), IM_COL32(51, 65, 85, 255)},
    {"softmax", IM_COL32(153, 246, 228, 255), IM_COL32(17, 94, 89, 255)},
    {"loss", IM_COL32(254, 205, 211, 255), IM_COL32(136, 19, 55, 255)},
    {"nn", IM_COL32(217, 249, 157, 255), IM_COL32(63, 98, 18, 255)},
    {"norm", IM_COL32(167, 243, 208, 255), IM_COL32(6, 95, 70, 255)},
    {"pool", IM_COL32(186, 230, 253, 255), IM_COL32(7, 89, 133, 255)},
    {"embedding", IM_COL32(245, 208, 254, 255), IM_COL32(112, 26, 117, 255)},
    {"attention", IM_COL32(221, 214, 254, 255), IM_COL32(91, 33, 182, 255)},
}};

}  // namespace

const Theme& theme(bool dark) {
  static const Theme light = make_light(), night = make_dark();
  return dark ? night : light;
}

ImU32 family_color(const Theme& t, const std::string& family, bool backward) {
  ImU32 base = t.dark ? IM_COL32(55, 65, 81, 255) : IM_COL32(229, 231, 235, 255);
  for (const auto& f : kFamilies)
    if (family == f.family) base = t.dark ? f.dark : f.light;
  return backward ? mix(base, t.backward_tint, 0.7f) : base;
}

ImU32 category_color(MemCategory c, bool dark) {
  static constexpr std::array<ImU32, kNumCategories> light{
      IM_COL32(234, 179, 8, 255),   // parameter
      IM_COL32(148, 163, 184, 255), // input
      IM_COL32(59, 130, 246, 255),  // activation
      IM_COL32(139, 92, 246, 255),  // saved for backward
      IM_COL32(236, 72, 153, 255),  // gradient
      IM_COL32(22, 163, 74, 255),   // optimizer state
      IM_COL32(20, 184, 166, 255),  // workspace
      IM_COL32(203, 213, 225, 255), // temporary
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

const ImWchar* cjk_glyph_ranges() {
  // ImGui's 2,500 common simplified characters plus the course's words outside them (函数,
  // 引擎, 溢出, 部署, 芯片, 坐标轴, 频域). The lesson_glyphs test fails when a lesson needs another.
  static ImVector<ImWchar> ranges;  // the atlas reads it when it builds: it must outlive load_fonts
  if (ranges.empty()) {
    ImFontGlyphRangesBuilder b;
    b.AddRanges(ImGui::GetIO().Fonts->GetGlyphRangesChineseSimplifiedCommon());
    b.AddText("函擎溢署芯轴频");
    b.BuildRanges(&ranges);
  }
  return ranges.Data;
}

Fonts load_fonts(float scale) {
  namespace fs = std::filesystem;
  ImGuiIO& io = ImGui::GetIO();
  Fonts f;
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
  // Latin, Greek (formulas: σ, Σ, ∂), the superscript T of Bᵀ, arrows and a few symbols.
  static const ImWchar ui_ranges[] = {0x0020, 0x00FF, 0x0370, 0x03FF, 0x1D00, 0x1D7F, 0x2000, 0x22FF, 0x25A0, 0x25FF, 0};
  auto load = [&](const std::string& path, float px, const ImWchar* ranges) -> ImFont* {
    if (path.empty()) {
      ImFontConfig cfg;
      cfg.SizePixels = px;
      return io.Fonts->AddFontDefault(&cfg);
    }
    return io.Fonts->AddFontFromFileTTF(path.c_str(), px, nullptr, ranges);
  };
  const float ui_px = 15.f * scale;
  f.ui = load(f.ui_path, ui_px, ui_ranges);
  if (!f.cjk_path.empty()) {
    ImFontConfig merge;
    merge.MergeMode = true;
    merge.OversampleH = 1;  // 2,500 glyphs: keep the atlas small
    f.cjk = io.Fonts->AddFontFromFileTTF(f.cjk_path.c_str(), ui_px, &merge,
                                         cjk_glyph_ranges()) != nullptr;
  }
  f.mono = load(mono_path, 14.f * scale, ui_ranges);
  if (f.cjk) {  // the console prints what students type, Chinese included
    ImFontConfig merge;
    merge.MergeMode = true;
    merge.OversampleH = 1;
    io.Fonts->AddFontFromFileTTF(f.cjk_path.c_str(), 14.f * scale, &merge, cjk_glyph_ranges());
  }
  f.title = load(f.ui_path, 18.f * scale, ui_ranges);
  return f;
}

}  // namespace opscope::viz
