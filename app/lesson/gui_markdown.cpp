#include "app/lesson/gui_markdown.h"

#include <algorithm>

namespace opscope::lesson {

bool has_wide(const std::string& t) {
  for (size_t i = 0; i < t.size();)
    if (is_wide(next_code_point(t, i))) return true;
  return false;
}

// Styled text wrapped at the panel's width: words (and single CJK characters) are laid out one
// by one, so a span can change colour or font in the middle of a line.
void draw_spans(const MdSpans& spans, const viz::Fonts& fonts) {
  const float wrap = ImGui::GetContentRegionAvail().x;
  float x = 0;
  for (const MdSpan& sp : spans) {
    if (sp.text == "\n") {
      x = 0;
      ImGui::NewLine();
      continue;
    }
    ImFont* font = sp.code && fonts.mono ? fonts.mono : nullptr;
    if (font) ImGui::PushFont(font);
    const bool colored = sp.code || sp.strong || !sp.link.empty();
    if (colored) ImGui::PushStyleColor(ImGuiCol_Text, sp.code ? kCode : sp.strong ? kAccent : kCode);
    const std::string& t = sp.text;
    for (size_t i = 0; i < t.size();) {
      // The next token: a CJK character, or a word with the spaces after it.
      size_t j = i;
      const char32_t c = next_code_point(t, j);
      if (!is_wide(c)) {
        j = i;
        while (j < t.size() && t[j] != ' ') {
          size_t k = j;
          if (is_wide(next_code_point(t, k))) break;
          j = k;
        }
        while (j < t.size() && t[j] == ' ') ++j;
        if (j == i) j = i + 1;
      }
      const char* a = t.c_str() + i;
      const char* b = t.c_str() + j;
      const float w = ImGui::CalcTextSize(a, b).x;
      if (x > 0 && x + w > wrap) x = 0;  // next line
      else if (x > 0) ImGui::SameLine(0, 0);
      ImGui::TextUnformatted(a, b);
      x += w;
      i = j;
    }
    if (colored) ImGui::PopStyleColor();
    if (font) ImGui::PopFont();
  }
}

void draw_markdown(const std::vector<MdBlock>& blocks, const viz::Fonts& fonts, float scale) {
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const MdBlock& b = blocks[bi];
    const float indent =
        static_cast<float>(b.list_depth) * 18.f * scale + static_cast<float>(b.quote_depth) * 12.f * scale;
    if (indent > 0) ImGui::Indent(indent);
    if (!b.bullet.empty()) {
      ImGui::SetCursorPosX(ImGui::GetCursorPosX() - 14.f * scale);
      ImGui::TextUnformatted(b.bullet.c_str());
      ImGui::SameLine(0, 4.f * scale);
    }
    switch (b.kind) {
      case MdBlock::Kind::heading: {
        // The title font has Latin glyphs only: Chinese headings stay in the UI font.
        const std::string text = plain_text(b.spans);
        ImFont* f = b.heading_level <= 2 && fonts.title && !has_wide(text) ? fonts.title : nullptr;
        if (f) ImGui::PushFont(f);
        ImGui::PushStyleColor(ImGuiCol_Text, kAccent);
        ImGui::TextWrapped("%s", text.c_str());
        ImGui::PopStyleColor();
        if (f) ImGui::PopFont();
        break;
      }
      case MdBlock::Kind::paragraph:
        if (b.quote_depth > 0) ImGui::PushStyleColor(ImGuiCol_Text, kDim);
        draw_spans(b.spans, fonts);
        if (b.quote_depth > 0) ImGui::PopStyleColor();
        break;
      case MdBlock::Kind::code:
        if (fonts.mono) ImGui::PushFont(fonts.mono);
        ImGui::PushStyleColor(ImGuiCol_Text, kCode);
        ImGui::TextUnformatted(b.code.c_str());
        ImGui::PopStyleColor();
        if (fonts.mono) ImGui::PopFont();
        break;
      case MdBlock::Kind::rule: ImGui::Separator(); break;
      case MdBlock::Kind::table: {
        size_t cols = 0;
        for (auto& r : b.rows) cols = std::max(cols, r.size());
        if (cols == 0) break;
        const std::string id = "##table" + std::to_string(bi);
        if (ImGui::BeginTable(id.c_str(), static_cast<int>(cols), ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) {
          for (size_t r = 0; r < b.rows.size(); ++r) {
            ImGui::TableNextRow(static_cast<int>(r) < b.header_rows ? ImGuiTableRowFlags_Headers : 0);
            for (size_t c = 0; c < cols; ++c) {
              ImGui::TableSetColumnIndex(static_cast<int>(c));
              if (c < b.rows[r].size()) ImGui::TextWrapped("%s", plain_text(b.rows[r][c]).c_str());
            }
          }
          ImGui::EndTable();
        }
        break;
      }
    }
    if (indent > 0) ImGui::Unindent(indent);
    const bool tight_next =
        bi + 1 < blocks.size() && blocks[bi + 1].tight && blocks[bi + 1].list_depth > 0 && b.list_depth > 0;
    if (!tight_next) ImGui::Spacing();
  }
}

void draw_code_box(const std::string& id, const std::string& code, const viz::Fonts& fonts, float scale) {
  const bool ends_nl = !code.empty() && code.back() == '\n';
  const int lines = static_cast<int>(std::count(code.begin(), code.end(), '\n')) + (ends_nl ? 0 : 1);
  if (fonts.mono) ImGui::PushFont(fonts.mono);
  const float h = static_cast<float>(lines) * ImGui::GetTextLineHeightWithSpacing() + 10.f * scale;
  ImGui::BeginChild(id.c_str(), ImVec2(0, h), true, ImGuiWindowFlags_NoScrollbar);
  ImGui::TextUnformatted(code.c_str(), code.c_str() + code.size() - (ends_nl ? 1 : 0));
  ImGui::EndChild();
  if (fonts.mono) ImGui::PopFont();
}

}  // namespace opscope::lesson
