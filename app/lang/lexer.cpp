#include "app/lang/lexer.h"

#include <cctype>

#include "app/lang/error.h"

namespace opscope::lang {

namespace {
constexpr int kMaxBracketDepth = 64;
const char* const kOps3[] = {"**=", "//="};
const char* const kOps2[] = {"**", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "//", "->"};
const char kOps1[] = "+-*/@()[]{},:=.<>%;";
}  // namespace

std::vector<Token> tokenize(const std::string& src) {
  std::vector<Token> out;
  out.reserve(src.size() / 2 + 8);
  size_t token_begin = 0;  // offset where the token being read starts
  std::vector<int> indents{0};
  std::vector<Token> brackets;
  size_t i = 0;
  int line = 1, col = 1;
  bool at_line_start = true;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < src.size(); ++k, ++i) {
      if (src[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  while (i < src.size()) {
    if (at_line_start && brackets.empty()) {
      // Measure indentation; blank and comment-only lines do not count.
      int width = 0;
      size_t j = i;
      while (j < src.size() && (src[j] == ' ' || src[j] == '\t')) width += src[j++] == '\t' ? 4 : 1;
      if (j >= src.size() || src[j] == '\n' || src[j] == '#' || src[j] == '\r') {
        while (j < src.size() && src[j] != '\n') ++j;
        advance(j - i);
        if (i < src.size()) advance(1);
        continue;
      }
      advance(j - i);
      at_line_start = false;
      if (width > indents.back()) {
        indents.push_back(width);
        out.push_back({Tok::indent, "", line, 1});
      } else {
        while (width < indents.back()) {
          indents.pop_back();
          out.push_back({Tok::dedent, "", line, col});
        }
        if (width != indents.back())
          throw LangError("this line's indentation matches no enclosing block", line, col,
                          "indent the lines of one block by the same amount");
      }
    }
    const char c = src[i];
    if (c == '\n') {
      if (brackets.empty()) {
        if (!out.empty() && out.back().kind != Tok::newline) out.push_back({Tok::newline, "", line, col});
        at_line_start = true;
      }
      advance(1);
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      advance(1);
      continue;
    }
    if (c == '\\' && i + 1 < src.size() && src[i + 1] == '\n') {  // explicit line joining
      advance(2);
      continue;
    }
    if (c == '#') {
      while (i < src.size() && src[i] != '\n') advance(1);
      continue;
    }
    const int tl = line, tc = col;
    token_begin = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < src.size() && (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '_')) ++j;
      out.push_back({Tok::name, src.substr(i, j - i), tl, tc, token_begin, j});
      advance(j - i);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < src.size() && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      size_t j = i;
      bool real = false;
      while (j < src.size() && (std::isdigit(static_cast<unsigned char>(src[j])) || src[j] == '_')) ++j;
      if (j < src.size() && src[j] == '.') {
        real = true;
        ++j;
        while (j < src.size() && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
      }
      if (j < src.size() && (src[j] == 'e' || src[j] == 'E')) {
        size_t k = j + 1;
        if (k < src.size() && (src[k] == '+' || src[k] == '-')) ++k;
        if (k < src.size() && std::isdigit(static_cast<unsigned char>(src[k]))) {
          real = true;
          j = k;
          while (j < src.size() && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
        }
      }
      std::string text;
      for (size_t k = i; k < j; ++k)
        if (src[k] != '_') text += src[k];
      out.push_back({real ? Tok::real : Tok::integer, text, tl, tc, token_begin, j});
      advance(j - i);
      continue;
    }
    if ((c == '"' || c == '\'') && i + 2 < src.size() && src[i + 1] == c && src[i + 2] == c) {
      // """docstring""": may span lines (an @op's doc is shown by :doc).
      std::string s;
      size_t j = i + 3;
      while (j < src.size() && src.compare(j, 3, std::string(3, c)) != 0) {
        if (src[j] == '\\' && j + 1 < src.size()) {
          const char e = src[j + 1];
          s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          j += 2;
        } else {
          s += src[j++];
        }
      }
      if (j >= src.size())
        throw LangError("this triple-quoted string is never closed", tl, tc,
                        std::string("close it with ") + std::string(3, c));
      out.push_back({Tok::string, s, tl, tc, token_begin, j + 3});
      advance(j + 3 - i);
      continue;
    }
    if (c == '"' || c == '\'') {
      std::string s;
      size_t j = i + 1;
      while (j < src.size() && src[j] != c && src[j] != '\n') {
        if (src[j] == '\\' && j + 1 < src.size()) {
          char e = src[j + 1];
          s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          j += 2;
        } else {
          s += src[j++];
        }
      }
      if (j >= src.size() || src[j] != c)
        throw LangError("unterminated string", tl, tc, std::string("close it with ") + c);
      out.push_back({Tok::string, s, tl, tc, token_begin, j + 1});
      advance(j + 1 - i);
      continue;
    }
    // Longest operator first, compared character by character (this loop is hot).
    std::string op;
    const char n1 = i + 1 < src.size() ? src[i + 1] : '\0', n2 = i + 2 < src.size() ? src[i + 2] : '\0';
    for (const char* o : kOps3)
      if (o[0] == c && o[1] == n1 && o[2] == n2) op = o;
    if (op.empty())
      for (const char* o : kOps2)
        if (o[0] == c && o[1] == n1) op = o;
    if (op.empty() && std::string_view(kOps1).find(c) != std::string_view::npos) op = std::string(1, c);
    if (op.empty()) {
      std::string shown =
          static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126
              ? "byte 0x" + std::string(1, "0123456789abcdef"[(c >> 4) & 15]) + "0123456789abcdef"[c & 15]
              : std::string("'") + c + "'";
      throw LangError("unexpected character " + shown, tl, tc, "names, numbers, strings and + - * / @ ** are allowed");
    }
    if (op == "(" || op == "[" || op == "{") {
      if (static_cast<int>(brackets.size()) >= kMaxBracketDepth)
        throw LangError("brackets nested too deeply (limit " + std::to_string(kMaxBracketDepth) + ")", tl, tc);
      brackets.push_back({Tok::op, op, tl, tc});
    } else if (op == ")" || op == "]" || op == "}") {
      const char* open = op == ")" ? "(" : op == "]" ? "[" : "{";
      if (brackets.empty() || brackets.back().text != open)
        throw LangError("'" + op + "' does not close anything", tl, tc,
                        brackets.empty() ? "remove it"
                                         : "'" + brackets.back().text + "' opened at line " +
                                               std::to_string(brackets.back().line) + " is still open");
      brackets.pop_back();
    }
    out.push_back({Tok::op, op, tl, tc, token_begin, i + op.size()});
    advance(op.size());
  }
  if (!brackets.empty())
    throw LangError("'" + brackets.back().text + "' is never closed", brackets.back().line, brackets.back().col,
                    "add the matching closing bracket");
  if (!out.empty() && out.back().kind != Tok::newline) out.push_back({Tok::newline, "", line, col});
  while (indents.size() > 1) {
    indents.pop_back();
    out.push_back({Tok::dedent, "", line, col});
  }
  out.push_back({Tok::end, "", line, col});
  return out;
}

}  // namespace opscope::lang
