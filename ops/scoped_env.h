// An environment variable set for a scope, for libraries that read their settings once when
// dlopen runs their constructors (OpenBLAS's OPENBLAS_*, libgomp's OMP_*).
#pragma once
#include <cstdlib>
#include <string>

namespace opscope::cpu {

// Sets `name` to `value` for the scope's duration, then puts back what was there: child
// processes (the benchmark's PyTorch) must not inherit opscope's choice. `keep_users`: a value
// the user set wins and is left alone.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value, bool keep_users) : name_(name) {
    const char* old = std::getenv(name);
    if (old) {
      had_ = true;
      old_ = old;
      if (keep_users) return;
    }
    std::string v = value;
    setenv(name, v.c_str(), 1);
    set_ = true;
  }
  ~ScopedEnv() {
    if (!set_) return;
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false, set_ = false;
};

}  // namespace opscope::cpu
