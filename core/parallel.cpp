#include "core/parallel.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/error.h"

namespace opscope {

namespace {

thread_local bool t_in_region = false;

struct RegionFlag {
  bool prev = t_in_region;
  RegionFlag() { t_in_region = true; }
  ~RegionFlag() { t_in_region = prev; }
};

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Spins for about `us` microseconds while `keep_waiting()`; true if the wait ended by itself.
// Kernels come back to back (one op after another), so a short spin saves the futex round trip
// of waking a sleeping thread; longer waits sleep and leave the core to others.
template <class F> bool spin_while(F keep_waiting, int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (int i = 0;; ++i) {
    if (!keep_waiting()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
  }
}

constexpr int kSpinMicros = 50;

// One loop handed to the pool: its chunks are claimed one at a time from `next`.
struct Job {
  FunctionRef<void(int, int64_t, int64_t)> body;
  int64_t n, grain, chunks;
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::exception_ptr error;

  Job(FunctionRef<void(int, int64_t, int64_t)> b, int64_t n_, int64_t g)
      : body(b), n(n_), grain(g), chunks((n_ + g - 1) / g) {}

  void run_chunks(int worker) {
    RegionFlag flag;
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks || failed.load(std::memory_order_relaxed)) return;
      const int64_t begin = c * grain, end = std::min(n, begin + grain);
      try {
        body(worker, begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  }
};

// Workers wait for the epoch to change, run the job's chunks if they take part in it, and
// count themselves out; the submitting thread runs chunks too and waits for that count to
// reach zero. One job at a time (a second submitter runs its loop inline).
class Pool {
 public:
  bool try_run(Job& job, int threads) {
    std::unique_lock<std::mutex> lock(submit_mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    grow(threads - 1);
    job_ = &job;
    participants_ = threads - 1;
    busy_.store(threads - 1, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_release);
    epoch_.notify_all();
    job.run_chunks(0);
    if (!spin_while([&] { return busy_.load(std::memory_order_acquire) != 0; }, kSpinMicros))
      for (int b; (b = busy_.load(std::memory_order_acquire)) != 0;) busy_.wait(b, std::memory_order_acquire);
    job_ = nullptr;
    return true;
  }

 private:
  void grow(int workers) {
    while (static_cast<int>(threads_.size()) < workers) {
      // The epoch as it is now, before this job bumps it: a thread that starts late must still
      // see the job as new.
      const int index = static_cast<int>(threads_.size());
      const uint32_t seen = epoch_.load(std::memory_order_relaxed);
      threads_.emplace_back([this, index, seen] { work(index, seen); });
    }
  }

  void work(int index, uint32_t seen) {
    for (;;) {
      if (!spin_while([&] { return epoch_.load(std::memory_order_acquire) == seen; }, kSpinMicros))
        epoch_.wait(seen, std::memory_order_acquire);
      seen = epoch_.load(std::memory_order_acquire);
      if (index >= participants_) continue;  // not needed for this loop
      job_->run_chunks(index + 1);
      if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) busy_.notify_one();
    }
  }

  std::mutex submit_mu_;
  std::vector<std::thread> threads_;
  std::atomic<uint32_t> epoch_{0};
  std::atomic<int> busy_{0};
  Job* job_ = nullptr;
  int participants_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool();  // lives for the whole program; its threads sleep when idle
  return *p;
}

int initial_threads() { return default_num_threads(); }

std::atomic<int>& threads_setting() {
  static std::atomic<int> n{initial_threads()};
  return n;
}

}  // namespace

namespace {

// What the platform allows (platform/platform.h: the browser runs on one thread) and why.
std::atomic<int> g_thread_limit{kMaxThreads};
std::string& thread_limit_reason() {
  static std::string why;
  return why;
}

}  // namespace

void limit_threads(int max_threads, const std::string& why) {
  g_thread_limit.store(std::max(1, max_threads), std::memory_order_relaxed);
  thread_limit_reason() = why;
  if (num_threads() > max_threads) threads_setting().store(std::max(1, max_threads), std::memory_order_relaxed);
}

int hardware_threads() {
  static const int n = [] {
#if defined(__linux__)  // the CPUs this process may run on (taskset, a container's quota)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    const unsigned h = std::thread::hardware_concurrency();
    return h > 0 ? static_cast<int>(h) : 1;
  }();
  return std::min(n, g_thread_limit.load(std::memory_order_relaxed));
}

int default_num_threads() {
  const int hw = std::min(hardware_threads(), kMaxThreads);
  const char* env = std::getenv("OPSCOPE_NUM_THREADS");
  if (!env || !*env) return hw;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > kMaxThreads) {
    std::fprintf(stderr, "opscope: ignoring OPSCOPE_NUM_THREADS=%s (want 1 to %d); using %d threads\n", env,
                 kMaxThreads, hw);
    return hw;
  }
  return static_cast<int>(v);
}

int num_threads() { return threads_setting().load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  if (n < 1 || n > kMaxThreads)
    throw Error("cannot use " + std::to_string(n) + " threads", "give 1 to " + std::to_string(kMaxThreads) +
                                                                    " (this machine has " +
                                                                    std::to_string(hardware_threads()) + " cores)");
  if (n > g_thread_limit.load(std::memory_order_relaxed))
    throw Error("cannot use " + std::to_string(n) + " threads here", thread_limit_reason());
  threads_setting().store(n, std::memory_order_relaxed);
}

bool in_parallel_region() { return t_in_region; }

int64_t grain_for(double work_per_item) {
  if (!(work_per_item > 0)) return 1;
  const double g = kParallelChunkWork / work_per_item;
  return g < 1 ? 1 : static_cast<int64_t>(g);
}

int parallel_workers(int64_t n, int64_t grain) {
  if (n <= 0) return 1;
  if (grain < 1) grain = 1;
  const int64_t chunks = (n + grain - 1) / grain;
  return t_in_region ? 1 : static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(num_threads(), chunks)));
}

void parallel_for_indexed(int64_t n, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> body) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = parallel_workers(n, grain);
  Job job(body, n, grain);
  if (threads <= 1 || !pool().try_run(job, threads)) job.run_chunks(0);
  if (job.error) std::rethrow_exception(job.error);
}

void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body) {
  parallel_for_indexed(n, grain, [&](int, int64_t begin, int64_t end) { body(begin, end); });
}

}  // namespace opscope
