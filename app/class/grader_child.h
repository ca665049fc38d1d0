// Grading one attempt: the native grader (`opscope exercise check ID FILE --json`) run as a child
// process with a wall-clock kill and an address-space cap, and its answer read into a Grade.
#pragma once
#include <string>
#include <vector>

#include "app/class/store.h"

namespace opscope::classroom {

struct ChildLimits {
  double seconds = 30;  // wall clock, then SIGKILL to the child's process group
  int memory_mb = 2048;  // RLIMIT_AS
  size_t output_cap = 1 << 20;  // bytes kept of stdout and of stderr each (the rest is drained)
};

struct ChildRun {
  int exit_code = -1;  // when it exited
  int signal = 0;  // when a signal ended it
  bool timed_out = false;
  double seconds = 0;
  std::string out, err;
};

// Runs argv[0] with argv (no shell), its stdin empty; the child dies with the server.
ChildRun run_child(const std::vector<std::string>& argv, const ChildLimits& limits);

// The adapter between the grader's command line and the class server: the grader's exit code,
// stdout (the --json object) and stderr read into a Grade. The one place to change when the
// grader's output changes.
Grade grade_from_grader(const ChildRun& run);

// The command line that grades `file` for `exercise` with `grader` (the opscope executable).
std::vector<std::string> grader_command(const std::string& grader, const std::string& exercise, const std::string& file,
                                        const std::string& lang);

// Whether a client's claimed result (JSON: true/false, "pass"/"fail"..., or {"passed": bool} /
// {"status": ...}) says passed; -1 when it claims nothing readable.
int claimed_pass(const std::string& client_result);

}  // namespace opscope::classroom
