// Compiling one extension source into a shared object with opscope's own toolchain: the C++
// compiler and flags it was built with, or nvcc for a .cu file when CUDA is on.
#pragma once
#include <string>
#include <vector>

#include "app/extension/diagnostics.h"

namespace opscope::ext {

bool is_cuda_source(const std::string& path);  // .cu

// Where a source's kernels will run: a .cpp file's on the CPU; a .cu file's on a real GPU when
// opscope has nvcc and a CUDA device is there, else on the simulated GPU `sim` (rewritten and
// compiled against the stand-in headers, every access checked and counted), else on a GPU
// elsewhere (nvcc without a device here). Throws opscope::Error when nothing can take a .cu.
enum class Target { cpu, cuda, sim };
Target target_of(const std::string& source);
const char* target_name(Target t);  // "C++", "CUDA (nvcc)", "the simulated GPU (sim)"

// The commands that compile `source` into the shared object `output`, run in order (argv each, no
// shell): one compiler call, or for `sim` the launch rewrite into `output`.sim.cpp and then the
// C++ compiler on that file (its #line directive keeps messages on the student's file and lines).
std::vector<std::vector<std::string>> compile_commands(const std::string& source, const std::string& output);

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
