// Source text read as code: the characters outside string literals ('...' and "...", a
// backslash escaping the next one), with the depth of the brackets around them. An assert's
// condition ends at its first top-level comma; a line's comment starts at its first `#` in code.
#pragma once
#include <string>

namespace opscope::lang {

// Calls `stop(i, c, depth)` for each character of `text` that is code, `depth` being the number of
// brackets open before it; returns the index of the first one for which it returned true, or
// text.size().
template <class Stop> size_t find_in_code(const std::string& text, Stop stop) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote || c == '\n') quote = 0;
      continue;
    }
    if (stop(i, c, depth)) return i;
    if (c == '"' || c == '\'') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
  }
  return text.size();
}

}  // namespace opscope::lang
