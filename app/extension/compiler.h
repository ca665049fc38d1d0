// Compiling one extension source into a shared object with opscope's own toolchain: the C++
// compiler and flags it was built with, or nvcc for a .cu file when CUDA is on.
#pragma once
#include <string>
#include <vector>

#include "app/extension/diagnostics.h"

namespace opscope::ext {

bool is_cuda_source(const std::string& path);  // .cu
// The command that compiles `source` into the shared object `output` (argv, no shell).
std::vector<std::string> compile_command(const std::string& source, const std::string& output);

struct CompileResult {
  bool ok = false;
  double seconds = 0;
  std::string output;  // everything the compiler printed (also in the log file)
  std::vector<Diagnostic> diagnostics;
};

// Runs the compiler (its messages in English, whatever the locale, so they can be read back);
// what it prints goes to `log_path`. Throws opscope::Error when the compiler cannot be run.
CompileResult compile(const std::string& source, const std::string& output, const std::string& log_path);

}  // namespace opscope::ext
