// The terminal REPL. Interactive input goes through libedit's readline-compatible API; piped
// input is read with std::getline so `echo 'x = 1' | opscope repl` works in scripts.
#include "app/repl.h"

#include <editline/readline.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lang/source_scan.h"
#include "app/progress_line.h"
#include "app/sigint.h"

namespace opscope::app {
namespace {

constexpr const char* kPrompt = ">>> ";
constexpr const char* kStaticPrompt = "static>>> ";  // statements build a graph, nothing runs
constexpr const char* kContinuationPrompt = "... ";
constexpr int kHistoryMax = 1000;

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r\f\v") == std::string::npos; }

// Brackets left open in `text`, skipping string literals and `#` comments. A blank line inside
// brackets continues the entry; a blank line after an indented block ends it (as in Python).
int open_brackets(const std::string& text) {
  int depth = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)  // a string or a comment ends with its line
    lang::find_in_code(line, [&depth](size_t, char c, int) {
      if (c == '#') return true;
      depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
      return false;
    });
  return depth;
}

// Gathers lines into one entry: a statement, a whole `def`/`for`/`if` block, or a bracketed
// expression spread over lines.
class EntryBuilder {
 public:
  explicit EntryBuilder(const lang::Session& session) : session_(session) {}

  // Adds one line; true when the entry is complete (take() it).
  bool add(const std::string& line) {
    if (buffer_.empty()) {
      if (is_blank(line)) return false;
      buffer_ = line;
    } else {
      if (is_blank(line) && open_brackets(buffer_) <= 0) return true;
      buffer_ += '\n';
      buffer_ += line;
    }
    return !session_.needs_more_input(buffer_);
  }

  bool empty() const { return buffer_.empty(); }
  void clear() { buffer_.clear(); }
  std::string take() {
    std::string entry = std::move(buffer_);
    buffer_.clear();
    return entry;
  }

 private:
  const lang::Session& session_;
  std::string buffer_;
};

// Runs one entry. An exception escaping the Session is a bug in opscope, not in the student's
// code: report it and keep the REPL (and the workspace) alive.
bool run_entry(lang::Session& session, const std::string& entry) {
  bool ok = false;
  SigintInterrupts ctrl_c;  // Ctrl-C stops the statement, not the REPL
  try {
    ok = session.run(entry, "<stdin>", std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
  }
  std::cout.flush();
  std::cerr.flush();
  return ok;
}

// [SECTION] piped input -------------------------------------------------------------------------

int run_piped(lang::Session& session) {
  EntryBuilder builder(session);
  bool last_ok = true;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!builder.add(line)) continue;
    last_ok = run_entry(session, builder.take());
    if (session.quit_requested()) return last_ok ? 0 : 1;
  }
  if (!builder.empty()) last_ok = run_entry(session, builder.take());  // EOF ends an open block
  return last_ok ? 0 : 1;
}

// [SECTION] interactive input -------------------------------------------------------------------

// The readline API passes no user data to the completion hook, so it finds the Session here.
lang::Session* g_completion_session = nullptr;
std::vector<std::string> g_candidates;  // what the generator hands out, one per call
size_t g_next_candidate = 0;

char* candidate_generator(const char* /*text*/, int state) {
  if (state == 0) g_next_candidate = 0;
  if (g_next_candidate >= g_candidates.size()) return nullptr;
  return strdup(g_candidates[g_next_candidate++].c_str());  // libedit frees it
}

// libedit replaces the word [start, end) that its break characters delimit; the Session may
// see a different word (`:help`, `x.shape`, `algo=`). Each candidate is rewritten to replace
// libedit's word: the Session's word is the longest tail of the text before the cursor that
// starts the candidate.
char** attempt_completion(const char* /*text*/, int start, int end) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  if (!g_completion_session) return nullptr;
  const std::string line = rl_line_buffer ? std::string(rl_line_buffer, static_cast<size_t>(rl_end)) : std::string();
  const size_t cursor = std::min(static_cast<size_t>(std::max(end, 0)), line.size());
  const size_t word_start = std::min(static_cast<size_t>(std::max(start, 0)), cursor);
  std::vector<std::string> found;
  try {
    found = g_completion_session->completions(line, cursor);
  } catch (const std::exception&) {
    return nullptr;  // a completion bug must not end the REPL
  }
  g_candidates.clear();
  const std::string before = line.substr(0, cursor);
  for (const std::string& c : found) {
    size_t k = std::min(before.size(), c.size());
    while (k > 0 && before.compare(before.size() - k, k, c, 0, k) != 0) --k;
    const size_t session_start = cursor - k;
    std::string replacement = session_start <= word_start ? c.substr(word_start - session_start)
                                                          : before.substr(word_start, session_start - word_start) + c;
    g_candidates.push_back(std::move(replacement));
  }
  if (g_candidates.empty()) return nullptr;
  const std::string text = before.substr(word_start);
  return rl_completion_matches(text.c_str(), candidate_generator);
}

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

