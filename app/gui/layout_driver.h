// The graph view's layouts are made off the frame (viz/layout_queue.h); the shell decides where
// the queue's steps run: on a worker thread of its own (the desktop's default), in slices of a
// few milliseconds at the start of each frame (where there are no threads, as in a browser; a
// desktop test runs it too), or at once (headless runs, whose pictures must not depend on
// timing). Chosen by --layout, else $OPSCOPE_LAYOUT, else thread (sync when headless).
#pragma once
#include <memory>
#include <thread>

#include "viz/layout_queue.h"

namespace opscope::app {

struct GuiOptions;
struct GuiState;

class LayoutDriver {
 public:
  explicit LayoutDriver(viz::LayoutMode mode);
  ~LayoutDriver();  // stops the worker (a layout step in progress finishes first)
  LayoutDriver(const LayoutDriver&) = delete;
  LayoutDriver& operator=(const LayoutDriver&) = delete;
  const std::shared_ptr<viz::LayoutQueue>& queue() const { return queue_; }
  // Once per frame: in slices mode, runs layout steps for about kSliceMs.
  void drive();
  static constexpr double kSliceMs = 4.0;

 private:
  std::shared_ptr<viz::LayoutQueue> queue_;
  std::thread worker_;
};

// The mode `o` asks for (--layout, $OPSCOPE_LAYOUT, the default for `headless`).
viz::LayoutMode layout_mode_for(const GuiOptions& o, bool headless);

}  // namespace opscope::app
