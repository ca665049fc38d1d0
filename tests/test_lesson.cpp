// The lesson format, its runner, the progress file, the terminal rendering, and the lessons
// themselves: both language versions carry the same cells, checks, quizzes and directives.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/lang/session.h"
#include "app/lesson/knowledge_map.h"
#include "app/lesson/lesson.h"
#include "app/lesson/player_model.h"
#include "app/lesson/progress.h"
#include "app/lesson/runner.h"
#include "app/lesson/terminal_markdown.h"
#include "app/lesson/terminal_player.h"
#include "core/error.h"
#include "core/workspace.h"

using namespace opscope;
using namespace opscope::lesson;
namespace fs = std::filesystem;

namespace {

const char* kSample = R"(---
id: 7
title: A sample
minutes: 5
prerequisites: [1, 2]
---
# Heading

Some *prose* with `code`.

```ops
a = tensor([1.0, 2.0])
b = a * 3
```

```check
assert b.shape == [2]
assert b.sum().item() == 9.0
```

<!-- show: memory
highlight: b -->

```quiz
What is b[1]?
a) 3.0
b) 6.0
answer: 6.0
verify: b[1].item()
explain: 2 times 3.
```

```python
not a cell
```

- a list item
  ```ops
  not a cell either: it is inside the list
  ```
)";

std::string lessons_root() {
  if (const char* e = std::getenv("OPSCOPE_LESSONS")) return e;
  return OPSCOPE_LESSONS_DIR;
}

