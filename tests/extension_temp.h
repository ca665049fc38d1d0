// What the extension tests share: their temporary folder (the loader's cache and the tests' own
// sources: made once per process, removed when it ends; each call makes it the loader's cache
// again), and a lesson's file policy that refuses code from outside its folder.
#pragma once
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

#include "app/extension/loader.h"
#include "app/lang/file_policy.h"
#include "core/error.h"

namespace opscope::test {

struct ExtensionTempDir {
  std::filesystem::path path;
  ExtensionTempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "opscope-ext-test-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~ExtensionTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline ExtensionTempDir& extension_temp() {
  static ExtensionTempDir t;
  ext::ExtensionLoader::instance().set_cache_dir((t.path / "cache").string());
  return t;
}

// Refuses every file loaded as code, as a lesson's policy refuses one outside the lesson's folder.
struct RefuseLoadingCode : lang::FilePolicy {
  std::string resolve(const std::string& path, lang::FileMode mode) const override {
    if (mode == lang::FileMode::load_code) throw Error("this lesson may load extensions only from its own folder", "");
    return path;
  }
};

}  // namespace opscope::test
