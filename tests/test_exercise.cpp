// Exercises: the fence's format and its errors, the two language versions alike, an attempt
// graded (pass, fail with the failing element and the student's lines, error, time limit), the
// exercise proved both ways, and a class's folder graded into one table.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "app/lesson/exercise_class.h"
#include "app/lesson/exercise_grader.h"
#include "app/lesson/exercise_sandbox.h"
#include "app/lesson/exercise_text.h"
#include "app/lesson/lesson.h"
#include "app/lesson/player_model.h"
#include "app/lesson/progress.h"
#include "app/lesson/runner.h"
#include "app/lesson/terminal_player.h"
#include "core/error.h"
#include "platform/platform.h"

using namespace opscope;
using namespace opscope::lesson;
namespace fs = std::filesystem;

namespace {

const char* kHead = "---\nid: 4\ntitle: Forward and backward\nminutes: 5\n---\n";

// An exercise fence; `starter_return` and `solution_return` are its backward's return lines.
std::string exercise_fence(const std::string& extra_keys = "") {
  return R"EX(````exercise
id: scale-backward
title: scale's backward
story: A backward that was wrong for two days.
)EX" + extra_keys +
         R"EX([prompt]
Define `@op def scale3(x)` = 3·x with its backward.
[starter]
@op
def scale3(x):
    return x * 3.0

@scale3.backward
def scale3_backward(dy):
    return dy  # the factor is missing
[hint]
The derivative of 3·x is 3.
[hint]
Multiply `dy` by it.
[check] the values are 3·x
x = randn(2, 3)
expect_close(scale3(x), x * 3.0, what="scale3(x)")
[check] gradcheck
expect_gradcheck(scale3, randn(2, 3))
[solution]
@op
def scale3(x):
    return x * 3.0

@scale3.backward
def scale3_backward(dy):
    return dy * 3.0
````
)EX";
}

Lesson sample_lesson(const std::string& keys = "", const std::string& path = "lessons/en/04-fb.md") {
  return parse_lesson(kHead + exercise_fence(keys), path);
}

struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name) {
    dir = fs::temp_directory_path() / ("opscope-" + name + "-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string write(const std::string& rel, const std::string& text) const {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

}  // namespace

TEST_CASE("an exercise fence parses into its parts, each with its line", "[lesson][exercise]") {
  const Lesson L = sample_lesson("seconds: 5\n");
  REQUIRE(L.blocks.size() == 1);
  REQUIRE(L.blocks[0].kind == Block::Kind::exercise);
  const Exercise& ex = L.blocks[0].exercise;
  CHECK(ex.id == "scale-backward");
  CHECK(ex.title == "scale's backward");
  CHECK(ex.story == "A backward that was wrong for two days.");
  CHECK(ex.prompt == "Define `@op def scale3(x)` = 3·x with its backward.");
  CHECK(ex.seconds == 5);
  CHECK(ex.starter_line == 13);  // the [starter] line; the code starts on the next
  CHECK(ex.starter.rfind("@op\ndef scale3(x):", 0) == 0);
  REQUIRE(ex.hints.size() == 2);
  CHECK(ex.hints[1] == "Multiply `dy` by it.");
  REQUIRE(ex.checks.size() == 2);
  CHECK(ex.checks[0].description == "the values are 3·x");
  CHECK(ex.checks[1].code == "expect_gradcheck(scale3, randn(2, 3))\n");
  CHECK(ex.checks[1].line == 28);
  CHECK(ex.solution.find("return dy * 3.0") != std::string::npos);
  CHECK(exercises_of(L).size() == 1);
}

TEST_CASE("mistakes in an exercise fence are reported at their line and column", "[lesson][exercise]") {
  auto error_of = [](std::string text) {
    try {
      parse_lesson(kHead + text, "l.md");
    } catch (const Error& e) {
      return std::string(e.what()) + " | " + e.hint();
    }
    return std::string("no error");
  };
  std::string f = exercise_fence();
  CHECK_THAT(error_of(std::string(f).replace(f.find("[hint]"), 6, "[hnit]")),
             Catch::StartsWith("l.md:20:2: unknown exercise section [hnit]"));
  CHECK_THAT(error_of(std::string(f).replace(f.find("story:"), 6, "stroy:")),
             Catch::StartsWith("l.md:9:1: unknown exercise key 'stroy'"));
  CHECK_THAT(error_of(std::string(f).replace(f.find("id: scale-backward"), 18, "id: Scale_Backward")),
             Catch::StartsWith("l.md:7:5: an exercise id is lower-case letters"));
  CHECK_THAT(error_of(std::string(f).replace(f.find("[check] gradcheck"), 17, "[check]")),
             Catch::StartsWith("l.md:27:8: a [check] needs a description"));
  const std::string story = "story: A backward that was wrong for two days.\n";
  CHECK_THAT(error_of(std::string(f).replace(f.find(story), story.size(), "")),
             Catch::StartsWith("l.md:6:1: exercise 'scale-backward' has no story"));
  // A typo in a check's code: at its line and column in the lesson file.
  CHECK_THAT(error_of(std::string(f).replace(f.find("expect_gradcheck(scale3"), 23, "expect_gradcheck(scale3 +")),
             Catch::StartsWith("l.md:28:"));
  CHECK_THAT(error_of(std::string(f).replace(f.find("[solution]"), 10, "[starter]")),
             Catch::Contains("a second [starter] section"));
  CHECK_THAT(error_of(std::string(f).replace(f.find("[prompt]\n"), 9, "[prompt]\n\n")).substr(0, 8),
             Catch::Equals("no error"));
}

TEST_CASE("two language versions of an exercise share its code; comments and text are translated",
          "[lesson][exercise]") {
  const Exercise a = sample_lesson().blocks[0].exercise;
  Exercise b = a;
  b.title = "scale 的反向";
  b.hints = {"3·x 的导数是 3。", "乘上它。"};
  b.starter.replace(b.starter.find("# the factor is missing"), 23, "# 少了系数");
  CHECK(compare_exercises(a, b).empty());
  b.checks[1].code = "expect_gradcheck(scale3, randn(3))\n";
  CHECK_THAT(compare_exercises(a, b), Catch::Contains("the code of [check] 2 differs"));
  b = a;
  b.solution += "y = 1\n";
  CHECK_THAT(compare_exercises(a, b), Catch::Contains("the [solution] code differs"));
  CHECK(code_without_comments("x = '#'  # c\n# only\n\ny = 2\n") == "x = '#'\ny = 2\n");
}

TEST_CASE("an attempt: a pass, and a fail naming the element, both values and the student's lines",
          "[lesson][exercise]") {
  const Lesson L = sample_lesson();
  const Exercise& ex = L.blocks[0].exercise;
  const Attempt good = run_attempt(L, ex, ex.solution, "ana/scale-backward.ops");
  CHECK(good.status == AttemptStatus::passed);
  CHECK(good.checks_passed() == 2);

  const std::string wrong =
      "x0 = 1\n@op\ndef scale3(x):\n    return x * 3.0\n\n@scale3.backward\ndef scale3_backward(dy):\n    return dy * "
      "2.0\n";
  const Attempt bad = run_attempt(L, ex, wrong, "ben/scale-backward.ops");
  CHECK(bad.status == AttemptStatus::failed);
  REQUIRE(bad.checks.size() == 2);
  CHECK(bad.checks[0].passed);
  CHECK_FALSE(bad.checks[1].passed);
  CHECK_THAT(bad.checks[1].message, Catch::Contains("the gradient of scale3 for its input 'x' is wrong at ["));
  CHECK_THAT(bad.checks[1].message, Catch::Contains("the backward gives"));
  CHECK_THAT(bad.checks[1].message, Catch::Contains("central differences give"));
  CHECK(bad.checks[1].where == "lessons/en/04-fb.md:28");
  CHECK(bad.checks[1].your_lines ==
        std::vector<std::string>{"ben/scale-backward.ops:3: def scale3(x):", "ben/scale-backward.ops:4: return x * 3.0",
                                 "ben/scale-backward.ops:7: def scale3_backward(dy):",
                                 "ben/scale-backward.ops:8: return dy * 2.0"});
  const std::string text = feedback_text(ex, bad);
  CHECK_THAT(text, Catch::Contains("Not yet: 1/2 checks pass."));
  CHECK_THAT(text, Catch::Contains("✗ gradcheck"));
  CHECK_THAT(text, Catch::Contains("ben/scale-backward.ops:7: def scale3_backward(dy):"));
  CHECK_THAT(attempt_json(ex, bad), Catch::Contains("\"status\": \"fail\""));
}

TEST_CASE("an attempt that fails to run is an error at its line; one that loops is stopped at the time limit",
          "[lesson][exercise]") {
  const Lesson L = sample_lesson("seconds: 1\n");
  const Exercise& ex = L.blocks[0].exercise;
  const Attempt broken = run_attempt(L, ex, "y = 1\nz = relu(nope)\n", "cy/scale-backward.ops");
  CHECK(broken.status == AttemptStatus::error);
  CHECK_THAT(broken.error, Catch::Contains("cy/scale-backward.ops:2:10: error: unknown name 'nope'"));
  CHECK(broken.checks.size() == 2);  // counted, not run
  CHECK(broken.checks_passed() == 0);
  // Exponential recursion: no loop bound catches it, the clock does.
  const Attempt looping =
      run_attempt(L, ex, "def f(n):\n    if n == 0:\n        return 0\n    return f(n - 1) + f(n - 1)\nf(40)\n",
                  "dee/scale-backward.ops");
  CHECK(looping.status == AttemptStatus::timeout);
  CHECK(looping.seconds < 5);
  CHECK_THAT(looping.error, Catch::Contains("time limit of 1 s; stopped at dee/scale-backward.ops:"));
  // The next attempt is not interrupted by what stopped this one.
  CHECK(run_attempt(L, ex, ex.solution, "a.ops").status == AttemptStatus::passed);
}

TEST_CASE("lesson --check proves an exercise both ways: the solution passes and the starter fails",
          "[lesson][exercise]") {
  const Lesson L = sample_lesson();
  CHECK(check_exercise(L, L.blocks[0].exercise).empty());
  Exercise lazy = L.blocks[0].exercise;
  lazy.starter = lazy.solution;  // a starter that already passes would let a student pass vacuously
  CHECK_THAT(check_exercise(L, lazy), Catch::Contains("its [starter] passes every check"));
  Exercise wrong = L.blocks[0].exercise;
  wrong.solution = wrong.starter;
  CHECK_THAT(check_exercise(L, wrong), Catch::Contains("its [solution] does not pass (fail)"));
  Exercise crashing = L.blocks[0].exercise;
  crashing.starter = "x = relu(nope)\n";
  CHECK_THAT(check_exercise(L, crashing), Catch::Contains("its [starter] does not run (error)"));
}

TEST_CASE("saved_for_backward names what an op keeps; expect_close names the element that differs",
          "[lesson][exercise][repl]") {
  LessonRunner r;
  CHECK(
      r.run_code(
           "@op\ndef sq(x):\n    save(x)\n    return x * x\n@sq.backward\ndef sq_b(dy, x):\n    return 2.0 * dy * x\n")
          .ok);
  CHECK(r.run_code("assert saved_for_backward(sq, randn(3)) == [\"x\"]").ok);
  CHECK(r.run_code("assert saved_for_backward(softmax, randn(2, 3)) == [\"output\"]").ok);
  CHECK(r.run_code("assert saved_for_backward(matmul, randn(2, 3), randn(3, 4)) == [\"a\", \"b\"]").ok);
  const BlockResult close =
      r.run_code("expect_close(tensor([[1.0, 2.0], [3.0, 4.0]]), tensor([[1.0, 2.0], [3.0, 5.0]]), what=\"y\")");
  CHECK_FALSE(close.ok);
  CHECK_THAT(close.error, Catch::Contains("y at [1, 1] is 4, expected 5 (1 of 4 elements differ)"));
  CHECK_THAT(r.run_code("expect_close(zeros(2, 3), zeros(3, 2))").error,
             Catch::Contains("the result has shape [2, 3], expected [3, 2]"));
}

TEST_CASE("a class's folder is graded into one table: right, wrong and crashing answers", "[lesson][exercise]") {
  TempDir lessons("exercise-lessons");
  lessons.write("en/04-fb.md", kHead + exercise_fence("seconds: 2\n"));
  const auto course = course_exercises(lessons.dir.string(), "en");
  REQUIRE(course.size() == 1);
  TempDir cls("exercise-class");
  cls.write("ana/scale-backward.ops", course[0].exercise->solution);
  cls.write("ben/scale-backward.ops", course[0].exercise->starter);
  cls.write("cy/scale-backward.ops", "def f(n):\n    return f(n + 1)\nf(0)\n");  // crashes: recursion too deep
  cls.write("cy/notes.txt", "not an answer");
  const ClassGrades g = grade_class(cls.dir.string(), course);
  CHECK(grades_table(g) ==
        "student  scale-backward  passed\n"
        "ana      pass            1/1\n"
        "ben      fail 1/2        0/1\n"
        "cy       error           0/1\n");
  CHECK(grades_csv(g) == "student,scale-backward,passed\nana,pass,1\nben,fail 1/2,0\ncy,error,0\n");
  REQUIRE(g.notes.size() == 1);
  CHECK_THAT(g.notes[0], Catch::Contains("cy/notes.txt: not an answer"));
  CHECK_THAT(g.students[2].attempts.at("scale-backward").error, Catch::Contains("cy/scale-backward.ops:2:"));
}

TEST_CASE("a lesson opens with goals, closes with a recap, and asks each quiz before the cell that answers it",
          "[lesson]") {
  const std::string head = "---\nid: 1\ntitle: t\nminutes: 5\n---\n";
  const std::string good =
      head +
      "```goals\n- count nodes\n```\n\n```quiz\nHow many nodes?\nanswer: 1\nverify: node_count()\n```\n\n"
      "Now run it.\n\n```ops\ny = relu(tensor([1.0]))\n```\n\n```check\nassert node_count() == 1\n```\n\n"
      "```recap\n- one node\n```\n\n<!-- pause -->\n";
  const Lesson L = parse_lesson(good, "g.md");
  CHECK(structure_problems(L).empty());
  CHECK(check_lesson(L).empty());  // the quiz's verify ran after the cell that answers it
  const std::string late =
      head +
      "```ops\nx = 1\n```\n\n```goals\n- g\n```\n\n```check\nassert x == 1\n```\n\n```quiz\nx?\nanswer: 1\n```\n";
  const auto problems = structure_problems(parse_lesson(late, "l.md"));
  REQUIRE(problems.size() == 3);
  CHECK_THAT(problems[0], Catch::Contains("l.md:10: the ```goals block comes after the first cell"));
  CHECK_THAT(problems[1], Catch::Contains("the lesson does not close with a ```recap block"));
  CHECK_THAT(problems[2], Catch::Contains("l.md:18: this quiz is not followed by the cell that answers it"));
}

TEST_CASE("the terminal player: an exercise's file, a hint, a failed check, giving up; the progress file keeps them",
          "[lesson][exercise]") {
  TempDir lessons("exercise-player");
  lessons.write("en/04-fb.md", kHead + exercise_fence() + "\n```recap\n- done\n```\n");
  const std::string progress = (lessons.dir / "config" / "progress.json").string();
  setenv("XDG_DATA_HOME", (lessons.dir / "data").string().c_str(), 1);  // the student's file goes there
  TerminalPlayerOptions o;
  o.dir = lessons.dir.string();
  o.id = "4";
  o.progress_path = progress;
  std::istringstream keys("h\n\ng\n");  // a hint, check the starter as it is, give up
  std::ostringstream out;
  play_in_terminal(o, keys, out);
  unsetenv("XDG_DATA_HOME");
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("Exercise scale-backward · scale's backward"));
  CHECK_THAT(text, Catch::Contains("A backward that was wrong for two days."));
  CHECK_THAT(text, Catch::Contains("Hint 1/2:"));
  CHECK_THAT(text, Catch::Contains("The derivative of 3·x is 3."));
  CHECK_THAT(text, Catch::Contains("Not yet: 1/2 checks pass."));
  CHECK_THAT(text, Catch::Contains("scale-backward.ops:6: def scale3_backward(dy):"));  // the student's file and line
  CHECK_THAT(text, Catch::Contains("The reference solution:"));
  CHECK_THAT(text, Catch::Contains("...     return dy * 3.0"));
  CHECK(text.find("Multiply `dy` by it.") == std::string::npos);  // the second hint was never asked for
  CHECK(fs::exists(lessons.dir / "data" / "opscope" / "lessons" / "04-fb" / "scale-backward.ops"));
  const ExerciseProgress e = load_progress(progress).lessons["04"].exercises["scale-backward"];
  CHECK(e.attempts == 1);
  CHECK(e.hints == 1);
  CHECK(e.gave_up);
  CHECK_FALSE(e.passed);
  CHECK_THAT(e.code, Catch::Contains("return dy  # the factor is missing"));
}

