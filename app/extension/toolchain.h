// How opscope itself was built, recorded by CMake (app/extension/CMakeLists.txt): the compilers, their
// flags and the include folders an extension is compiled with, and the ABI id it must carry.
#pragma once
#include <string>
#include <vector>

namespace opscope::ext {

struct Toolchain {
  std::string cxx;  // the C++ compiler opscope was built with
  std::vector<std::string> cxx_flags;  // its flags (build type, -march, -std), -fPIC, hidden
  std::string source_include_dir;  // the source tree (headers as core/op.h)
  std::vector<std::string> system_include_dirs;  // Eigen
  std::string nvcc;  // empty when CUDA is off
  std::vector<std::string> cuda_flags;  // architectures, -std, host flags
  // The simulator: a .cu file rewritten by `cmake -P sim_rewrite` (empty when sim is not built),
  // then compiled by `cxx` with sim_flags (stand-in headers, instrumentation of every access).
  std::string cmake;
  std::string sim_rewrite;
  std::vector<std::string> sim_flags;
  std::string abi;  // what OPSCOPE_EXTENSION_ABI must be
};

const Toolchain& toolchain();
// The folder an extension's `#include "core/op.h"` is found in: the installed headers next to
// the binary (PREFIX/include/opscope) when there are some, else the source tree.
std::string include_dir();

}  // namespace opscope::ext
