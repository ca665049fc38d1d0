#include "app/lesson/markdown_doc.h"

#include <md4c.h>

namespace opscope::lesson {

char32_t next_code_point(const std::string& s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
  if (i + static_cast<size_t>(n) > s.size()) n = 1;
  char32_t c = n == 1 ? b : b & (0x7F >> n);
  for (int k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
  i += static_cast<size_t>(n);
  return c;
}

bool is_wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
         (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x20000 && c <= 0x3FFFD);
}

int display_width(const std::string& text) {
  int w = 0;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {  // an ANSI escape
      size_t j = i + 2;
      while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
      i = j + 1;
      continue;
    }
    const char32_t c = next_code_point(text, i);
    w += is_wide(c) ? 2 : (c < 0x20 || (c >= 0x300 && c <= 0x36F)) ? 0 : 1;
  }
  return w;
}

std::string plain_text(const MdSpans& spans) {
  std::string s;
  for (auto& sp : spans) s += sp.text;
  return s;
}

namespace {

struct List {
  bool ordered = false, tight = false;
  unsigned next = 1;
  std::string pending_bullet;  // set by a new item, taken by its first block
};

struct Builder {
  std::vector<MdBlock> blocks;
  std::vector<List> lists;
  int quote_depth = 0;
  bool open = false;  // blocks.back() is being filled
  int strong = 0, emphasis = 0, code_span = 0;
  std::string link;
  bool soft_break = false;  // a source line break waits for the next text
  bool in_table = false, in_cell = false;
  MdBlock table;

