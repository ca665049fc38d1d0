// libFuzzer target: the parser and interpreter on arbitrary bytes. Any input must end in a
// result or a clear error, never a crash, a hang or unbounded memory.
// Build: cmake -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DOPSCOPE_FUZZ=ON; run: build-fuzz/fuzz_lang tests/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "app/lang/session.h"
#include "core/workspace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  opscope::Workspace ws;
  opscope::WorkspaceScope scope(ws);
  ws.tracker().set_cap(int64_t(256) << 20);  // big tensors are refused, not allocated
  opscope::lang::Session session(ws);
  std::ostringstream out, err;
  session.run(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>", out, err);
  session.needs_more_input(std::string(reinterpret_cast<const char*>(data), size));
  session.completions(std::string(reinterpret_cast<const char*>(data), size), size / 2);
  return 0;
}
