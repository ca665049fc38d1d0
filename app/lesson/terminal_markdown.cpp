#include "app/lesson/terminal_markdown.h"

#include <algorithm>
#include <vector>

#include "app/lesson/markdown_doc.h"

namespace opscope::lesson {

namespace {

// Closing punctuation must not start a line (，。、；：！？）」』》).
bool no_break_before(char32_t c) {
  switch (c) {
    case 0xFF0C:
    case 0x3002:
    case 0x3001:
    case 0xFF1B:
    case 0xFF1A:
    case 0xFF01:
    case 0xFF1F:
    case 0xFF09:
    case 0x300D:
    case 0x300F:
    case 0x300B: return true;
    default: return false;
  }
}

// Length of an ANSI escape sequence starting at s[i] (0 when there is none).
size_t escape_length(const std::string& s, size_t i) {
  if (s[i] != '\x1b' || i + 1 >= s.size() || s[i + 1] != '[') return 0;
  size_t j = i + 2;
  while (j < s.size() && !(s[j] >= '@' && s[j] <= '~')) ++j;
  return j < s.size() ? j - i + 1 : 0;
}

// Greedy word wrap of styled text: spaces and the places around wide characters may break.
std::vector<std::string> wrap(const std::string& text, int width) {
  std::vector<std::string> lines(1);
  int col = 0;
  bool space = false;
  std::string word;
  int word_w = 0;
  auto place = [&](const std::string& w, int ww, bool may_break) {
    if (ww == 0 && w.empty()) return;
    if (may_break && col > 0 && col + (space ? 1 : 0) + ww > width) {
      lines.emplace_back();
      col = 0;
      space = false;
    }
    if (space && col > 0) {
      lines.back() += ' ';
      ++col;
    }
    space = false;
    lines.back() += w;
    col += ww;
  };
  auto end_word = [&] {
    place(word, word_w, true);
    word.clear();
    word_w = 0;
  };
  for (size_t i = 0; i < text.size();) {
    if (size_t e = escape_length(text, i)) {
      word += text.substr(i, e);  // zero width: stays with the word it styles
      i += e;
      continue;
    }
    if (text[i] == '\n') {
      end_word();
      lines.emplace_back();
      col = 0;
      space = false;
      ++i;
      continue;
    }
    if (text[i] == ' ') {
      end_word();
      space = true;
      ++i;
      continue;
    }
    const size_t start = i;
    const char32_t c = next_code_point(text, i);
    if (is_wide(c)) {
      end_word();
      place(text.substr(start, i - start), 2, !no_break_before(c));
    } else {
      word += text.substr(start, i - start);
      ++word_w;
    }
  }
  end_word();
  return lines;
}

class Renderer {
 public:
  explicit Renderer(const TerminalStyle& s) : style_(s) {}

  std::string render(const std::vector<MdBlock>& blocks) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      const MdBlock& b = blocks[i];
      const bool tight_follow = i > 0 && b.tight && b.list_depth > 0 && blocks[i - 1].list_depth > 0;
      if (i > 0 && !tight_follow) out_ += blank_prefix(std::min(b.quote_depth, blocks[i - 1].quote_depth)) + "\n";
      block(b);
    }
    return out_;
  }

 private:
  std::string on(const char* code) const { return style_.color ? std::string("\x1b[") + code + "m" : std::string(); }

  // Quote bars and list indentation; the bullet on the first line of a list item's first block.
  std::pair<std::string, std::string> prefixes(const MdBlock& b) const {
    std::string quote;
    for (int q = 0; q < b.quote_depth; ++q) quote += on("2") + "│ " + on("22");
    const std::string indent(static_cast<size_t>(4 * std::max(0, b.list_depth - 1)), ' ');
    if (b.list_depth == 0) return {quote, quote};
    const std::string mark = b.bullet.empty() ? "" : "  " + b.bullet + " ";
    const std::string rest = indent + std::string(static_cast<size_t>(std::max(4, display_width(mark))), ' ');
    return {quote + (mark.empty()
                         ? rest
                         : indent + mark + std::string(static_cast<size_t>(std::max(0, 4 - display_width(mark))), ' ')),
            quote + rest};
  }
  // A blank line inside a quote keeps its bar; one between a quote and other text has none.
  std::string blank_prefix(int quote_depth) const {
    std::string p;
    for (int q = 0; q < quote_depth; ++q) p += on("2") + "│" + on("22");
    return p;
  }

