// opscope's own shared modules (oneDNN's convolutions, ONNX's protobuf side, the window) are
// opened with dlopen on first use, so that the libraries under them cost nothing at start-up.
// One rule finds them all: the file an environment variable names, else beside the executable
// (a build tree), in an install tree's lib/opscope/, and in the build tree this binary was
// made in.
#pragma once
#include <string>
#include <type_traits>

namespace opscope {

struct ModuleFile {
  void* handle = nullptr;  // dlopen's handle, or null
  std::string path;  // the file opened
  std::string why;  // when there is no handle: which files were missing, or dlopen's message
};

// Opens `file_name` ("libopscope_window.so") with RTLD_NOW, so that a symbol the executable
// lacks is an error here rather than a crash in the middle of a call. `env_var` names an
// override ("OPSCOPE_WINDOW_MODULE"); `built_path` is the build tree's copy, or null.
ModuleFile open_module_file(const char* file_name, const char* env_var, const char* built_path);

// What to do when one of opscope's own modules did not open: rebuild, or name the file.
std::string module_hint(const char* file_name, const char* env_var);

// The first fields of every table that a module made of opscope's own code returns.
struct ModuleTableHead {
  int interface = 0;  // the table's version
  const char* abi_id = nullptr;  // OPSCOPE_ABI_ID the module was built with
};

// dlsym in an opened module.
void* module_symbol(const ModuleFile& file, const char* name);

// For the modules made of opscope's own code (ONNX's protobuf side, the window, Graphviz): the
// table their extern "C" `entry` returns, provided it was built against this engine (`abi_id`,
// the extension ABI id) and is of this `interface` version; else null and `why`.
template <class Table>
const Table* open_module_table(const char* file_name, const char* env_var, const char* built_path, const char* entry,
                               int interface, const char* abi_id, std::string& why) {
  static_assert(std::is_base_of_v<ModuleTableHead, Table>);
  const ModuleFile file = open_module_file(file_name, env_var, built_path);
  if (!file.handle) {
    why = file.why;
    return nullptr;
  }
  auto make = reinterpret_cast<const Table* (*)()>(module_symbol(file, entry));
  const Table* table = make ? make() : nullptr;
  if (!table || table->interface != interface || !table->abi_id || std::string(table->abi_id) != abi_id) {
    why = file.path + " is of another opscope build";
    return nullptr;
  }
  return table;
}

}  // namespace opscope
