#include "app/sigint.h"

#include <unistd.h>

#include "core/interrupt.h"

namespace opscope::app {

namespace {
volatile std::sig_atomic_t g_presses = 0;

extern "C" void request_interrupt(int) {
  // Only async-signal-safe calls here: an atomic store, write(2), _exit(2).
  if (!interrupt::requested()) {
    g_presses = 1;
    interrupt::request();
    (void)!write(2, "\n", 1);  // what follows starts on a line of its own, not after the ^C
    return;
  }
  g_presses = g_presses + 1;
  if (g_presses >= 3) {
    static const char kMessage[] = "\nopscope: Ctrl-C three times: leaving without waiting for the statement to stop\n";
    (void)!write(2, kMessage, sizeof kMessage - 1);
    _exit(130);
  }
}
}  // namespace

SigintInterrupts::SigintInterrupts(bool restart_reads) {
  interrupt::clear();
  g_presses = 0;
  sigaction(SIGINT, nullptr, &previous_);
  if (previous_.sa_handler == SIG_IGN) return;  // started with Ctrl-C ignored (nohup, a background job): keep it so
  struct sigaction sa {};
  sa.sa_handler = request_interrupt;
  sigemptyset(&sa.sa_mask);
  // A statement's own reads and writes go on; the flag is checked between steps.
  sa.sa_flags = restart_reads ? SA_RESTART : 0;
  sigaction(SIGINT, &sa, &previous_);
}

SigintInterrupts::~SigintInterrupts() { sigaction(SIGINT, &previous_, nullptr); }

}  // namespace opscope::app
