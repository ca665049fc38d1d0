#include "app/lesson/progress.h"

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
        if (v.contains("exercises") && v["exercises"].is_object())
          for (auto& [id, e] : v["exercises"].items())
            lp.exercises[id] = {e.value("attempts", 0), e.value("passed", false), e.value("gave_up", false), e.value("hints", 0),
                                e.value("code", "")};
        p.lessons[slug] = lp;
      }
  } catch (const nlohmann::json::exception&) {
    return Progress{};  // a damaged file: start again rather than refuse to run
  }
  return p;
}

bool save_progress(const Progress& p, const std::string& path) {
  if (path.empty()) return false;
  nlohmann::json j{{"lang", p.lang}, {"last", p.last}, {"zoom", p.zoom}, {"lessons", nlohmann::json::object()}};
  for (auto& [slug, lp] : p.lessons) {
    nlohmann::json& l = j["lessons"][slug];
    l = {{"block", lp.block}, {"finished", lp.finished}, {"quizzes_right", lp.quizzes_right}};
    for (auto& [id, e] : lp.exercises)
      l["exercises"][id] = {{"attempts", e.attempts}, {"passed", e.passed}, {"gave_up", e.gave_up}, {"hints", e.hints}, {"code", e.code}};
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
