// The project's one error type: a message written for a student, plus an optional hint.
#pragma once
#include <stdexcept>
#include <string>

namespace opscope {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {})
      : std::runtime_error(std::move(message)), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

}  // namespace opscope