TEST_CASE("the player model: an exercise starts from the saved code, and a pass shows the solution",
          "[lesson][exercise]") {
  TempDir lessons("exercise-model");
  lessons.write("en/04-fb.md", kHead + exercise_fence());
  const std::string progress = (lessons.dir / "progress.json").string();
  {
    LessonPlayerModel m(lessons.dir.string(), "en", "4", progress);
    REQUIRE(m.current()->kind == Block::Kind::exercise);
    CHECK(m.exercise(0).saved.code == m.lesson().blocks[0].exercise.starter);
    CHECK_FALSE(m.exercise(0).solution_visible());
    m.set_exercise_code(0, m.lesson().blocks[0].exercise.solution);
    CHECK(m.check_exercise(0).status == AttemptStatus::passed);
    CHECK(m.exercise(0).solution_visible());
  }
  LessonPlayerModel again(lessons.dir.string(), "en", "4", progress);  // a new session: the code and the pass are kept
  CHECK(again.exercise(0).saved.passed);
  CHECK(again.exercise(0).saved.attempts == 1);
  CHECK_THAT(again.exercise(0).saved.code, Catch::Contains("return dy * 3.0"));
  again.reset_exercise(0);
  CHECK(again.exercise(0).saved.code == again.lesson().blocks[0].exercise.starter);
  CHECK(again.reveal_hint(0) == 1);
  CHECK(again.reveal_hint(0) == 2);
  CHECK(again.reveal_hint(0) == 2);  // two hints, no more
}

