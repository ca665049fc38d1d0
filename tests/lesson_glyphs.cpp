// Every character beyond ASCII of the lessons in both languages, every Chinese character of the Chinese lessons (and the knowledge map) is in the GUI's font
// atlas once the atlas is baked for their text (viz::GlyphSet, as the window seeds it), and the
// CJK font really has a glyph for it, so no lesson shows "?" boxes. Also checks that a
// character typed later is baked on the next rebuild. Usage: lesson_glyphs LESSON.md...
#include <imgui.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "app/lesson/markdown_doc.h"
#include "viz/theme.h"

namespace {

std::string read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The characters beyond ASCII of `text` without a glyph of their own in `font` (CJK, and the
// formulas' symbols: ⌊ ⌋ once showed as "?").
int count_missing(const ImFont* font, const std::string& text, const char* where) {
  int missing = 0;
  for (size_t k = 0; k < text.size();) {
    const size_t at = k;
    const char32_t c = opscope::lesson::next_code_point(text, k);
    if (c >= 0x80 && c != 0xFE0F && !font->FindGlyphNoFallback(static_cast<ImWchar>(c))) {
      std::printf("%s: no glyph for '%s' (U+%04X)\n", where, text.substr(at, k - at).c_str(), static_cast<unsigned>(c));
      ++missing;
    }
  }
  return missing;
}

}  // namespace

int main(int argc, char** argv) {
  ImGui::CreateContext();
  opscope::viz::GlyphSet glyphs;
  for (int i = 1; i < argc; ++i) glyphs.add(read(argv[i]));
  opscope::viz::Fonts fonts = opscope::viz::load_fonts(1.f, std::move(glyphs));
  ImGui::GetIO().Fonts->Build();
  if (!fonts.cjk) {
    std::printf("no CJK font installed (fonts-wqy-microhei)\n");
    return 1;
  }
  int missing = 0;
  for (int i = 1; i < argc; ++i) missing += count_missing(fonts.ui, read(argv[i]), argv[i]);
  // What a student types later is baked when the window next rebuilds the atlas.
  const std::string typed = "鑫";  // in no lesson
  if (!fonts.glyphs.add(typed) || !opscope::viz::rebuild_fonts_if_changed(fonts, 1.f)) {
    std::printf("a new character did not ask for a rebuild\n");
    ++missing;
  }
  missing += count_missing(fonts.ui, typed, "typed");
  int w = 0, h = 0;
  unsigned char* px = nullptr;
  ImGui::GetIO().Fonts->GetTexDataAsAlpha8(&px, &w, &h);
  std::printf("%zu CJK characters baked; atlas %dx%d\n", fonts.glyphs.size(), w, h);
  ImGui::DestroyContext();
  std::printf("%d characters without a glyph\n", missing);
  return missing == 0 ? 0 : 1;
}
