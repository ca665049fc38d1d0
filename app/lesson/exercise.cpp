// The exercise fence: `key: value` lines, then sections opened by a line `[name]` (a check's
// line also carries its description: `[check] the values agree with matmul`). Lesson files are
// untrusted, so every mistake is reported at its line and column with what to write instead.
#include "app/lesson/exercise.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "app/lang/error.h"
#include "app/lang/parser.h"
#include "app/lang/source_scan.h"
#include "core/error.h"

namespace opscope::lesson {

namespace {

const char* const kSections[] = {"prompt", "setup", "starter", "hint", "check", "solution"};
const char* const kSectionHint =
    "the sections are [prompt], [setup], [starter], [hint], [check] DESCRIPTION and [solution]";

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

[[noreturn]] void fail_at(const std::string& path, int line, int col, const std::string& message,
                          const std::string& hint = {}) {
  throw Error(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message, hint);
}

// A line `[word]` or `[word] rest` at the start of a line: a section header when `word` is a
// section's name; another lower-case word there is a misspelt one (a list literal of one
// name on a line of its own does nothing in code, so nothing real is taken for a header).
bool header_of(const std::string& line, std::string& word, std::string& rest) {
  if (line.size() < 3 || line[0] != '[') return false;
  const size_t close = line.find(']');
  if (close == std::string::npos || close < 2) return false;
  word = line.substr(1, close - 1);
  if (!std::all_of(word.begin(), word.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }))
    return false;
  const std::string after = line.substr(close + 1);
  if (!after.empty() && after[0] != ' ' && after[0] != '\t' && after[0] != '\r') return false;
  rest = trim(after);
  return true;
}

// The code of a section without the blank lines that end it (its first line stays where it is,
// so positions still count from the header).
std::string strip_trailing_blank(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) lines.push_back(l);
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Parses code of the language as a lesson cell would run it (`:command` lines are the session's)
// so a typo in a teacher's check is reported when the lesson is read, at its line and column.
void check_syntax(const std::string& code, const std::string& path, int line_before, const std::string& what) {
  std::string parsed;
  std::istringstream is(code);
  for (std::string l; std::getline(is, l);) parsed += (!l.empty() && l[0] == ':' ? "" : l) + "\n";
  try {
    lang::parse_program(parsed);
  } catch (const lang::LangError& e) {
    fail_at(path, line_before + e.line(), e.col(), "in the exercise's " + what + ": " + e.what(), e.hint());
  }
}

bool valid_id(const std::string& id) {
  if (id.empty() || !std::islower(static_cast<unsigned char>(id[0]))) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
  });
}

}  // namespace