// Installs the Ctrl-C handler for the lifetime of one readline() call: at the prompt Ctrl-C
// abandons the line (as Python's does); while a statement runs it interrupts the statement
// (SigintInterrupts, in run_entry).
class SigintAtPrompt {
 public:
  SigintAtPrompt() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: the pending read() returns EINTR and readline returns
    sigaction(SIGINT, &sa, &previous_);
  }
  ~SigintAtPrompt() { sigaction(SIGINT, &previous_, nullptr); }
  SigintAtPrompt(const SigintAtPrompt&) = delete;
  SigintAtPrompt& operator=(const SigintAtPrompt&) = delete;

 private:
  struct sigaction previous_ {};
};

void save_history(const std::string& path) {
  if (!path.empty()) write_history(path.c_str());
}

int run_interactive(lang::Session& session, const ReplOptions& opts) {
  // libedit reads multibyte characters (x·y in a docstring, 中文) only in a UTF-8 character
  // locale; numbers keep the "C" format (LC_NUMERIC is untouched).
  std::setlocale(LC_CTYPE, "");
  rl_readline_name = "opscope";  // lets ~/.editrc hold opscope-specific bindings
  // libedit's own signal handlers stay on: they restore the terminal, follow window resizes and
  // Ctrl-Z, and re-raise a signal to the handler that was there before, i.e. SigintAtPrompt's.
  rl_catch_signals = 1;
  // Break completion words where expressions do: `x.sha` completes `sha`, `relu(x` completes `x`.
  static const char kWordBreaks[] = " \t\n\"'`@$><=;|&{}()[],+-*/%.!~^";
  rl_basic_word_break_characters = kWordBreaks;
  rl_attempted_completion_function = attempt_completion;
  rl_completion_append_character = '\0';
  g_completion_session = &session;

  using_history();
  stifle_history(kHistoryMax);
  if (!opts.history_path.empty()) read_history(opts.history_path.c_str());  // missing file: fine

  if (opts.banner) {
    std::string version = opts.version;
#ifdef OPSCOPE_VERSION
    if (version.empty()) version = OPSCOPE_VERSION;
#endif
    if (version.empty()) version = "dev";
    std::cout << "opscope " << version << " \u2014 type :help for help, :lesson to start the course, :quit to leave\n";
  }

  EntryBuilder builder(session);
  for (;;) {
    std::cout.flush();
    std::cerr.flush();
    char* raw = nullptr;
    g_interrupted = 0;
    {
      SigintAtPrompt guard;
      const bool static_mode = session.interpreter().ws().static_mode();
      raw = readline(!builder.empty() ? kContinuationPrompt : static_mode ? kStaticPrompt : kPrompt);
    }
    if (g_interrupted) {  // Ctrl-C: drop the entry, fresh prompt
      std::free(raw);
      builder.clear();
      std::cout << "\n";
      continue;
    }
    if (!raw) {  // Ctrl-D
      std::cout << "\n";
      break;
    }
    std::string text(raw);
    std::free(raw);

    // One history line per typed line: libedit edits one line at a time, so recalling a block
    // line by line is what it handles cleanly. A pasted or recalled text may hold newlines.
    bool quit = false;
    size_t pos = 0;
    while (pos <= text.size()) {
      const size_t nl = text.find('\n', pos);
      const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
      if (!is_blank(line)) add_history(line.c_str());
      if (!builder.add(line)) continue;
      run_entry(session, builder.take());
      save_history(opts.history_path);
      if (session.quit_requested()) {
        quit = true;
        break;
      }
    }
    if (quit) break;
  }
  save_history(opts.history_path);
  g_completion_session = nullptr;
  return 0;
}

bool want_color(const ReplOptions& opts) {
  if (!opts.color || !isatty(2)) return false;
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return std::getenv("NO_COLOR") == nullptr;
}

}  // namespace

std::string default_history_path() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state) {
    dir = fs::path(state) / "opscope";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = fs::path(home) / ".local" / "state" / "opscope";
  } else {
    return {};
  }
  std::error_code ec;
  fs::create_directories(dir, ec);  // a history that cannot be saved is not worth an error
  return (dir / "history").string();
}

int run_repl(lang::Session& session, const ReplOptions& opts) {
  session.set_color(want_color(opts));
  session.set_echo_expressions(true);
  install_progress_line(session.interpreter());
  if (!isatty(0)) return run_piped(session);
  return run_interactive(session, opts);
}

}  // namespace opscope::app
