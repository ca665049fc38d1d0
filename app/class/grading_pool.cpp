#include "app/class/grading_pool.h"

#include <cstdio>
#include <fstream>

namespace opscope::classroom {

GradingPool::GradingPool(Store& store, PoolOptions o) : store_(store), o_(std::move(o)) {
  for (PendingAttempt& a : store_.pending_attempts()) queue_.push_back(std::move(a));
  for (int i = 0; i < std::max(1, o_.workers); ++i) threads_.emplace_back([this] { work(); });
}

GradingPool::~GradingPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void GradingPool::add(PendingAttempt a) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(a));
  }
  wake_.notify_one();
}

size_t GradingPool::queued() {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

void GradingPool::work() {
  for (;;) {
    PendingAttempt a;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      a = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      grade(a);
    } catch (const std::exception& e) {
      // Left ungraded in the database: the next start grades it again.
      std::fprintf(stderr, "class: attempt %lld not graded: %s\n", a.id, e.what());
    }
  }
}

void GradingPool::grade(const PendingAttempt& a) {
  // The grader reads a file; its name is the attempt's, so its messages say "attempt-12.ops:3".
  const std::string file = o_.scratch + "/attempt-" + std::to_string(a.id) + ".ops";
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << a.code;
    if (!f) throw std::runtime_error("cannot write " + file);
  }
  ChildLimits limits = o_.limits;
  if (limits.seconds <= 0) {  // the grader's own limit is checked between steps: a hard kill a little after it
    auto it = o_.exercise_seconds.find(a.exercise);
    limits.seconds = it != o_.exercise_seconds.end() && it->second > 0 ? it->second + 5 : 30;
  }
  const Grade g = grade_from_grader(run_child(grader_command(o_.grader, a.exercise, file, o_.lang), limits));
  std::remove(file.c_str());
  const int claim = claimed_pass(a.client_result);
  const bool mismatch = claim >= 0 && (claim == 1) != (g.status == "pass");
  store_.store_grade(a.id, g, mismatch);
}

}  // namespace opscope::classroom
