// libFuzzer target: the parser and interpreter on arbitrary bytes. Any input must end in a
// result or a clear error, never a crash, a hang or unbounded memory.
// Build: cmake -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DOPSCOPE_FUZZ=ON; run: build-fuzz/fuzz_lang tests/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <filesystem>
#include <memory>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lesson/lesson_files.h"
#include "core/workspace.h"

namespace {
// Mutated inputs call save() and load() with any path: they run confined like a lesson, in a
// temp folder, so fuzzing never writes anywhere else.
std::shared_ptr<const opscope::lang::FilePolicy> confined() {
  static std::shared_ptr<const opscope::lang::FilePolicy> policy = [] {
    const auto dir = std::filesystem::temp_directory_path() / "opscope-fuzz";
    setenv("XDG_DATA_HOME", dir.c_str(), 1);
    return std::make_shared<opscope::lesson::LessonFilePolicy>((dir / "lesson" / "fuzz.md").string(), "fuzz");
  }();
  return policy;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  opscope::Workspace ws;
  opscope::WorkspaceScope scope(ws);
  ws.tracker().set_cap(int64_t(256) << 20);  // big tensors are refused, not allocated
  opscope::lang::Session session(ws);
  session.interpreter().set_file_policy(confined());
  std::ostringstream out, err;
  session.run(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>", out, err);
  session.needs_more_input(std::string(reinterpret_cast<const char*>(data), size));
  session.completions(std::string(reinterpret_cast<const char*>(data), size), size / 2);
  return 0;
}
