#include "app/lesson/terminal_markdown.h"

#include <md4c.h>

#include <algorithm>
#include <string_view>
#include <vector>

namespace opscope::lesson {

namespace {

// Decodes one UTF-8 code point at s[i], advancing i; invalid bytes decode as themselves.
char32_t next_code_point(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
  if (i + n > s.size()) n = 1;
  char32_t c = n == 1 ? b : b & (0x7F >> n);
  for (int k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return c;
}

// A source line break inside a paragraph: a space between words, nothing between CJK
// characters (Chinese text has no spaces; a space there would show as a gap).
constexpr char kSoftBreak = '\x01';

// Closing punctuation must not start a line (，。、；：！？）」』》).
bool no_break_before(char32_t c) {
  switch (c) {
    case 0xFF0C: case 0x3002: case 0x3001: case 0xFF1B: case 0xFF1A: case 0xFF01: case 0xFF1F:
    case 0xFF09: case 0x300D: case 0x300F: case 0x300B: return true;
    default: return false;
  }
}

bool is_wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
         (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x20000 && c <= 0x3FFFD);
}

// Length of an ANSI escape sequence starting at s[i] (0 when there is none).
size_t escape_length(std::string_view s, size_t i) {
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
  bool last_wide = false;  // the last character placed was a wide (CJK) one
  auto place = [&](const std::string& w, int ww, bool may_break = true) {
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
    place(word, word_w);
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
    if (text[i] == kSoftBreak) {
      end_word();
      size_t j = i + 1;
      const bool next_wide = j < text.size() && is_wide(next_code_point(text, j));
      space = !(last_wide || next_wide);
      ++i;
      continue;
    }
    const size_t start = i;
    const char32_t c = next_code_point(text, i);
    if (is_wide(c)) {
      end_word();
      place(text.substr(start, i - start), 2, !no_break_before(c));
      last_wide = true;
    } else {
      word += text.substr(start, i - start);
      ++word_w;
      last_wide = false;
    }
  }
  end_word();
  return lines;
}

struct Container {
  std::string first, rest;  // prefix of its first line, of the others
  bool used = false;
  bool tight = false;       // lists: no blank lines between items
  unsigned next_number = 0; // ordered lists
  bool ordered = false;
};

struct Renderer {
  TerminalStyle style;
  std::string out, buf;
  std::vector<Container> stack;
  bool pending_blank = false;
  int heading = 0;
  bool in_code = false;
  std::string code;
  bool in_table = false;
  std::vector<std::vector<std::string>> rows;
  int header_rows = 0;
  bool in_head = false;

  std::string on(const char* code_) const { return style.color ? std::string("\x1b[") + code_ + "m" : std::string(); }

  std::string prefix(bool mark_used) {
    std::string p;
    for (auto& c : stack) {
      p += c.used ? c.rest : c.first;
      if (mark_used) c.used = true;
    }
    return p;
  }
  int prefix_width() {
    int w = 0;
    for (auto& c : stack) w += display_width(c.used ? c.rest : c.first);
    return w;
  }
  void blank_if_needed() {
    if (pending_blank && !out.empty()) {
      std::string p;  // continuation prefixes only: a blank line never carries a list bullet
      for (auto& c : stack) p += c.rest;
      while (!p.empty() && p.back() == ' ') p.pop_back();
      out += p + "\n";
    }
    pending_blank = false;
  }
  void emit_line(const std::string& line) { out += prefix(true) + line + "\n"; }