namespace {

// An exercise whose checks keep a variable of their own (`secret`), whose set-up defines `given`,
// and which forbids conv2d: what a student could reach to pass without the skill.
Lesson guarded_lesson() {
  return parse_lesson(std::string(kHead) + R"EX(````exercise
id: guarded
title: Doubling
story: The checks cannot be read or replaced.
forbid: conv2d, softmax_backward: it is what you are writing
[prompt]
Write `f(x)` = 2·x.
[setup]
given = 7.0
[starter]
def f(x):
    return x
[hint]
Multiply.
[check] f doubles
secret = randn(3)
expect_close(f(secret), secret * 2.0, what="f(secret)")
[solution]
def f(x):
    return x * 2.0
````
)EX",
                      "lessons/en/04-fb.md");
}

Attempt attempt_at(const Lesson& L, const std::string& code) {
  return run_attempt(L, L.blocks[0].exercise, code, "ana/guarded.ops");
}

}  // namespace

TEST_CASE("the checks run in a scope of their own: the student's code cannot read or replace them",
          "[lesson][exercise]") {
  const Lesson L = guarded_lesson();
  CHECK(attempt_at(L, "def f(x):\n    return x * 2.0\n").status == AttemptStatus::passed);
  // The check's variable is out of the student's functions' sight.
  const Attempt peek = attempt_at(L, "def f(x):\n    return secret * 2.0\n");
  CHECK(peek.status == AttemptStatus::failed);
  CHECK_THAT(peek.checks[0].message, Catch::Contains("ana/guarded.ops:2:12: error: unknown name 'secret'"));
  // Nor can it change a check's tensor in place: zeroing `secret` by an optimizer step would make
  // 2·secret agree with anything zero.
  const Attempt zeroed = attempt_at(L,
                                    "def f(x):\n    x.requires_grad = True\n    backward((x * x).sum())\n    SGD([x], "
                                    "lr=0.5).step()\n    return x * 2.0\n");
  CHECK(zeroed.status == AttemptStatus::failed);
  CHECK_THAT(zeroed.checks[0].message, Catch::Contains("your code changes the checks' tensor 'secret' in place"));
  // A name the student's code keeps is theirs, whatever the checks call theirs.
  CHECK(attempt_at(L, "secret = 100.0\ndef f(x):\n    return x * 2.0 + secret * 0.0\n").status ==
        AttemptStatus::passed);
  // The set-up's names are read freely.
  CHECK(attempt_at(L, "def f(x):\n    return x * (given - 5.0)\n").status == AttemptStatus::passed);
  // Redefining a check's helper, an operator or the set-up is an error at that line, quoted.
  const Attempt fake =
      attempt_at(L, "def f(x):\n    return x\n\ndef expect_close(a, b, what=None):\n    return True\n");
  CHECK(fake.status == AttemptStatus::error);
  CHECK_THAT(fake.error, Catch::Contains("ana/guarded.ops:4: error: your code redefines the built-in expect_close()"));
  CHECK_THAT(fake.error, Catch::Contains("    def expect_close(a, b, what=None):"));
  CHECK_THAT(fake.error, Catch::Contains("hint: give yours another name (my_expect_close)"));
  CHECK_THAT(attempt_at(L, "randn = ones\ndef f(x):\n    return x\n").error,
             Catch::Contains("redefines the built-in randn()"));
  CHECK_THAT(attempt_at(L, "def f(x):\n    return x\nrelu = f\n").error,
             Catch::Contains("ana/guarded.ops:3: error: your code redefines the operator relu"));
  CHECK_THAT(attempt_at(L, "given = 3.0\ndef f(x):\n    return x\n").error,
             Catch::Contains("'given', which the exercise's set-up defines"));
}