  void start(MdBlock::Kind kind) {
    MdBlock b;
    b.kind = kind;
    b.quote_depth = quote_depth;
    b.list_depth = static_cast<int>(lists.size());
    if (!lists.empty()) {
      b.tight = lists.back().tight;
      b.bullet = lists.back().pending_bullet;
      lists.back().pending_bullet.clear();
    }
    blocks.push_back(std::move(b));
    open = true;
  }
  void close() { open = false; }
  MdSpans* target() {
    if (in_cell) return &table.rows.back().back();
    if (!open) start(MdBlock::Kind::paragraph);  // text straight inside a tight list item
    return &blocks.back().spans;
  }
  void add_text(const std::string& text) {
    std::string t = text;
    MdSpans& spans = *target();
    if (soft_break) {
      // A line break is a space, except between two CJK characters (Chinese has no spaces).
      soft_break = false;
      std::string prev = spans.empty() ? "" : spans.back().text;
      bool prev_wide = false;
      for (size_t i = 0; i < prev.size();) prev_wide = is_wide(next_code_point(prev, i));
      size_t j = 0;
      const bool next_wide = !t.empty() && is_wide(next_code_point(t, j));
      // The space belongs to the text before the break, not to a code span starting after it.
      // After a code span the space goes to the plain text that follows (`x` then "instead").
      if (!(prev_wide && next_wide) && !spans.empty() && spans.back().text != "\n") {
        if (spans.back().code && code_span == 0) t = " " + t;
        else spans.back().text += " ";
      }
    }
    append(spans, t);
  }
  void append(MdSpans& spans, const std::string& t) {
    if (!spans.empty()) {
      MdSpan& last = spans.back();
      if (last.strong == (strong > 0) && last.emphasis == (emphasis > 0) && last.code == (code_span > 0) &&
          last.link == link && last.text != "\n") {
        last.text += t;
        return;
      }
    }
    spans.push_back(MdSpan{t, strong > 0, emphasis > 0, code_span > 0, link});
  }
};

int enter_block(MD_BLOCKTYPE type, void* detail, void* user) {
  auto& b = *static_cast<Builder*>(user);
  switch (type) {
    case MD_BLOCK_QUOTE:
      b.close();
      ++b.quote_depth;
      break;
    case MD_BLOCK_UL:
      b.close();
      b.lists.push_back({false, static_cast<MD_BLOCK_UL_DETAIL*>(detail)->is_tight != 0, 1, {}});
      break;
    case MD_BLOCK_OL: {
      b.close();
      auto* d = static_cast<MD_BLOCK_OL_DETAIL*>(detail);
      b.lists.push_back({true, d->is_tight != 0, d->start, {}});
      break;
    }
    case MD_BLOCK_LI: {
      b.close();
      List& l = b.lists.back();
      l.pending_bullet = l.ordered ? std::to_string(l.next++) + "." : "•";
      break;
    }
    case MD_BLOCK_H:
      b.close();
      b.start(MdBlock::Kind::heading);
      b.blocks.back().heading_level = static_cast<int>(static_cast<MD_BLOCK_H_DETAIL*>(detail)->level);
      break;
    case MD_BLOCK_P:
      b.close();
      b.start(MdBlock::Kind::paragraph);
      break;
    case MD_BLOCK_CODE: {
      b.close();
      b.start(MdBlock::Kind::code);
      auto* d = static_cast<MD_BLOCK_CODE_DETAIL*>(detail);
      if (d->lang.text) b.blocks.back().code_lang.assign(d->lang.text, d->lang.size);
      break;
    }
    case MD_BLOCK_HR:
      b.close();
      b.start(MdBlock::Kind::rule);
      b.close();
      break;
    case MD_BLOCK_TABLE:
      b.close();
      b.in_table = true;
      b.table = MdBlock{};
      b.table.kind = MdBlock::Kind::table;
      b.table.quote_depth = b.quote_depth;
      b.table.list_depth = static_cast<int>(b.lists.size());
      break;
    case MD_BLOCK_TR: b.table.rows.emplace_back(); break;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD:
      b.table.rows.back().emplace_back();
      b.in_cell = true;
      break;
    default: break;
  }
  return 0;
}

int leave_block(MD_BLOCKTYPE type, void*, void* user) {
  auto& b = *static_cast<Builder*>(user);
  b.soft_break = false;
  switch (type) {
    case MD_BLOCK_QUOTE:
      b.close();
      --b.quote_depth;
      break;
    case MD_BLOCK_UL:
    case MD_BLOCK_OL:
      b.close();
      b.lists.pop_back();
      break;
    case MD_BLOCK_LI:
    case MD_BLOCK_H:
    case MD_BLOCK_P:
    case MD_BLOCK_CODE: b.close(); break;
    case MD_BLOCK_THEAD: b.table.header_rows = static_cast<int>(b.table.rows.size()); break;
    case MD_BLOCK_TH:
    case MD_BLOCK_TD: b.in_cell = false; break;
    case MD_BLOCK_TABLE:
      b.in_table = false;
      b.blocks.push_back(std::move(b.table));
      b.open = false;
      break;
    default: break;
  }
  return 0;
}

int enter_span(MD_SPANTYPE type, void* detail, void* user) {
  auto& b = *static_cast<Builder*>(user);
  switch (type) {
    case MD_SPAN_EM: ++b.emphasis; break;
    case MD_SPAN_STRONG: ++b.strong; break;
    case MD_SPAN_CODE: ++b.code_span; break;
    case MD_SPAN_A: {
      auto* d = static_cast<MD_SPAN_A_DETAIL*>(detail);
      b.link.assign(d->href.text ? d->href.text : "", d->href.size);
      break;
    }
    default: break;
  }
  return 0;
}

int leave_span(MD_SPANTYPE type, void*, void* user) {
  auto& b = *static_cast<Builder*>(user);
  switch (type) {
    case MD_SPAN_EM: --b.emphasis; break;
    case MD_SPAN_STRONG: --b.strong; break;
    case MD_SPAN_CODE: --b.code_span; break;
    case MD_SPAN_A: b.link.clear(); break;
    default: break;
  }
  return 0;
}

int on_text(MD_TEXTTYPE type, const MD_CHAR* text, MD_SIZE size, void* user) {
  auto& b = *static_cast<Builder*>(user);
  const std::string t(text, size);
  if (b.open && b.blocks.back().kind == MdBlock::Kind::code) {
    b.blocks.back().code += t;
    return 0;
  }
  switch (type) {
    case MD_TEXT_SOFTBR: b.soft_break = true; break;
    case MD_TEXT_BR: b.target()->push_back(MdSpan{"\n", false, false, false, {}}); break;
    case MD_TEXT_ENTITY:
      b.add_text(t == "&amp;"    ? "&"
                 : t == "&lt;"   ? "<"
                 : t == "&gt;"   ? ">"
                 : t == "&quot;" ? "\""
                 : t == "&nbsp;" ? " "
                                 : t);
      break;
    case MD_TEXT_HTML: break;  // inline HTML and comments are not prose
    case MD_TEXT_NULLCHAR: b.add_text("\xEF\xBF\xBD"); break;
    default: b.add_text(t); break;
  }
  return 0;
}

}  // namespace

std::vector<MdBlock> parse_markdown(const std::string& markdown) {
  Builder b;
  MD_PARSER parser{};
  parser.flags = MD_DIALECT_GITHUB;
  parser.enter_block = enter_block;
  parser.leave_block = leave_block;
  parser.enter_span = enter_span;
  parser.leave_span = leave_span;
  parser.text = on_text;
  if (md_parse(markdown.data(), static_cast<MD_SIZE>(markdown.size()), &parser, &b) != 0) {
    MdBlock raw;  // cannot happen with md4c's default limits; show the source rather than nothing
    raw.spans.push_back(MdSpan{markdown, false, false, false, {}});
    return {raw};
  }
  return std::move(b.blocks);
}

}  // namespace opscope::lesson
