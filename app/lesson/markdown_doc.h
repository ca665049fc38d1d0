// Lesson prose as a list of styled blocks (parsed once with md4c), for players to draw: the
// terminal wraps and colours them, the GUI's lesson panel draws them with its widgets. Covers
// what lessons use: headings, paragraphs, emphasis, inline code, links, nested lists, block
// quotes, code samples, tables, rules. Formulas stay plain text.
#pragma once
#include <string>
#include <vector>

namespace opscope::lesson {

struct MdSpan {
  std::string text;  // a hard line break is a span holding "\n"
  bool strong = false, emphasis = false, code = false;
  std::string link;  // the target when the span is a link's text
};
using MdSpans = std::vector<MdSpan>;

struct MdBlock {
  enum class Kind { heading, paragraph, code, table, rule };
  Kind kind = Kind::paragraph;
  int heading_level = 0;  // 1..6
  int quote_depth = 0;  // inside this many block quotes
  int list_depth = 0;  // inside this many list items
  std::string bullet;  // "•" or "3." on the first block of a list item, empty otherwise
  bool tight = false;  // part of a tight list: no blank line before it
  MdSpans spans;  // heading, paragraph
  std::string code, code_lang;  // code
  std::vector<std::vector<MdSpans>> rows;  // table: rows of cells
  int header_rows = 0;
};

std::vector<MdBlock> parse_markdown(const std::string& markdown);
// The spans' text without styles.
std::string plain_text(const MdSpans& spans);

// Columns `text` takes on a terminal: East Asian wide characters count two, ANSI escapes and
// control characters none.
int display_width(const std::string& text);
// Decodes the UTF-8 code point at s[i] and advances i (an invalid byte decodes as itself).
char32_t next_code_point(const std::string& s, size_t& i);
bool is_wide(char32_t c);  // CJK and other East Asian wide characters

}  // namespace opscope::lesson