  void flush() {
    const bool empty = buf.find_first_not_of(" \n\x01") == std::string::npos;
    if (empty) {
      buf.clear();
      return;
    }
    blank_if_needed();
    std::string text = buf;
    buf.clear();
    const int avail = std::max(20, style.width - prefix_width());
    if (heading > 0) {
      const char* code_ = heading == 1 ? "1;4;33" : heading == 2 ? "1;36" : "1";
      for (auto& l : wrap(text, avail)) emit_line(on(code_) + l + on("0"));
      if (!style.color && heading <= 2) emit_line(std::string(std::min(avail, display_width(text)), heading == 1 ? '=' : '-'));
      return;
    }
    for (auto& l : wrap(text, avail)) emit_line(l);
  }
};

int enter_block(MD_BLOCKTYPE type, void* detail, void* user) {
  auto& r = *static_cast<Renderer*>(user);
  if (type != MD_BLOCK_TD && type != MD_BLOCK_TH && type != MD_BLOCK_TR && type != MD_BLOCK_THEAD && type != MD_BLOCK_TBODY)
    r.flush();
  switch (type) {
    case MD_BLOCK_QUOTE: r.stack.push_back({r.on("2") + "│ " + r.on("22"), r.on("2") + "│ " + r.on("22")}); break;
    case MD_BLOCK_UL: {
      Container c{"", "", false, static_cast<MD_BLOCK_UL_DETAIL*>(detail)->is_tight != 0};
      r.stack.push_back(c);
      break;
    }
    case MD_BLOCK_OL: {
      auto* d = static_cast<MD_BLOCK_OL_DETAIL*>(detail);
      Container c{"", "", false, d->is_tight != 0, d->start, true};
      r.stack.push_back(c);
      break;
    }
    case MD_BLOCK_LI: {
      Container& list = r.stack.back();
      const std::string mark = list.ordered ? std::to_string(list.next_number++) + ". " : "• ";
      if (!list.tight) r.pending_blank = true;
      r.stack.push_back({"  " + mark, std::string(2 + display_width(mark), ' ')});  // invalidates `list`
      break;
    }
    case MD_BLOCK_H:
      r.heading = static_cast<int>(static_cast<MD_BLOCK_H_DETAIL*>(detail)->level);
      r.pending_blank = true;
      break;
    case MD_BLOCK_P: r.pending_blank = true; break;
    case MD_BLOCK_CODE:
      r.in_code = true;
      r.code.clear();
      r.pending_blank = true;
      break;
    case MD_BLOCK_HR:
      r.pending_blank = true;
      r.blank_if_needed();
      r.emit_line(r.on("2") + std::string(std::min(r.style.width, 60), '-') + r.on("22"));
      break;
    case MD_BLOCK_TABLE:
      r.in_table = true;
      r.rows.clear();
      r.header_rows = 0;
      r.pending_blank = true;
      break;
    case MD_BLOCK_THEAD: r.in_head = true; break;
    case MD_BLOCK_TR: r.rows.emplace_back(); break;
    default: break;
  }
  return 0;
}

void render_table(Renderer& r) {
  size_t cols = 0;
  for (auto& row : r.rows) cols = std::max(cols, row.size());
  std::vector<int> w(cols, 0);
  for (auto& row : r.rows)
    for (size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], display_width(row[c]));
  r.blank_if_needed();
  for (size_t i = 0; i < r.rows.size(); ++i) {
    std::string line;
    for (size_t c = 0; c < cols; ++c) {
      std::string cell = c < r.rows[i].size() ? r.rows[i][c] : "";
      if (static_cast<int>(i) < r.header_rows) cell = r.on("1") + cell + r.on("22");
      line += (c ? "  │ " : "  ") + cell + std::string(w[c] - display_width(c < r.rows[i].size() ? r.rows[i][c] : ""), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    r.emit_line(line);
    if (static_cast<int>(i) + 1 == r.header_rows) {
      std::string rule;
      for (size_t c = 0; c < cols; ++c) rule += (c ? "──┼─" : "  ") + [&] {
        std::string s;
        for (int k = 0; k < w[c]; ++k) s += "─";
        return s;
      }();
      r.emit_line(r.on("2") + rule + r.on("22"));
    }
  }
}

int leave_block(MD_BLOCKTYPE type, void*, void* user) {
  auto& r = *static_cast<Renderer*>(user);
  switch (type) {
    case MD_BLOCK_P:
    case MD_BLOCK_H:
      r.flush();
      r.heading = 0;
      r.pending_blank = true;
      break;
    case MD_BLOCK_LI:
      r.flush();
      r.stack.pop_back();
      break;
    case MD_BLOCK_QUOTE:
    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
      r.flush();
      r.stack.pop_back();
      r.pending_blank = true;
      break;
    case MD_BLOCK_CODE: {
      r.in_code = false;
      r.blank_if_needed();
      std::string line;
      for (char c : r.code) {
        if (c == '\n') {
          r.emit_line("    " + r.on("32") + line + r.on("39"));
          line.clear();
        } else {
          line += c;
        }
      }
      if (!line.empty()) r.emit_line("    " + r.on("32") + line + r.on("39"));
      r.pending_blank = true;
      break;
    }
    case MD_BLOCK_TH:
    case MD_BLOCK_TD: {
      std::string cell = r.buf;
      r.buf.clear();
      const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
      r.rows.back().push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
      break;
    }
    case MD_BLOCK_THEAD:
      r.in_head = false;
      r.header_rows = static_cast<int>(r.rows.size());
      break;
    case MD_BLOCK_TABLE:
      r.in_table = false;
      render_table(r);
      r.pending_blank = true;
      break;
    default: break;
  }
  return 0;
}

int enter_span(MD_SPANTYPE type, void*, void* user) {
  auto& r = *static_cast<Renderer*>(user);
  switch (type) {
    case MD_SPAN_EM: r.buf += r.on("3"); break;
    case MD_SPAN_STRONG: r.buf += r.style.color ? r.on("1") : "*"; break;
    case MD_SPAN_CODE: r.buf += r.style.color ? r.on("36") : "`"; break;
    default: break;
  }
  return 0;
}

int leave_span(MD_SPANTYPE type, void*, void* user) {
  auto& r = *static_cast<Renderer*>(user);
  switch (type) {
    case MD_SPAN_EM: r.buf += r.on("23"); break;
    case MD_SPAN_STRONG: r.buf += r.style.color ? r.on("22") : "*"; break;
    case MD_SPAN_CODE: r.buf += r.style.color ? r.on("39") : "`"; break;
    default: break;
  }
  return 0;
}

int on_text(MD_TEXTTYPE type, const MD_CHAR* text, MD_SIZE size, void* user) {
  auto& r = *static_cast<Renderer*>(user);
  std::string t(text, size);
  if (r.in_code) {
    r.code += t;
    return 0;
  }
  switch (type) {
    case MD_TEXT_SOFTBR: r.buf += kSoftBreak; break;
    case MD_TEXT_BR: r.buf += '\n'; break;
    case MD_TEXT_ENTITY:
      r.buf += t == "&amp;" ? "&" : t == "&lt;" ? "<" : t == "&gt;" ? ">" : t == "&quot;" ? "\"" : t == "&nbsp;" ? " " : t;
      break;
    case MD_TEXT_HTML: break;  // inline HTML (and directive comments) are not shown
    default: r.buf += t; break;
  }
  return 0;
}

}  // namespace

int display_width(const std::string& text) {
  int w = 0;
  for (size_t i = 0; i < text.size();) {
    if (size_t e = escape_length(text, i)) {
      i += e;
      continue;
    }
    const char32_t c = next_code_point(text, i);
    w += is_wide(c) ? 2 : (c < 0x20 || (c >= 0x300 && c <= 0x36F)) ? 0 : 1;
  }
  return w;
}

std::string render_markdown(const std::string& markdown, const TerminalStyle& style) {
  Renderer r;
  r.style = style;
  MD_PARSER parser{};
  parser.flags = MD_DIALECT_GITHUB;
  parser.enter_block = enter_block;
  parser.leave_block = leave_block;
  parser.enter_span = enter_span;
  parser.leave_span = leave_span;
  parser.text = on_text;
  if (md_parse(markdown.data(), static_cast<MD_SIZE>(markdown.size()), &parser, &r) != 0) return markdown + "\n";
  r.flush();
  return r.out;
}

}  // namespace opscope::lesson
