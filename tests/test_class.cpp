// The class server's parts without the server: the grader child's limits, the adapter that reads
// the grader's answer, the store's idempotency and roster rules, the summary's clusters and CSV.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/class/grader_child.h"
#include "app/class/store.h"
#include "app/class/summary.h"

using namespace opscope::classroom;
namespace fs = std::filesystem;

namespace {

std::string temp_dir() {
  std::string t = (fs::temp_directory_path() / "opscope-class-XXXXXX").string();
  REQUIRE(mkdtemp(t.data()));
  return t;
}

ChildRun ran(const std::string& out, int exit_code = 1) {
  ChildRun r;
  r.out = out;
  r.exit_code = exit_code;
  return r;
}

}  // namespace

TEST_CASE("a grader child is killed at its wall-clock limit, its children with it", "[class]") {
  const auto t0 = std::chrono::steady_clock::now();
  const ChildRun r = run_child({"/bin/sh", "-c", "sleep 20 & sleep 20"}, {0.3, 2048, 1 << 20});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.timed_out);
  CHECK(r.signal == SIGKILL);
  CHECK(s < 3);  // the backgrounded sleep held no pipe open past the kill
  CHECK(grade_from_grader(r).status == "timeout");
}

TEST_CASE("a grader child's memory is capped and its output kept to the cap", "[class]") {
  const ChildRun big = run_child({"/usr/bin/python3", "-c", "x = bytearray(1 << 30)"}, {10, 256, 1 << 20});
  CHECK_FALSE(big.timed_out);
  CHECK(big.exit_code != 0);
  CHECK(big.err.find("MemoryError") != std::string::npos);
  const ChildRun chatty = run_child({"/usr/bin/python3", "-c", "print('x' * 5000000)"}, {10, 2048, 1000});
  CHECK(chatty.exit_code == 0);
  CHECK(chatty.out.size() == 1000);
  CHECK(run_child({"/nonexistent/grader"}, {5, 2048, 1000}).exit_code == 127);
}

TEST_CASE("the adapter reads the grader's --json into a grade with its failing checks", "[class]") {
  const std::string fail = R"({"status": "fail", "passed": false, "checks_passed": 2, "checks_total": 3, "error": "",
    "checks": [{"description": "values", "passed": true, "message": ""},
               {"description": "gradcheck", "passed": false, "message": "wrong at [2, 0]", "where": "l.md:3"}]})";
  Grade g = grade_from_grader(ran("printed by the student\n" + std::string(fail)));  // prints before the object
  CHECK(g.status == "fail");
  CHECK(g.checks_passed == 2);
  CHECK(g.checks_total == 3);
  const auto f = nlohmann::json::parse(g.failures);
  REQUIRE(f.size() == 1);
  CHECK(f[0]["check"] == "gradcheck");
  CHECK(f[0]["message"] == "wrong at [2, 0]");

  g = grade_from_grader(
      ran(R"({"status": "error", "error": "a.ops:1:5: error: out of memory allocating 1.49 GiB\n"})"));
  CHECK(g.status == "out of memory");
  g = grade_from_grader(ran(R"({"status": "error", "error": "a.ops:2:12: error: recursion deeper than 64 calls\n"})"));
  CHECK(g.status == "error");
  CHECK(nlohmann::json::parse(g.failures)[0]["check"] == "error: recursion deeper than 64 calls");
  g = grade_from_grader(ran(R"({"status": "out of memory", "error": "the cap"})"));  // the hardened grader's own
  CHECK(g.status == "out of memory");

  ChildRun crashed = ran("");
  crashed.signal = SIGSEGV;
  CHECK(grade_from_grader(crashed).status == "error");
  crashed.err = "terminate called after throwing an instance of 'std::bad_alloc'";
  crashed.signal = SIGABRT;
  CHECK(grade_from_grader(crashed).status == "out of memory");
  CHECK(grade_from_grader(ran("", 127)).feedback == "the grader could not be started");
}

TEST_CASE("a client's claimed result is read in its usual shapes", "[class]") {
  CHECK(claimed_pass("true") == 1);
  CHECK(claimed_pass(R"({"passed": false})") == 0);
  CHECK(claimed_pass(R"({"status": "pass"})") == 1);
  CHECK(claimed_pass(R"("fail")") == 0);
  CHECK(claimed_pass("null") == -1);
  CHECK(claimed_pass("{not json") == -1);
}

