#include "app/shipped_dir.h"

#include <cstdlib>
#include <vector>

namespace opscope::app {

std::string find_shipped_dir(const char* env_var, const char* built_in, const std::string& beside_exe,
                             const std::string& installed,
                             const std::function<bool(const std::filesystem::path&)>& holds) {
  namespace fs = std::filesystem;
  std::vector<fs::path> tried;
  if (const char* env = std::getenv(env_var); env && *env) tried.emplace_back(env);
  if (built_in && *built_in) tried.emplace_back(built_in);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    tried.push_back(exe.parent_path() / beside_exe);
    tried.push_back(exe.parent_path().parent_path() / beside_exe);
    tried.push_back(exe.parent_path().parent_path() / "share" / "opscope" / installed);
  }
  for (const fs::path& d : tried)
    if (holds(d)) return d.string();
  return "";
}

std::string config_file(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path base;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) base = x;
  else if (const char* h = std::getenv("HOME"); h && *h) base = fs::path(h) / ".config";
  else return {};
  return (base / "opscope" / name).string();
}

}  // namespace opscope::app
