#include "core/timing.h"

#include <chrono>
#include <cstdio>

#include "platform/platform.h"

namespace opscope {

namespace {
// Finer than a microsecond: one run is its own measurement.
bool clock_is_fine() { return platform::clock_resolution_ns() <= 1e3; }
}  // namespace

double seconds_per_run(const std::function<void()>& setup, const std::function<void()>& run) {
  using clock = std::chrono::steady_clock;
  if (clock_is_fine()) {
    setup();
    const auto t0 = clock::now();
    run();
    return std::chrono::duration<double>(clock::now() - t0).count();
  }
  const double enough_s = kTicksPerMeasurement * platform::clock_resolution_ns() * 1e-9;
  const auto t0 = clock::now();
  double elapsed = 0;
  long runs = 0;
  do {
    setup();
    run();
    ++runs;
    elapsed = std::chrono::duration<double>(clock::now() - t0).count();
  } while (elapsed < enough_s);
  return elapsed / static_cast<double>(runs);
}

std::string duration_text(double ns) {
  char text[160];
  const double tick_us = platform::clock_resolution_ns() / 1e3;
  if (clock_is_fine()) std::snprintf(text, sizeof text, "%.1f µs", ns / 1e3);
  else if (ns < platform::clock_resolution_ns())
    std::snprintf(text, sizeof text, "under %.0f µs (the browser's clock ticks every %.0f µs)", tick_us, tick_us);
  else
    std::snprintf(text, sizeof text, "%.0f µs (± %.0f µs: the browser's clock ticks every %.0f µs)", ns / 1e3, tick_us,
                  tick_us);
  return text;
}

}  // namespace opscope
