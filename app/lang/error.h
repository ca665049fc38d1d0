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
  // Ctrl-C stopped the statement here (not an error in the program): shown as
  // "interrupted at FILE:LINE:COL".
  bool interrupted() const { return interrupted_; }
  void set_interrupted() { interrupted_ = true; }
  // Lines shown under the caret, before the hint (a compiler's errors for load_extension).
  const std::string& details() const { return details_; }
  void set_details(std::string d) { details_ = std::move(d); }

 private:
  int line_, col_;
  bool interrupted_ = false;
  std::shared_ptr<const SourceText> source_;
  std::string details_;
};

// "FILE:LINE:COL: error: message", the source line, a caret under the column, the details and
// the hint; for an interrupt "interrupted at FILE:LINE:COL", the line, the caret and what was undone.
std::string format_error(const LangError& e, const SourceText& fallback, bool color);

}  // namespace opscope::lang
