#include "viz/layout_queue.h"

#include <chrono>

#include "core/error.h"

namespace opscope::viz {

const char* layout_mode_name(LayoutMode m) {
  switch (m) {
    case LayoutMode::sync: return "sync";
    case LayoutMode::slices: return "slices";
    case LayoutMode::thread: return "thread";
  }
  return "?";
}

LayoutMode parse_layout_mode(const std::string& name) {
  for (LayoutMode m : {LayoutMode::sync, LayoutMode::slices, LayoutMode::thread})
    if (name == layout_mode_name(m)) return m;
  throw Error("unknown layout mode '" + name + "'",
              "thread (a worker thread, the desktop's default), slices (a few ms per frame on the UI thread) or sync "
              "(at once)");
}

LayoutQueue::LayoutQueue(LayoutMode mode) : mode_(mode) {}

LayoutQueue::~LayoutQueue() { stop(); }

void LayoutQueue::note_step(double ms) {
  if (ms > step_ms_max_.load()) step_ms_max_ = ms;
}

std::shared_ptr<LayoutTicket> LayoutQueue::submit(FigurePlan plan) {
  auto ticket = std::make_shared<LayoutTicket>();
  auto job = std::make_unique<FigureJob>(std::move(plan), cache_);
  if (mode_ == LayoutMode::sync) {
    try {
      while (!job->done()) {
        const auto t0 = std::chrono::steady_clock::now();
        job->step();
        note_step(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      ticket->layout = job->take();
    } catch (const Error& e) {
      ticket->error = e.what();
    }
    ticket->steps_done = ticket->steps_total = job->steps_total();
    ticket->done = true;
    return ticket;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({ticket, std::move(job)});
  changed_.notify_all();
  return ticket;
}

bool LayoutQueue::run_one(std::unique_lock<std::mutex>& lock) {
  if (busy_) return false;
  while (!entries_.empty() && entries_.front().ticket->cancelled) entries_.pop_front();
  if (entries_.empty()) return false;
  // The front entry stays in the queue while its step runs (outside the lock); only the thread
  // running steps (busy_) pops it.
  Entry& e = entries_.front();
  std::shared_ptr<LayoutTicket> ticket = e.ticket;
  FigureJob* job = e.job.get();
  busy_ = true;
  lock.unlock();
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  try {
    job->step();
  } catch (const Error& ex) {
    error = ex.what();
  }
  note_step(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ticket->steps_total = job->steps_total();
  ticket->steps_done = job->steps_done();
  const bool finished = job->done() || !error.empty();
  if (finished) {
    if (error.empty()) ticket->layout = job->take();
    ticket->error = error;
  }
  lock.lock();
  busy_ = false;
  if (finished) {
    entries_.pop_front();
    ticket->done = true;  // (after the layout is in place: the view reads it once it sees done)
  }
  changed_.notify_all();
  return true;
}

void LayoutQueue::finish(const std::shared_ptr<LayoutTicket>& t) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!t->done) {
    if (serving_) {
      changed_.wait(lock);  // the worker runs the steps, of this ticket and those before it
    } else if (!run_one(lock)) {
      break;  // cancelled and dropped
    }
  }
}

bool LayoutQueue::run_for(double budget_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  bool ran = false;
  std::unique_lock<std::mutex> lock(mutex_);
  // At least one step (each frame makes progress), then more while the budget lasts.
  while (run_one(lock)) {
    ran = true;
    if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() >= budget_ms) break;
  }
  return ran;
}

void LayoutQueue::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  serving_ = true;
  while (!stopped_) {
    if (!run_one(lock)) changed_.wait(lock);
  }
  serving_ = false;
  changed_.notify_all();
}

void LayoutQueue::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  for (auto& e : entries_) e.ticket->cancelled = true;
  changed_.notify_all();
}

bool LayoutQueue::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& e : entries_)
    if (!e.ticket->cancelled) return false;
  return !busy_;
}

}  // namespace opscope::viz
