// Ctrl-C: a request to stop the running statement at the next step boundary. The request is
// one lock-free atomic, so a signal handler, another thread or the GUI's Interrupt button may
// raise it; the executor's step loop and the language's loops and calls check it, and the
// front end's statement rollback then leaves the workspace as it was.
#pragma once
#include <functional>

#include "core/error.h"

namespace opscope {

// Thrown at a step boundary once an interrupt was requested. The language turns it into the
// running statement's error ("interrupted at FILE:LINE:COL"), so it rolls back like any failure.
class Interrupted : public Error {
 public:
  Interrupted() : Error("interrupted", "the statement was undone: every variable is as it was before it") {}
};

namespace interrupt {

void request() noexcept;  // async-signal-safe: a SIGINT handler may call it
void clear() noexcept;  // a front end, once it has reported the interrupt
bool requested() noexcept;  // async-signal-safe
// A step boundary: throws Interrupted when one was requested; otherwise gives the idle hook
// its turn (at most once per its interval).
void check();

// Keeps a window alive during a long statement: check() calls `fn` (say, to draw one frame
// and read the Interrupt button) at most every `interval_s` seconds, only on the thread that
// installed it, and never from inside `fn` itself. An empty `fn` removes the hook.
void set_idle_hook(std::function<void()> fn, double interval_s = 0.05);

}  // namespace interrupt
}  // namespace opscope
