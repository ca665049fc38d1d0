// app/repl.h in the browser: there is no terminal to read lines from (libedit's REPL is the
// desktop's), so asking for it says where the same language is: the window's console.
#include "app/repl.h"
#include "platform/platform.h"

namespace opscope::app {

std::string default_history_path() { return ""; }

int run_repl(lang::Session&, const ReplOptions&) {
  platform::require(platform::Feature::terminal, "opscope repl");
  return 1;
}

}  // namespace opscope::app