// A temporary lessons folder holding the given files, removed afterwards.
struct TempLessons {
  fs::path dir;
  TempLessons() {
    dir = fs::temp_directory_path() / ("opscope-lessons-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(dir / "en");
  }
  ~TempLessons() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    fs::path p = dir / "en" / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

}  // namespace

TEST_CASE("a lesson parses into front matter and blocks with their lines", "[lesson]") {
  Lesson L = parse_lesson(kSample, "lessons/en/07-sample.md");
  CHECK(L.number == 7);
  CHECK(L.title == "A sample");
  CHECK(L.minutes == 5);
  CHECK(L.prerequisites == std::vector<int>{1, 2});
  CHECK(L.slug == "07-sample");
  CHECK(L.lang == "en");
  std::vector<Block::Kind> kinds;
  for (auto& b : L.blocks) kinds.push_back(b.kind);
  using K = Block::Kind;
  REQUIRE(kinds == std::vector<K>{K::prose, K::cell, K::check, K::directive, K::directive, K::quiz, K::prose});
  CHECK(L.blocks[0].line == 7);
  CHECK(L.blocks[1].line == 11);
  CHECK(L.blocks[1].text == "a = tensor([1.0, 2.0])\nb = a * 3\n");
  CHECK(L.blocks[2].line == 16);
  CHECK(L.blocks[3].directive.name == "show");
  CHECK(L.blocks[3].directive.argument == "memory");
  CHECK(L.blocks[4].directive.name == "highlight");
  CHECK(L.blocks[4].directive.argument == "b");
  const Quiz& q = L.blocks[5].quiz;
  CHECK(q.question == "What is b[1]?");
  CHECK(q.choices.size() == 2);
  CHECK(q.answer == "6.0");
  CHECK(q.verify == "b[1].item()");
  CHECK(q.explain == "2 times 3.");
  // Ordinary code samples and fences inside lists stay prose.
  CHECK(L.blocks[6].text.find("not a cell") != std::string::npos);
  CHECK(L.blocks[6].text.find("inside the list") != std::string::npos);
}

TEST_CASE("lesson format errors name the file and line", "[lesson]") {
  std::string bad = kSample;
  bad.replace(bad.find("show: memory"), 12, "shwo: memory");
  try {
    parse_lesson(bad, "x/en/07-s.md");
    FAIL("an unknown directive was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("x/en/07-s.md:21: unknown directive 'shwo'") != std::string::npos);
  }
  CHECK_THROWS_WITH(parse_lesson("# no front matter\n", "f.md"),
                    Catch::Contains("f.md:1: a lesson starts with front matter"));
  std::string no_answer = kSample;
  no_answer.replace(no_answer.find("answer: 6.0"), 11, "");
  CHECK_THROWS_WITH(parse_lesson(no_answer, "f.md"), Catch::Contains("this quiz has no answer"));
}

TEST_CASE("a show: directive names a panel the window has: a misspelt one fails at its line", "[lesson]") {
  const size_t at = std::string(kSample).find("show: memory");
  std::string misspelt = kSample;
  misspelt.replace(at, 12, "show: kernel_lb");
  try {
    parse_lesson(misspelt, "x/en/07-s.md");
    FAIL("a show: of a panel that does not exist was accepted");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("x/en/07-s.md:21: show: no panel named 'kernel_lb'"));
    CHECK_THAT(e.hint(), Catch::Contains("kernel_lab"));  // the hint lists the panels
  }
  std::string lab = kSample;  // the Kernel Lab takes its operator and sizes
  lab.replace(at, 12, "show: kernel_lab matmul 64");
  CHECK(parse_lesson(lab, "x/en/07-s.md").blocks.size() == parse_lesson(kSample, "x/en/07-s.md").blocks.size());
  std::string bad_op = kSample;
  bad_op.replace(at, 12, "show: kernel_lab matmull 64");
  CHECK_THROWS_WITH(parse_lesson(bad_op, "x/en/07-s.md"),
                    Catch::Contains("x/en/07-s.md:21: show: the kernel lab cannot feed 'matmull'"));
  std::string bad_size = kSample;
  bad_size.replace(at, 12, "show: kernel_lab matmul 6x4");
  CHECK_THROWS_WITH(parse_lesson(bad_size, "x/en/07-s.md"), Catch::Contains("sizes are positive numbers, got '6x4'"));
  std::string extra = kSample;
  extra.replace(at, 12, "show: memory now");
  CHECK_THROWS_WITH(parse_lesson(extra, "x/en/07-s.md"), Catch::Contains("show: memory takes no more words"));
}

TEST_CASE("the runner runs cells and checks; a failing check is reported at its lesson line with values", "[lesson]") {
  Lesson L = parse_lesson(kSample, "lessons/en/07-sample.md");
  CHECK(check_lesson(L).empty());

  std::string wrong = kSample;
  wrong.replace(wrong.find("== 9.0"), 6, "== 10.0");
  Lesson W = parse_lesson(wrong, "lessons/en/07-sample.md");
  const std::string problem = check_lesson(W);
  CHECK_THAT(problem, Catch::Contains("lessons/en/07-sample.md:18:"));
  CHECK_THAT(problem, Catch::Contains("assertion failed: b.sum().item() == 10.0"));
  CHECK_THAT(problem, Catch::Contains("left side: 9.0"));

  std::string wrong_quiz = kSample;
  wrong_quiz.replace(wrong_quiz.find("answer: 6.0"), 11, "answer: 3.0");
  Lesson Q = parse_lesson(wrong_quiz, "q.md");
  CHECK_THAT(check_lesson(Q), Catch::Contains("the quiz's answer is '3.0' but the engine computes b[1].item() = 6.0"));

  std::string failing_cell = kSample;
  failing_cell.replace(failing_cell.find("b = a * 3"), 9, "b = a @ 3");
  CHECK_THAT(check_lesson(parse_lesson(failing_cell, "c.md")), Catch::Contains("c.md:13:"));
}

TEST_CASE("each runner has a workspace of its own", "[lesson]") {
  LessonRunner a, b;
  REQUIRE(a.run_code("x = param(zeros(256, 256))").ok);
  BlockResult r = b.run_code("assert live_bytes(\"parameter\") == 0\nassert x == 1");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("unknown name 'x'"));  // the first assert passed: b saw no parameter of a
  CHECK(a.run_code("assert live_bytes(\"parameter\") == 256 * 256 * 4").ok);
}