TEST_CASE("an exercise's forbidden built-ins: the student's code may not use them, the checks may",
          "[lesson][exercise]") {
  const Lesson L = guarded_lesson();
  const Exercise& ex = L.blocks[0].exercise;
  REQUIRE(ex.forbidden.size() == 2);
  CHECK(ex.forbidden[1].name == "softmax_backward");
  CHECK(ex.forbidden[1].why == "it is what you are writing");
  const Attempt used =
      attempt_at(L, "def f(x):\n    y = conv2d(zeros(1, 1, 3, 3), zeros(1, 1, 1, 1))\n    return x * 2.0\n");
  CHECK(used.status == AttemptStatus::failed);
  CHECK_THAT(
      used.checks[0].message,
      Catch::Contains(
          "ana/guarded.ops:2:9: error: this exercise does not let your code use conv2d: it is what you are writing"));
  // At the top level too, and by an alias's road.
  CHECK_THAT(attempt_at(L, "g = softmax_backward\ndef f(x):\n    return x * 2.0\n").error,
             Catch::Contains("does not let your code use softmax_backward"));
  CHECK_THROWS_WITH(parse_exercise("id: x\nforbid: conv2d\n", "l.md", 2),
                    Catch::Contains("forbid: needs the names, a ':' and why"));
}

