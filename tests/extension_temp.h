// The extension tests' temporary folder (the loader's cache and the tests' own sources): made
// once per process, removed when it ends; each call makes it the loader's cache again.
#pragma once
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

#include "app/extension/loader.h"

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

}  // namespace opscope::test