TEST_CASE("assert in the language shows what was compared", "[lesson][repl]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session s(ws);
  std::ostringstream out, err;
  CHECK(s.run("x = 2\nassert x * 2 == 4", "t", out, err));
  CHECK_FALSE(s.run("assert x + 1 > 5, \"x is small\"", "t", out, err));
  CHECK_THAT(err.str(), Catch::Contains("t:1:1: error: assertion failed: x + 1 > 5 — x is small"));
  CHECK_THAT(err.str(), Catch::Contains("left side: 3, right side: 5"));
  err.str("");
  CHECK_FALSE(s.run("assert not x", "t", out, err));
  CHECK_THAT(err.str(), Catch::Contains("the condition's value: False"));
}

TEST_CASE("quiz answers ignore case, spaces and a final period; a choice's letter works", "[lesson]") {
  Quiz q;
  q.answer = "[2, 3]";
  q.choices = {"a) [3, 2]", "b) [2, 3]"};
  CHECK(quiz_answer_matches(q, "[2,3]"));
  CHECK(quiz_answer_matches(q, " b "));
  CHECK(quiz_answer_matches(q, "b)"));
  CHECK_FALSE(quiz_answer_matches(q, "a"));
  CHECK_FALSE(quiz_answer_matches(q, "[3, 2]"));
  CHECK_FALSE(quiz_answer_matches(q, ""));
}

TEST_CASE("the player model steps, answers, follows directives and remembers progress", "[lesson]") {
  TempLessons t;
  t.write("07-sample.md", kSample);
  const std::string progress = (t.dir / "config" / "progress.json").string();
  {
    LessonPlayerModel m(t.dir.string(), "en", "7", progress);
    m.step();  // prose
    BlockResult r = m.step();  // the cell
    CHECK(r.ok);
    m.step();  // the check
    m.step();
    m.step();
    CHECK(m.panel() == "memory");
    CHECK(m.highlight() == "b");
    QuizFeedback f = m.answer("b");
    CHECK(f.right);
    CHECK(load_progress(progress).lessons["07"].block == 6);
    CHECK(load_progress(progress).last == "07");
  }
  {
    LessonPlayerModel m(t.dir.string(), "en", "sample", progress);
    CHECK(m.saved_position() == 6);
    CHECK(m.fast_forward(6) == 6);  // re-runs the cell quietly: b exists again
    CHECK(m.runner().run_code("assert b[1].item() == 6.0").ok);
    CHECK(m.run_all());
    CHECK(load_progress(progress).lessons["07"].finished);
  }
  std::string failing = kSample;
  failing.replace(failing.find("b = a * 3"), 9, "b = a @ 3");
  t.write("08-failing.md", failing);
  LessonPlayerModel m(t.dir.string(), "en", "8");
  CHECK_FALSE(m.run_all());
  CHECK(m.current()->kind == Block::Kind::cell);  // stays on the failed cell
  CHECK_FALSE(m.result(1)->ok);
}

TEST_CASE("a damaged progress file is a fresh start", "[lesson]") {
  TempLessons t;
  const std::string path = t.write("progress.json", "{ not json");
  CHECK(load_progress(path).lessons.empty());
  Progress p;
  p.lang = "zh";
  p.lessons["03"] = {5, true, 2, {}};
  REQUIRE(save_progress(p, path));
  Progress q = load_progress(path);
  CHECK(q.lang == "zh");
  CHECK(q.lessons["03"].block == 5);
  CHECK(q.lessons["03"].finished);
}

