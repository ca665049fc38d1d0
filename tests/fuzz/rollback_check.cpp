// The corpus's bad inputs, checked for what they must leave behind: a file with the line
// `# --- the bad part ---` runs what comes before it (which must succeed), then the bad part
// (which must fail), and the workspace must then be exactly as it was (tests/workspace_state.h).
// Directives in comment lines:
//   # interrupt after N steps     Ctrl-C, as if pressed once N executor steps of the bad part ran
//   # as a lesson                 the whole file runs under a lesson's file policy (scratch in a temp folder)
//   # symlink NAME -> TARGET      made in that lesson's scratch folder first
//   # no file PATH                PATH must not exist afterwards (a refused write wrote nothing)
#include "tests/fuzz/rollback_check.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lesson/lesson_files.h"
#include "core/interrupt.h"
#include "core/workspace.h"
#include "tests/workspace_state.h"

namespace opscope::test {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

struct Directives {
  long interrupt_after_steps = -1;
  bool as_lesson = false;
  std::vector<std::pair<std::string, std::string>> symlinks;
  std::vector<std::string> absent;
};

Directives read_directives(const std::string& text) {
  Directives d;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) {
    line = trim(line);
    if (line.rfind("# ", 0) != 0) continue;
    const std::string body = trim(line.substr(2));
    if (body.rfind("interrupt after ", 0) == 0) d.interrupt_after_steps = std::atol(body.c_str() + 16);
    else if (body == "as a lesson") d.as_lesson = true;
    else if (body.rfind("symlink ", 0) == 0) {
      const size_t arrow = body.find(" -> ");
      if (arrow != std::string::npos)
        d.symlinks.emplace_back(trim(body.substr(8, arrow - 8)), trim(body.substr(arrow + 4)));
    } else if (body.rfind("no file ", 0) == 0) {
      d.absent.push_back(trim(body.substr(8)));
    }
  }
  return d;
}

}  // namespace

bool is_rollback_case(const std::string& text) { return text.find(kBadPartMarker) != std::string::npos; }

std::string check_rollback(const std::string& text, const std::string& name) {
  const size_t cut = text.find(kBadPartMarker);
  if (cut == std::string::npos) return {};
  const std::string setup = text.substr(0, cut),
                    bad = std::string(static_cast<size_t>(
                                          std::count(text.begin(), text.begin() + static_cast<long>(cut), '\n')),
                                      '\n') +
                          text.substr(cut);
  const Directives d = read_directives(text);
  Workspace ws;
  WorkspaceScope scope(ws);
  ws.tracker().set_cap(int64_t(256) << 20);
  lang::Session session(ws);
  std::ostringstream out, err;
  if (d.as_lesson) {
    // A lesson in the corpus folder, its scratch folder in a temp folder of its own.
    const fs::path data = fs::temp_directory_path() / ("opscope-rollback-" + std::to_string(getpid()));
    setenv("XDG_DATA_HOME", data.c_str(), 1);
    auto policy =
        std::make_shared<lesson::LessonFilePolicy>((fs::path(name).parent_path() / "lesson.md").string(), "corpus");
    fs::create_directories(policy->scratch());
    for (auto& [link, target] : d.symlinks) {
      std::error_code ec;
      fs::remove(fs::path(policy->scratch()) / link, ec);
      fs::create_symlink(target, fs::path(policy->scratch()) / link, ec);
    }
    session.interpreter().set_file_policy(policy);
  }
  if (!session.run(setup, name, out, err)) return name + ": the part before the bad part failed:\n" + err.str();
  const std::string before = workspace_state(session);
  int listener = -1;
  long steps = 0;
  if (d.interrupt_after_steps >= 0)
    listener = ws.executor().add_listener([&](const StepEvent&) {
      if (++steps == d.interrupt_after_steps) interrupt::request();
    });
  const bool ok = session.run(bad, name, out, err);
  if (listener >= 0) ws.executor().remove_listener(listener);
  interrupt::clear();
  if (ok) return name + ": the bad part ran without an error";
  if (d.interrupt_after_steps >= 0 && !session.interrupted())
    return name + ": the bad part was to be interrupted after " + std::to_string(d.interrupt_after_steps) +
           " steps but failed otherwise (" + std::to_string(steps) + " steps ran):\n" + err.str();
  const std::string after = workspace_state(session);
  if (after != before)
    return name + ": the workspace changed:\n--- before\n" + before + "--- after\n" + after + "--- error\n" + err.str();
  for (auto& p : d.absent)
    if (fs::exists(fs::symlink_status(p))) return name + ": " + p + " exists: a refused write wrote it";
  return {};
}

}  // namespace opscope::test
