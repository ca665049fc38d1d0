#include "app/lesson/progress.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/shipped_dir.h"
#include "platform/platform.h"

namespace opscope::lesson {

namespace fs = std::filesystem;

std::string default_progress_path() { return app::config_file("progress.json"); }

Progress load_progress(const std::string& path) {
  Progress p;
  if (path.empty()) return p;
  std::ifstream f(path);
  if (!f) return p;
  try {
    nlohmann::json j = nlohmann::json::parse(f);
    p.lang = j.value("lang", "en");
    p.last = j.value("last", "");
    p.zoom = j.value("zoom", 1.0);
    if (j.contains("lessons") && j["lessons"].is_object())
      for (auto& [slug, v] : j["lessons"].items()) {
        LessonProgress lp;
        lp.block = v.value("block", 0);
        lp.finished = v.value("finished", false);
        lp.quizzes_right = v.value("quizzes_right", 0);
        lp.block_at = v.value("block_at", int64_t{0});
        lp.block_read = lp.block;
        if (v.contains("exercises") && v["exercises"].is_object())
          for (auto& [id, e] : v["exercises"].items()) {
            ExerciseProgress& x = lp.exercises[id];
            x = {e.value("attempts", 0), e.value("passed", false), e.value("gave_up", false), e.value("hints", 0),
                 e.value("code", "")};
            x.code_at = e.value("code_at", int64_t{0});
            x.code_read = x.code;
          }
        p.lessons[slug] = lp;
      }
  } catch (const nlohmann::json::exception&) {
    return Progress{};  // a damaged file: start again rather than refuse to run
  }
  return p;
}

namespace {

ExerciseProgress merge_exercise(const ExerciseProgress& ours, const ExerciseProgress& theirs, int64_t now) {
  ExerciseProgress e = ours;
  e.attempts = std::max(ours.attempts, theirs.attempts);
  e.passed = ours.passed || theirs.passed;
  e.gave_up = ours.gave_up || theirs.gave_up;
  e.hints = std::max(ours.hints, theirs.hints);
  if (ours.code != ours.code_read) {
    e.code_at = now;  // edited here: the newest
  } else if (theirs.code_at > ours.code_at) {
    e.code = theirs.code;
    e.code_at = theirs.code_at;
  }
  return e;
}

LessonProgress merge_lesson(const LessonProgress& ours, const LessonProgress& theirs, int64_t now) {
  LessonProgress l = ours;
  l.finished = ours.finished || theirs.finished;
  l.quizzes_right = std::max(ours.quizzes_right, theirs.quizzes_right);
  if (ours.block != ours.block_read) {
    l.block_at = now;  // moved here (a restart too)
  } else if (theirs.block_at > ours.block_at) {
    l.block = theirs.block;
    l.block_at = theirs.block_at;
  }
  for (const auto& [id, e] : theirs.exercises) {
    auto it = l.exercises.find(id);
    if (it == l.exercises.end()) l.exercises[id] = e;
    else it->second = merge_exercise(it->second, e, now);
  }
  for (auto& [id, e] : l.exercises)  // ours only
    if (!theirs.exercises.count(id) && e.code != e.code_read) e.code_at = now;
  return l;
}

}  // namespace

Progress merge_progress(const Progress& ours, const Progress& theirs, int64_t now_ms) {
  Progress p = ours;  // the language, the last lesson and the zoom: the write's own
  for (const auto& [slug, lt] : theirs.lessons) {
    auto it = p.lessons.find(slug);
    if (it == p.lessons.end()) p.lessons[slug] = lt;
    else it->second = merge_lesson(it->second, lt, now_ms);
  }
  for (auto& [slug, l] : p.lessons)
    if (!theirs.lessons.count(slug)) l = merge_lesson(l, LessonProgress{}, now_ms);
  return p;
}

bool save_progress(const Progress& ours, const std::string& path) {
  if (path.empty()) return false;
  const Progress theirs = load_progress(path);
  // Later than anything the file holds, even within its millisecond: this write is the newest.
  int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  for (const auto& [slug, l] : theirs.lessons) {
    now = std::max(now, l.block_at + 1);
    for (const auto& [id, e] : l.exercises) now = std::max(now, e.code_at + 1);
  }
  const Progress p = merge_progress(ours, theirs, now);
  nlohmann::json j{{"lang", p.lang}, {"last", p.last}, {"zoom", p.zoom}, {"lessons", nlohmann::json::object()}};
  for (auto& [slug, lp] : p.lessons) {
    nlohmann::json& l = j["lessons"][slug];
    l = {{"block", lp.block},
         {"block_at", lp.block_at},
         {"finished", lp.finished},
         {"quizzes_right", lp.quizzes_right}};
    for (auto& [id, e] : lp.exercises)
      l["exercises"][id] = {{"attempts", e.attempts}, {"passed", e.passed}, {"gave_up", e.gave_up},
                            {"hints", e.hints},       {"code", e.code},     {"code_at", e.code_at}};
  }
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary);
    if (!(o << j.dump(2) << "\n")) return false;
  }
  fs::rename(tmp, path, ec);
  if (!ec) platform::persist_files();  // the browser writes it to IndexedDB
  return !ec;
}

}  // namespace opscope::lesson