TEST_CASE("two windows writing the progress file keep each other's work", "[lesson]") {
  // Two browser tabs (or two desktop windows) read the file, then each saves what it did.
  TempLessons t;
  const std::string path = t.write("progress.json", "{}");
  Progress base;
  base.lessons["04"].block = 3;
  base.lessons["04"].exercises["a"].code = "a v1";
  base.lessons["04"].exercises["b"].code = "b v1";
  REQUIRE(save_progress(base, path));
  Progress tab1 = load_progress(path), tab2 = load_progress(path);

  ExerciseProgress& a = tab1.lessons["04"].exercises["a"];  // tab 1 passes exercise a
  a.code = "a solved";
  a.attempts = 2;
  a.passed = true;
  REQUIRE(save_progress(tab1, path));
  ExerciseProgress& b = tab2.lessons["04"].exercises["b"];  // tab 2, which read before, passes b
  b.code = "b solved";
  b.attempts = 1;
  b.passed = true;
  tab2.lessons["07"].block = 2;  // and opens another lesson
  REQUIRE(save_progress(tab2, path));

  Progress q = load_progress(path);
  CHECK(q.lessons["04"].exercises["a"].passed);
  CHECK(q.lessons["04"].exercises["a"].attempts == 2);
  CHECK(q.lessons["04"].exercises["a"].code == "a solved");  // tab 2's older copy of a is not written back
  CHECK(q.lessons["04"].exercises["b"].passed);
  CHECK(q.lessons["04"].exercises["b"].code == "b solved");
  CHECK(q.lessons["04"].block == 3);
  CHECK(q.lessons["07"].block == 2);

  // A passed exercise stays passed, attempts never go down; an edit made in the stale tab wins,
  // being the newest; a restart (block 0) is kept.
  tab1.lessons["04"].exercises["b"].code = "b edited in tab 1";
  tab1.lessons["04"].exercises["b"].passed = false;
  tab1.lessons["04"].block = 0;
  REQUIRE(save_progress(tab1, path));
  q = load_progress(path);
  CHECK(q.lessons["04"].exercises["b"].passed);
  CHECK(q.lessons["04"].exercises["b"].attempts == 1);
  CHECK(q.lessons["04"].exercises["b"].code == "b edited in tab 1");
  CHECK(q.lessons["04"].block == 0);
  CHECK(q.lessons["07"].block == 2);

  // A copy read before a newer write, unchanged, does not undo it.
  Progress stale = q;
  Progress fresh = load_progress(path);
  fresh.lessons["07"].block = 5;
  fresh.lessons["04"].exercises["a"].code = "a again";
  REQUIRE(save_progress(fresh, path));
  stale.lessons["09"].block = 1;
  REQUIRE(save_progress(stale, path));
  q = load_progress(path);
  CHECK(q.lessons["07"].block == 5);
  CHECK(q.lessons["04"].exercises["a"].code == "a again");
  CHECK(q.lessons["09"].block == 1);
}

TEST_CASE("Markdown renders for a terminal: headings, lists, tables, CJK width", "[lesson]") {
  CHECK(display_width("abc") == 3);
  CHECK(display_width("计算图") == 6);
  CHECK(display_width("\x1b[1mab\x1b[0m") == 2);
  const std::string r =
      render_markdown("# Title\n\nSome **bold** text.\n\n- one\n- two\n\n| a | bb |\n|---|---|\n| 1 | 22 |\n",
                      TerminalStyle{false, 40});
  CHECK_THAT(r, Catch::Contains("Title\n====="));
  CHECK_THAT(r, Catch::Contains("Some *bold* text."));
  // A line break before a code span is a space outside the span.
  CHECK_THAT(render_markdown("such as `stride` and\n`padding`.", TerminalStyle{false, 80}),
             Catch::Contains("`stride` and `padding`."));
  CHECK_THAT(r, Catch::Contains("  • one\n  • two"));
  CHECK_THAT(r, Catch::Contains("  a  │ bb"));
  CHECK_THAT(r, Catch::Contains("  1  │ 22"));
  // Wrapping counts a CJK character as two columns and may break between them.
  const std::string zh = render_markdown("计算图是一份菜谱计算图是一份菜谱计算图是一份菜谱", TerminalStyle{false, 20});
  std::istringstream lines(zh);
  std::string l;
  int n = 0;
  while (std::getline(lines, l))
    if (!l.empty()) {
      CHECK(display_width(l) <= 20);
      ++n;
    }
  CHECK(n == 3);
}

