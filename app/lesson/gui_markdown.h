// Lesson text drawn with Dear ImGui: the styled blocks of markdown_doc.h wrapped at the panel's
// width (CJK characters one by one), and the colours the lesson panel's parts share. Built only
// with the GUI.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "app/lesson/markdown_doc.h"
#include "viz/theme.h"

namespace opscope::lesson {

inline const ImVec4 kGreen(0.16f, 0.55f, 0.24f, 1.f), kRed(0.80f, 0.16f, 0.16f, 1.f), kDim(0.45f, 0.45f, 0.50f, 1.f),
    kCode(0.10f, 0.40f, 0.65f, 1.f), kAccent(0.70f, 0.35f, 0.05f, 1.f);

// True when `text` holds a wide (CJK) character: the title font has Latin glyphs only.
bool has_wide(const std::string& text);
// Styled text wrapped at the panel's width, a span changing colour or font mid-line.
void draw_spans(const MdSpans& spans, const viz::Fonts& fonts);
void draw_markdown(const std::vector<MdBlock>& blocks, const viz::Fonts& fonts, float scale);
// Code in the monospace font, in a framed box as tall as its lines.
void draw_code_box(const std::string& id, const std::string& code, const viz::Fonts& fonts, float scale);

}  // namespace opscope::lesson
