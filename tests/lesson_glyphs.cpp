// Every Chinese character of the Chinese lessons has a glyph in the GUI's font atlas
// (viz::cjk_glyph_ranges), so no lesson shows "?" boxes. Usage: lesson_glyphs LESSON.md...
#include <imgui.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "app/lesson/markdown_doc.h"
#include "viz/theme.h"

int main(int argc, char** argv) {
  ImGui::CreateContext();
  std::set<char32_t> have;
  for (const ImWchar* r = opscope::viz::cjk_glyph_ranges(); r[0]; r += 2)
    for (char32_t c = r[0]; c <= r[1]; ++c) have.insert(c);
  int missing = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    for (size_t k = 0; k < text.size();) {
      const size_t at = k;
      const char32_t c = opscope::lesson::next_code_point(text, k);
      if (opscope::lesson::is_wide(c) && !have.count(c)) {
        std::printf("%s: no glyph for '%s' (U+%04X)\n", argv[i], text.substr(at, k - at).c_str(), static_cast<unsigned>(c));
        ++missing;
      }
    }
  }
  ImGui::DestroyContext();
  std::printf("%d characters without a glyph\n", missing);
  return missing == 0 ? 0 : 1;
}