TEST_CASE("skill checks: own backward, saved tensors as a set, products counted, log() in an @op",
          "[lesson][exercise]") {
  LessonRunner r;
  const std::string op =
      "@op\ndef mm(a, b):\n    save(b, a)\n    return a @ b\n\n@mm.backward\ndef mm_backward(dc, b, a):\n    return dc "
      "@ b.T, a.T @ dc\n";
  BlockResult res = r.run_code(
      op +
      "print(saved_for_backward(mm, randn(2, 3), randn(3, 2)) == [\"a\", \"b\"])\nprint(expect_own_backward(mm))\n");
  CHECK(res.ok);
  CHECK(res.output == "True\nTrue\n");
  res = r.run_code("def plain(a, b):\n    return a @ b\nexpect_own_backward(plain)\n");
  CHECK_THAT(res.error, Catch::Contains("plain is a plain def, so autograd differentiated it for you"));
  res = r.run_code("@op\ndef nob(x):\n    return x * 2.0\nexpect_own_backward(nob)\n");
  CHECK_THAT(res.error, Catch::Contains("@op nob has no @nob.backward of yours"));
  CHECK_THAT(r.run_code("expect_own_backward(relu)\n").error,
             Catch::Contains("relu is a built-in operator, not yours"));
  // Every product is counted as it runs, one whose result is thrown away too.
  res = r.run_code(
      "def bm(A, B):\n    junk = ones(1, 1) @ ones(1, 1)\n    return matmul(A, B)\nprint(op_calls(bm, randn(2, 3), "
      "randn(3, 4)))\n");
  CHECK(res.ok);
  CHECK_THAT(res.output, Catch::Contains("[[[1, 1], [1, 1]], [[2, 3], [3, 4]]]"));
  // log(x) is ln in an @op's body, as `opscope ops` lists it.
  res = r.run_code(
      "@op\ndef lse(x):\n    return log(exp(x).sum(axis=-1, keepdim=True))\nprint(lse(zeros(1, 4)).item())\n");
  CHECK(res.ok);
  CHECK_THAT(res.output, Catch::StartsWith("1.386"));
}

