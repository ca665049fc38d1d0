// core/module_file.h in the browser: a WebAssembly program opens no shared libraries, so the
// modules the desktop opens with dlopen on first use (the window, Graphviz's figures, ONNX's
// protobuf side) are linked into the one program, and "opening" one finds its entry point
// here. A module this build left out (oneDNN, which has no browser version) is "not found",
// and its caller explains that as it does on the desktop.
#include <cstring>
#include <string>

#include "core/module_file.h"

// The modules' entry points (weak: a build without ONNX has no such function, and its
// address is then null).
extern "C" {
__attribute__((weak)) const void* opscope_window_module();
__attribute__((weak)) const void* opscope_figure_module();
__attribute__((weak)) const void* opscope_onnx_proto_module();
}

namespace opscope {

namespace {

struct LinkedModule {
  const char* file_name;
  const char* entry;
  const void* (*make)();
};

const LinkedModule kLinked[] = {
    {"libopscope_window.so", "opscope_window_module", &opscope_window_module},
    {"libopscope_figures.so", "opscope_figure_module", &opscope_figure_module},
    {"libopscope_onnx_proto.so", "opscope_onnx_proto_module", &opscope_onnx_proto_module},
};

const LinkedModule* linked(const std::string& file_name) {
  for (const LinkedModule& m : kLinked)
    if (file_name == m.file_name && m.make) return &m;
  return nullptr;
}

}  // namespace

ModuleFile open_module_file(const char* file_name, const char* /*env_var*/, const char* /*built_path*/) {
  ModuleFile m;
  if (const LinkedModule* l = linked(file_name)) {
    m.handle = const_cast<LinkedModule*>(l);
    m.path = std::string("(linked) ") + file_name;
    return m;
  }
  m.why = std::string(file_name) + " is not part of the browser version";
  return m;
}

std::string module_hint(const char* file_name, const char* /*env_var*/) {
  return std::string(file_name) + " exists in the desktop app only";
}

void* module_symbol(const ModuleFile& file, const char* name) {
  const auto* l = static_cast<const LinkedModule*>(file.handle);
  return l && std::strcmp(name, l->entry) == 0 ? reinterpret_cast<void*>(l->make) : nullptr;
}

}  // namespace opscope
