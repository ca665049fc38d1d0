// libFuzzer target: the ONNX importer on arbitrary bytes, as a downloaded .onnx file would
// reach it: parse, validate, map every node, then run the graph on zeros. Any input must end
// in a model or a clear error, never a crash, a hang or unbounded memory.
// Build: cmake -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DOPSCOPE_FUZZ=ON; run: build-fuzz/fuzz_onnx tests/fuzz/onnx_corpus
#include <cstddef>
#include <cstdint>
#include <string>

#include "app/onnx/onnx_import.h"
#include "core/workspace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace opscope;
  Workspace ws;
  WorkspaceScope scope(ws);
  ws.tracker().set_cap(int64_t(256) << 20);  // big tensors are refused, not allocated
  try {
    auto m = interop::ImportedModel::from_model(
        interop::parse_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "<fuzz>",
                                  ws.tracker().cap()));
    std::vector<Tensor> inputs;
    for (auto& in : m->inputs()) inputs.push_back(Tensor::zeros(in.shape, in.dtype));
    NoGradGuard no_grad;
    m->apply(ws, inputs);
  } catch (const Error&) {}
  return 0;
}
