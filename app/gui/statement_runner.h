// Statements run from the window (typed, a button, a lesson cell, a restored workspace): the
// run state's one place (GuiState::run). Code runs outside any ImGui frame, one statement at a
// time, with frames drawn between its steps so that Interrupt, Esc and Ctrl-C can stop it.
#pragma once
#include <functional>
#include <string>

#include "app/gui/gui_state.h"

namespace opscope::app {

// Adds text to the console, a line a row (the oldest rows go past 4000).
void console_print(ConsoleState& c, ConsoleLine::Kind kind, const std::string& text);
// Runs `work` (code through the session) now, outside any ImGui frame, with the window alive:
// frames are drawn between its steps and Interrupt stops it. False (and nothing runs) while
// another runs.
bool run_busy(GuiState& s, const std::function<void()>& work);
// From inside a frame (a button, a key): `work` runs once the frame is drawn.
void run_after_frame(GuiState& s, std::function<void()> work);
// Runs one statement or :command through the session, echoing it in the console (through
// run_busy: call it outside a frame; from inside one, console_after_frame).
bool run_in_console(GuiState& s, const std::string& source, bool echo = true);
void console_after_frame(GuiState& s, const std::string& source, bool echo = true);
// The last session's statements (s.journal_offered of them): run again through the console
// (outside a frame, as run_in_console), or forgotten.
void restore_workspace(GuiState& s);
void forget_last_workspace(GuiState& s);

}  // namespace opscope::app
