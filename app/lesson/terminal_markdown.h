// Markdown rendered for a terminal (md4c): headings, emphasis, inline code, lists, block
// quotes, code blocks and tables, wrapped to a width that counts CJK characters as two
// columns and ANSI escapes as none. Formulas stay plain text.
#pragma once
#include <string>

#include "app/lesson/markdown_doc.h"  // display_width

namespace opscope::lesson {

struct TerminalStyle {
  bool color = false;  // ANSI bold, italics and colours
  int width = 88;  // wrap column
};

std::string render_markdown(const std::string& markdown, const TerminalStyle& style);

}  // namespace opscope::lesson
