// The terminal's progress line for loops over batches(): "batch 120/938 · 152 batch/s · loss
// 0.4213", redrawn in place on stderr when stderr is a terminal (a pipe or a log file gets
// none, so nothing floods it).
#pragma once

namespace opscope::lang {
class Interpreter;
}

namespace opscope::app {

// Draws the line for `in`'s batch loops, at most 10 times a second, erased when the loop ends
// or before print() writes. Does nothing unless stderr is a terminal.
void install_progress_line(lang::Interpreter& in);

}  // namespace opscope::app
