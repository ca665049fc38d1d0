#include "app/lesson/runner.h"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <vector>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lesson/lesson_files.h"
#include "core/workspace.h"

namespace opscope::lesson {

LessonRunner::LessonRunner() { reset(); }

LessonRunner::LessonRunner(Workspace& ws, lang::Session& session) : ws_(&ws), session_(&session) {}

LessonRunner::~LessonRunner() {
  if (!owned_ws_) return;
  WorkspaceScope scope(*owned_ws_);  // tensors the session holds free into their own workspace
  owned_session_.reset();
}

void LessonRunner::reset() {
  if (ws_ && !owned_ws_) {  // borrowed: empty the front end's workspace
    std::ostringstream out, err;
    WorkspaceScope scope(*ws_);
    session_->run(":reset", "<lesson>", out, err);
    return;
  }
  if (owned_ws_) {
    WorkspaceScope scope(*owned_ws_);
    owned_session_.reset();
  }
  owned_ws_ = std::make_unique<Workspace>();
  WorkspaceScope scope(*owned_ws_);
  owned_session_ = std::make_unique<lang::Session>(*owned_ws_);
  owned_session_->set_echo_expressions(true);  // a cell ending in `f` shows f, as the REPL does
  ws_ = owned_ws_.get();
  session_ = owned_session_.get();
}

void LessonRunner::set_color(bool on) { session_->set_color(on); }

BlockResult LessonRunner::run_source(const std::string& source, const std::string& filename) {
  WorkspaceScope scope(*ws_);
  std::ostringstream out, err;
  BlockResult r;
  r.ran = true;
  r.ok = session_->run(source, filename, out, err);
  r.output = out.str();
  r.error = err.str();
  return r;
}

BlockResult LessonRunner::run_unrecorded(const std::string& source, const std::string& filename) {
  const Graph::Mark mark = ws_->graph().mark();
  BlockResult r = run_source(source, filename);
  ws_->graph().rollback(mark);
  return r;
}

// The code's first line is the line after the fence; blank lines in front of it make the
// language's FILE:LINE:COL point into the lesson file, so a failing check reads
// `lessons/en/05-memory.md:88:8: error: assertion failed: ...`.
BlockResult LessonRunner::run(const Lesson& lesson, const Block& block) {
  if (block.kind != Block::Kind::cell && block.kind != Block::Kind::check) return {};
  FilePolicyScope confined(session_->interpreter(), lesson_file_policy(lesson));  // lessons are untrusted
  const std::string source = std::string(static_cast<size_t>(block.line), '\n') + block.text;
  BlockResult r =
      block.kind == Block::Kind::check ? run_unrecorded(source, lesson.path) : run_source(source, lesson.path);
  if (block.expect_error) {  // the error is the lesson: show it as the cell's output
    if (r.ok) {
      r.ok = false;
      r.error = lesson.path + ":" + std::to_string(block.line) +
                ": error: this cell is marked `ops fails` but it ran without an error\n";
    } else {
      r.ok = true;
      r.output += r.error;
      r.error.clear();
    }
  }
  return r;
}

BlockResult LessonRunner::verify_quiz(const Lesson& lesson, const Block& block) {
  if (block.kind != Block::Kind::quiz || block.quiz.verify.empty()) return {};
  FilePolicyScope confined(session_->interpreter(), lesson_file_policy(lesson));
  BlockResult r =
      run_unrecorded(std::string(static_cast<size_t>(block.line), '\n') + "print(" + block.quiz.verify + ")",
                     lesson.path);
  if (r.ok && !answers_equal(r.output, block.quiz.answer)) {
    r.ok = false;
    r.error = lesson.path + ":" + std::to_string(block.line) + ": error: the quiz's answer is '" + block.quiz.answer +
              "' but the engine computes " + block.quiz.verify + " = " + r.output;
  }
  return r;
}

BlockResult LessonRunner::run_code(const std::string& code) { return run_source(code, "<stdin>"); }

BlockResult LessonRunner::run_file(const Lesson& lesson, const std::string& code, const std::string& filename,
                                   int line_offset) {
  FilePolicyScope confined(session_->interpreter(), lesson_file_policy(lesson));  // students' files are untrusted too
  return run_source(std::string(static_cast<size_t>(std::max(0, line_offset)), '\n') + code, filename);
}

std::string check_lesson(const Lesson& lesson, std::ostream* log) {
  LessonRunner runner;
  // Predict, then run: a quiz is asked before the cell that answers it, so its `verify:` is
  // evaluated once that cell has run (at the end, for a quiz no cell follows).
  std::vector<const Block*> asked;
  auto failure = [&](const Block& b, const BlockResult& r) -> std::string {
    if (log)
      *log << "  " << lesson.path << ":" << b.line << " " << kind_name(b.kind) << (r.ok ? " ok" : " FAILED") << "\n";
    if (r.ok) return {};
    std::string e = r.error;
    while (!e.empty() && e.back() == '\n') e.pop_back();
    return e.empty() ? lesson.path + ":" + std::to_string(b.line) + ": error: the " + kind_name(b.kind) + " failed" : e;
  };
  auto verify_asked = [&]() -> std::string {
    for (const Block* q : asked)
      if (const BlockResult r = runner.verify_quiz(lesson, *q); r.ran)
        if (std::string e = failure(*q, r); !e.empty()) return e;
    asked.clear();
    return {};
  };
  for (const Block& b : lesson.blocks) {
    if (b.kind == Block::Kind::quiz) {
      asked.push_back(&b);
      continue;
    }
    // The browser passes over what it cannot run, if the lesson says which: a C++ extension.
    if ((b.kind == Block::Kind::cell || b.kind == Block::Kind::check) && !b.desktop_only &&
        b.text.find("load_extension(") != std::string::npos)
      return lesson.path + ":" + std::to_string(b.line) + ": error: this " + kind_name(b.kind) +
             " loads a C++ extension, which only the desktop app can: mark it ```" +
             (b.kind == Block::Kind::cell ? "ops" : "check") +
             " desktop (the browser then passes over it with a message)";
    const BlockResult r = runner.run(lesson, b);
    if (!r.ran) continue;
    if (std::string e = failure(b, r); !e.empty()) return e;
    if (b.kind == Block::Kind::cell)
      if (std::string e = verify_asked(); !e.empty()) return e;
  }
  return verify_asked();
}

}  // namespace opscope::lesson
