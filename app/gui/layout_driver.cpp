#include "app/gui/layout_driver.h"

#include <cstdlib>

#include "app/gui/gui_app.h"

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

viz::LayoutMode layout_mode_for(const GuiOptions& o, bool headless) {
  if (!o.layout_mode.empty()) return viz::parse_layout_mode(o.layout_mode);
  if (const char* env = std::getenv("OPSCOPE_LAYOUT"); env && *env) return viz::parse_layout_mode(env);
  return headless ? viz::LayoutMode::sync : viz::LayoutMode::thread;
}

}  // namespace opscope::app
