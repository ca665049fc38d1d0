#include "core/module_file.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace opscope {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> candidates(const char* file_name, const char* env_var, const char* built_path) {
  if (const char* env = std::getenv(env_var)) return {env};
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / file_name).string());
    out.push_back((exe.parent_path().parent_path() / "lib" / "opscope" / file_name).string());
  }
  if (built_path) out.push_back(built_path);
  return out;
}

}  // namespace

ModuleFile open_module_file(const char* file_name, const char* env_var, const char* built_path) {
  ModuleFile m;
  std::string looked;
  for (const std::string& path : candidates(file_name, env_var, built_path)) {
    if (!fs::exists(path)) {
      looked += (looked.empty() ? "" : ", ") + path;
      continue;
    }
    if ((m.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      m.path = path;
      m.why.clear();
      return m;
    }
    const char* e = dlerror();
    m.why = e ? e : path + ": dlopen failed";
  }
  if (m.why.empty()) m.why = std::string(file_name) + " not found (looked for " + looked + ")";
  return m;
}

std::string module_hint(const char* file_name, const char* env_var) {
  return std::string("rebuild opscope (cmake --build build) so that ") + file_name + " is made beside it, or point " +
         env_var + " at that file";
}

void* module_symbol(const ModuleFile& file, const char* name) {
  return file.handle ? dlsym(file.handle, name) : nullptr;
}

}  // namespace opscope