Exercise parse_exercise(const std::string& body, const std::string& path, int first_line) {
  Exercise ex;
  std::istringstream is(body);
  std::string section;  // "" while reading keys
  int section_line = 0;
  std::string text;  // the current section's lines
  std::string check_description;
  bool seen_prompt = false, seen_starter = false, seen_solution = false, seen_setup = false;
  int header_line = 0;
  auto close_section = [&] {
    if (section.empty()) return;
    const std::string md = trim(text), code = strip_trailing_blank(text);
    if (section == "prompt") ex.prompt = md;
    else if (section == "hint") ex.hints.push_back(md);
    else if (section == "setup") ex.setup = code, ex.setup_line = section_line;
    else if (section == "starter") ex.starter = code, ex.starter_line = section_line;
    else if (section == "solution") ex.solution = code, ex.solution_line = section_line;
    else if (section == "check") ex.checks.push_back({check_description, code, section_line});
    const bool is_code = section != "prompt" && section != "hint";
    if (trim(text).empty())
      fail_at(path, header_line, 1, "the exercise's [" + section + "] section is empty",
              is_code ? "write its code on the lines after [" + section + "]"
                      : "write its text on the lines after [" + section + "]");
    if (is_code) check_syntax(code, path, section_line, "[" + section + "]");
  };
  int line = first_line - 1;
  for (std::string l; std::getline(is, l);) {
    ++line;
    std::string word, rest;
    if (header_of(l, word, rest)) {
      if (std::find(std::begin(kSections), std::end(kSections), word) == std::end(kSections))
        fail_at(path, line, 2, "unknown exercise section [" + word + "]", kSectionHint);
      close_section();
      bool* once = word == "prompt"     ? &seen_prompt
                   : word == "starter"  ? &seen_starter
                   : word == "solution" ? &seen_solution
                   : word == "setup"    ? &seen_setup
                                        : nullptr;
      if (once && *once)
        fail_at(path, line, 1, "the exercise has a second [" + word + "] section",
                "an exercise has one [" + word + "]");
      if (once) *once = true;
      if (word == "check" && rest.empty())
        fail_at(path, line, static_cast<int>(l.size()) + 1, "a [check] needs a description after it",
                "say what it checks, as the student will read it: [check] the values agree with matmul");
      if (word != "check" && !rest.empty())
        fail_at(path, line, static_cast<int>(l.find(']')) + 2, "nothing may follow [" + word + "] on its line",
                "start its text on the next line");
      section = word;
      section_line = line;
      header_line = line;
      check_description = rest;
      text.clear();
      continue;
    }
    if (!section.empty()) {
      text += l + "\n";
      continue;
    }
    const std::string t = trim(l);
    if (t.empty()) continue;
    const size_t colon = t.find(':');
    const int col = static_cast<int>(l.find_first_not_of(" \t")) + 1;
    if (colon == std::string::npos)
      fail_at(path, line, col, "expected `key: value` or a section like [prompt], got '" + t + "'",
              "an exercise starts with id:, title:, story: (and seconds:), then its sections");
    const std::string key = trim(t.substr(0, colon)), value = trim(t.substr(colon + 1));
    if (key == "id") {
      if (!valid_id(value))
        fail_at(path, line, col + static_cast<int>(colon) + 2,
                "an exercise id is lower-case letters, digits and '-', got '" + value + "'",
                "e.g. id: matmul-backward (students' files are named ID.ops)");
      ex.id = value;
    } else if (key == "title") {
      ex.title = value;
    } else if (key == "story") {
      ex.story = value;
    } else if (key == "seconds") {
      char* end = nullptr;
      ex.seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(ex.seconds >= 1 && ex.seconds <= 600))
        fail_at(path, line, col + static_cast<int>(colon) + 2,
                "seconds: is an attempt's time limit, 1 to 600, got '" + value + "'");
    } else if (key == "forbid") {
      const size_t why_at = value.find(':');
      const std::string why = why_at == std::string::npos ? "" : trim(value.substr(why_at + 1));
      if (why.empty())
        fail_at(path, line, col + static_cast<int>(colon) + 2, "forbid: needs the names, a ':' and why",
                "e.g. forbid: softmax_backward: it is what you are writing");
      std::istringstream names(value.substr(0, why_at));
      for (std::string n; std::getline(names, n, ',');)
        if (!trim(n).empty()) ex.forbidden.push_back({trim(n), why});
    } else {
      fail_at(path, line, col, "unknown exercise key '" + key + "'",
              "the keys are id, title, story, seconds and forbid; then the sections");
    }
  }
  close_section();
  const int at = first_line - 1;  // the fence
  if (ex.id.empty())
    fail_at(path, at, 1, "this exercise has no id", "add a line `id: my-exercise` (students' files are named ID.ops)");
  auto need = [&](bool ok, const std::string& what, const std::string& hint) {
    if (!ok) fail_at(path, at, 1, "exercise '" + ex.id + "' has no " + what, hint);
  };
  need(!ex.title.empty(), "title", "add a line `title: ...`");
  need(!ex.story.empty(), "story", "add a line `story: ...`: the line of the chapter's story that frames it");
  need(seen_prompt, "[prompt]", "add a [prompt] section: what the student is to write");
  need(seen_starter, "[starter]", "add a [starter] section: the code the student starts from (it must fail a check)");
  need(!ex.checks.empty(), "[check]", "add at least one [check] DESCRIPTION section");
  need(!ex.hints.empty(), "[hint]", "add at least one [hint] section");
  need(seen_solution, "[solution]", "add a [solution] section: shown after a pass or when the student gives up");
  return ex;
}

std::string code_without_comments(const std::string& code) {
  std::string out;
  std::istringstream is(code);
  for (std::string l; std::getline(is, l);) {
    l.resize(lang::find_in_code(l, [](size_t, char c, int) { return c == '#'; }));
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.pop_back();
    if (!l.empty()) out += l + "\n";
  }
  return out;
}

std::string compare_exercises(const Exercise& a, const Exercise& b) {
  if (a.id != b.id) return "the ids differ ('" + a.id + "' and '" + b.id + "')";
  if (a.seconds != b.seconds) return "exercise '" + a.id + "': the time limits differ";
  if (a.setup != b.setup) return "exercise '" + a.id + "': the [setup] code differs";
  if (code_without_comments(a.starter) != code_without_comments(b.starter))
    return "exercise '" + a.id + "': the [starter] code differs (only its comments may be translated)";
  if (code_without_comments(a.solution) != code_without_comments(b.solution))
    return "exercise '" + a.id + "': the [solution] code differs (only its comments may be translated)";
  if (a.forbidden.size() != b.forbidden.size()) return "exercise '" + a.id + "': the forbid: lists differ";
  for (size_t i = 0; i < a.forbidden.size(); ++i)
    if (a.forbidden[i].name != b.forbidden[i].name)
      return "exercise '" + a.id + "': the forbid: lists differ (" + a.forbidden[i].name + ")";
  if (a.checks.size() != b.checks.size()) return "exercise '" + a.id + "': the number of [check] sections differs";
  for (size_t i = 0; i < a.checks.size(); ++i)
    if (a.checks[i].code != b.checks[i].code)
      return "exercise '" + a.id + "': the code of [check] " + std::to_string(i + 1) + " differs";
  if (a.hints.size() != b.hints.size()) return "exercise '" + a.id + "': the number of hints differs";
  return {};
}

}  // namespace opscope::lesson
