// Timing a kernel with the clock this platform has. A browser coarsens performance.now() (to
// 100 µs on a page that is not cross-origin isolated), so one run of a 5 µs kernel reads 0 or
// 100 µs there; the desktop's steady_clock ticks in nanoseconds.
#pragma once
#include <functional>
#include <string>

namespace opscope {

// Seconds per run of `run`. Where the clock is fine, one run timed alone (`setup` first, not
// timed). Where it is coarse, runs (each after its `setup`, timed with it: cheap setups only)
// repeat until at least kTicksPerMeasurement ticks have passed, and the average is returned.
double seconds_per_run(const std::function<void()>& setup, const std::function<void()>& run);
constexpr int kTicksPerMeasurement = 50;

// A single measured duration as text, with the clock's resolution where it is coarse:
// "5.6 µs"; in a browser "200 µs (± 100 µs: the browser's clock ticks every 100 µs)", or
// "under 100 µs (...)" for a run shorter than a tick.
std::string duration_text(double ns);

}  // namespace opscope
