#include "app/extension/compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "app/extension/toolchain.h"
#include "core/error.h"

extern char** environ;

namespace opscope::ext {

bool is_cuda_source(const std::string& path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".cu") == 0; }

std::vector<std::string> compile_command(const std::string& source, const std::string& output) {
  const Toolchain& t = toolchain();
  const bool cuda = is_cuda_source(source);
  if (cuda && t.nvcc.empty())
    throw Error("this opscope was built without CUDA, so it cannot compile '" + source + "'",
                "write the kernel in a .cpp file for the CPU, or rebuild opscope with -DOPSCOPE_CUDA=ON");
  std::vector<std::string> cmd{cuda ? t.nvcc : t.cxx};
  cmd.insert(cmd.end(), cuda ? t.cuda_flags.begin() : t.cxx_flags.begin(), cuda ? t.cuda_flags.end() : t.cxx_flags.end());
  cmd.push_back("-DOPSCOPE_EXTENSION_ABI=\"" + t.abi + "\"");
  cmd.push_back("-I" + include_dir());
  for (const std::string& d : t.system_include_dirs) {
    cmd.push_back("-isystem");
    cmd.push_back(d);
  }
  cmd.insert(cmd.end(), {"-shared", "-o", output, source});
  return cmd;
}

namespace {

// argv for posix_spawn: pointers into `args`, null-terminated.
std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> v;
  for (auto& a : args) v.push_back(a.data());
  v.push_back(nullptr);
  return v;
}

// The environment with LC_ALL=C: diagnostics are parsed by their English keywords.
std::vector<std::string> english_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LC_ALL=", 7) != 0 && std::strncmp(*e, "LANGUAGE=", 9) != 0) env.emplace_back(*e);
  env.emplace_back("LC_ALL=C");
  return env;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

CompileResult compile(const std::string& source, const std::string& output, const std::string& log_path) {
  std::vector<std::string> args = compile_command(source, output), env = english_environment();
  std::vector<char*> argv = c_argv(args), envp = c_argv(env);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  {  // the log starts with the command, so a student can run it by hand
    std::ofstream log(log_path, std::ios::binary | std::ios::trunc);
    log << "$";
    for (const std::string& a : args) log << " " << a;
    log << "\n";
  }
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);

  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw Error("cannot run the compiler " + args[0] + ": " + std::strerror(rc),
                is_cuda_source(source) ? "is the CUDA toolkit still installed where opscope was built?"
                                       : "install the compiler opscope was built with (build-essential on Debian)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  CompileResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  r.output = read_all(log_path);
  r.output.erase(0, r.output.find('\n') + 1);  // what the compiler printed, without the command
  if (WIFSIGNALED(status)) r.output += "the compiler was killed by signal " + std::to_string(WTERMSIG(status)) + "\n";
  r.diagnostics = parse_diagnostics(r.output);
  return r;
}

}  // namespace opscope::ext
