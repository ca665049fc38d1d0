// An error in the user's program, with the position (and source) to point a caret at.
#pragma once
#include <memory>
#include <string>

#include "core/error.h"

namespace opscope::lang {

// The text a position refers to: a file, a REPL entry, or the body of a function defined earlier.
struct SourceText {
  std::string filename;
  std::string text;
};

class LangError : public Error {
 public:
  LangError(std::string message, int line, int col, std::string hint = {})
      : Error(std::move(message), std::move(hint)), line_(line), col_(col) {}
  int line() const { return line_; }
  int col() const { return col_; }
  const std::shared_ptr<const SourceText>& source() const { return source_; }
  void set_source(std::shared_ptr<const SourceText> s) {
    if (!source_) source_ = std::move(s);
  }
  // Lines shown under the caret, before the hint (a compiler's errors for load_extension).
  const std::string& details() const { return details_; }
  void set_details(std::string d) { details_ = std::move(d); }

 private:
  int line_, col_;
  std::shared_ptr<const SourceText> source_;
  std::string details_;
};

// "FILE:LINE:COL: error: message", the source line, a caret under the column, the details and
// the hint.
std::string format_error(const LangError& e, const SourceText& fallback, bool color);

}  // namespace opscope::lang
