#include "app/lesson/exercise_class.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/lesson/terminal_markdown.h"
#include "core/error.h"

namespace opscope::lesson {

namespace fs = std::filesystem;

std::vector<ExerciseRef> course_exercises(const std::string& dir, const std::string& lang) {
  std::vector<ExerciseRef> out;
  std::map<std::string, std::string> seen;  // id -> where
  for (const std::string& f : lesson_files(dir, lang)) {
    auto lesson = std::make_shared<const Lesson>(load_lesson(f));
    for (const Block& b : lesson->blocks) {
      if (b.kind != Block::Kind::exercise) continue;
      const std::string where = f + ":" + std::to_string(b.line);
      if (auto it = seen.find(b.exercise.id); it != seen.end())
        throw Error(where + ": a second exercise with the id '" + b.exercise.id + "' (the first is at " + it->second +
                        ")",
                    "students' files are named ID.ops: every exercise needs an id of its own");
      seen[b.exercise.id] = where;
      out.push_back({lesson, &b.exercise});
    }
  }
  return out;
}

ExerciseRef find_exercise(const std::vector<ExerciseRef>& course, const std::string& id) {
  std::string ids;
  for (const ExerciseRef& e : course) {
    if (e.exercise->id == id) return e;
    ids += (ids.empty() ? "" : ", ") + e.exercise->id;
  }
  throw Error("no exercise '" + id + "'", "the exercises are " + ids + " (opscope exercise list)");
}

namespace {

bool read_answer(const fs::path& p, std::string& code, std::string& why) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return why = "cannot be read", false;
  if (size > kMaxAnswerBytes)
    return why = "larger than " + std::to_string(kMaxAnswerBytes / 1024) + " KiB: not graded", false;
  std::ifstream f(p, std::ios::binary);
  if (!f) return why = "cannot be read", false;
  std::stringstream ss;
  ss << f.rdbuf();
  code = ss.str();
  return true;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

int passed_count(const StudentGrades& s) {
  return static_cast<int>(std::count_if(s.attempts.begin(), s.attempts.end(),
                                        [](const auto& kv) { return kv.second.status == AttemptStatus::passed; }));
}

}  // namespace

ClassGrades grade_class(const std::string& folder, const std::vector<ExerciseRef>& course,
                        const std::function<void(const std::string& file)>& on_file, const GradeFile& grade) {
  if (!fs::is_directory(folder))
    throw Error("'" + folder + "' is not a folder", "grade a folder of STUDENT/ID.ops files");
  ClassGrades g;
  std::vector<fs::path> students;
  for (const auto& e : fs::directory_iterator(folder)) {
    if (e.is_directory() && !e.is_symlink()) students.push_back(e.path());
    else g.notes.push_back(e.path().filename().string() + ": not a student's folder (answers are STUDENT/ID.ops)");
  }
  std::sort(students.begin(), students.end());
  std::vector<bool> answered(course.size(), false);
  for (const fs::path& dir : students) {
    StudentGrades s;
    s.student = dir.filename().string();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      const std::string shown = s.student + "/" + p.filename().string();
      const auto it = std::find_if(course.begin(), course.end(), [&](const ExerciseRef& e) {
        return p.extension() == ".ops" && p.stem().string() == e.exercise->id;
      });
      if (it == course.end() || !fs::is_regular_file(p) || fs::is_symlink(p)) {
        g.notes.push_back(shown + ": not an answer (a file ID.ops for an exercise of opscope exercise list)");
        continue;
      }
      std::string code, why;
      if (!read_answer(p, code, why)) {
        g.notes.push_back(shown + ": " + why);
        continue;
      }
      if (on_file) on_file(shown);
      answered[static_cast<size_t>(it - course.begin())] = true;
      s.attempts[it->exercise->id] =
          grade ? grade(*it, code, p.string(), shown) : run_attempt(*it->lesson, *it->exercise, code, shown);
    }
    g.students.push_back(std::move(s));
  }
  for (size_t i = 0; i < course.size(); ++i)
    if (answered[i]) g.exercises.push_back(course[i].exercise->id);
  return g;
}

std::string grade_cell(const StudentGrades& s, const std::string& id) {
  auto it = s.attempts.find(id);
  if (it == s.attempts.end()) return "-";
  const Attempt& a = it->second;
  if (a.status == AttemptStatus::failed)
    return "fail " + std::to_string(a.checks_passed()) + "/" + std::to_string(a.checks.size());
  return status_name(a.status);
}

std::string grades_table(const ClassGrades& g) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head{"student"};
  for (const auto& id : g.exercises) head.push_back(id);
  head.push_back("passed");
  rows.push_back(head);
  for (const StudentGrades& s : g.students) {
    std::vector<std::string> r{s.student};
    for (const auto& id : g.exercises) r.push_back(grade_cell(s, id));
    r.push_back(std::to_string(passed_count(s)) + "/" + std::to_string(g.exercises.size()));
    rows.push_back(r);
  }
  std::vector<int> width(head.size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], display_width(r[c]));
  std::ostringstream o;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c)
      line +=
          r[c] + (c + 1 < r.size() ? std::string(static_cast<size_t>(width[c] - display_width(r[c]) + 2), ' ') : "");
    o << line << "\n";
  }
  return o.str();
}

std::string grades_csv(const ClassGrades& g) {
  std::ostringstream o;
  o << "student";
  for (const auto& id : g.exercises) o << "," << id;
  o << ",passed\n";
  for (const StudentGrades& s : g.students) {
    o << csv_field(s.student);
    for (const auto& id : g.exercises) o << "," << grade_cell(s, id);
    o << "," << passed_count(s) << "\n";
  }
  return o.str();
}

}  // namespace opscope::lesson
