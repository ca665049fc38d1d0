// The thread pool the CPU kernels split their loops over, sized to the machine's cores
// (override with :threads N, OPSCOPE_NUM_THREADS or --threads).
//
// Rules that keep the engine exact with threads on:
// - parallel_for returns only when every chunk is done, so a step's measured time covers all
//   of its threads' work and the stepper never sees a half-written output.
// - Chunk boundaries depend on the loop's size and grain only, never on the thread count: a
//   kernel that reduces per chunk and adds the chunks up in order gives the same bits for any
//   number of threads.
// - Bodies compute only: memory is allocated before the loop (a body that allocates gets an
//   error), so the MemoryTracker is only ever touched by the thread that runs the op.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace opscope {

constexpr int kMaxThreads = 64;

int hardware_threads();  // CPUs this process may run on
int default_num_threads();  // OPSCOPE_NUM_THREADS when set, else hardware_threads()
int num_threads();  // threads a kernel may use now (1: everything on the calling thread)
void set_num_threads(int n);  // 1 <= n <= kMaxThreads, else a student error
// The platform's limit (the browser: one thread), set before any kernel runs; `why` is the
// hint a student gets when asking for more.
void limit_threads(int max_threads, const std::string& why);

// True inside a parallel_for body, on whichever thread runs it.
bool in_parallel_region();

// A non-owning reference to a callable: what parallel_for takes (no allocation per call).
template <class Sig> class FunctionRef;
template <class R, class... Args> class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))), call_(&call<std::remove_reference_t<F>>) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  template <class F> static R call(void* obj, Args... args) {
    return (*static_cast<F*>(obj))(std::forward<Args>(args)...);
  }
  void* obj_;
  R (*call_)(void*, Args...);
};

// Runs body(begin, end) for the chunks [i·grain, min(n, (i+1)·grain)) of [0, n), spread over
// num_threads() threads (the caller's among them), and returns when all are done. Runs inline
// when n <= grain, with one thread, or when called from inside a body. The first exception a
// body throws is rethrown here once every chunk has stopped.
void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> body);

// As parallel_for, with the index of the thread running each chunk: 0 for the caller, up to
// parallel_workers(n, grain) - 1. For scratch buffers, one per thread (allocated before the
// loop); what a chunk computes must not depend on which thread runs it.
void parallel_for_indexed(int64_t n, int64_t grain, FunctionRef<void(int, int64_t, int64_t)> body);
int parallel_workers(int64_t n, int64_t grain);  // threads a loop of n items with this grain uses

// A grain for `n`-item loops whose items cost about `work_per_item` element operations: chunks
// of at least kParallelChunkWork operations, so handing one to another thread pays off.
constexpr double kParallelChunkWork = 32768;
int64_t grain_for(double work_per_item);

// Sets the thread count for the guard's lifetime (tests).
class NumThreadsScope {
 public:
  explicit NumThreadsScope(int n) : prev_(num_threads()) { set_num_threads(n); }
  ~NumThreadsScope() { set_num_threads(prev_); }
  NumThreadsScope(const NumThreadsScope&) = delete;
  NumThreadsScope& operator=(const NumThreadsScope&) = delete;

 private:
  int prev_;
};

}  // namespace opscope
