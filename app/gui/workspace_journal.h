// The console's statements kept across sessions, so that reloading the browser's page (or
// closing the window) does not lose a student's workspace: each statement the console ran
// without error is added to a small JSON file beside the lesson progress, and the next window
// offers to run them again. A statement that failed is not kept: it changed nothing (the
// language undoes a failed statement), so running the kept ones again rebuilds the workspace.
#pragma once
#include <string>
#include <vector>

namespace opscope::app {

// <config>/opscope/workspace.json beside progress.json ("" where there is no home folder).
std::string default_journal_path();

class WorkspaceJournal {
 public:
  WorkspaceJournal() = default;  // keeps nothing
  // Reads what an earlier session kept. A file that is not a journal (edited, truncated) is
  // moved aside to PATH.unreadable, never overwritten, and `problem()` says so.
  explicit WorkspaceJournal(std::string path);
  bool keeps() const { return !path_.empty(); }
  const std::vector<std::string>& statements() const { return statements_; }
  const std::string& problem() const { return problem_; }
  // A statement the console ran without error; `:reset` empties the journal, as the workspace.
  void record(const std::string& source);
  // Takes out the first n statements (offered for running again; each is recorded anew as it runs).
  std::vector<std::string> take_front(size_t n);

  static constexpr size_t kMaxStatements = 5000;  // the oldest go first beyond this
  static constexpr size_t kMaxFileBytes = 8 << 20;

 private:
  void write() const;
  std::string path_;
  std::vector<std::string> statements_;
  std::string problem_;
};

}  // namespace opscope::app
