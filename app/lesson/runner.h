// Runs a lesson's cells, checks and quiz verifications in order, in a fresh Workspace and
// Session of its own, so every number a lesson shows comes from the engine as the student
// would get it in a new REPL.
#pragma once
#include <memory>
#include <string>

#include "app/lesson/lesson.h"

namespace opscope {
class Workspace;
namespace lang {
class Session;
}
}  // namespace opscope

namespace opscope::lesson {

struct BlockResult {
  bool ran = false;  // cells, checks, and quizzes with a verify
  bool ok = true;
  std::string output;  // what the block printed
  std::string error;  // FILE:LINE:COL: error ... (lines are the lesson file's)
};

class LessonRunner {
 public:
  // A fresh Workspace and Session of its own (terminal player, --check, tests).
  LessonRunner();
  // Runs in a front end's own workspace and session, so its panels show what the cells do
  // (the GUI's lesson panel). Both must outlive the runner.
  LessonRunner(Workspace& ws, lang::Session& session);
  ~LessonRunner();
  LessonRunner(const LessonRunner&) = delete;
  LessonRunner& operator=(const LessonRunner&) = delete;

  // Starts again from an empty workspace: a new one when owned, `:reset` when borrowed.
  void reset();

  // Runs a cell or check (other kinds: nothing to run). Errors name the lesson file's lines.
  BlockResult run(const Lesson& lesson, const Block& block);
  // Evaluates a quiz's `verify` expression; ok when its printed value is the quiz's answer.
  BlockResult verify_quiz(const Lesson& lesson, const Block& block);
  // Types a line at the lesson's REPL (the player's `>>>` prompt between cells).
  BlockResult run_code(const std::string& code);
  // Runs code from outside the lesson file (a student's answer to an exercise) as file
  // `filename`, under the lesson's file policy; its first line is line `line_offset + 1`.
  BlockResult run_file(const Lesson& lesson, const std::string& code, const std::string& filename, int line_offset = 0);

  void set_color(bool on);
  lang::Session& session() { return *session_; }
  Workspace& workspace() { return *ws_; }

 private:
  BlockResult run_source(const std::string& source, const std::string& filename);
  // Checks and quiz verifications look at the cells' results without adding to them: what they
  // compute (x[0] in an assert) is taken out of the graph again, so the figure shows the cells.
  BlockResult run_unrecorded(const std::string& source, const std::string& filename);
  std::unique_ptr<Workspace> owned_ws_;
  std::unique_ptr<lang::Session> owned_session_;
  Workspace* ws_ = nullptr;
  lang::Session* session_ = nullptr;
};

// Runs every cell, check and quiz verification of a lesson in a fresh runner. Returns the first
// failure as `file:line: message` (empty when everything passed); `out` gets one line per block.
std::string check_lesson(const Lesson& lesson, std::ostream* log = nullptr);

}  // namespace opscope::lesson
