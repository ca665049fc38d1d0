#include "app/class/grader_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

extern char** environ;

namespace opscope::classroom {

namespace {

// The environment of a grader child: the server's, with the engine on one thread (the pool
// already runs one grader per core).
std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OPSCOPE_NUM_THREADS=", 20) != 0) env.emplace_back(*e);
  env.emplace_back("OPSCOPE_NUM_THREADS=1");
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Between fork and exec only async-signal-safe calls: no allocation, no locks.
[[noreturn]] void exec_child(char** argv, char** envp, int out_fd, int err_fd, int memory_mb) {
  setpgid(0, 0);  // its own group: a timeout kills its children too
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed server leaves no grader running
  const rlim_t bytes = static_cast<rlim_t>(memory_mb) << 20;
  const rlimit as{bytes, bytes};
  setrlimit(RLIMIT_AS, &as);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  const int null_fd = open("/dev/null", O_RDONLY);
  dup2(null_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  close_range(3, ~0U, 0);  // the server's sockets and database stay the server's
  execve(argv[0], argv, envp);
  _exit(127);
}

void append_capped(std::string& to, const char* data, size_t n, size_t cap) {
  if (to.size() < cap) to.append(data, std::min(n, cap - to.size()));
}

std::string first_line(const std::string& s) {
  const size_t start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return {};
  return s.substr(start, s.find('\n', start) - start);
}

// "f.ops:12:3: error: unknown name 'x'" -> "unknown name 'x'": the cluster of an error is its
// message without the file's position.
std::string error_key(const std::string& error) {
  std::string line = first_line(error);
  const size_t e = line.find("error: ");
  if (e != std::string::npos) line = line.substr(e + 7);
  return line.size() > 120 ? line.substr(0, 120) : line;
}

nlohmann::json parse_grader_json(const std::string& out) {
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!j.is_discarded()) return j;
  // The student's prints before the object: the object is the last one that starts a line.
  const size_t at = out.rfind("\n{");
  if (at != std::string::npos) j = nlohmann::json::parse(out.substr(at + 1), nullptr, false);
  return j;
}

}  // namespace

ChildRun run_child(const std::vector<std::string>& argv_in, const ChildLimits& limits) {
  ChildRun run;
  std::vector<std::string> argv_s = argv_in, env_s = child_environment();
  std::vector<char*> argv = pointers(argv_s), envp = pointers(env_s);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error("pipe failed");
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) exec_child(argv.data(), envp.data(), out_pipe[1], err_pipe[1], limits.memory_mb);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  const auto deadline = start + std::chrono::duration<double>(limits.seconds);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000))) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        append_capped(i == 0 ? run.out : run.err, buf, static_cast<size_t>(n), limits.output_cap);
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  // A child that closed its output early still has its deadline.
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline && !run.timed_out) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    usleep(1000);
  }
  kill(-pid, SIGKILL);  // anything it left in its group
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  return run;
}

std::vector<std::string> grader_command(const std::string& grader, const std::string& exercise, const std::string& file,
                                        const std::string& lang) {
  return {grader, "exercise", "check", exercise, file, "--json", "--lang", lang};
}

Grade grade_from_grader(const ChildRun& run) {
  Grade g;
  g.seconds = run.seconds;
  nlohmann::json failures = nlohmann::json::array();
  const auto fail_with = [&](const std::string& status, const std::string& check, const std::string& message) {
    g.status = status;
    failures.push_back({{"check", check}, {"message", message}});
    g.failures = failures.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    g.feedback = message;
    return g;
  };
  if (run.timed_out) return fail_with("timeout", "timeout", "the grader stopped the attempt after its time limit");
  const bool memory_words =
      run.err.find("bad_alloc") != std::string::npos || run.err.find("out of memory") != std::string::npos;
  const nlohmann::json j = parse_grader_json(run.out);
  if (!j.is_object() || !j.contains("status")) {
    if (memory_words || run.signal == SIGKILL)
      return fail_with("out of memory", "out of memory", "the attempt ran out of its memory");
    const std::string why = run.signal             ? "the grader crashed (signal " + std::to_string(run.signal) + ")"
                            : run.exit_code == 127 ? "the grader could not be started"
                                                   : first_line(run.err);
    return fail_with("error", "error: " + error_key(why), why.empty() ? "the grader gave no result" : why);
  }
  g.status = j.value("status", std::string("error"));
  if (g.status == "timeout" || g.status == "out of memory")
    return fail_with(g.status, g.status, j.value("error", g.status));
  g.checks_passed = j.value("checks_passed", 0);
  g.checks_total = j.value("checks_total", 0);
  const std::string error = j.value("error", std::string());
  if (g.status == "error") {
    if (memory_words || error.find("out of memory") != std::string::npos)
      return fail_with("out of memory", "out of memory", error);
    failures.push_back({{"check", "error: " + error_key(error)}, {"message", error}});
  }
  if (j.contains("checks") && j["checks"].is_array())
    for (const auto& c : j["checks"])
      if (c.is_object() && !c.value("passed", false))
        failures.push_back({{"check", c.value("description", std::string("?"))},
                            {"message", c.value("message", std::string())},
                            {"where", c.value("where", std::string())}});
  g.failures = failures.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  g.feedback = !error.empty() ? error : j.value("output", std::string());
  return g;
}

int claimed_pass(const std::string& client_result) {
  const auto j = nlohmann::json::parse(client_result, nullptr, false);
  if (j.is_discarded()) return -1;
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  if (j.is_string()) return j.get<std::string>() == "pass" || j.get<std::string>() == "passed" ? 1 : 0;
  if (j.is_object()) {
    if (j.contains("passed") && j["passed"].is_boolean()) return j["passed"].get<bool>() ? 1 : 0;
    if (j.contains("status") && j["status"].is_string())
      return j["status"] == "pass" || j["status"] == "passed" ? 1 : 0;
  }
  return -1;
}

}  // namespace opscope::classroom
