#include "app/lesson/exercise_text.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace opscope::lesson {

namespace {

bool chinese(const ExerciseRef& e) { return e.lesson->lang == "zh"; }

std::string indented(const std::string& code, const std::string& pad) {
  std::istringstream is(code);
  std::string out;
  for (std::string l; std::getline(is, l);) out += pad + l + "\n";
  return out;
}

std::string paint(const TerminalStyle& s, const char* code, const std::string& text) {
  return s.color ? std::string("\x1b[") + code + "m" + text + "\x1b[0m" : text;
}

}  // namespace

std::string exercise_list_text(const std::vector<ExerciseRef>& course) {
  size_t w = 2;
  for (const ExerciseRef& e : course) w = std::max(w, e.exercise->id.size());
  std::ostringstream o;
  o << "id" << std::string(w - 2 + 2, ' ') << "lesson  title\n";
  for (const ExerciseRef& e : course) {
    const std::string n = std::to_string(e.lesson->number);
    o << e.exercise->id << std::string(w - e.exercise->id.size() + 2, ' ') << std::string(6 - n.size(), ' ') << n
      << "  " << e.exercise->title << "\n";
  }
  return o.str();
}

std::string exercise_list_json(const std::vector<ExerciseRef>& course) {
  nlohmann::json j = nlohmann::json::array();
  for (const ExerciseRef& e : course)
    j.push_back({{"id", e.exercise->id},
                 {"lesson", e.lesson->number},
                 {"title", e.exercise->title},
                 {"checks", e.exercise->checks.size()},
                 {"hints", e.exercise->hints.size()},
                 {"seconds", e.exercise->seconds}});
  return j.dump(2);
}

std::string exercise_text(const ExerciseRef& e, const TerminalStyle& style, bool for_teacher) {
  const Exercise& ex = *e.exercise;
  const bool zh = chinese(e);
  std::ostringstream o;
  o << paint(style, "1;33",
             ex.id + " · " +
                 (zh ? "第 " + std::to_string(e.lesson->number) + " 课"
                     : "lesson " + std::to_string(e.lesson->number)) +
                 " · " + ex.title)
    << "\n";
  o << paint(style, "3", ex.story) << "\n\n";
  o << render_markdown(ex.prompt, style) << "\n";
  o << paint(style, "1",
             zh ? "起始代码（存成 " + ex.id + ".ops 再修改）："
                : "Your starting point (save it as " + ex.id + ".ops and edit it):")
    << "\n";
  o << indented(ex.starter, "    ") << "\n";
  o << paint(style, "1", zh ? "检查的内容：" : "What is checked:") << "\n";
  for (size_t i = 0; i < ex.checks.size(); ++i) {
    o << "  " << i + 1 << ". " << ex.checks[i].description << "\n";
    if (for_teacher) o << indented(ex.checks[i].code, "       ");
  }
  o << "\n";
  if (for_teacher) {
    for (size_t i = 0; i < ex.hints.size(); ++i)
      o << paint(style, "1", (zh ? "提示 " : "Hint ") + std::to_string(i + 1) + ":") << "\n"
        << render_markdown(ex.hints[i], style) << "\n";
    o << paint(style, "1", zh ? "参考答案：" : "Solution:") << "\n" << indented(ex.solution, "    ") << "\n";
  } else {
    o << (zh ? "提示：" + std::to_string(ex.hints.size()) + " 条，在 `opscope lesson " +
                   std::to_string(e.lesson->number) + "` 里逐条显示。\n"
             : std::to_string(ex.hints.size()) + " hint(s): `opscope lesson " + std::to_string(e.lesson->number) +
                   "` reveals them one at a time.\n");
  }
  o << (zh ? "检查你的文件：" : "Check your file: ") << "opscope exercise check " << ex.id << " " << ex.id << ".ops\n";
  return o.str();
}

std::string attempt_json(const Exercise& ex, const Attempt& a) {
  nlohmann::json checks = nlohmann::json::array();
  for (const CheckOutcome& c : a.checks)
    checks.push_back({{"description", c.description},
                      {"passed", c.passed},
                      {"message", c.message},
                      {"where", c.where},
                      {"your_lines", c.your_lines}});
  nlohmann::json j{{"exercise", ex.id},
                   {"status", status_name(a.status)},
                   {"passed", a.status == AttemptStatus::passed},
                   {"checks_passed", a.checks_passed()},
                   {"checks_total", ex.checks.size()},
                   {"seconds", a.seconds},
                   {"error", a.error},
                   {"output", a.output},
                   {"checks", checks}};
  return j.dump(2);
}

std::string grades_json(const ClassGrades& g, const std::vector<ExerciseRef>& course) {
  nlohmann::json students = nlohmann::json::array();
  for (const StudentGrades& s : g.students) {
    nlohmann::json results = nlohmann::json::object();
    for (const auto& [id, a] : s.attempts)
      results[id] = nlohmann::json::parse(attempt_json(*find_exercise(course, id).exercise, a));
    students.push_back({{"student", s.student}, {"results", results}});
  }
  return nlohmann::json{{"students", students}, {"exercises", g.exercises}, {"notes", g.notes}}.dump(2);
}

}  // namespace opscope::lesson
