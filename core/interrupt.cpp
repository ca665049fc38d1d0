#include "core/interrupt.h"

#include <atomic>
#include <chrono>
#include <thread>

namespace opscope::interrupt {

namespace {
std::atomic<bool> g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler sets the flag");

struct IdleHook {
  std::function<void()> fn;
  std::chrono::steady_clock::duration interval{};
  std::chrono::steady_clock::time_point next{};
  std::thread::id owner;
};
IdleHook g_hook;
std::atomic<bool> g_hook_set{false};
thread_local bool t_in_hook = false;

void run_idle_hook() {
  if (!g_hook_set.load(std::memory_order_relaxed) || t_in_hook || std::this_thread::get_id() != g_hook.owner) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < g_hook.next) return;
  t_in_hook = true;
  try {
    g_hook.fn();
  } catch (...) {
    t_in_hook = false;
    throw;
  }
  t_in_hook = false;
  g_hook.next = std::chrono::steady_clock::now() + g_hook.interval;
}
}  // namespace

void request() noexcept { g_requested.store(true, std::memory_order_relaxed); }
void clear() noexcept { g_requested.store(false, std::memory_order_relaxed); }
bool requested() noexcept { return g_requested.load(std::memory_order_relaxed); }

void check() {
  if (!requested()) run_idle_hook();
  if (requested()) throw Interrupted();
}

void set_idle_hook(std::function<void()> fn, double interval_s) {
  g_hook_set.store(false, std::memory_order_relaxed);
  g_hook.fn = std::move(fn);
  g_hook.interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(interval_s));
  g_hook.next = std::chrono::steady_clock::now() + g_hook.interval;
  g_hook.owner = std::this_thread::get_id();
  g_hook_set.store(static_cast<bool>(g_hook.fn), std::memory_order_relaxed);
}

}  // namespace opscope::interrupt
