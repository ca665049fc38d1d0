// The conformance report as counts and tables (no protobuf: the runner itself, which reads the
// tests' .pb tensors, is in the protobuf module).
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "app/onnx/conformance.h"

namespace opscope::interop {

int ConformanceReport::count(ConformanceTest::Status s) const {
  return static_cast<int>(
      std::count_if(tests.begin(), tests.end(), [s](const ConformanceTest& t) { return t.status == s; }));
}

std::string conformance_table(const ConformanceReport& r, bool markdown) {
  struct Row {
    int passed = 0, failed = 0, skipped = 0;
    std::map<std::string, int> reasons;
  };
  std::map<std::string, Row> rows;
  for (auto& t : r.tests) {
    Row& row = rows[t.op_type];
    if (t.status == ConformanceTest::passed) ++row.passed;
    if (t.status == ConformanceTest::failed) ++row.failed;
    if (t.status == ConformanceTest::skipped) {
      ++row.skipped;
      ++row.reasons[t.detail];
    }
  }
  std::ostringstream o;
  if (markdown) o << "| ONNX operator | passed | failed | skipped | why skipped |\n|---|---:|---:|---:|---|\n";
  else o << "op type                  passed  failed  skipped  why skipped\n";
  for (auto& [op, row] : rows) {
    std::string why;
    for (auto& [reason, k] : row.reasons)
      why += (why.empty() ? "" : "; ") + reason + (k > 1 ? " (" + std::to_string(k) + ")" : "");
    if (markdown) {
      o << "| " << op << " | " << row.passed << " | " << row.failed << " | " << row.skipped << " | " << why << " |\n";
    } else {
      char line[128];
      std::snprintf(line, sizeof line, "%-24s %6d  %6d  %7d  ", op.c_str(), row.passed, row.failed, row.skipped);
      o << line << why << "\n";
    }
  }
  o << (markdown ? "\n" : "") << "total: " << r.count(ConformanceTest::passed) << " passed, "
    << r.count(ConformanceTest::failed) << " failed, " << r.count(ConformanceTest::skipped) << " skipped, in "
    << rows.size() << " mapped op types; " << r.unmapped << " tests of " << r.unmapped_types.size()
    << " op types opscope does not map\n";
  return o.str();
}

}  // namespace opscope::interop
