// The corpus's bad inputs and what they must leave behind (see rollback_check.cpp).
#pragma once
#include <string>

namespace opscope::test {

constexpr const char* kBadPartMarker = "# --- the bad part ---";

bool is_rollback_case(const std::string& text);
// Empty when the bad part failed and left the workspace as it was; else what went wrong.
std::string check_rollback(const std::string& text, const std::string& name);

}  // namespace opscope::test
