// `opscope ops` and `opscope gradcheck`: the registry printed as text or JSON.
#pragma once
#include <string>

namespace opscope::app {

std::string ops_json();   // every op with attrs, algorithms per device, saves, backward, doc
std::string ops_table();  // one line per op: name, family, algorithms, doc
// Runs gradcheck for one op (or all when op is empty); prints a table; returns failures.
int run_gradcheck(const std::string& op, bool verbose);

}  // namespace opscope::app
