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
};

// Random inputs for a case (float64 unless index/mask), reproducible from `seed`.
std::vector<Tensor> make_gradcheck_inputs(const GradcheckCase& c, uint64_t seed);
GradcheckResult gradcheck_case(const OpDef& op, const GradcheckCase& c, const std::string& algo, size_t case_index,
                               uint64_t seed = 1234);
// Every case of `op` for every CPU algorithm.
std::vector<GradcheckResult> gradcheck_op(const OpDef& op, uint64_t seed = 1234);

}  // namespace opscope
