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

GradcheckResult gradcheck_case(const OpDef& op, const GradcheckCase& c, const std::string& algo, size_t case_index,
                               uint64_t seed = 1234);
// Every case of `op` for every CPU algorithm; the first result also fails when a tensor the op
// saves is read by its backward in none of the cases.
std::vector<GradcheckResult> gradcheck_op(const OpDef& op, uint64_t seed = 1234);

}  // namespace opscope
