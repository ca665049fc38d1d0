// The desktop side of the platform seam (platform/platform.h): the program is an ordinary
// process with a terminal, files, threads and dlopen, so almost everything here is "as is".
#include "platform/platform.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/interrupt.h"

namespace opscope::platform {

Arguments start(int argc, char** argv) {
  Arguments a;
  a.args.assign(argv, argv + argc);
  for (auto& s : a.args) a.argv.push_back(s.data());
  a.argv.push_back(nullptr);
  return a;
}

int finish(int exit_code) { return exit_code; }

const char* name() { return "desktop"; }

bool has_display() {
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

void offer_download(const std::string&) {}

void svg_to_png(const std::string&, const std::string&) {
  throw Error("the desktop draws PNG figures with Graphviz", "this is a bug in opscope: report it");
}

bool has_file_chooser() { return false; }
void pick_file(const std::string&) {}
std::vector<std::string> picked_files() { return {}; }
std::vector<std::string> kept_file_dirs() { return {}; }

void persist_files() {}

void report_to_class(const std::string&, const std::string&) {}

bool live_state_wanted() {
  const char* path = std::getenv("OPSCOPE_LIVE_STATE");
  return path && *path;
}

void publish_live_state(const std::string& json) {
  const char* path = std::getenv("OPSCOPE_LIVE_STATE");
  if (!path || !*path) return;
  // Written beside and renamed over: a test never reads half a state.
  const std::string tmp = std::string(path) + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!(f << json)) return;
  }
  std::rename(tmp.c_str(), path);
}

double clock_resolution_ns() { return 1; }

bool has(Feature) { return true; }  // child_processes: POSIX fork/exec and setrlimit
void require(Feature, const std::string&) {}

ChildRun run_self_limited(const std::vector<std::string>& args, double seconds, size_t memory_bytes) {
  using Clock = std::chrono::steady_clock;
  // Everything the child needs is made before fork(): between fork and exec only
  // async-signal-safe calls are allowed.
  static const std::string self = [] {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("opscope");
  }();
  std::vector<std::string> all{self};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw Error("cannot make a pipe for the child process");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]), close(out_pipe[1]);
    throw Error("cannot make a pipe for the child process");
  }
  const rlimit as{memory_bytes, memory_bytes};
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw Error("cannot start a child process (fork failed)");
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    setpgid(0, 0);  // its own group: the kill reaches whatever it starts
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a grader killed itself takes its attempt with it
#endif
    setrlimit(RLIMIT_AS, &as);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    execv(self.c_str(), argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ChildRun r;
  std::string err;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || interrupt::requested()) {  // Ctrl-C stops the child as its limit would
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<long long>(left, 100))) < 0) continue;
    for (pollfd& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(f.fd, buf, sizeof buf);
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
        continue;
      }
      (&f == &fds[0] ? r.output : err).append(buf, static_cast<size_t>(n));
      if (err.size() > (128u << 10)) err.erase(0, err.size() - (64u << 10));
      if (r.output.size() > (64u << 20)) {  // a child that floods its output is stopped too
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.errors = err.size() > (64u << 10) ? err.substr(err.size() - (64u << 10)) : err;
  if (killed) r.end = ChildRun::End::killed_at_limit;
  else if (WIFSIGNALED(status)) r.end = ChildRun::End::signal, r.code = WTERMSIG(status);
  else r.code = WEXITSTATUS(status);
  return r;
}

}  // namespace opscope::platform