  std::string styled(const MdSpans& spans) const {
    std::string s;
    for (const MdSpan& sp : spans) {
      std::string t = sp.text;
      if (sp.code) t = style_.color ? on("36") + t + on("39") : "`" + t + "`";
      if (sp.emphasis && style_.color) t = on("3") + t + on("23");
      if (sp.strong) t = style_.color ? on("1") + t + on("22") : "*" + t + "*";
      if (!sp.link.empty() && sp.link != sp.text) t += " (" + sp.link + ")";
      s += t;
    }
    return s;
  }

  void emit(const MdBlock& b, const std::vector<std::string>& lines) {
    auto [first, rest] = prefixes(b);
    for (size_t i = 0; i < lines.size(); ++i) out_ += (i == 0 ? first : rest) + lines[i] + "\n";
  }

  void block(const MdBlock& b) {
    const int avail = std::max(20, style_.width - display_width(prefixes(b).second));
    switch (b.kind) {
      case MdBlock::Kind::heading: {
        const char* code = b.heading_level == 1 ? "1;4;33" : b.heading_level == 2 ? "1;36" : "1";
        std::vector<std::string> lines;
        for (auto& l : wrap(plain_text(b.spans), avail)) lines.push_back(on(code) + l + on("0"));
        if (!style_.color && b.heading_level <= 2)
          lines.push_back(std::string(static_cast<size_t>(std::min(avail, display_width(plain_text(b.spans)))),
                                      b.heading_level == 1 ? '=' : '-'));
        emit(b, lines);
        break;
      }
      case MdBlock::Kind::paragraph: emit(b, wrap(styled(b.spans), avail)); break;
      case MdBlock::Kind::code: {
        std::vector<std::string> lines;
        std::string code = b.code;
        if (!code.empty() && code.back() == '\n') code.pop_back();
        size_t a = 0;
        for (;;) {
          const size_t e = code.find('\n', a);
          lines.push_back("    " + on("32") + code.substr(a, e == std::string::npos ? std::string::npos : e - a) +
                          on("39"));
          if (e == std::string::npos) break;
          a = e + 1;
        }
        emit(b, lines);
        break;
      }
      case MdBlock::Kind::rule:
        emit(b, {on("2") + std::string(static_cast<size_t>(std::min(avail, 60)), '-') + on("22")});
        break;
      case MdBlock::Kind::table: table(b); break;
    }
  }

  void table(const MdBlock& b) {
    size_t cols = 0;
    for (auto& row : b.rows) cols = std::max(cols, row.size());
    std::vector<std::vector<std::string>> cells;
    std::vector<int> w(cols, 0);
    for (auto& row : b.rows) {
      cells.emplace_back();
      for (size_t c = 0; c < cols; ++c) {
        cells.back().push_back(c < row.size() ? styled(row[c]) : "");
        w[c] = std::max(w[c], display_width(cells.back().back()));
      }
    }
    std::vector<std::string> lines;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string line;
      for (size_t c = 0; c < cols; ++c) {
        std::string cell = cells[i][c];
        const int pad = w[c] - display_width(cell);
        if (static_cast<int>(i) < b.header_rows) cell = on("1") + cell + on("22");
        line += (c ? "  │ " : "  ") + cell + std::string(static_cast<size_t>(pad), ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      lines.push_back(line);
      if (static_cast<int>(i) + 1 == b.header_rows) {
        std::string rule = "  ";
        for (size_t c = 0; c < cols; ++c) {
          if (c) rule += "──┼─";
          for (int k = 0; k < w[c]; ++k) rule += "─";
        }
        lines.push_back(on("2") + rule + on("22"));
      }
    }
    emit(b, lines);
  }

  TerminalStyle style_;
  std::string out_;
};

}  // namespace

std::string render_markdown(const std::string& markdown, const TerminalStyle& style) {
  return Renderer(style).render(parse_markdown(markdown));
}

}  // namespace opscope::lesson
