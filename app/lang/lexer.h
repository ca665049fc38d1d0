// Tokens of the script language: Python-like, with INDENT/DEDENT for blocks.
#pragma once
#include <string>
#include <vector>

namespace opscope::lang {

enum class Tok { name, integer, real, string, op, newline, indent, dedent, end };

struct Token {
  Tok kind;
  std::string text;  // name, operator, string contents, number literal
  int line = 1, col = 1;
  size_t begin = 0, end = 0;  // byte offsets in the source
};

// Splits `source` into tokens; throws LangError (with position) on bad characters,
// unterminated strings, inconsistent indentation or too deep brackets.
std::vector<Token> tokenize(const std::string& source);

}  // namespace opscope::lang
