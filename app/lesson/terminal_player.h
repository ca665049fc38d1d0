// `opscope lesson`: the terminal player (pages through a lesson, running each cell when the
// student presses Enter, asking the quizzes) and `--check` (every lesson, headless).
#pragma once
#include <iosfwd>
#include <string>

namespace opscope::lang {
class Session;
}

namespace opscope::lesson {

struct TerminalPlayerOptions {
  std::string dir;  // the lessons folder
  std::string lang = "en";
  std::string id;  // empty: the lesson last opened, else lesson 1
  bool color = false;
  bool interactive = false;  // input is a terminal: Ctrl-D quits (piped input: its end means Enter)
  int width = 88;
  std::string progress_path;  // empty: do not remember
};

// Plays one lesson reading the student's keys from `in`. At the end of `in` (piped input) it
// goes on as if Enter were pressed, so `opscope lesson 3 < /dev/null` prints the whole lesson
// with every cell's output. Returns 0, or 1 when a cell failed and was skipped.
int play_in_terminal(const TerminalPlayerOptions& o, std::istream& in, std::ostream& out);

// Runs every cell, check and quiz verification of the lessons (one lesson when `id` is given;
// one language when `lang` is given, else en and zh) and compares each lesson's language
// versions. Prints one line per lesson; a failure prints FILE:LINE and what failed. 0 when all pass.
int check_lessons(const std::string& dir, const std::string& lang, const std::string& id, std::ostream& out,
                  std::ostream& err);

// Adds `:lesson [N]` to a REPL session: without N it lists the lessons; with N it plays that
// lesson in the terminal (in a workspace of its own) and returns to the REPL.
void install_lesson_command(lang::Session& session, const TerminalPlayerOptions& base);

// Lists the lessons of a language with the student's progress.
void list_lessons(const std::string& dir, const std::string& lang, const std::string& progress_path, std::ostream& out);

}  // namespace opscope::lesson
