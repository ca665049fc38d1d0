// The one symbol libopscope_window.so is opened for: its table (window_module.h).
#include "app/gui/window_module.h"
#include "app/lesson/gui_lesson_panel.h"
#include "app/lesson/progress.h"
#include "opscope_abi.h"

namespace {

int run_window(opscope::app::GuiOptions o) {
  namespace lesson = opscope::lesson;
  // View ▸ Zoom is remembered with the lesson progress; headless runs (tests, screenshots) start
  // at 100 % unless they ask, so a student's setting never changes what a test sees.
  const std::string progress = lesson::default_progress_path();
  if (o.zoom <= 0) o.zoom = o.frames == 0 ? static_cast<float>(lesson::load_progress(progress).zoom) : 1.f;
  o.save_zoom = [progress](float zoom) {
    lesson::Progress p = lesson::load_progress(progress);
    p.zoom = zoom;
    lesson::save_progress(p, progress);
  };
  if (!o.journal_off && (o.journal_on || o.frames == 0)) o.journal = opscope::app::default_journal_path();
  if (!o.lesson.empty()) {
    o.lesson_panel = lesson::make_gui_lesson_panel(o.lesson, o.lesson_lang);
    o.lesson_action = lesson::apply_lesson_action;
    o.map_panel = lesson::make_gui_map_panel(o.lesson_panel);
    o.lesson_state = lesson::make_gui_lesson_state(o.lesson_panel);
    o.shipped_text = lesson::gui_chinese_text;
  }
  return opscope::app::run_gui(o);
}

}  // namespace

extern "C" const opscope::app::WindowModule* opscope_window_module() {
  static const opscope::app::WindowModule table{{opscope::app::kWindowModuleInterface, OPSCOPE_ABI_ID}, &run_window};
  return &table;
}
