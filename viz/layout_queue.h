// Layout off the frame. The graph view asks for a figure (a FigurePlan, made on the UI thread
// from the Graph) and gets a ticket; the queue runs the figure's steps (layout_job.h) and the
// view installs the layout once the ticket is done, drawing a progress state or the previous
// figure meanwhile. viz starts no thread: the GUI runs the queue on a worker thread of its own
// (serve), or in slices of a few milliseconds per frame where there are no threads (run_for),
// or at once (mode sync: headless runs whose pictures must not depend on timing).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "viz/layout_job.h"

namespace opscope::viz {

enum class LayoutMode : uint8_t {
  sync,  // each request is laid out when it is made
  slices,  // steps run on the UI thread, a few ms per frame (a browser has no threads)
  thread,  // steps run on a worker thread the GUI starts
};
const char* layout_mode_name(LayoutMode m);
// "sync", "slices", "thread"; throws opscope::Error naming the choices for anything else.
LayoutMode parse_layout_mode(const std::string& name);

// One requested figure, shared by the view that waits for it and the queue that makes it.
struct LayoutTicket {
  std::atomic<bool> done{false};
  std::atomic<bool> cancelled{false};  // superseded: the queue drops it
  std::atomic<int> steps_done{0}, steps_total{1};
  GraphLayout layout;  // once done
  std::string error;  // once done: why it failed ("" if it did not)
};

class LayoutQueue {
 public:
  explicit LayoutQueue(LayoutMode mode = LayoutMode::sync);
  ~LayoutQueue();
  LayoutMode mode() const { return mode_; }
  ScopeCache& cache() { return *cache_; }

  // Queues the figure's layout (sync: makes it now). Earlier tickets still waiting stay queued
  // until cancelled.
  std::shared_ptr<LayoutTicket> submit(FigurePlan plan);
  // Waits until `t` is done: runs its steps here, or (a worker serving) waits for the worker.
  void finish(const std::shared_ptr<LayoutTicket>& t);
  // Slices: runs a step, and more until about `budget_ms` is spent or none is left; true if any ran.
  bool run_for(double budget_ms);
  // The worker thread's body: runs steps as they come until stop(). (One worker per queue.)
  void serve();
  void stop();
  bool idle() const;
  double step_ms_max() const { return step_ms_max_.load(); }  // the longest step so far

 private:
  struct Entry {
    std::shared_ptr<LayoutTicket> ticket;
    std::unique_ptr<FigureJob> job;
  };
  // Runs one step of the first live entry; false if there is none. Call with `lock` held.
  bool run_one(std::unique_lock<std::mutex>& lock);
  void note_step(double ms);

  LayoutMode mode_;
  std::shared_ptr<ScopeCache> cache_ = std::make_shared<ScopeCache>();
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> entries_;
  bool busy_ = false;  // a step is running (outside the lock)
  bool serving_ = false;  // a worker runs the steps
  bool stopped_ = false;
  std::atomic<double> step_ms_max_{0};
};

}  // namespace opscope::viz
