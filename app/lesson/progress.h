// The student's progress through the lessons, remembered between runs in a small JSON file:
// $XDG_CONFIG_HOME/opscope/progress.json (or ~/.config/opscope/progress.json), with the few
// settings of the window that a student expects to find again (its zoom).
#pragma once
#include <map>
#include <string>

namespace opscope::lesson {

// One exercise: what the student wrote and how their attempts went.
struct ExerciseProgress {
  int attempts = 0;
  bool passed = false;
  bool gave_up = false;  // the solution was shown without a pass
  int hints = 0;         // hints revealed
  std::string code;      // the student's code at their last attempt (or edit)
};

struct LessonProgress {
  int block = 0;         // the next block to show
  bool finished = false;
  int quizzes_right = 0;
  std::map<std::string, ExerciseProgress> exercises;  // by exercise id
};

struct Progress {
  std::string lang = "en";           // the language last used
  std::string last;                  // number of the lesson last opened ("03")
  std::map<std::string, LessonProgress> lessons;  // by number: the same in every language
  double zoom = 1.0;                 // the window's View ▸ Zoom (1 to 2.5)
};

std::string default_progress_path();
// A missing or unreadable file is a fresh start, never an error: progress is a convenience.
Progress load_progress(const std::string& path);
// Writes atomically (a temporary file renamed over the old one); false when it cannot.
bool save_progress(const Progress& p, const std::string& path);

}  // namespace opscope::lesson
