// The lesson player as a student meets it: a quiz gives another try before the answer, a cell
// that needs the desktop app says so (and runs here, on the desktop).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "app/lesson/lesson.h"
#include "app/lesson/player_model.h"

using namespace opscope;
using namespace opscope::lesson;
namespace fs = std::filesystem;

namespace {

const char* kTries = R"(---
id: 9
title: Tries
minutes: 1
---
Some prose.

```ops desktop
x = tensor([1.0, 2.0]) * 2
```

```check desktop
assert x[1].item() == 4.0
```

```quiz
What is x[0]?
answer: 2.0
explain: 1 times 2.
```

```ops
y = 1
```
)";

struct OneLesson {
  fs::path dir = fs::temp_directory_path() / ("opscope-player-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  OneLesson() {
    fs::create_directories(dir / "en");
    std::ofstream(dir / "en" / "09-tries.md") << kTries;
  }
  ~OneLesson() { fs::remove_all(dir); }
};

}  // namespace

TEST_CASE("a wrong quiz answer gets another try before the answer is shown", "[lesson]") {
  OneLesson l;
  LessonPlayerModel m(l.dir.string(), "en", "9");
  CHECK(m.lesson().blocks[1].desktop_only);  // the cell and the check say what they need
  CHECK(m.lesson().blocks[2].desktop_only);
  CHECK_FALSE(m.lesson().blocks[4].desktop_only);
  m.step();  // prose
  CHECK(m.step().ok);  // the desktop runs the desktop's cells
  CHECK(m.step().ok);
  REQUIRE(m.current()->kind == Block::Kind::quiz);
  QuizFeedback first = m.answer("3.0");
  CHECK_FALSE(first.right);
  CHECK_FALSE(first.final);
  CHECK(first.expected.empty());  // not given away on the first try
  CHECK(m.current()->kind == Block::Kind::quiz);  // still asking
  QuizFeedback second = m.answer("2");
  CHECK(second.right);
  CHECK(second.final);
  CHECK(second.tries == 2);
  CHECK(m.current()->kind == Block::Kind::cell);
}

TEST_CASE("two wrong answers end the quiz with the answer; an empty one gives up at once", "[lesson]") {
  OneLesson l;
  LessonPlayerModel m(l.dir.string(), "en", "9");
  m.fast_forward(3);
  REQUIRE(m.current()->kind == Block::Kind::quiz);
  CHECK_FALSE(m.answer("5").final);
  QuizFeedback last = m.answer("7");
  CHECK(last.final);
  CHECK_FALSE(last.right);
  CHECK(last.expected == "2.0");
  CHECK(last.explain == "1 times 2.");
  LessonPlayerModel n(l.dir.string(), "en", "9");
  n.fast_forward(3);
  QuizFeedback skipped = n.answer("");
  CHECK(skipped.final);
  CHECK(skipped.expected == "2.0");
}
