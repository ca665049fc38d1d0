// A compiler's output read as diagnostics (GCC's `file:line:col: error: message` and nvcc's
// `file(line): error: message`), and the few a student needs to see first.
#pragma once
#include <string>
#include <vector>

namespace opscope::ext {

struct Diagnostic {
  std::string file;
  int line = 0, col = 0;  // col 0: the compiler gave none
  std::string severity;  // "error", "fatal error", "warning", "note", "required" (template context)
  std::string message;
  std::string snippet;  // the compiler's own source line and caret, as it printed them
};

std::vector<Diagnostic> parse_diagnostics(const std::string& output);
size_t count(const std::vector<Diagnostic>& ds, bool errors);  // errors (incl. fatal) or warnings

// The first `max_shown` errors as `file:line:col: error: message` with their source lines; an
// error inside a header that `source` instantiated is followed by the line of `source` that
// did it. Ends with how many more there are. Falls back to the output's last lines when the
// compiler gave no positioned error (a driver or linker failure).
std::string format_errors(const std::vector<Diagnostic>& ds, const std::string& source, const std::string& output,
                          size_t max_shown = 5);
// Warnings about `source` itself, one line each (at most `max_shown`).
std::string format_warnings(const std::vector<Diagnostic>& ds, const std::string& source, size_t max_shown = 5);

}  // namespace opscope::ext
