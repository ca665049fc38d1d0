// Where a lesson's code may touch files. Lessons are shared between teachers, so their cells
// are untrusted: they read and write only in a scratch folder of their own
// ($XDG_DATA_HOME/opscope/lessons/ID/, by default ~/.local/share/opscope/lessons/ID/), read
// the lesson's own folder, and load code (extensions) only from that folder. `..`, absolute
// paths and symlinks that lead out of those folders are refused with an error that says where
// the lesson may read and write. The REPL and the user's own scripts keep full access.
#pragma once
#include <memory>
#include <string>

#include "app/lang/file_policy.h"

namespace opscope::lang {
class Interpreter;
}

namespace opscope::lesson {

struct Lesson;

class LessonFilePolicy final : public lang::FilePolicy {
 public:
  // `lesson_file`: the lesson's Markdown file (its folder is readable); `id`: the scratch
  // folder's name (the lesson's slug; characters other than letters, digits, '-', '_', '.'
  // become '_').
  LessonFilePolicy(const std::string& lesson_file, const std::string& id);
  // Relative paths: writes go to the scratch folder; reads find the file there first, then in
  // the lesson's folder; code is loaded from the lesson's folder.
  std::string resolve(const std::string& path, lang::FileMode mode) const override;
  const std::string& scratch() const { return scratch_; }
  const std::string& folder() const { return folder_; }

 private:
  std::string scratch_, folder_;  // canonical, without a trailing separator
};

// The scratch folder of lesson `id` (not created).
std::string lesson_scratch_dir(const std::string& id);
std::shared_ptr<const LessonFilePolicy> lesson_file_policy(const Lesson& lesson);

// Puts `policy` on the interpreter for the guard's lifetime (a lesson cell in a front end's
// session), then the one before back.
class FilePolicyScope {
 public:
  FilePolicyScope(lang::Interpreter& in, std::shared_ptr<const lang::FilePolicy> policy);
  ~FilePolicyScope();
  FilePolicyScope(const FilePolicyScope&) = delete;
  FilePolicyScope& operator=(const FilePolicyScope&) = delete;

 private:
  lang::Interpreter& in_;
  std::shared_ptr<const lang::FilePolicy> previous_;
};

}  // namespace opscope::lesson
