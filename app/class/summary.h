// What the teacher's page shows, computed from the stored attempts: students × exercises, each
// exercise's pass rate and its most common failing checks clustered by the check; and the CSV of
// `opscope exercise grade --csv`.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "app/class/store.h"

namespace opscope::classroom {

struct CourseExercise {
  std::string id, title;
  double seconds = 0;  // the exercise's own time limit
};

// A student is stuck on an exercise after this many graded attempts without a pass.
constexpr int kStuckAfter = 3;

// GET /api/teacher/summary's JSON text. Exercises in the course's order, then any others.
// `lessons`: where each student's site is in the lessons (by student id), shown as "lesson".
std::string summary_json(const std::string& class_name, const std::vector<Student>& students,
                         const std::vector<AttemptRow>& attempts, const std::vector<CourseExercise>& course,
                         const std::map<long long, LessonAt>& lessons = {});

// The grades as `exercise grade --csv` writes them: student, one column per exercise ("pass",
// "fail K/N", "error", "timeout", "-"), passed.
std::string grades_csv(const std::vector<Student>& students, const std::vector<AttemptRow>& attempts,
                       const std::vector<CourseExercise>& course);

// A student's own attempts with their grades (GET /api/attempts).
std::string own_attempts_json(const std::vector<AttemptRow>& attempts);

// A text as one CSV field, safe to open in a spreadsheet: quoted where it holds a comma, a quote or
// a line break, and a leading = + - @ tab or CR made text (a spreadsheet would run it as a formula).
std::string csv_field(std::string s);

}  // namespace opscope::classroom
