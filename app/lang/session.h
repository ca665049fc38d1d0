// A Session runs the opscope script language against a Workspace: statements, blocks and
// `:commands`. Every front end (terminal REPL, `opscope run`/`-c`, the GUI console, lessons,
// tests) drives the language through this one class. No GUI code here.
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace opscope {
class Workspace;
}

namespace opscope::lang {

class Interpreter;
class LangError;
class StatementRollback;
class TapePruner;

// One value shown by --json: a top-level expression's value, or a tensor given to print().
struct ShownValue {
  std::string source;  // the expression text, or "print"
  std::string kind;  // "tensor", "int", "float", "bool", "str", "None", "list", ...
  std::string text;  // printed form
  std::vector<int64_t> shape;  // tensors
  std::string dtype;  // tensors
  std::vector<double> data;  // tensors (row-major), numbers (one element)
};

class Session {
 public:
  explicit Session(Workspace& ws);
  ~Session();

  // Runs `source` (one or more statements, or one `:command` line). Output of print() and of
  // expression statements goes to `out`; a failure prints `FILE:LINE:COL: error: ...`, the
  // source line, a caret and a hint to `err`, leaves the workspace exactly as it was before
  // the failing statement, and returns false.
  bool run(const std::string& source, const std::string& filename, std::ostream& out, std::ostream& err);

  // True when `buffer` is an unfinished block or bracket (the REPL asks for another line).
  bool needs_more_input(const std::string& buffer) const;

  // Tab completion: candidates for the word ending at `cursor` in `line` (names, ops,
  // attributes after `x.` and keyword arguments inside a call, `:commands`).
  std::vector<std::string> completions(const std::string& line, size_t cursor) const;

  bool quit_requested() const;
  // The last run() stopped because Ctrl-C was pressed (core/interrupt.h): its statement was
  // rolled back and "interrupted at FILE:LINE:COL" printed. `opscope run` then exits 130.
  bool interrupted() const;
  // The error the last run() failed with (null after a run that succeeded): a grader shows its
  // message without the source line of code the student does not see.
  const LangError* last_error() const { return last_error_.get(); }
  void set_color(bool on);  // ANSI colours in errors
  void set_echo_expressions(bool on);  // REPL: print values of expression statements
  const std::vector<ShownValue>& shown() const;  // for --json
  const std::vector<std::string>& history() const;

  Interpreter& interpreter() { return *interp_; }

 private:
  // Around each statement (statement_run.h): undoing a failed one, dropping dead tape. Made
  // before the interpreter, which uses them, and gone after it.
  std::unique_ptr<StatementRollback> rollback_;
  std::unique_ptr<TapePruner> tape_;
  std::unique_ptr<Interpreter> interp_;
  bool interrupted_ = false;
  std::shared_ptr<const LangError> last_error_;
};

}  // namespace opscope::lang
