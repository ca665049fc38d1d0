// Grades a student's code against an exercise's hidden checks, in a fresh workspace of its own
// (the same for the terminal player, the GUI's lesson panel, `opscope exercise check` and
// `grade`), bounded in time so a looping answer cannot stop a class's grading.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "app/lesson/lesson.h"

namespace opscope::lesson {

struct CheckOutcome {
  std::string description;  // what it checks, as the student reads it
  bool passed = false;
  std::string message;  // why it failed: which element, expected against got
  std::string where;  // the check's code in the lesson file (FILE:LINE), for the teacher
  // The student's lines the check is about: "alice/matmul-backward.ops:7: def my_matmul_backward(dc, a, b):"
  std::vector<std::string> your_lines;
};

// out_of_memory: an allocation was refused (the graded child's memory cap, or the machine's).
enum class AttemptStatus { passed, failed, error, timeout, out_of_memory };
const char* status_name(AttemptStatus s);  // "pass", "fail", "error", "timeout", "out of memory"
AttemptStatus status_from_name(const std::string& name);  // the inverse; unknown: error

struct Attempt {
  AttemptStatus status = AttemptStatus::failed;
  std::string output;  // what the student's code printed
  std::string error;  // error and timeout: FILE:LINE:COL: error ..., the line and a caret
  std::vector<CheckOutcome> checks;
  double seconds = 0;
  int checks_passed() const;
};

struct AttemptOptions {
  // Called between the steps of a running attempt (the GUI draws a frame there), as the idle hook
  // of core/interrupt.h; the time limit is checked beside it.
  std::function<void()> idle;
  bool time_limit = true;  // stop after the exercise's `seconds:` (its status is then timeout)
  int line_offset = 0;  // the code's first line is line offset + 1 of `filename`
  double seconds = 0;  // the time limit; 0: the exercise's `seconds:`
};

// Runs the exercise's setup, then `code` (as file `filename`), then every check.
Attempt run_attempt(const Lesson& lesson, const Exercise& ex, const std::string& code, const std::string& filename,
                    const AttemptOptions& options = {});

// `opscope lesson --check` for one exercise: its solution passes every check, and its starter
// runs and fails at least one, so the exercise cannot pass vacuously. Empty when both hold, else
// `FILE:LINE: ...` saying which way it broke.
std::string check_exercise(const Lesson& lesson, const Exercise& ex);

// The attempt as a student reads it in a terminal: passed or not, each check, the first failure's
// message and the student's lines it concerns. `zh`: in Chinese.
std::string feedback_text(const Exercise& ex, const Attempt& a, bool zh = false);

// Lines of `code` where it defines names at its top level (`def f`, `class C`, `x = ...`, and the
// backward `@f.backward` gives `f`), and the `return` lines of such functions, as
// "FILE:LINE: text", for the names in `mentioned`.
std::vector<std::string> lines_defining(const std::string& code, const std::string& filename, int line_offset,
                                        const std::string& mentioned);

}  // namespace opscope::lesson
