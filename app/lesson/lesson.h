// A lesson: Markdown with front matter, runnable ```ops cells, ```check assertions, ```quiz
// questions, ````exercise blocks, the ```goals it opens with and the ```recap it closes with,
// and `<!-- directive -->` comments for the GUI, parsed into an ordered list of blocks that
// every player (terminal, GUI, `--check`) walks. The format is in lessons/README.md.
#pragma once
#include <string>
#include <vector>

#include "app/lesson/exercise.h"

namespace opscope::lesson {

// A question the player asks; `answer` is what the student must give (case and spaces are
// ignored; with choices, the choice's letter works too). `verify` is an expression of the
// language whose printed value must equal `answer`, so `--check` proves the answer is what the
// engine computes.
struct Quiz {
  std::string question;  // Markdown
  std::vector<std::string> choices;  // "a) ...": optional
  std::string answer;
  std::string verify;
  std::string explain;  // shown after the student answers
};

// What a directive asks of the GUI: show a panel, highlight a node, or pause for the student.
struct Directive {
  std::string name;  // show | highlight | pause
  std::string argument;  // "memory", "c", "kernel_lab matmul 64" (the lab's operator and sizes), ...
};

// The panels a `show:` directive can name (the window's tabs and panels), with their titles as
// the window shows them in each language: the one list `lesson --check` and the players read.
struct ShowPanel {
  const char* id;  // what `show:` names: "memory", "kernel_lab"
  const char* title_en;  // "memory"
  const char* title_zh;  // "内存"
};
const std::vector<ShowPanel>& show_panels();
const ShowPanel* find_show_panel(const std::string& id);

struct Block {
  // goals: what the student will be able to do (the lesson opens with it); recap: what they
  // learned (it closes with it). Both are Markdown, drawn apart from the prose.
  enum class Kind { prose, cell, check, quiz, directive, exercise, goals, recap };
  Kind kind = Kind::prose;
  int line = 0;  // line in the lesson file where the block starts (a fenced block's fence)
  std::string text;  // prose, goals, recap: Markdown; cell and check: the code
  bool expect_error = false;  // ```ops fails: the cell shows an error on purpose (and must fail)
  // ```ops desktop / ```check desktop: it needs what only the desktop app has (a C++ extension);
  // elsewhere (the browser) it is passed over with a message saying so.
  bool desktop_only = false;
  Quiz quiz;
  Directive directive;
  Exercise exercise;
};

const char* kind_name(Block::Kind k);

struct Lesson {
  std::string path;  // the file, for file:line messages
  std::string slug;  // the file's name without .md: "03-operators"
  std::string lang;  // "en", "zh": the folder it was found in
  int number = 0;  // front matter `id`
  std::string title;
  int minutes = 0;
  std::vector<int> prerequisites;
  std::vector<Block> blocks;

  int count(Block::Kind k) const;
};

// Parses a lesson; errors (missing front matter, an unknown directive, a quiz without an
// answer) are opscope::Error naming `path:line`.
Lesson parse_lesson(const std::string& markdown, const std::string& path);
Lesson load_lesson(const std::string& path);

// The lessons folder: $OPSCOPE_LESSONS, else the source tree's lessons/ (compiled in), else
// lessons/ next to the executable's parent. Throws with a hint when none exists.
std::string lessons_dir();
// The lesson files of a language, sorted by number: lessons/<lang>/NN-slug.md.
std::vector<std::string> lesson_files(const std::string& dir, const std::string& lang);
// Finds a lesson by number ("3", "03") or by part of its slug ("softmax").
std::string find_lesson_file(const std::string& dir, const std::string& lang, const std::string& id);

// What breaks the course's rules of order (empty when none): the lesson opens with one
// ```goals before its first cell and closes with one ```recap; a quiz comes before the cell
// that answers it (after a quiz, the next cell comes before any check, quiz or exercise).
std::vector<std::string> structure_problems(const Lesson& lesson);

// The exercises of a lesson, in order.
std::vector<const Exercise*> exercises_of(const Lesson& lesson);

// Where two language versions of a lesson differ in what they run or check (cells, checks,
// quiz answers and verifications, directives, front matter numbers); empty when they agree.
std::string compare_languages(const Lesson& a, const Lesson& b);

// The student's answer against the quiz (case, spaces and a trailing period ignored).
bool quiz_answer_matches(const Quiz& q, const std::string& given);
std::string normalize_answer(const std::string& s);
// Equal after normalize_answer, or equal as numbers ("0" and "0.0").
bool answers_equal(const std::string& a, const std::string& b);

}  // namespace opscope::lesson
