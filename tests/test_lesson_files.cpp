// Lessons are untrusted: their cells read and write only in the lesson's scratch folder and
// read the lesson's own folder; `..`, absolute paths and symlinks out of those are refused with
// a positioned error that says where lessons may read and write. The REPL keeps full access.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/lesson/lesson.h"
#include "app/lesson/lesson_files.h"
#include "app/lesson/runner.h"
#include "tests/lab.h"
#include "tests/workspace_state.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

// A lesson in a temp folder of its own, with $XDG_DATA_HOME there too.
struct LessonDir {
  fs::path root, folder, data, outside;
  LessonDir() {
    root = fs::temp_directory_path() / ("opscope-lesson-files-" + std::to_string(getpid()));
    fs::remove_all(root);
    folder = root / "lessons" / "en";
    data = root / "data";
    outside = root / "outside";
    fs::create_directories(folder);
    fs::create_directories(outside);
    setenv("XDG_DATA_HOME", data.c_str(), 1);
  }
  ~LessonDir() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  // A lesson whose one cell is `code`.
  lesson::Lesson make(const std::string& code) const {
    const std::string md = "---\nid: 42\ntitle: Files\nminutes: 1\n---\n\n# Files\n\n```ops\n" + code + "\n```\n";
    const fs::path file = folder / "42-files.md";
    std::ofstream(file) << md;
    return lesson::load_lesson(file.string());
  }
  fs::path scratch() const { return data / "opscope" / "lessons" / "42-files"; }
};

lesson::BlockResult run_cell(lesson::LessonRunner& runner, const lesson::Lesson& l) {
  for (const auto& b : l.blocks)
    if (b.kind == lesson::Block::Kind::cell) return runner.run(l, b);
  FAIL("no cell");
  return {};
}

}  // namespace

TEST_CASE("lesson files: a plain name is the scratch folder; the lesson's folder is read-only", "[lesson]") {
  LessonDir d;
  test::Lab repl;  // the REPL: full access, so it can prepare a file the lesson ships with
  repl.ok("save(\"" + (d.folder / "shipped.npy").string() + "\", tensor([1.0, 2.0]))");
  lesson::LessonRunner runner;
  auto l = d.make(
      "save(\"x.npy\", tensor([3.0]))\ny = load(\"x.npy\")\nz = load(\"shipped.npy\")\nprint(y.item(), "
      "z.sum().item())");
  auto r = run_cell(runner, l);
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.output == "3.0 3.0\n");
  CHECK(fs::exists(d.scratch() / "x.npy"));
  CHECK_FALSE(fs::exists(d.folder / "x.npy"));
}

TEST_CASE("lesson files: absolute paths, .. and symlinks out of the folders are refused, nothing is written",
          "[lesson]") {
  LessonDir d;
  lesson::LessonRunner runner;
  const std::string escape = (d.outside / "escape.npy").string();
  fs::create_directories(d.scratch());
  fs::create_symlink(d.outside, d.scratch() / "out");
  const char* attempts[] = {"save(\"ESCAPE\", tensor([1.0]))",
                            "save(\"../../../../outside/escape.npy\", tensor([1.0]))",
                            "save(\"out/escape.npy\", tensor([1.0]))",
                            "save(\"../../../../lessons/en/42-files.md\", tensor([1.0]))"};
  for (const char* a : attempts) {
    std::string code = a;
    if (auto k = code.find("ESCAPE"); k != std::string::npos) code.replace(k, 6, escape);
    INFO(code);
    auto r = run_cell(runner, d.make("keep = 1\n" + code));
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("42-files.md:11:6: error: a lesson reads and writes files only in its scratch folder") !=
          std::string::npos);
    CHECK(r.error.find(d.scratch().string()) != std::string::npos);
    CHECK(r.error.find("hint: use a plain name") != std::string::npos);
    CHECK_FALSE(fs::exists(escape));
  }
  // Reading outside is refused as well.
  auto r = run_cell(runner, d.make("y = load(\"/etc/hostname\")"));
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("'/etc/hostname' is outside them") != std::string::npos);
}

TEST_CASE("lesson files: a lesson's function stays confined when the student calls it", "[lesson]") {
  LessonDir d;
  test::Lab lab;
  lesson::LessonRunner runner(lab.ws, lab.session);  // the GUI's way: the console's own session
  const std::string escape = (d.outside / "escape.npy").string();
  auto r = run_cell(runner, d.make("def dump(x):\n    save(\"" + escape + "\", x)"));
  REQUIRE(r.ok);
  CHECK(lab.session.interpreter().file_policy() == nullptr);  // the console is not confined
  CHECK_FALSE(lab.run("dump(tensor([1.0]))"));
  CHECK(lab.err.find("a lesson reads and writes files only in its scratch folder") != std::string::npos);
  CHECK_FALSE(fs::exists(escape));
  lab.ok("save(\"" + escape + "\", tensor([1.0]))");  // the student's own code may
  CHECK(fs::exists(escape));
}
