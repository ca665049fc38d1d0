// An exercise: a block of a lesson that the student answers with code of their own, which
// hidden checks written by the teacher grade. Written in a lesson as a ````exercise fence (the
// format is in lessons/README.md); parsed here, graded by exercise_grader.h.
#pragma once
#include <string>
#include <vector>

namespace opscope::lesson {

// One hidden check: what it checks (shown to the student) and the code that checks it (not
// shown). It runs after the student's code, in the same workspace; it fails by an `assert` or an
// `expect_...` builtin, whose message is the feedback.
struct ExerciseCheck {
  std::string description;  // "the values agree with matmul" (translated)
  std::string code;
  int line = 0;  // the lesson file's line just before the code's first line (as Block::line)
};

struct Exercise {
  std::string id;  // "matmul-backward": graders and students' file names rely on it
  std::string title;  // translated
  std::string story;  // one line of the chapter's story that frames it (translated)
  std::string prompt;  // Markdown (translated)
  std::string setup;  // hidden code run before the student's (may be empty)
  std::string starter, solution;
  int setup_line = 0, starter_line = 0, solution_line = 0;  // as ExerciseCheck::line
  std::vector<ExerciseCheck> checks;
  std::vector<std::string> hints;  // Markdown, revealed one at a time (translated)
  double seconds = 30;  // an attempt's time limit: setup, the student's code and the checks
  // Built-ins the student's code may not use, each with why (translated): `forbid: NAME, NAME: WHY`.
  struct Forbidden {
    std::string name, why;
  };
  std::vector<Forbidden> forbidden;
};

// Parses the body of an exercise fence whose first line (after the fence) is line `first_line`
// of `path`. Errors are opscope::Error naming `path:line:col` and what to write instead.
Exercise parse_exercise(const std::string& body, const std::string& path, int first_line);

// The code without its comments and trailing blanks: what two language versions of a starter or
// a solution must share (their comments are translated).
std::string code_without_comments(const std::string& code);

// Where two language versions of an exercise differ in what they run (id, time limit, setup,
// starter and solution without comments, checks' code, how many hints); empty when they agree.
std::string compare_exercises(const Exercise& a, const Exercise& b);

}  // namespace opscope::lesson