TEST_CASE("every lesson's English and Chinese versions carry the same cells, checks, quizzes and directives",
          "[lesson]") {
  const std::string dir = lessons_root();
  const auto en = lesson_files(dir, "en");
  const auto zh = lesson_files(dir, "zh");
  REQUIRE(en.size() == 11);
  REQUIRE(zh.size() == en.size());
  for (size_t i = 0; i < en.size(); ++i) {
    INFO(en[i] << " / " << zh[i]);
    CHECK(fs::path(en[i]).filename() == fs::path(zh[i]).filename());
    Lesson a = load_lesson(en[i]), b = load_lesson(zh[i]);
    CHECK(a.number == static_cast<int>(i) + 1);
    CHECK(a.minutes >= 5);
    CHECK(a.minutes <= 45);  // the reading, the cells and the exercises together
    CHECK(structure_problems(a).empty());  // goals first, a recap last, each quiz before its answer
    CHECK(a.count(Block::Kind::cell) > 0);
    CHECK(a.count(Block::Kind::check) > 0);
    CHECK(compare_languages(a, b).empty());
    // And the comparison is not blind: a changed check is caught.
    for (auto& blk : b.blocks)
      if (blk.kind == Block::Kind::check) {
        blk.text += "assert True\n";
        break;
      }
    CHECK_THAT(compare_languages(a, b), Catch::Contains("the checks differ"));
  }
}

TEST_CASE("an `ops fails` cell must fail, and its error becomes its output", "[lesson]") {
  const std::string head = "---\nid: 1\ntitle: t\nminutes: 5\n---\n";
  Lesson good = parse_lesson(head + "```ops fails\nx = relu(nope)\n```\n", "f.md");
  REQUIRE(good.blocks.size() == 1);
  CHECK(good.blocks[0].expect_error);
  LessonRunner runner;
  BlockResult r = runner.run(good, good.blocks[0]);
  CHECK(r.ok);
  CHECK_THAT(r.output, Catch::Contains("f.md:7:10: error: unknown name 'nope'"));
  Lesson bad = parse_lesson(head + "```ops fails\nx = 1\n```\n", "f.md");
  CHECK_THAT(check_lesson(bad),
             Catch::Contains("f.md:6: error: this cell is marked `ops fails` but it ran without an error"));
  // The two language versions must agree on it too.
  Lesson plain = parse_lesson(head + "```ops\nx = relu(nope)\n```\n", "g.md");
  CHECK_THAT(compare_languages(good, plain), Catch::Contains("the cells differ"));
}

TEST_CASE("a quoted title loses its quotes", "[lesson]") {
  Lesson L = parse_lesson("---\nid: 2\ntitle: \"Softmax: overflow\"\nminutes: 5\n---\ntext\n", "t.md");
  CHECK(L.title == "Softmax: overflow");
}

TEST_CASE("a player model can run in a front end's own workspace and session", "[lesson]") {
  TempLessons t;
  t.write("07-sample.md", kSample);
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session session(ws);
  std::ostringstream out, err;
  REQUIRE(session.run("leftover = 1", "t", out, err));
  LessonPlayerModel m(t.dir.string(), "en", "7", "", ws, session);
  CHECK_FALSE(session.run("leftover", "t", out, err));  // opening a lesson empties the workspace
  CHECK(m.run_all());
  // The cells ran in the front end's session: its panels see their nodes and variables.
  CHECK(ws.graph().num_nodes() > 0);
  CHECK(session.run("assert b.shape == [2]", "t", out, err));
}

