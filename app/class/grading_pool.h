// The grading worker pool: N threads, each grading one attempt at a time in a grader child
// process (grader_child.h) and storing the grade. Attempts come from the server as they are
// acknowledged, and from the database at start (those a killed server left ungraded).
#pragma once
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/class/grader_child.h"
#include "app/class/store.h"

namespace opscope::classroom {

struct PoolOptions {
  int workers = 1;
  std::string grader;  // the opscope executable
  std::string lang = "en";
  std::string scratch;  // a folder for the attempts' files
  ChildLimits limits;  // limits.seconds 0: the exercise's own limit + 5 s (30 s when unknown)
  std::map<std::string, double> exercise_seconds;
};

class GradingPool {
 public:
  GradingPool(Store& store, PoolOptions o);  // queues the database's ungraded attempts
  ~GradingPool();  // finishes the attempt in hand, drops the queue
  GradingPool(const GradingPool&) = delete;
  GradingPool& operator=(const GradingPool&) = delete;

  void add(PendingAttempt a);
  size_t queued();

 private:
  void work();
  void grade(const PendingAttempt& a);

  Store& store_;
  PoolOptions o_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<PendingAttempt> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace opscope::classroom
