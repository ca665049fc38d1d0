// Runs the fuzz target over every file of the corpus folders given (ctest: the seed corpus and
// every input that once crashed), without libFuzzer, so any compiler can build it. The bad
// inputs (a `# --- the bad part ---` line) must also leave the workspace exactly as it was.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/fuzz/rollback_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t files = 0, rollbacks = 0, failures = 0;
  for (int i = 1; i < argc; ++i)
    for (auto& entry : std::filesystem::recursive_directory_iterator(argv[i])) {
      if (!entry.is_regular_file()) continue;
      std::ifstream f(entry.path(), std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++files;
      const std::string text(bytes.begin(), bytes.end());
      if (!opscope::test::is_rollback_case(text)) continue;
      ++rollbacks;
      const std::string problem = opscope::test::check_rollback(text, entry.path().string());
      if (!problem.empty()) {
        std::fprintf(stderr, "FAILED: %s\n", problem.c_str());
        ++failures;
      }
    }
  std::printf("%zu inputs ran clean; %zu bad inputs left the workspace as it was, %zu did not\n", files,
              rollbacks - failures, failures);
  return files > 0 && failures == 0 ? 0 : 1;
}