TEST_CASE("the store keeps one attempt per idempotency key, across a reopening", "[class]") {
  const std::string dir = temp_dir();
  long long first = 0;
  {
    Store s(dir + "/class.db");
    s.create_class({"c", "key", "CODE"});
    std::string why;
    bool taken = false;
    const auto ada = s.join("ada", "tok-ada", why, taken);
    REQUIRE(ada);
    CHECK_FALSE(s.join("ada", "tok-2", why, taken));  // a name joins once
    CHECK(taken);
    const auto [id, fresh] = s.add_attempt(ada->id, {"matmul-backward", "code", "k1", "true", 0});
    CHECK(fresh);
    first = id;
    const auto again = s.add_attempt(ada->id, {"matmul-backward", "other code", "k1", "true", 0});
    CHECK(again.first == first);
    CHECK_FALSE(again.second);
    CHECK(s.pending_attempts().size() == 1);
  }
  Store s(dir + "/class.db");  // a restarted server
  REQUIRE(s.pending_attempts().size() == 1);
  CHECK(s.pending_attempts()[0].id == first);
  CHECK(s.pending_attempts()[0].code == "code");
  s.store_grade(first, {"pass", 3, 3, "[]", "", 0.01}, false);
  CHECK(s.pending_attempts().empty());
  CHECK(s.student_by_token("tok-ada")->name == "ada");
  CHECK_FALSE(s.student_by_token("tok-2"));
  fs::remove_all(dir);
}

TEST_CASE("with a roster only its names join, each once", "[class]") {
  const std::string dir = temp_dir();
  Store s(dir + "/class.db");
  s.create_class({"c", "key", "CODE"});
  s.add_roster_name("Ada Lovelace");
  std::string why;
  bool taken = false;
  CHECK(s.join("Ada Lovelace", "t1", why, taken));
  CHECK_FALSE(s.join("Ada Lovelace", "t2", why, taken));
  CHECK(taken);
  CHECK_FALSE(s.join("Mallory", "t3", why, taken));
  CHECK_FALSE(taken);
  CHECK(why.find("not on the class's roster") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a roster student's join link joins them, again the same student; the lesson they are at is kept",
          "[class]") {
  const std::string dir = temp_dir();
  Store s(dir + "/class.db");
  s.create_class({"c", "key", "CODE"});
  s.add_roster_name("Ada Lovelace", "link-ada");
  s.add_roster_name("Ben", "link-ben");
  CHECK_FALSE(s.join_by_link("link-nobody", "t0"));
  const auto ada = s.join_by_link("link-ada", "t1");
  REQUIRE(ada);
  CHECK(ada->name == "Ada Lovelace");
  CHECK(ada->token == "t1");
  CHECK(s.join_by_link("link-ada", "t2")->token == "t1");  // her link in another browser: still her
  std::string why;
  bool taken = false;
  CHECK_FALSE(s.join("Ada Lovelace", "t3", why, taken));  // and her name cannot join a second time
  CHECK(taken);
  s.set_lesson_at(ada->id, {"03", "Backward", 5, 40, false, ""});
  s.set_lesson_at(ada->id, {"03", "Backward", 9, 40, false, ""});
  const auto at = s.lessons_at();
  REQUIRE(at.size() == 1);
  CHECK(at.at(ada->id).block == 9);
  const auto j = nlohmann::json::parse(summary_json("c", s.students(), {}, {}, at));
  CHECK(j["students"][0]["lesson"]["lesson"] == "03");
  CHECK(j["students"][0]["lesson"]["block"] == 9);
  fs::remove_all(dir);
}

TEST_CASE("the summary clusters the latest failures by check, most students first; the CSV is exercise grade's",
          "[class]") {
  const std::vector<Student> students{{1, "ada", ""}, {2, "ben", ""}, {3, "=HYPERLINK(\"x\")", ""}};
  const auto row = [](long long id, long long who, const char* status, const char* failures) {
    AttemptRow a;
    a.id = id;
    a.student_id = who;
    a.exercise = "matmul-backward";
    a.graded = true;
    a.grade = {status, 1, 3, failures, "", 0};
    return a;
  };
  const char* both = R"([{"check": "gradcheck", "message": "m"}, {"check": "saves a and b", "message": ""}])";
  const char* grad = R"([{"check": "gradcheck", "message": "m"}])";
  std::vector<AttemptRow> attempts{row(1, 1, "fail", both), row(2, 1, "pass", "[]"), row(3, 2, "fail", both),
                                   row(4, 2, "fail", grad), row(5, 3, "fail", grad)};
  const auto j = nlohmann::json::parse(summary_json("c", students, attempts, {{"matmul-backward", "t", 30}}));
  const auto& ex = j["exercises"][0];
  CHECK(ex["pass_rate"].get<double>() == Approx(1.0 / 3));
  REQUIRE(ex["common_failures"].size() == 1);  // ben's latest attempt fails gradcheck only; ada passed
  CHECK(ex["common_failures"][0]["check"] == "gradcheck");
  CHECK(ex["common_failures"][0]["count"] == 2);
  CHECK(j["students"][1]["results"]["matmul-backward"]["attempts"] == 2);
  CHECK(grades_csv(students, attempts, {}) ==
        "student,matmul-backward,passed\nada,pass,1\nben,fail 1/3,0\n\"'=HYPERLINK(\"\"x\"\")\",fail 1/3,0\n");
}
