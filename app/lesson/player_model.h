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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/lesson/lesson.h"
#include "app/lesson/progress.h"
#include "app/lesson/runner.h"

namespace opscope::lesson {

struct QuizFeedback {
  bool right = false;
  std::string expected;  // the answer, shown after a wrong one
  std::string explain;
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
  // Answers the current quiz (the current block must be a quiz) and moves past it.
  QuizFeedback answer(const std::string& given);
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
  std::string panel_ = "graph", highlight_;
  bool paused_ = false;
  int quizzes_right_ = 0;
};

}  // namespace opscope::lesson
