// The student's progress through the lessons, remembered between runs in a small JSON file:
// $XDG_CONFIG_HOME/opscope/progress.json (or ~/.config/opscope/progress.json).
#pragma once
#include <map>
#include <string>

namespace opscope::lesson {

struct LessonProgress {
  int block = 0;         // the next block to show
  bool finished = false;
  int quizzes_right = 0;
};

struct Progress {
  std::string lang = "en";           // the language last used
  std::string last;                  // number of the lesson last opened ("03")
  std::map<std::string, LessonProgress> lessons;  // by number: the same in every language
};

std::string default_progress_path();
// A missing or unreadable file is a fresh start, never an error: progress is a convenience.
Progress load_progress(const std::string& path);
// Writes atomically (a temporary file renamed over the old one); false when it cannot.
bool save_progress(const Progress& p, const std::string& path);

}  // namespace opscope::lesson
