// The state of a lesson being played, shared by the terminal player and the GUI's lesson panel:
// which block is next, what each run block printed, quiz answers, the panel and node the
// directives ask for, the language, and the progress file. No terminal or GUI code here.
//
// A GUI lesson panel (app/lesson/gui_lesson_panel.cpp is one): construct it with the GUI's
// Workspace and Session; each frame draw lesson().blocks up to position() (prose through
// parse_markdown in markdown_doc.h, cells as code with result(i) under them, quizzes with an
// input box calling answer()); a "Run" button calls step(), "Run all" run_all(); follow
// panel() and highlight(); a language toggle calls set_language().
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/lesson/exercise_grader.h"
#include "app/lesson/lesson.h"
#include "app/lesson/progress.h"
#include "app/lesson/runner.h"

namespace opscope::lesson {

struct QuizFeedback {
  bool right = false;
  std::string expected;  // the answer, shown once the quiz is over (empty while tries remain)
  std::string explain;
  int tries = 0;  // answers given so far
  bool final = true;  // the quiz is over: right, or wrong on the last try (else: try again)
};
constexpr int kQuizTries = 2;  // a wrong answer, then one more try, then the answer

// An exercise as the student works on it: their code, the hints they revealed, their attempts
// (the last one's feedback), and whether the solution may be shown (after a pass or giving up).
struct ExerciseState {
  ExerciseProgress saved;  // attempts, passed, gave up, hints, code: what the progress file keeps
  std::optional<Attempt> last;  // the last attempt in this session
  bool solution_visible() const { return saved.passed || saved.gave_up; }
};

class LessonPlayerModel {
 public:
  // Opens lesson `id` (a number or part of a slug) of `lang` from `dir`; `progress_path` empty
  // means progress is not remembered (tests, --check).
  LessonPlayerModel(std::string dir, std::string lang, const std::string& id, std::string progress_path = {});
  // The same, running cells in a front end's workspace and session (the GUI), which `restart`
  // empties with `:reset`. Both must outlive the model.
  LessonPlayerModel(std::string dir, std::string lang, const std::string& id, std::string progress_path, Workspace& ws,
                    lang::Session& session);

  const Lesson& lesson() const { return lesson_; }
  size_t position() const { return pos_; }  // index of the next block
  bool done() const { return pos_ >= lesson_.blocks.size(); }
  const Block* current() const { return done() ? nullptr : &lesson_.blocks[pos_]; }
  // Per block: the result of running it (cells, checks) once it has run.
  const std::optional<BlockResult>& result(size_t block) const { return results_[block]; }
  const std::optional<QuizFeedback>& feedback(size_t block) const { return feedback_[block]; }

  // Moves past the current block: runs a cell or check, applies a directive, shows prose.
  // A quiz is passed over unanswered (answer() it first to score it). Returns the block's result.
  BlockResult step();
  // Runs every block to the end, stopping after a failed cell or check; false on a failure.
  bool run_all();
  // Answers the current quiz (the current block must be a quiz). Right, or wrong for the last
  // time (kQuizTries), it moves past it; a first wrong answer stays for another try.
  QuizFeedback answer(const std::string& given);

  // Exercises. `block` is an exercise's index; its state starts from the progress file (the
  // student's code, else the starter) and is saved there after each change.
  const ExerciseState& exercise(size_t block);  // read from the progress file the first time
  void set_exercise_code(size_t block, const std::string& code);
  // Runs the hidden checks on the exercise's current code (AttemptOptions: the GUI's frames);
  // `filename` names the student's lines in the feedback (default "ID.ops").
  const Attempt& check_exercise(size_t block, const AttemptOptions& options = {}, const std::string& filename = {});
  // Reveals the next hint; returns how many are shown now.
  int reveal_hint(size_t block);
  void give_up(size_t block);
  // The starter again, in place of the student's code.
  void reset_exercise(size_t block);
  // Moves past the current block without running it (a failed cell the student gives up on).
  void skip();
  // Replays the blocks before `block` quietly (quizzes unanswered): resuming a saved position
  // in a fresh workspace. Stops early at a failure; returns the position reached.
  size_t fast_forward(size_t block);
  // The position the progress file remembers for this lesson (0 when new or finished).
  size_t saved_position() const;
  // Starts the lesson again in a fresh workspace.
  void restart();
  // The same lesson in another language at the same block (both carry the same blocks).
  void set_language(const std::string& lang);
  const std::string& language() const { return lang_; }

  // What the directives passed so far ask the GUI to show.
  const std::string& panel() const { return panel_; }
  const std::string& highlight() const { return highlight_; }
  bool paused() const { return paused_; }  // a `pause` was the last block passed
  LessonRunner& runner() { return *runner_; }

 private:
  void remember();
  std::string progress_key() const;  // "03": the same in every language
  std::string dir_, lang_, progress_path_;
  Lesson lesson_;
  size_t pos_ = 0;
  std::unique_ptr<LessonRunner> runner_;
  std::vector<std::optional<BlockResult>> results_;
  std::vector<std::optional<QuizFeedback>> feedback_;
  std::map<size_t, ExerciseState> exercises_;  // by block index
  ExerciseState& exercise_at(size_t block);
  void remember_exercise(size_t block);
  void report_attempt(size_t block);  // to the class the site belongs to (platform.h)
  std::string panel_ = "graph", highlight_;
  bool paused_ = false;
  int quizzes_right_ = 0;
};

}  // namespace opscope::lesson
