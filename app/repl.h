// The terminal REPL: reads statements with line editing, history and tab completion
// (libedit) and runs them through a lang::Session; reads plain lines when stdin is a pipe.
#pragma once
#include <string>

namespace opscope::lang {
class Session;
}

namespace opscope::app {

struct ReplOptions {
  std::string history_path;  // "" keeps no history file
  bool color = true;  // ANSI colours in errors, when stderr is a terminal
  bool banner = true;  // one line of greeting when interactive
  std::string version;  // shown in the banner; "" uses OPSCOPE_VERSION, else "dev"
};

// $XDG_STATE_HOME/opscope/history, else ~/.local/state/opscope/history; creates the folder.
// "" when neither variable gives a place.
std::string default_history_path();

// Runs the read-eval-print loop until EOF or `:quit`. Returns the exit code: 0, or 1 when
// stdin is not a terminal and the last entry failed.
int run_repl(lang::Session& session, const ReplOptions& opts);

}  // namespace opscope::app
