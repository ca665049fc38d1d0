// Where the folders opscope ships (lessons, assets, ONNX models) are found, one rule for all:
// the environment variable first (a teacher's own copy), then the folder the build recorded,
// then beside the executable (a build tree) and in an install tree's share/opscope/.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace opscope::app {

// The first candidate folder for which `holds` is true, or "" if none. `beside_exe` is the
// folder's path relative to the repository ("assets/models"), `installed` its name under
// share/opscope/ ("models"); `built_in` may be null.
std::string find_shipped_dir(const char* env_var, const char* built_in, const std::string& beside_exe,
                             const std::string& installed,
                             const std::function<bool(const std::filesystem::path&)>& holds);

// Where a file of the student's own is kept between runs (lesson progress, the workspace's
// journal): $XDG_CONFIG_HOME/opscope/NAME, else ~/.config/opscope/NAME; "" without either
// variable. The browser's home is in IndexedDB (platform::persist_files).
std::string config_file(const std::string& name);

}  // namespace opscope::app
