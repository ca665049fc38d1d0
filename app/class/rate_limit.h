// A token bucket per student: `burst` requests at once, then `per_second` on average.
#pragma once
#include <chrono>
#include <map>
#include <mutex>

namespace opscope::classroom {

class RateLimit {
 public:
  RateLimit(double per_second, int burst) : per_second_(per_second), burst_(burst) {}

  // Whether `who` may make one more request now (and takes its token).
  bool allow(long long who) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    auto [it, fresh] = buckets_.try_emplace(who, Bucket{static_cast<double>(burst_), now});
    Bucket& b = it->second;
    const double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.tokens = std::min(static_cast<double>(burst_), b.tokens + elapsed * per_second_);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point at;
  };
  double per_second_;
  int burst_;
  std::mutex mutex_;
  std::map<long long, Bucket> buckets_;
};

}  // namespace opscope::classroom
