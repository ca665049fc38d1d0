// The course's exercises as the lessons hold them, and a class's answers graded into one table
// (`opscope exercise list|show|grade`).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/lesson/exercise_grader.h"

namespace opscope::lesson {

struct ExerciseRef {
  std::shared_ptr<const Lesson> lesson;
  const Exercise* exercise = nullptr;  // points into *lesson
};

// Every exercise of the lessons of `lang`, in course order. Two exercises with one id are an
// error naming both places.
std::vector<ExerciseRef> course_exercises(const std::string& dir, const std::string& lang);
// One by id; an unknown id is an error listing the ids.
ExerciseRef find_exercise(const std::vector<ExerciseRef>& course, const std::string& id);

struct StudentGrades {
  std::string student;  // the folder's name
  std::map<std::string, Attempt> attempts;  // by exercise id
};

struct ClassGrades {
  std::vector<std::string> exercises;  // the table's columns: exercises some student answered, in course order
  std::vector<StudentGrades> students;  // by name
  std::vector<std::string> notes;  // what was not graded and why ("bob/notes.txt: not an answer file")
};

constexpr size_t kMaxAnswerBytes = 1 << 20;  // an answer file larger than this is not graded

// Grades `folder`/STUDENT/ID.ops for every exercise id of `course`. Each file runs in a fresh
// workspace under its exercise's time limit, so one that fails, loops or crashes costs only its
// own cell of the table. `on_file` hears of each file before it runs (progress for a terminal).
// `grade` runs one file (its path and its name in messages); by default run_attempt, in-process
// (the desktop's `exercise grade` passes run_attempt_in_child: each file in a child process).
using GradeFile = std::function<Attempt(const ExerciseRef&, const std::string& code, const std::string& path,
                                        const std::string& shown)>;
ClassGrades grade_class(const std::string& folder, const std::vector<ExerciseRef>& course,
                        const std::function<void(const std::string& file)>& on_file = {}, const GradeFile& grade = {});

// A cell of the table: pass, "fail 2/4", error, timeout, or "-" for no answer.
std::string grade_cell(const StudentGrades& s, const std::string& exercise_id);
// The table as aligned text (one row per student, one column per exercise, and how many passed).
std::string grades_table(const ClassGrades& g);
// The same table as CSV: student, the exercises' ids, passed.
std::string grades_csv(const ClassGrades& g);

}  // namespace opscope::lesson
