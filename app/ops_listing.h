// `opscope ops` and `opscope gradcheck`: the registry printed as text or JSON.
#pragma once
#include <string>

#include "core/dtype.h"

namespace opscope::app {

std::string ops_json();  // every op with attrs, algorithms per device, saves, backward, doc
std::string ops_table();  // one line per op: name, family, algorithms, doc
// Runs gradcheck for one op (or all when op is empty); prints a table; returns failures.
// device sim: the simulated GPU's kernels (float64) against central differences.
int run_gradcheck(const std::string& op, bool verbose, Device device = Device::cpu);

}  // namespace opscope::app
