// Ctrl-C in the terminal while code runs: instead of ending the process, SIGINT asks the
// running statement to stop at its next step (core/interrupt.h); the statement is rolled back
// and the REPL, the lesson player or `opscope run` reports "interrupted at FILE:LINE:COL".
// A kernel cannot be stopped in the middle, so a third Ctrl-C before the statement stops ends
// the process (exit status 130, as a shell reports SIGINT).
#pragma once
#include <csignal>

namespace opscope::app {

class SigintInterrupts {
 public:
  // Installs the handler (and forgets any request made before). `restart_reads` false: a read
  // waiting for the keyboard returns (EINTR), so a prompt can treat Ctrl-C as "leave".
  explicit SigintInterrupts(bool restart_reads = true);
  // A process started with SIGINT ignored (nohup, a shell's background job) keeps ignoring it.
  ~SigintInterrupts();  // puts the handler that was there back
  SigintInterrupts(const SigintInterrupts&) = delete;
  SigintInterrupts& operator=(const SigintInterrupts&) = delete;

 private:
  struct sigaction previous_ {};
};

}  // namespace opscope::app
