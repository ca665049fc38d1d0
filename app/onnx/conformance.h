// The ONNX backend conformance runner: each test folder holds a model.onnx and data sets of
// input_N.pb / output_N.pb tensors; the model is imported, run in dynamic mode and compared
// with ONNX's tolerances (|actual − expected| <= atol + rtol·|expected|, rtol 1e-3, atol 1e-7).
// Tests are grouped by the ONNX operator they test; a test of an operator opscope maps either
// passes, fails (with the node, its attributes and the first differing element), or is skipped
// with the reason (an attribute value or a dtype opscope lacks).
#pragma once
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace opscope::interop {

struct ConformanceOptions {
  std::vector<std::string> only_ops;  // run the tests of these op types only (empty: every mapped one)
  double rtol = 1e-3, atol = 1e-7;
  bool verbose = false;  // a line for every test
};

struct ConformanceTest {
  std::string name, op_type;
  enum Status { passed, failed, skipped } status = passed;
  std::string detail;  // failed: what differed; skipped: why
};

struct ConformanceReport {
  std::vector<ConformanceTest> tests;
  int unmapped = 0;  // test folders of op types opscope does not map (not counted above)
  std::vector<std::string> unmapped_types;
  int count(ConformanceTest::Status s) const;
};

// Runs every test folder under `dirs` (a test folder itself, or a folder of them such as
// /usr/share/libonnx-testdata/data/node). Failures are printed to `log` as they happen.
ConformanceReport run_conformance(const std::vector<std::string>& dirs, const ConformanceOptions& options,
                                  std::ostream& log);
// Per op type: passed / failed / skipped, and the skip reasons with their counts. As a
// Markdown table for the README when `markdown`.
std::string conformance_table(const ConformanceReport& report, bool markdown);

}  // namespace opscope::interop
