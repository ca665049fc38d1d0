// An exercise in the GUI's lesson panel: the story and the prompt, an editor holding the
// student's code, Check / Hint / Give up / Starter buttons, the last attempt's feedback (each
// check, the failing element, the student's lines), the hints revealed so far, and the reference
// solution once it may be shown. Built only with the GUI.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "app/gui/gui_state.h"
#include "app/lesson/player_model.h"

namespace opscope::lesson {

// What the panel keeps of its exercises between frames: each editor's text by block (the model
// keeps what was last checked or left), and the block whose feedback to scroll to.
struct ExerciseEditors {
  std::map<size_t, std::string> text;
  size_t scroll_to = SIZE_MAX;  // after a check or a hint: bring its end into view
};

// What a click on an exercise asks the panel to run after the frame (an attempt runs code and
// may take seconds; hints, giving up and the starter act at once).
enum class ExerciseClick { none, check, go_on };

// Draws exercise `block`. `current`: the lesson waits at it, so a Continue button moves on.
ExerciseClick draw_exercise(app::GuiState& s, LessonPlayerModel& m, size_t block, ExerciseEditors& editors,
                            bool current);

// Runs the exercise's checks on the editor's code with the window alive between steps.
void check_exercise_now(app::GuiState& s, LessonPlayerModel& m, size_t block, ExerciseEditors& editors);

// The editor's text for `block`, read from the model the first time.
std::string& editor_text(LessonPlayerModel& m, size_t block, ExerciseEditors& editors);

}  // namespace opscope::lesson
