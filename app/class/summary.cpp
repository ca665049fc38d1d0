#include "app/class/summary.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace opscope::classroom {

namespace {

using nlohmann::json;

// One student's standing on one exercise.
struct Cell {
  bool passed = false;
  int attempts = 0, pending = 0, failed = 0, hints = 0, mismatches = 0;
  const AttemptRow* latest_graded = nullptr;
  const AttemptRow* latest = nullptr;
};

using Table = std::map<long long, std::map<std::string, Cell>>;  // student id -> exercise -> cell

Table tabulate(const std::vector<AttemptRow>& attempts) {
  Table t;
  for (const AttemptRow& a : attempts) {  // oldest first: the last one seen is the latest
    Cell& c = t[a.student_id][a.exercise];
    ++c.attempts;
    c.hints = std::max(c.hints, a.hints_used);
    c.latest = &a;
    if (!a.graded) {
      ++c.pending;
      continue;
    }
    c.latest_graded = &a;
    c.mismatches += a.mismatch;
    if (a.grade.status == "pass") c.passed = true;
    else ++c.failed;
  }
  return t;
}

std::vector<std::string> exercise_order(const std::vector<AttemptRow>& attempts,
                                        const std::vector<CourseExercise>& course) {
  std::set<std::string> seen;
  for (const AttemptRow& a : attempts) seen.insert(a.exercise);
  std::vector<std::string> order;
  for (const CourseExercise& e : course)
    if (seen.erase(e.id)) order.push_back(e.id);
  order.insert(order.end(), seen.begin(), seen.end());
  return order;
}

// As `exercise grade`: the best result, else the latest graded one.
std::string grade_cell(const Cell* c) {
  if (!c || !c->latest_graded) return "-";
  if (c->passed) return "pass";
  const Grade& g = c->latest_graded->grade;
  if (g.status == "fail") return "fail " + std::to_string(g.checks_passed) + "/" + std::to_string(g.checks_total);
  return g.status;
}

json failures_of(const AttemptRow& a) {
  json f = json::parse(a.grade.failures, nullptr, false);
  return f.is_array() ? f : json::array();
}

json exercise_json(const std::string& id, const std::vector<Student>& students, const Table& table) {
  struct Cluster {
    std::string message;
    std::vector<std::string> names;
    std::vector<long long> attempt_ids;
  };
  std::map<std::string, Cluster> clusters;
  int tried = 0, passed = 0;
  for (const Student& s : students) {
    auto st = table.find(s.id);
    if (st == table.end()) continue;
    auto it = st->second.find(id);
    if (it == st->second.end() || !it->second.latest_graded) continue;
    ++tried;
    if (it->second.passed) {
      ++passed;
      continue;
    }
    // A student counts once per check, with the latest graded attempt's failures.
    std::set<std::string> checks;
    for (const json& f : failures_of(*it->second.latest_graded)) {
      const std::string check = f.value("check", std::string("?"));
      if (!checks.insert(check).second) continue;
      Cluster& c = clusters[check];
      if (c.message.empty()) c.message = f.value("message", std::string());
      c.names.push_back(s.name);
      c.attempt_ids.push_back(it->second.latest_graded->id);
    }
  }
  std::vector<std::pair<std::string, Cluster>> sorted(clusters.begin(), clusters.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second.names.size() > b.second.names.size(); });
  json common = json::array();
  for (const auto& [check, c] : sorted)
    common.push_back({{"check", check},
                      {"message", c.message},
                      {"count", c.names.size()},
                      {"students", c.names},
                      {"attempt_ids", c.attempt_ids}});
  return {{"id", id},
          {"pass_rate", tried ? static_cast<double>(passed) / tried : 0.0},
          {"passed", passed},
          {"tried", tried},
          {"common_failures", common}};
}

}  // namespace

std::string summary_json(const std::string& class_name, const std::vector<Student>& students,
                         const std::vector<AttemptRow>& attempts, const std::vector<CourseExercise>& course,
                         const std::map<long long, LessonAt>& lessons) {
  const Table table = tabulate(attempts);
  const std::vector<std::string> order = exercise_order(attempts, course);
  json js = json::array();
  for (const Student& s : students) {
    json results = json::object();
    auto st = table.find(s.id);
    if (st != table.end())
      for (const auto& [ex, c] : st->second)
        results[ex] = {{"passed", c.passed},
                       {"attempts", c.attempts},
                       {"pending", c.pending},
                       {"hints", c.hints},
                       {"grade", grade_cell(&c)},
                       {"stuck", !c.passed && c.failed >= kStuckAfter},
                       {"mismatches", c.mismatches},
                       {"last_at", c.latest ? c.latest->received_at : ""},
                       {"latest_attempt_id", c.latest ? c.latest->id : 0}};
    json student = {{"id", s.id}, {"name", s.name}, {"results", results}};
    if (auto at = lessons.find(s.id); at != lessons.end())
      student["lesson"] = {{"lesson", at->second.lesson},     {"title", at->second.title},
                           {"block", at->second.block},       {"blocks", at->second.blocks},
                           {"finished", at->second.finished}, {"at", at->second.updated_at}};
    js.push_back(std::move(student));
  }
  json ex = json::array();
  for (const std::string& id : order) {
    json e = exercise_json(id, students, table);
    for (const CourseExercise& c : course)
      if (c.id == id) e["title"] = c.title;
    ex.push_back(std::move(e));
  }
  size_t pending = 0;
  for (const AttemptRow& a : attempts) pending += !a.graded;
  return json{
      {"class", class_name}, {"students", js}, {"exercises", ex}, {"attempts", attempts.size()}, {"pending", pending}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string grades_csv(const std::vector<Student>& students, const std::vector<AttemptRow>& attempts,
                       const std::vector<CourseExercise>& course) {
  const Table table = tabulate(attempts);
  const std::vector<std::string> order = exercise_order(attempts, course);
  std::string out = "student";
  for (const std::string& id : order) out += "," + csv_field(id);
  out += ",passed\n";
  for (const Student& s : students) {
    out += csv_field(s.name);
    int passed = 0;
    auto st = table.find(s.id);
    for (const std::string& id : order) {
      const Cell* c = nullptr;
      if (st != table.end()) {
        auto it = st->second.find(id);
        if (it != st->second.end()) c = &it->second;
      }
      passed += c && c->passed;
      out += "," + grade_cell(c);
    }
    out += "," + std::to_string(passed) + "\n";
  }
  return out;
}

std::string own_attempts_json(const std::vector<AttemptRow>& attempts) {
  json list = json::array();
  for (const AttemptRow& a : attempts) {
    json j{{"attempt_id", a.id}, {"exercise", a.exercise}, {"received_at", a.received_at}, {"graded", a.graded}};
    if (a.graded)
      j.update({{"status", a.grade.status},
                {"passed", a.grade.status == "pass"},
                {"checks_passed", a.grade.checks_passed},
                {"checks_total", a.grade.checks_total},
                {"failures", failures_of(a)},
                {"mismatch", a.mismatch}});
    list.push_back(std::move(j));
  }
  return json{{"attempts", list}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string csv_field(std::string s) {
  if (!s.empty() && std::string("=+-@\t\r").find(s[0]) != std::string::npos) s = "'" + s;
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace opscope::classroom
