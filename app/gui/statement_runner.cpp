// Running statements from the window: one at a time, with frames drawn between their steps,
// their output in the console, and work asked for inside a frame kept until the frame is done.
#include "app/gui/statement_runner.h"

#include <filesystem>
#include <sstream>

#include "app/lang/interpreter.h"
#include "app/sigint.h"
#include "core/interrupt.h"
#include "platform/platform.h"

namespace opscope::app {

namespace {

// A statement that failed or a :reset may have taken nodes back: forget their steps and a
// selection that no longer exists.
void after_run(GuiState& s) {
  s.log->forget_missing_nodes(&s.ws->graph());
  const Graph& g = shown_graph(s);
  const std::string& sel = s.graph.selected;
  if (!sel.empty()) {
    const int n = viz::node_of_key(sel);
    if ((sel[0] == 'n' && !g.has_node(n)) || (sel[0] == 'v' && !g.has_value(std::stoi(sel.substr(1)))))
      s.graph.selected.clear();
  }
}

// The files the statements wrote (save(), save_onnx()): the browser downloads them.
void offer_written_files(GuiState& s) {
  for (const std::string& path : s.session->interpreter().take_written_files()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) platform::offer_download(path);
  }
}

}  // namespace

void console_print(ConsoleState& c, ConsoleLine::Kind kind, const std::string& text) {
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    if (c.glyphs) c.glyphs->add(line);
    c.lines.push_back({kind, line});
  }
  constexpr size_t kMaxLines = 4000;
  if (c.lines.size() > kMaxLines)
    c.lines.erase(c.lines.begin(), c.lines.begin() + static_cast<long>(c.lines.size() - kMaxLines));
  c.scroll_to_bottom = true;
}

bool run_busy(GuiState& s, const std::function<void()>& work) {
  if (s.run.running) {
    console_print(s.console, ConsoleLine::error, "a statement is running: Interrupt (Esc) stops it first");
    return false;
  }
  // The hook is asked often; the idle frame itself decides when a frame is due (after 50 to 80
  // ms of work, by how long frames take to draw here).
  const double interval = 0.01;
  SigintInterrupts ctrl_c;  // Ctrl-C in the terminal that started the window: the same as Interrupt
  s.run.running = true;
  s.run.statement_ran = true;
  interrupt::clear();  // a press from before belongs to nothing
  if (s.run.idle_frame) interrupt::set_idle_hook(s.run.idle_frame, interval);
  struct Done {
    GuiState& s;
    ~Done() {
      interrupt::set_idle_hook({});
      s.run.running = false;
      offer_written_files(s);
    }
  } done{s};
  work();
  return true;
}

void run_after_frame(GuiState& s, std::function<void()> work) { s.run.queued.push_back(std::move(work)); }

bool run_in_console(GuiState& s, const std::string& source, bool echo) {
  bool ok = false;
  const bool ran = run_busy(s, [&] {
    if (echo) console_print(s.console, ConsoleLine::input, ">>> " + source);
    std::ostringstream out, err;
    ok = s.session->run(source, "<console>", out, err);
    console_print(s.console, ConsoleLine::output, out.str());
    console_print(s.console, ConsoleLine::error, err.str());
    after_run(s);
  });
  if (ran && ok) s.journal.record(source);
  return ran && ok;
}

void restore_workspace(GuiState& s) {
  const std::vector<std::string> statements = s.journal.take_front(s.journal_offered);
  s.journal_offered = 0;
  console_print(s.console, ConsoleLine::output,
                "# the last session's " + std::to_string(statements.size()) + " statements, run again");
  for (size_t i = 0; i < statements.size(); ++i) {
    if (run_in_console(s, statements[i])) continue;  // kept again as it runs
    // An error or Interrupt: the rest are not run, and stay in the console to copy.
    console_print(s.console, ConsoleLine::error,
                  "# stopped at statement " + std::to_string(i + 1) + " of " + std::to_string(statements.size()) +
                      "; these were not run:");
    for (size_t j = i; j < statements.size(); ++j) console_print(s.console, ConsoleLine::output, statements[j]);
    break;
  }
}

void forget_last_workspace(GuiState& s) {
  s.journal.take_front(s.journal_offered);
  s.journal_offered = 0;
}

void console_after_frame(GuiState& s, const std::string& source, bool echo) {
  run_after_frame(s, [&s, source, echo] { run_in_console(s, source, echo); });
}

}  // namespace opscope::app
