#include "app/lesson/exercise_grader.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "app/lang/error.h"
#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lang/user_ops.h"
#include "app/lesson/runner.h"
#include "core/interrupt.h"

namespace opscope::lesson {

namespace {

using Clock = std::chrono::steady_clock;

// The attempt's time limit, checked in core/interrupt.h's idle hook (at every loop back-edge,
// call and executor step), beside the front end's own hook; put back when the attempt ends.
class AttemptClock {
 public:
  AttemptClock(const AttemptOptions& o, double seconds) : idle_(o.idle), limit_(o.time_limit) {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    interrupt::set_idle_hook(
        [this] {
          if (idle_) idle_();
          if (limit_ && Clock::now() > deadline_ && !expired_) {
            expired_ = true;
            interrupt::request();
          }
        },
        0.02);
  }
  ~AttemptClock() {
    interrupt::set_idle_hook(idle_);
    if (expired_) interrupt::clear();  // a request that came as the attempt ended belongs to nothing
  }
  AttemptClock(const AttemptClock&) = delete;
  AttemptClock& operator=(const AttemptClock&) = delete;
  bool expired() const { return expired_; }

 private:
  std::function<void()> idle_;
  bool limit_;
  bool expired_ = false;
  Clock::time_point deadline_;
};

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::set<std::string> identifiers(const std::string& code) {
  std::set<std::string> out;
  for (size_t i = 0; i < code.size();) {
    const auto c = static_cast<unsigned char>(code[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < code.size() && (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_')) ++j;
      out.insert(code.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

// A check's failure as the student reads it: the message and the values or tolerance beside it,
// without the check's own (hidden) source line. An error raised inside the student's code (their
// backward, called by gradcheck) keeps its caret: it points at their line.
std::string failure_message(const lang::Session& session, const BlockResult& r, const std::string& student_file) {
  const lang::LangError* e = session.last_error();
  if (!e) return trim(r.error);
  if (e->source() && e->source()->filename == student_file) return trim(r.error);
  std::string m = e->what();
  if (!e->hint().empty()) m += "\n" + e->hint();
  return m;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// "at FILE:LINE:COL", the line and its caret, from the interrupt's report (without its hint).
std::string stopped_at(const std::string& interrupted) {
  std::string t = interrupted;
  if (const size_t at = t.find("at "); at != std::string::npos) t = t.substr(at);
  if (const size_t hint = t.find("\nhint:"); hint != std::string::npos) t.resize(hint);
  return trim(t);
}

// The allocator's refusal (core/memory.cpp), the workspace's memory cap or the C++ runtime's,
// as the language reports them.
bool out_of_memory(const std::string& error) {
  return error.find("out of memory allocating") != std::string::npos || error.find("bad_alloc") != std::string::npos ||
         error.find("it would pass the memory cap") != std::string::npos;
}

bool same_value(const lang::Value& a, const lang::Value& b) {
  using V = lang::Value;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case V::none: return true;
    case V::boolean: return a.as_bool() == b.as_bool();
    case V::integer: return a.as_int() == b.as_int();
    case V::real: return a.as_real() == b.as_real() || (a.as_real() != a.as_real() && b.as_real() != b.as_real());
    case V::string: return a.as_str() == b.as_str();
    case V::tensor: return a.as_tensor().impl() == b.as_tensor().impl();
    case V::function: return a.as_function() == b.as_function();
    case V::builtin_fn: return &a.as_builtin() == &b.as_builtin();
    case V::op_ref: return &a.as_op() == &b.as_op();
    case V::list:
    case V::tuple: return a.items() == b.items();
    case V::method: {  // the same receiver object (a tensor's or a list's methods have none)
      const auto *x = a.as_method().object(), *y = b.as_method().object();
      return (x ? *x : nullptr) == (y ? *y : nullptr);
    }
    default: return a.as_object() == b.as_object();
  }
}

// The checks must compute with the real built-ins and the exercise's own set-up: a student's
// top-level name that hides one of them is an error at the line that defines it (a
// `def expect_close(*a): pass` would otherwise pass every check).
std::string shadowing_error(lang::Interpreter& in, const std::map<std::string, lang::Value>& setup,
                            const std::string& code, const std::string& filename, int line_offset) {
  for (const auto& [name, value] : in.globals()) {
    std::string what;
    if (in.builtins().count(name)) what = "the built-in " + name + "()";
    else if (OpRegistry::instance().find(name) && !in.user_ops().find_own(name)) what = "the operator " + name;
    else if (auto it = setup.find(name); it != setup.end() && !same_value(it->second, value))
      what = "'" + name + "', which the exercise's set-up defines";
    if (what.empty()) continue;
    const std::vector<std::string> at = lines_defining(code, filename, line_offset, name);
    std::string where =
        at.empty() ? filename + ": error: " : at.front().substr(0, at.front().find(": ") + 1) + " error: ";
    std::string m = where + "your code redefines " + what + "; the checks use the real one";
    if (!at.empty()) m += "\n    " + at.front().substr(at.front().find(": ") + 2);
    return m + "\nhint: give yours another name (my_" + name + "): the checks call the real " + name;
  }
  return {};
}

}  // namespace

const char* status_name(AttemptStatus s) {
  switch (s) {
    case AttemptStatus::passed: return "pass";
    case AttemptStatus::failed: return "fail";
    case AttemptStatus::error: return "error";
    case AttemptStatus::timeout: return "timeout";
    case AttemptStatus::out_of_memory: return "out of memory";
  }
  return "?";
}

AttemptStatus status_from_name(const std::string& name) {
  for (AttemptStatus s :
       {AttemptStatus::passed, AttemptStatus::failed, AttemptStatus::timeout, AttemptStatus::out_of_memory})
    if (name == status_name(s)) return s;
  return AttemptStatus::error;
}

int Attempt::checks_passed() const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](const CheckOutcome& c) { return c.passed; }));
}

std::vector<std::string> lines_defining(const std::string& code, const std::string& filename, int line_offset,
                                        const std::string& mentioned) {
  const std::set<std::string> names = identifiers(mentioned);
  std::vector<std::string> lines;
  std::istringstream is(code);
  for (std::string l; std::getline(is, l);) lines.push_back(l);
  std::map<int, std::string> found;  // by line, so they come in the file's order
  std::string backward_of;  // the line before was `@NAME.backward`
  auto take = [&](size_t i) { found[static_cast<int>(i) + 1 + line_offset] = trim(lines[i]); };
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty() || l[0] == ' ' || l[0] == '\t' || l[0] == '#') continue;  // top-level statements only
    if (l[0] == '@') {
      const size_t dot = l.find(".backward");
      backward_of = dot == std::string::npos ? "" : trim(l.substr(1, dot - 1));
      continue;
    }
    std::string name;
    if (l.rfind("def ", 0) == 0 || l.rfind("class ", 0) == 0) {
      const size_t a = l.find(' ') + 1, b = l.find_first_of("(: ", a);
      name = trim(l.substr(a, b == std::string::npos ? std::string::npos : b - a));
    } else if (const size_t eq = l.find('='); eq != std::string::npos && eq + 1 < l.size() && l[eq + 1] != '=' &&
                                              eq > 0 && l[eq - 1] != '!' && l[eq - 1] != '<' && l[eq - 1] != '>') {
      for (const std::string& n : identifiers(l.substr(0, eq)))  // a, b = ... defines both
        if (names.count(n)) take(i);
    }
    if ((!name.empty() && names.count(name)) || (!backward_of.empty() && names.count(backward_of))) {
      take(i);
      // What the function returns is where a wrong value comes from: quote those lines too.
      for (size_t j = i + 1; j < lines.size() && (lines[j].empty() || lines[j][0] == ' ' || lines[j][0] == '\t'); ++j)
        if (trim(lines[j]).rfind("return ", 0) == 0) take(j);
    }
    backward_of.clear();
  }
  std::vector<std::string> out;
  for (auto& [line, text] : found) out.push_back(filename + ":" + std::to_string(line) + ": " + text);
  return out;
}

Attempt run_attempt(const Lesson& lesson, const Exercise& ex, const std::string& code, const std::string& filename,
                    const AttemptOptions& o) {
  const auto t0 = Clock::now();
  Attempt a;
  LessonRunner runner;  // a fresh workspace: the same attempt gives the same result everywhere
  const double limit = o.seconds > 0 ? o.seconds : ex.seconds;
  AttemptClock clock(o, limit);
  auto finish = [&](AttemptStatus s) {
    a.status = s;
    a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    for (size_t i = a.checks.size(); i < ex.checks.size(); ++i)
      a.checks.push_back(
          {ex.checks[i].description, false, "not run", lesson.path + ":" + std::to_string(ex.checks[i].line + 1), {}});
    return a;
  };
  auto timed_out = [&](const std::string& where) {
    a.error = "ran past the exercise's time limit of " + seconds_text(limit) + "; stopped " + where;
    return finish(AttemptStatus::timeout);
  };
  if (!ex.setup.empty()) {
    Block setup;
    setup.kind = Block::Kind::cell;
    setup.line = ex.setup_line;
    setup.text = ex.setup;
    const BlockResult r = runner.run(lesson, setup);
    if (!r.ok) {
      if (clock.expired()) return timed_out("in the exercise's setup");
      a.error = "the exercise's own [setup] failed (a mistake in the lesson, not in your code):\n" + r.error;
      return finish(AttemptStatus::error);
    }
  }
  // Whose code runs from here on: the student's answer, then the checks in a layer of their own.
  lang::Interpreter& in = runner.session().interpreter();
  const std::map<std::string, lang::Value> setup = in.globals();
  for (const Exercise::Forbidden& f : ex.forbidden) in.forbid(f.name, f.why);
  in.set_code_owner(lang::Interpreter::Owner::student);
  const BlockResult mine = runner.run_file(lesson, code, filename, o.line_offset);
  a.output = mine.output;
  if (!mine.ok) {
    if (clock.expired()) return timed_out(stopped_at(mine.error));
    a.error = mine.error;
    return finish(out_of_memory(mine.error) ? AttemptStatus::out_of_memory : AttemptStatus::error);
  }
  if (std::string hidden = shadowing_error(in, setup, code, filename, o.line_offset); !hidden.empty()) {
    a.error = hidden;
    return finish(AttemptStatus::error);
  }
  in.set_code_owner(lang::Interpreter::Owner::checks);
  for (const ExerciseCheck& c : ex.checks) {
    Block check;
    check.kind = Block::Kind::check;
    check.line = c.line;
    check.text = c.code;
    const BlockResult r = runner.run(lesson, check);
    CheckOutcome out{c.description, r.ok, {}, lesson.path + ":" + std::to_string(c.line + 1), {}};
    if (!r.ok) {
      if (clock.expired()) return timed_out("in the check '" + c.description + "'");
      if (out_of_memory(r.error)) {
        a.error = "in the check '" + c.description + "': " + trim(r.error);
        return finish(AttemptStatus::out_of_memory);
      }
      out.message = failure_message(runner.session(), r, filename);
      out.your_lines = lines_defining(code, filename, o.line_offset, c.code);
    }
    a.checks.push_back(std::move(out));
  }
  return finish(a.checks_passed() == static_cast<int>(ex.checks.size()) ? AttemptStatus::passed
                                                                        : AttemptStatus::failed);
}

std::string check_exercise(const Lesson& lesson, const Exercise& ex) {
  auto at = [&](int line) { return lesson.path + ":" + std::to_string(line) + ": exercise '" + ex.id + "': "; };
  AttemptOptions o;
  o.line_offset = ex.solution_line;
  const Attempt solved = run_attempt(lesson, ex, ex.solution, lesson.path, o);
  if (solved.status != AttemptStatus::passed) {
    std::string why = solved.error;
    for (const CheckOutcome& c : solved.checks)
      if (why.empty() && !c.passed) why = "check '" + c.description + "' (" + c.where + ") failed: " + c.message;
    return at(ex.solution_line) + "its [solution] does not pass (" + status_name(solved.status) + "): " + trim(why);
  }
  o.line_offset = ex.starter_line;
  const Attempt started = run_attempt(lesson, ex, ex.starter, lesson.path, o);
  if (started.status == AttemptStatus::passed)
    return at(ex.starter_line) + "its [starter] passes every check: a student would pass without writing anything";
  if (started.status != AttemptStatus::failed)
    return at(ex.starter_line) + "its [starter] does not run (" + status_name(started.status) +
           "); a starter must run and fail a check: " + trim(started.error);
  return {};
}

std::string feedback_text(const Exercise& ex, const Attempt& a, bool zh) {
  std::ostringstream o;
  const int n = static_cast<int>(ex.checks.size());
  switch (a.status) {
    case AttemptStatus::passed:
      o << (zh ? "通过：" : "Passed: ") << n << "/" << n << (zh ? " 项检查全部通过。\n" : " checks.\n");
      break;
    case AttemptStatus::failed:
      o << (zh ? "未通过：" : "Not yet: ") << a.checks_passed() << "/" << n
        << (zh ? " 项检查通过。\n" : " checks pass.\n");
      break;
    case AttemptStatus::error:
      o << (zh ? "你的代码出错了：\n" : "Your code stopped with an error:\n") << trim(a.error) << "\n";
      return o.str();
    case AttemptStatus::timeout: o << (zh ? "太慢：" : "Too slow: ") << trim(a.error) << "\n"; return o.str();
    case AttemptStatus::out_of_memory:
      o << (zh ? "内存不够：" : "Out of memory: ") << trim(a.error) << "\n";
      return o.str();
  }
  bool first_failure = true;
  for (const CheckOutcome& c : a.checks) {
    o << (c.passed ? "  ✓ " : "  ✗ ") << c.description << "\n";
    if (c.passed || !first_failure) continue;  // the first failure in full: one thing to fix at a time
    first_failure = false;
    std::istringstream lines(c.message);
    for (std::string l; std::getline(lines, l);) o << "      " << l << "\n";
    if (!c.your_lines.empty()) {
      o << (zh ? "      你的代码：\n" : "      your code:\n");
      for (const std::string& l : c.your_lines) o << "        " << l << "\n";
    }
  }
  return o.str();
}

}  // namespace opscope::lesson