TEST_CASE("prose parses into styled blocks a GUI can draw", "[lesson]") {
  auto blocks = parse_markdown(
      "## Two\n\nA **bold** `x` and\n中文\n跨行\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```cuda\nk<<<1, "
      "1>>>();\n```\n");
  REQUIRE(blocks.size() == 6);  // heading, paragraph, two list items, table, code
  CHECK(blocks[0].kind == MdBlock::Kind::heading);
  CHECK(blocks[0].heading_level == 2);
  CHECK(plain_text(blocks[0].spans) == "Two");
  // A line break is a space between words and nothing between Chinese characters.
  CHECK(plain_text(blocks[1].spans) == "A bold x and 中文跨行");
  REQUIRE(blocks[1].spans.size() >= 4);
  CHECK(blocks[1].spans[1].strong);
  CHECK(blocks[1].spans[1].text == "bold");
  CHECK(blocks[1].spans[3].code);
  CHECK(blocks[2].list_depth == 1);
  CHECK(blocks[2].bullet == "•");
  CHECK(blocks[2].tight);
  CHECK(plain_text(blocks[3].spans) == "two");
  CHECK(blocks[4].kind == MdBlock::Kind::table);
  CHECK(blocks[5].kind == MdBlock::Kind::code);
  CHECK(blocks[5].code_lang == "cuda");
  CHECK(blocks[5].code == "k<<<1, 1>>>();\n");
  auto table = parse_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n");
  REQUIRE(table.size() == 1);
  CHECK(table[0].header_rows == 1);
  CHECK(table[0].rows.size() == 2);
  CHECK(plain_text(table[0].rows[1][1]) == "2");
}

TEST_CASE("the terminal player pages through a lesson, runs its cells and asks its quiz", "[lesson]") {
  TempLessons t;
  t.write("07-sample.md", kSample);
  const std::string progress = (t.dir / "progress.json").string();
  TerminalPlayerOptions o;
  o.dir = t.dir.string();
  o.id = "7";
  o.progress_path = progress;
  std::istringstream keys("\nb\n");  // Enter runs the cell; "b" answers the quiz with its letter
  std::ostringstream out;
  CHECK(play_in_terminal(o, keys, out) == 0);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("7 · A sample · ~5 min"));
  CHECK_THAT(text, Catch::Contains(">>> a = tensor([1.0, 2.0])"));
  CHECK_THAT(text, Catch::Contains("engine check: assert b.shape == [2]"));
  CHECK_THAT(text, Catch::Contains("Right."));
  CHECK_THAT(text, Catch::Contains("Lesson finished."));
  CHECK(load_progress(progress).lessons["07"].finished);
  CHECK(load_progress(progress).lessons["07"].quizzes_right == 1);
  // Typed code runs at the prompt in the lesson's workspace before the cell does.
  std::istringstream typed("print(40 + 2)\n\n\n");
  std::ostringstream out2;
  o.progress_path.clear();
  play_in_terminal(o, typed, out2);
  CHECK_THAT(out2.str(), Catch::Contains("42"));
  CHECK_THAT(out2.str(), Catch::Contains("Not quite: the answer is 6.0"));
}

TEST_CASE("checks and quiz verifications leave nothing in the graph; the cells' nodes stay", "[lesson]") {
  Lesson L = parse_lesson(kSample, "lessons/en/07-sample.md");
  LessonRunner r;
  size_t after_cells = 0;
  for (const Block& b : L.blocks) {
    const BlockResult res = b.kind == Block::Kind::quiz ? r.verify_quiz(L, b) : r.run(L, b);
    CHECK(res.ok);
    if (b.kind == Block::Kind::cell) after_cells = r.workspace().graph().num_nodes();
    // The check indexes b (b.sum()) and the quiz b[1]: neither adds a node.
    if (b.kind == Block::Kind::check || b.kind == Block::Kind::quiz)
      CHECK(r.workspace().graph().num_nodes() == after_cells);
  }
  CHECK(after_cells == 1);  // b = a * 3
  // Lesson 9: its checks index tensors (E[0], W.grad[3], y_eval[0:1]) and its quizzes W.grad[3][0]
  // (verified once the cells have run): none of them adds a slice; its cells' indexing stays (the
  // print of W.grad[3] and W.grad[0], BatchNorm's imgs[0:1] and y_eval[0:1]). A later statement
  // with a loop (the simulated-GPU helpers walk last_launch()'s sites) drops the unreachable tape,
  // as any loop at the console does, so the count may fall after a block, never rise after a check.
  LessonRunner nine;
  const Lesson L9 = load_lesson(find_lesson_file(lessons_dir(), "en", "9"));
  const auto slices = [&nine] {
    int k = 0;
    for (const Node& n : nine.workspace().graph().nodes()) k += n.op->name == "slice";
    return k;
  };
  int most = 0;
  for (const Block& b : L9.blocks) {
    if (b.kind == Block::Kind::quiz) continue;
    const int before = slices();
    REQUIRE(nine.run(L9, b).ok);
    if (b.kind == Block::Kind::check) CHECK(slices() <= before);
    most = std::max(most, slices());
  }
  CHECK(most >= 4);
  for (const Block& b : L9.blocks) {
    if (b.kind != Block::Kind::quiz) continue;
    const int before = slices();
    REQUIRE(nine.verify_quiz(L9, b).ok);
    CHECK(slices() <= before);
  }
}

