// gradcheck: every op's backward against central differences in float64, for every
// algorithm, using the cases each op declares.
#pragma once
#include <string>
#include <vector>

#include "core/op.h"

namespace opscope {

struct GradcheckResult {
  std::string op, algo, note;
  size_t case_index = 0;
  double max_abs_error = 0;  // |analytic - numeric|, worst element
  double max_rel_error = 0;
  int64_t elements_checked = 0;
  bool passed = false;
  std::string message;  // why it failed
  std::vector<SavedRef> saved_read;  // the saved tensors its backward formula read
};

// The multi-index of element `flat` of a row-major tensor of `shape`, and as text: "[1, 2]".
std::vector<int64_t> element_index(const Shape& shape, int64_t flat);
std::string element_index_str(const Shape& shape, int64_t flat);
// The one line that pinpoints a wrong gradient: "input 'x' [1, 2]: analytic 0.21 vs numeric
// 0.46 (relative error 0.54)".
std::string describe_mismatch(const std::string& input, const Shape& shape, int64_t flat, double analytic,
                              double numeric);

GradcheckResult gradcheck_case(const OpDef& op, const GradcheckCase& c, const std::string& algo, size_t case_index,
                               uint64_t seed = 1234, Device device = Device::cpu);
// Every case of `op` for every CPU algorithm; the first result also fails when a tensor the op
// saves is read by its backward in none of the cases.
// device: the op's kernels there (sim, cuda) against central differences, inputs copied there
// (float64 kernels; the float32-only algorithms are left out).
std::vector<GradcheckResult> gradcheck_op(const OpDef& op, uint64_t seed = 1234, Device device = Device::cpu);

}  // namespace opscope
