#include "app/gui/workspace_journal.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "app/shipped_dir.h"
#include "platform/platform.h"

namespace opscope::app {

namespace fs = std::filesystem;

std::string default_journal_path() { return config_file("workspace.json"); }

namespace {

bool is_reset(const std::string& source) {
  const size_t b = source.find_first_not_of(" \t");
  return b != std::string::npos && source.compare(b, 6, ":reset") == 0;
}

// The kept statements, or why the file is not a journal.
std::vector<std::string> read_journal(const std::string& path, std::string& problem) {
  std::vector<std::string> out;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return out;  // none yet
  if (size > WorkspaceJournal::kMaxFileBytes) {
    problem = "larger than " + std::to_string(WorkspaceJournal::kMaxFileBytes >> 20) + " MB";
    return out;
  }
  std::ifstream f(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("statements") || !j["statements"].is_array()) {
    problem = "not a JSON object with a \"statements\" list";
    return out;
  }
  for (const auto& s : j["statements"]) {
    if (!s.is_string()) {
      problem = "a statement that is not a string";
      return {};
    }
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

WorkspaceJournal::WorkspaceJournal(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  statements_ = read_journal(path_, problem_);
  if (problem_.empty()) return;
  std::error_code ec;
  fs::rename(path_, path_ + ".unreadable", ec);  // the student's file is kept, not overwritten
  problem_ = path_ + " was " + problem_ + "; it was moved to " + path_ + ".unreadable";
}

void WorkspaceJournal::record(const std::string& source) {
  if (!keeps()) return;
  if (is_reset(source)) statements_.clear();
  else statements_.push_back(source);
  // Beyond the limits the oldest go first, so a long session never makes the file unreadable.
  size_t bytes = 0;
  for (const std::string& s : statements_) bytes += s.size() + 8;  // + JSON's quotes and commas
  size_t drop = 0;
  while (drop < statements_.size() && (statements_.size() - drop > kMaxStatements || bytes > kMaxFileBytes / 2))
    bytes -= statements_[drop++].size() + 8;
  statements_.erase(statements_.begin(), statements_.begin() + static_cast<std::ptrdiff_t>(drop));
  write();
}

std::vector<std::string> WorkspaceJournal::take_front(size_t n) {
  n = std::min(n, statements_.size());
  std::vector<std::string> taken(statements_.begin(), statements_.begin() + static_cast<std::ptrdiff_t>(n));
  statements_.erase(statements_.begin(), statements_.begin() + static_cast<std::ptrdiff_t>(n));
  if (keeps()) write();
  return taken;
}

void WorkspaceJournal::write() const {
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!(f << nlohmann::json{{"statements", statements_}}.dump(1) << "\n")) return;  // a full disk: keep the old file
  }
  fs::rename(tmp, path_, ec);
  if (!ec) platform::persist_files();  // the browser writes it to IndexedDB
}

}  // namespace opscope::app
