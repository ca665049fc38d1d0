// The desktop side of the platform seam (platform/platform.h): the program is an ordinary
// process with a terminal, files, threads and dlopen, so almost everything here is "as is".
#include "platform/platform.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/error.h"

namespace opscope::platform {

Arguments start(int argc, char** argv) {
  Arguments a;
  a.args.assign(argv, argv + argc);
  for (auto& s : a.args) a.argv.push_back(s.data());
  a.argv.push_back(nullptr);
  return a;
}

int finish(int exit_code) { return exit_code; }

const char* name() { return "desktop"; }

bool has_display() {
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

void offer_download(const std::string&) {}

void svg_to_png(const std::string&, const std::string&) {
  throw Error("the desktop draws PNG figures with Graphviz", "this is a bug in opscope: report it");
}

bool has_file_chooser() { return false; }
void pick_file(const std::string&) {}
std::vector<std::string> picked_files() { return {}; }
std::vector<std::string> kept_file_dirs() { return {}; }

void persist_files() {}

bool live_state_wanted() {
  const char* path = std::getenv("OPSCOPE_LIVE_STATE");
  return path && *path;
}

void publish_live_state(const std::string& json) {
  const char* path = std::getenv("OPSCOPE_LIVE_STATE");
  if (!path || !*path) return;
  // Written beside and renamed over: a test never reads half a state.
  const std::string tmp = std::string(path) + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!(f << json)) return;
  }
  std::rename(tmp.c_str(), path);
}

double clock_resolution_ns() { return 1; }

bool has(Feature) { return true; }
void require(Feature, const std::string&) {}

}  // namespace opscope::platform