TEST_CASE("an allocation refused is an attempt's out of memory, not a crash", "[lesson][exercise]") {
  const Lesson L = guarded_lesson();
  const Attempt hog = attempt_at(L, "big = ones(1048576, 1048576, 1024)\n");
  CHECK(hog.status == AttemptStatus::out_of_memory);
  CHECK(std::string(status_name(hog.status)) == "out of memory");
  CHECK(status_from_name("out of memory") == AttemptStatus::out_of_memory);
  CHECK_THAT(feedback_text(L.blocks[0].exercise, hog), Catch::StartsWith("Out of memory: "));
  CHECK(attempt_at(L, "def f(x):\n    return x * 2.0\n").status == AttemptStatus::passed);
}

TEST_CASE("an attempt's JSON reads back into the same attempt (what a graded child process prints)",
          "[lesson][exercise]") {
  const Lesson L = guarded_lesson();
  const Exercise& ex = L.blocks[0].exercise;
  const Attempt a = attempt_at(L, "def f(x):\n    return x * 3.0\n");
  REQUIRE(a.status == AttemptStatus::failed);
  const Attempt b = attempt_from_json(attempt_json(ex, a));
  CHECK(b.status == a.status);
  REQUIRE(b.checks.size() == a.checks.size());
  CHECK(b.checks[0].message == a.checks[0].message);
  CHECK(b.checks[0].your_lines == a.checks[0].your_lines);
  CHECK_THROWS_WITH(attempt_from_json("not json"), Catch::Contains("not an attempt's JSON"));
}

// What the test below runs in a child process of this test program (hidden tags: not run alone).
TEST_CASE("(a graded child) sleeps ten seconds", "[.sandbox_child_sleeps]") {
  std::this_thread::sleep_for(std::chrono::seconds(10));
}
TEST_CASE("(a graded child) asks for 3 GiB", "[.sandbox_child_allocates]") {
  std::vector<char> hog(size_t(3) << 30, 1);
  std::printf("allocated %d\n", hog[size_t(1) << 29]);
}
TEST_CASE("(a graded child) prints", "[.sandbox_child_prints]") { std::printf("hello from the child\n"); }

TEST_CASE("a graded child process is killed at its wall-clock limit, capped in memory, and its output read",
          "[exercise][sandbox]") {
  const platform::ChildRun slow = platform::run_self_limited({"[.sandbox_child_sleeps]"}, 0.5, size_t(4) << 30);
  CHECK(slow.end == platform::ChildRun::End::killed_at_limit);
  CHECK(slow.seconds < 3);
  const platform::ChildRun hog = platform::run_self_limited({"[.sandbox_child_allocates]"}, 30, size_t(2) << 30);
  // The allocation is refused: the child ends by std::bad_alloc (an abort, or Catch's report).
  CHECK(hog.end != platform::ChildRun::End::killed_at_limit);
  CHECK((hog.end == platform::ChildRun::End::signal || hog.code != 0));
  CHECK_THAT(hog.output, !Catch::Contains("allocated"));
  CHECK_THAT(hog.output, Catch::Contains("asks for 3 GiB"));  // it did start
  const platform::ChildRun fine = platform::run_self_limited({"[.sandbox_child_prints]"}, 30, size_t(4) << 30);
  CHECK(fine.end == platform::ChildRun::End::exited);
  CHECK(fine.code == 0);
  CHECK_THAT(fine.output, Catch::Contains("hello from the child"));
}
