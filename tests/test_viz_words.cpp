#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "viz/words.h"

// Every text a viz panel shows through tr() has its Chinese: a new label written in English
// only would stay English in a Chinese lesson's window (issue 36).
TEST_CASE("[viz] every tr() text of the panels has its Chinese", "[viz]") {
  namespace fs = std::filesystem;
  // tr("..." "...") with one or more adjacent string literals, escapes kept as written.
  const std::regex call(R"re(\btr\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\))re");
  const std::regex literal(R"re("((?:[^"\\]|\\.)*)")re");
  int found = 0;
  // (viz's panels, and the window's step line and status bar in app/gui, which call viz::tr)
  std::vector<fs::path> files;
  for (const char* dir : {"viz", "app/gui"})
    for (const auto& file : fs::directory_iterator(fs::path(OPSCOPE_SOURCE_DIR) / dir))
      if (file.path().extension() == ".cpp" && file.path().filename() != "words.cpp") files.push_back(file.path());
  for (const fs::path& path : files) {
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
      std::string key;
      const std::string literals = (*it)[1];
      for (std::sregex_iterator l(literals.begin(), literals.end(), literal); l != end; ++l)
        key += std::regex_replace(std::string((*l)[1]), std::regex(R"(\\")"), "\"");
      INFO(path.filename().string() << ": tr(\"" << key << "\")");
      CHECK(opscope::viz::has_chinese(key.c_str()));
      ++found;
    }
  }
  CHECK(found >= 30);
  opscope::viz::set_chinese(true);
  CHECK(std::string(opscope::viz::tr("Memory after each step")) == "每一步之后的内存");
  CHECK(std::string(opscope::viz::tr("not a panel's text")) == "not a panel's text");
  opscope::viz::set_chinese(false);
  CHECK(std::string(opscope::viz::tr("Memory after each step")) == "Memory after each step");
}
