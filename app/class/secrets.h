// The class's secrets: the teacher's key, the students' tokens, the class code.
#pragma once
#include <cstddef>
#include <string>

namespace opscope::classroom {

std::string random_hex(size_t bytes);  // from /dev/urandom
// Six letters and digits a student can read off a projector: no 0/O, 1/I/L.
std::string new_class_code();
// Constant-time comparison: a key is not guessed a byte at a time from response times.
bool same_secret(const std::string& a, const std::string& b);

}  // namespace opscope::classroom
