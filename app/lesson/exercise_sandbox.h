// A graded attempt in a child process of its own (`opscope exercise check` and `grade` on the
// desktop, and the class server through them): the child runs
// `opscope exercise check ID FILE --json --in-process` under a hard wall-clock kill and a cap on
// its memory, so an answer that loops inside one long kernel, allocates without end or crashes
// costs only its own cell, and the rest of a class is graded. The browser grades in-process.
#pragma once
#include <cstddef>
#include <string>

#include "app/lesson/exercise_class.h"

namespace opscope::lesson {

struct SandboxLimits {
  // The child is killed this long after the exercise's own time limit (its start-up, and the
  // in-process limit's chance to say where it stopped).
  double grace_seconds = 3;
  size_t memory_bytes = size_t(4) << 30;  // RLIMIT_AS: address space, not resident memory
  double seconds = 0;  // the attempt's time limit; 0: the exercise's own
};

// Runs the attempt in a child; `shown` is the file's name in messages (alice/matmul-backward.ops).
// A kill at the limit is a timeout, a refused allocation out of memory, a crash an error.
Attempt run_attempt_in_child(const ExerciseRef& e, const std::string& path, const std::string& shown,
                             const std::string& lang, const SandboxLimits& limits = {});

// An attempt from attempt_json()'s text (what the child prints); throws opscope::Error if it is
// not one.
Attempt attempt_from_json(const std::string& json);

}  // namespace opscope::lesson
