// The executable's side of the ONNX protobuf module (proto_module.h): found and opened on the
// first ONNX call, and the entry points that live in it forwarded to its table.
#include "app/onnx/proto_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "opscope_abi.h"

namespace opscope::interop {

namespace {

namespace fs = std::filesystem;
constexpr const char* kModuleName = "libopscope_onnx_proto.so";
constexpr const char* kHint = "rebuild opscope (cmake --build build) so that libopscope_onnx_proto.so is made beside it, "
                              "or point OPSCOPE_ONNX_MODULE at that file";

// Where the module may be: OPSCOPE_ONNX_MODULE (a file), beside the executable (a build tree),
// an install tree's lib/opscope/, and the build tree this binary was made in.
std::vector<std::string> candidates() {
  if (const char* env = std::getenv("OPSCOPE_ONNX_MODULE")) return {env};
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / kModuleName).string());
    out.push_back((exe.parent_path().parent_path() / "lib" / "opscope" / kModuleName).string());
  }
#ifdef OPSCOPE_ONNX_BUILT_MODULE
  out.push_back(OPSCOPE_ONNX_BUILT_MODULE);
#endif
  return out;
}

// The table, or why there is none.
const OnnxProtoModule* load(std::string& why) {
  void* lib = nullptr;
  std::string path, looked;
  for (const std::string& candidate : candidates()) {
    if (!fs::exists(candidate)) {
      looked += (looked.empty() ? "" : ", ") + candidate;
      continue;
    }
    // RTLD_NOW: a symbol the executable lacks is an error here, not a crash in the middle of a call.
    if ((lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      path = candidate;
      break;
    }
    const char* e = dlerror();
    why = e ? e : candidate + ": dlopen failed";
  }
  if (!lib) {
    if (why.empty()) why = std::string(kModuleName) + " not found (looked for " + looked + ")";
    return nullptr;
  }
  auto entry = reinterpret_cast<OnnxProtoModuleEntry>(dlsym(lib, OPSCOPE_ONNX_MODULE_ENTRY));
  const OnnxProtoModule* m = entry ? entry() : nullptr;
  if (!m || m->interface != kOnnxModuleInterface || !m->abi_id || std::string(m->abi_id) != OPSCOPE_ABI_ID) {
    why = path + " is of another opscope build";
    return nullptr;
  }
  return m;
}

}  // namespace

const OnnxProtoModule& onnx_proto_module() {
  static std::mutex mutex;
  static const OnnxProtoModule* module = nullptr;
  static bool tried = false;
  static std::string why;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried) module = load(why);
  tried = true;
  if (!module) throw Error("ONNX is not available: " + why, kHint);
  return *module;
}

OnnxModel parse_onnx_bytes(const std::string& bytes, const std::string& name, int64_t memory_cap) {
  return onnx_proto_module().parse_onnx_bytes(bytes, name, memory_cap);
}

ExportInfo save_onnx_values(Workspace& ws, const std::vector<int>& outputs, const std::string& path) {
  return onnx_proto_module().save_onnx_values(ws, outputs, path);
}

ConformanceReport run_conformance(const std::vector<std::string>& dirs, const ConformanceOptions& options, std::ostream& log) {
  return onnx_proto_module().run_conformance(dirs, options, log);
}

}  // namespace opscope::interop
