#include "app/gui/layout_driver.h"

#include <cstdlib>

#include "app/gui/gui_app.h"
#include "platform/platform.h"

namespace opscope::app {

LayoutDriver::LayoutDriver(viz::LayoutMode mode) : queue_(std::make_shared<viz::LayoutQueue>(mode)) {
  // The worker owns Graphviz while a step runs (viz/graphviz_context.h's lock); it touches no
  // Graph and no ImGui state, only the plans the UI thread hands the queue.
  if (mode == viz::LayoutMode::thread) worker_ = std::thread([q = queue_] { q->serve(); });
}

LayoutDriver::~LayoutDriver() {
  queue_->stop();
  if (worker_.joinable()) worker_.join();
}

void LayoutDriver::drive() {
  if (queue_->mode() == viz::LayoutMode::slices) queue_->run_for(kSliceMs);
}

// Where threads are not (the browser), layouts run in slices on the UI thread.
viz::LayoutMode layout_mode_for(const GuiOptions& o, bool headless) {
  viz::LayoutMode mode = headless ? viz::LayoutMode::sync : viz::LayoutMode::thread;
  if (!o.layout_mode.empty()) mode = viz::parse_layout_mode(o.layout_mode);
  else if (const char* env = std::getenv("OPSCOPE_LAYOUT"); env && *env) mode = viz::parse_layout_mode(env);
  if (mode == viz::LayoutMode::thread && !platform::has(platform::Feature::threads)) mode = viz::LayoutMode::slices;
  return mode;
}

}  // namespace opscope::app
