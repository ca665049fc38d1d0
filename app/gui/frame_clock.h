// The window's frame times, kept for the state dump (max_frame_ms, max_frame_work_ms, open_ms),
// and when a frame is due while a statement runs. The main loop tells it where a frame begins,
// where its drawing by OpenGL begins and where the frame ends; nothing here knows the platform.
#pragma once
#include <algorithm>
#include <chrono>

#include "app/gui/gui_state.h"

namespace opscope::app {

class FrameClock {
 public:
  using Clock = std::chrono::steady_clock;
  explicit FrameClock(Clock::time_point process_start) : process_start_(process_start) {}

  // `idle`: drawn inside a running statement.
  void frame_begins(GuiState& s, bool idle) {
    begin_ = Clock::now();
    if (frames_++ >= 2) {  // (the first frame compiles shaders and uploads the fonts)
      const double interval = ms(last_begin_, begin_);
      s.stats.max_frame_ms = std::max(s.stats.max_frame_ms, interval);
      s.stats.max_frame_work_ms = std::max(s.stats.max_frame_work_ms, interval - render_ms_);
      if (!idle && !s.run.statement_ran)  // no statement (a step) ran since the last frame
        s.stats.max_frame_between_steps_work_ms =
            std::max(s.stats.max_frame_between_steps_work_ms, interval - render_ms_);
    }
    if (!idle) s.run.statement_ran = false;
    last_begin_ = begin_;
  }
  void render_begins() { render_begin_ = Clock::now(); }
  void frame_ends(GuiState& s) {
    end_ = Clock::now();
    render_ms_ = ms(render_begin_, end_);
    const double total = ms(begin_, end_);
    s.stats.frame_total_ms_avg =
        s.stats.frame_total_ms_avg == 0 ? total : s.stats.frame_total_ms_avg * 0.9 + total * 0.1;
    if (s.stats.open_ms < 0 && viz::layout_current(s.graph)) {
      s.stats.open_ms = ms(process_start_, end_);
      s.stats.open_frame = frames_ - 1;
    }
  }
  // While a statement runs: a frame after 50 ms of its work, 60 where drawing is slow (a software
  // renderer takes 50-100 ms a frame), so the statement keeps half the time or more and no frame
  // waits for more than about 100 ms of it (a check comes every few ms: an initializer's piece).
  bool idle_frame_due(const GuiState& s) const {
    return ms(end_, Clock::now()) >= std::min(60.0, std::max(50.0, 4.0 * s.stats.frame_total_ms_avg));
  }

 private:
  static double ms(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  }
  Clock::time_point process_start_, begin_ = Clock::now(), last_begin_ = begin_, render_begin_ = begin_, end_ = begin_;
  double render_ms_ = 0;  // the last frame's drawing by OpenGL and its swap
  int frames_ = 0;
};

}  // namespace opscope::app