TEST_CASE("the knowledge map: every concept points at a lesson section that exists, in both languages", "[lesson]") {
  const KnowledgeMap map = load_knowledge_map(knowledge_map_path());
  CHECK(map.concepts.size() >= 12);
  const std::vector<std::string> problems = check_knowledge_map(map, lessons_dir());
  for (const auto& p : problems) FAIL_CHECK(p);
  // Every lesson before the map has a concept on it.
  for (int lesson = 1; lesson <= 9; ++lesson) {
    bool found = false;
    for (const auto& c : map.concepts) found = found || c.lesson == lesson;
    CHECK(found);
  }
  const MapSection conv = find_section(map.concepts[static_cast<size_t>(map.find("conv"))], map, lessons_dir());
  CHECK(conv.slug == "06-convolution");
  CHECK(conv.heading_en == "Different cost");
  CHECK(conv.heading_zh == "不同的代价");
  CHECK(conv.first_block < conv.end_block);
}

TEST_CASE("the knowledge map: mistakes in the file are reported with their lines", "[lesson]") {
  CHECK_THROWS_WITH(parse_knowledge_map("concept a\n  en: A\n  colour: red\n", "m.txt"),
                    Catch::Contains("m.txt:3: unknown key 'colour:'"));
  CHECK_THROWS_WITH(parse_knowledge_map("concept a\n  en: A\n  zh: 甲\n", "m.txt"),
                    Catch::Contains("m.txt:1: concept 'a' needs `lesson: N`"));
  CHECK_THROWS_WITH(parse_knowledge_map("  en: A\n", "m.txt"), Catch::Contains("before any `concept ID`"));
  const KnowledgeMap bad = parse_knowledge_map(
      "concept a\n  en: A\n  zh: 甲\n  lesson: 6\n  section: No such heading\n  after: nobody\n"
      "concept b\n  en: B\n  zh: 乙\n  lesson: 42\n",
      "m.txt");
  const std::vector<std::string> problems = check_knowledge_map(bad, lessons_dir());
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Catch::Contains("m.txt:1: concept 'a': lesson 6 has no section 'No such heading'"));
  CHECK_THAT(problems[1], Catch::Contains("`after: nobody` is not a concept"));
  CHECK_THAT(problems[2], Catch::Contains("m.txt:7: concept 'b': lesson 42 does not exist"));
}

TEST_CASE("the knowledge map is coloured by the progress file", "[lesson]") {
  MapSection s;
  s.progress_key = "06";
  s.first_block = 5;
  s.end_block = 9;
  Progress p;
  CHECK(concept_status(s, p) == ConceptStatus::not_yet);
  p.lessons["06"].block = 3;
  CHECK(concept_status(s, p) == ConceptStatus::not_yet);
  p.lessons["06"].block = 7;
  CHECK(concept_status(s, p) == ConceptStatus::in_progress);
  p.lessons["06"].block = 9;
  CHECK(concept_status(s, p) == ConceptStatus::learned);
  p.lessons["06"] = {0, true, 0, {}};
  CHECK(concept_status(s, p) == ConceptStatus::learned);
}
