#include "app/lesson/exercise_sandbox.h"

#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"
#include "platform/platform.h"

namespace opscope::lesson {

Attempt attempt_from_json(const std::string& text) {
  Attempt a;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    a.status = status_from_name(j.at("status").get<std::string>());
    a.error = j.value("error", "");
    a.output = j.value("output", "");
    a.seconds = j.value("seconds", 0.0);
    for (const auto& c : j.at("checks"))
      a.checks.push_back({c.value("description", ""), c.value("passed", false), c.value("message", ""),
                          c.value("where", ""), c.value("your_lines", std::vector<std::string>{})});
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not an attempt's JSON: ") + e.what());
  }
  return a;
}

namespace {

std::string tail(const std::string& s, size_t n) {
  const size_t at = s.size() > n ? s.size() - n : 0;
  return s.substr(at);
}

// Every check of the exercise, none run: a cell the child could not fill.
Attempt unfinished(const Exercise& ex, AttemptStatus status, const std::string& error, double seconds) {
  Attempt a;
  a.status = status;
  a.error = error;
  a.seconds = seconds;
  for (const ExerciseCheck& c : ex.checks) a.checks.push_back({c.description, false, "not run", "", {}});
  return a;
}

}  // namespace

Attempt run_attempt_in_child(const ExerciseRef& e, const std::string& path, const std::string& shown,
                             const std::string& lang, const SandboxLimits& limits) {
  const Exercise& ex = *e.exercise;
  const double seconds = limits.seconds > 0 ? limits.seconds : ex.seconds;
  const double limit = seconds + limits.grace_seconds;
  std::vector<std::string> args{"exercise",     "check", ex.id, path,     "--json",
                                "--in-process", "--as",  shown, "--lang", lang};
  if (limits.seconds > 0) args.insert(args.end(), {"--seconds", std::to_string(limits.seconds)});
  const platform::ChildRun run = platform::run_self_limited(args, limit, limits.memory_bytes);
  if (run.end == platform::ChildRun::End::killed_at_limit) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "ran past the exercise's time limit of %g s and was stopped (killed at %g s)",
                  seconds, limit);
    return unfinished(ex, AttemptStatus::timeout, buf, run.seconds);
  }
  const bool memory =
      run.errors.find("bad_alloc") != std::string::npos || run.errors.find("out of memory") != std::string::npos;
  if (run.end == platform::ChildRun::End::signal) {
    // SIGKILL that we did not send: the kernel's OOM killer; SIGABRT after a refused allocation.
    if (memory || run.code == SIGKILL)
      return unfinished(ex, AttemptStatus::out_of_memory,
                        "ran out of memory (the attempt's cap is " + std::to_string(limits.memory_bytes >> 20) +
                            " MiB of address space)",
                        run.seconds);
    return unfinished(ex, AttemptStatus::error,
                      "the attempt crashed (signal " + std::to_string(run.code) + "): " + tail(run.errors, 2000),
                      run.seconds);
  }
  try {
    Attempt a = attempt_from_json(run.output);
    a.seconds = run.seconds;
    return a;
  } catch (const Error&) {
    if (memory)
      return unfinished(ex, AttemptStatus::out_of_memory,
                        "ran out of memory (the attempt's cap is " + std::to_string(limits.memory_bytes >> 20) +
                            " MiB of address space)",
                        run.seconds);
    return unfinished(ex, AttemptStatus::error,
                      "the grader's child process ended without a result (exit code " + std::to_string(run.code) +
                          "): " + tail(run.errors, 2000),
                      run.seconds);
  }
}

}  // namespace opscope::lesson
