#include "app/extension/diagnostics.h"

#include <regex>
#include <sstream>

namespace opscope::ext {

namespace {

bool is_error(const Diagnostic& d) { return d.severity == "error" || d.severity == "fatal error"; }

std::string header(const Diagnostic& d) {
  std::string pos = d.file + ":" + std::to_string(d.line) + (d.col > 0 ? ":" + std::to_string(d.col) : "");
  if (d.severity == "required") return pos + ": " + d.message + "\n";
  return pos + ": " + d.severity + ": " + d.message + "\n";
}

// nvcc prints a caret line under the source line but no column: the caret's place is the column.
int column_from_caret(const std::string& snippet) {
  std::istringstream is(snippet);
  std::string first, second;
  if (!std::getline(is, first) || !std::getline(is, second)) return 0;
  const size_t caret = second.find('^');
  if (caret == std::string::npos || second.find_first_not_of(' ') != caret) return 0;
  const size_t text = first.find_first_not_of(' ');
  // The snippet is the source line indented as nvcc prints it; the caret shares that indent.
  return text == std::string::npos || caret < text ? 0 : static_cast<int>(caret - text) + 1;
}

}  // namespace

std::vector<Diagnostic> parse_diagnostics(const std::string& output) {
  static const std::regex gcc(R"(^(.+?):(\d+):(\d+): (fatal error|error|warning|note): (.*)$)");
  static const std::regex gcc_no_col(R"(^(.+?):(\d+): (fatal error|error|warning|note): (.*)$)");
  static const std::regex gcc_required(R"(^(.+?):(\d+):(\d+):\s+(required from .*)$)");
  static const std::regex nvcc(R"(^(.+?)\((\d+)\): (error|warning|catastrophic error|remark)( #\S+)?: (.*)$)");
  std::vector<Diagnostic> ds;
  std::istringstream is(output);
  std::string line;
  bool nvcc_style = false;
  while (std::getline(is, line)) {
    std::smatch m;
    Diagnostic d;
    if (std::regex_match(line, m, gcc)) {
      d = {m[1], std::stoi(m[2]), std::stoi(m[3]), m[4], m[5], {}};
      nvcc_style = false;
    } else if (std::regex_match(line, m, gcc_required)) {
      d = {m[1], std::stoi(m[2]), std::stoi(m[3]), "required", m[4], {}};
      nvcc_style = false;
    } else if (std::regex_match(line, m, gcc_no_col)) {
      d = {m[1], std::stoi(m[2]), 0, m[3], m[4], {}};
      nvcc_style = false;
    } else if (std::regex_match(line, m, nvcc)) {
      const std::string sev = m[3];
      d = {m[1], std::stoi(m[2]), 0, sev == "catastrophic error" ? "fatal error" : sev == "remark" ? "note" : sev, m[5],
           {}};
      nvcc_style = true;
    } else {
      // A source line, caret or fix-it under the last diagnostic (GCC and nvcc indent them).
      if (!ds.empty() && !line.empty() && line[0] == ' ') {
        ds.back().snippet += line + "\n";
        if (nvcc_style && ds.back().col == 0) ds.back().col = column_from_caret(ds.back().snippet);
      }
      continue;
    }
    ds.push_back(std::move(d));
  }
  return ds;
}

size_t count(const std::vector<Diagnostic>& ds, bool errors) {
  size_t n = 0;
  for (const Diagnostic& d : ds) n += errors ? is_error(d) : d.severity == "warning";
  return n;
}

std::string format_errors(const std::vector<Diagnostic>& ds, const std::string& source, const std::string& output,
                          size_t max_shown) {
  std::string out;
  size_t shown = 0, total = count(ds, true);
  const Diagnostic* context = nullptr;  // the last "required from here" in the student's file
  for (const Diagnostic& d : ds) {
    if (d.severity == "required") {
      if (d.file == source) context = &d;
      continue;
    }
    if (!is_error(d)) continue;
    if (shown == max_shown) break;
    out += header(d) + d.snippet;
    if (d.file != source && context) out += header(*context) + context->snippet;
    ++shown;
  }
  if (total > shown)
    out += "... and " + std::to_string(total - shown) + " more error" + (total - shown == 1 ? "" : "s") + "\n";
  if (shown > 0) return out;
  // No positioned error: the last lines the compiler or linker printed.
  std::vector<std::string> lines;
  std::istringstream is(output);
  std::string line;
  while (std::getline(is, line))
    if (!line.empty()) lines.push_back(line);
  const size_t from = lines.size() > 12 ? lines.size() - 12 : 0;
  for (size_t i = from; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

std::string format_warnings(const std::vector<Diagnostic>& ds, const std::string& source, size_t max_shown) {
  std::string out;
  size_t shown = 0;
  for (const Diagnostic& d : ds)
    if (d.severity == "warning" && d.file == source && shown++ < max_shown) out += header(d);
  return out;
}

}  // namespace opscope::ext
