// The student's progress through the lessons, remembered between runs in a small JSON file:
// $XDG_CONFIG_HOME/opscope/progress.json (or ~/.config/opscope/progress.json), with the few
// settings of the window that a student expects to find again (its zoom).
//
// Two windows may write the file (two browser tabs of the site share it; so do two desktop
// windows): save_progress merges with what the file holds then, per lesson and per exercise, so
// that neither loses the other's work (see save_progress).
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace opscope::lesson {

// One exercise: what the student wrote and how their attempts went.
struct ExerciseProgress {
  int attempts = 0;
  bool passed = false;
  bool gave_up = false;  // the solution was shown without a pass
  int hints = 0;  // hints revealed
  std::string code;  // the student's code at their last attempt (or edit)
  int64_t code_at = 0;  // when `code` was written (ms since 1970)
  std::string code_read;  // `code` as load_progress read it: a different `code` is this window's edit
};

struct LessonProgress {
  int block = 0;  // the next block to show
  bool finished = false;
  int quizzes_right = 0;
  std::map<std::string, ExerciseProgress> exercises;  // by exercise id
  int64_t block_at = 0;  // when `block` was written (ms since 1970)
  int block_read = 0;  // `block` as load_progress read it
};

struct Progress {
  std::string lang = "en";  // the language last used
  std::string last;  // number of the lesson last opened ("03")
  std::map<std::string, LessonProgress> lessons;  // by number: the same in every language
  double zoom = 1.0;  // the window's View ▸ Zoom (1 to 2.5)
};

std::string default_progress_path();
// A missing or unreadable file is a fresh start, never an error: progress is a convenience.
Progress load_progress(const std::string& path);
// Writes atomically (a temporary file renamed over the old one); false when it cannot. What the
// file holds by then (another window's writes since `p` was read) is merged in: a passed
// exercise stays passed, a solution seen stays seen, attempts, hints and quizzes right are the
// larger; an exercise's code and a lesson's place are `p`'s where `p` changed them since they
// were read, else the newer of the two; lessons and exercises only one side has are kept.
bool save_progress(const Progress& p, const std::string& path);
// That merge: `ours` is being written at `now_ms`, `theirs` is what the file holds.
Progress merge_progress(const Progress& ours, const Progress& theirs, int64_t now_ms);

}  // namespace opscope::lesson
