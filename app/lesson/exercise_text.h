// What `opscope exercise list|show|check` print: the course's exercises, one exercise as a
// student (or, with its solution, a teacher) reads it, and an attempt as JSON.
#pragma once
#include <string>
#include <vector>

#include "app/lesson/exercise_class.h"
#include "app/lesson/terminal_markdown.h"

namespace opscope::lesson {

// One line per exercise: id, lesson, title.
std::string exercise_list_text(const std::vector<ExerciseRef>& course);
// [{"id", "lesson", "title", "checks", "hints", "seconds"}, ...]
std::string exercise_list_json(const std::vector<ExerciseRef>& course);

// The story, the prompt, the starter, what the checks check and how to check a file. The hints
// are revealed one at a time by the players; `for_teacher` adds them, the checks' code and the
// solution.
std::string exercise_text(const ExerciseRef& e, const TerminalStyle& style, bool for_teacher);

// {"exercise", "status", "passed", "checks_passed", "checks_total", "seconds", "error",
//  "output", "checks": [{"description", "passed", "message", "your_lines"}]}
std::string attempt_json(const Exercise& ex, const Attempt& a);
// `exercise grade --json`: {"students": [{"student", "results": {ID: attempt_json's object}}],
// "exercises": [ID...], "notes": [...]}
std::string grades_json(const ClassGrades& g, const std::vector<ExerciseRef>& course);

}  // namespace opscope::lesson
