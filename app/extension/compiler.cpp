#include "app/extension/compiler.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/extension/toolchain.h"
#include "core/device.h"
#include "core/error.h"

extern char** environ;

namespace opscope::ext {

bool is_cuda_source(const std::string& path) { return path.size() > 3 && path.compare(path.size() - 3, 3, ".cu") == 0; }

Target target_of(const std::string& source) {
  if (!is_cuda_source(source)) return Target::cpu;
  const Toolchain& t = toolchain();
  if (!t.nvcc.empty() && device_available(Device::cuda)) return Target::cuda;
  if (!t.sim_rewrite.empty()) return Target::sim;  // no GPU here: the simulator runs the kernels
  if (!t.nvcc.empty()) return Target::cuda;  // compiled for a GPU that is not here
  throw Error("this opscope was built without CUDA and without the simulated GPU, so it cannot compile '" + source +
                  "'",
              "write the kernel in a .cpp file for the CPU, or rebuild opscope with GCC and libboost-context-dev "
              "(the simulator) or -DOPSCOPE_CUDA=ON");
}

const char* target_name(Target t) {
  switch (t) {
    case Target::cpu: return "C++";
    case Target::cuda: return "CUDA (nvcc)";
    case Target::sim: return "the simulated GPU (sim)";
  }
  return "";
}

namespace {

// The compiler, its flags, the ABI define and opscope's headers; the caller adds the rest.
std::vector<std::string> compiler_prefix(const std::string& compiler, const std::vector<std::string>& flags) {
  const Toolchain& t = toolchain();
  std::vector<std::string> cmd{compiler};
  cmd.insert(cmd.end(), flags.begin(), flags.end());
  cmd.push_back("-DOPSCOPE_EXTENSION_ABI=\"" + t.abi + "\"");
  cmd.push_back("-I" + include_dir());
  for (const std::string& d : t.system_include_dirs) {
    cmd.push_back("-isystem");
    cmd.push_back(d);
  }
  return cmd;
}

}  // namespace

std::vector<std::vector<std::string>> compile_commands(const std::string& source, const std::string& output) {
  const Toolchain& t = toolchain();
  switch (target_of(source)) {
    case Target::cpu: {
      std::vector<std::string> cmd = compiler_prefix(t.cxx, t.cxx_flags);
      cmd.insert(cmd.end(), {"-shared", "-o", output, source});
      return {cmd};
    }
    case Target::cuda: {
      std::vector<std::string> cmd = compiler_prefix(t.nvcc, t.cuda_flags);
      cmd.insert(cmd.end(), {"-shared", "-o", output, source});
      return {cmd};
    }
    case Target::sim: {
      // The simulator's flags come after opscope's (-O1 and the instrumentation win over -O3).
      const std::string rewritten = output + ".sim.cpp";
      std::vector<std::string> rewrite{t.cmake, "-DIN=" + source, "-DOUT=" + rewritten, "-P", t.sim_rewrite};
      std::vector<std::string> cmd = compiler_prefix(t.cxx, t.cxx_flags);
      cmd.insert(cmd.end(), t.sim_flags.begin(), t.sim_flags.end());
      cmd.insert(cmd.end(), {"-shared", "-o", output, rewritten});
      return {rewrite, cmd};
    }
  }
  return {};
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

namespace {

// Runs one command with its output appended to the log; its wait status (throws when it cannot start).
int run_logged(std::vector<std::string> args, const std::string& log_path, const std::string& source) {
  std::vector<std::string> env = english_environment();
  std::vector<char*> argv = c_argv(args), envp = c_argv(env);
  {  // each command first, so a student can run it by hand
    std::ofstream log(log_path, std::ios::binary | std::ios::app);
    log << "$";
    for (const std::string& a : args) log << " " << a;
    log << "\n";
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw Error("cannot run " + args[0] + ": " + std::strerror(rc),
                target_of(source) == Target::cuda ? "is the CUDA toolkit still installed where opscope was built?"
                : target_of(source) == Target::sim
                    ? "install the compiler and CMake opscope was built with (build-essential, cmake on Debian)"
                    : "install the compiler opscope was built with (build-essential on Debian)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return status;
}

// What the commands printed: the log without its "$ command" lines.
std::string printed(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("$ ", 0) != 0) out += line + "\n";
  return out;
}

}  // namespace

CompileResult compile(const std::string& source, const std::string& output, const std::string& log_path) {
  const auto t0 = std::chrono::steady_clock::now();
  std::ofstream(log_path, std::ios::binary | std::ios::trunc).close();
  CompileResult r;
  int status = 0;
  const auto commands = compile_commands(source, output);
  for (const auto& cmd : commands) {
    status = run_logged(cmd, log_path, source);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) break;
  }
  if (commands.size() > 1) {  // the simulator's rewritten copy: only the compiler reads it
    std::error_code ignore;
    std::filesystem::remove(output + ".sim.cpp", ignore);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  r.output = printed(read_all(log_path));
  if (WIFSIGNALED(status)) r.output += "the compiler was killed by signal " + std::to_string(WTERMSIG(status)) + "\n";
  r.diagnostics = parse_diagnostics(r.output);
  return r;
}

}  // namespace opscope::ext
