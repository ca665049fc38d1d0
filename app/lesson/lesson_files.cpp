#include "app/lesson/lesson_files.h"

#include <cstdlib>
#include <filesystem>

#include "app/lang/interpreter.h"
#include "app/lesson/lesson.h"
#include "core/error.h"

namespace opscope::lesson {

namespace fs = std::filesystem;

namespace {

std::string safe_name(const std::string& id) {
  std::string s = id.empty() ? "lesson" : id;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  if (s == "." || s == "..") s = "lesson";
  return s;
}

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : c;
}

// `p` is `root` or inside it (both canonical).
bool inside(const fs::path& p, const fs::path& root) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

}  // namespace

std::string lesson_scratch_dir(const std::string& id) {
  fs::path base;
  if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data && fs::path(data).is_absolute()) base = data;
  else if (const char* home = std::getenv("HOME"); home && *home) base = fs::path(home) / ".local" / "share";
  else base = fs::temp_directory_path();
  return (base / "opscope" / "lessons" / safe_name(id)).string();
}

LessonFilePolicy::LessonFilePolicy(const std::string& lesson_file, const std::string& id) {
  scratch_ = canonical_or_self(lesson_scratch_dir(id)).string();
  folder_ = canonical_or_self(fs::path(lesson_file).parent_path().empty() ? fs::path(".")
                                                                          : fs::path(lesson_file).parent_path())
                .string();
}

std::string LessonFilePolicy::resolve(const std::string& path, lang::FileMode mode) const {
  const fs::path scratch(scratch_), folder(folder_);
  auto refuse = [&](const std::string& why) -> std::string {
    const std::string where = mode == lang::FileMode::load_code
                                  ? "a lesson loads code only from its own folder " + folder_ + "/"
                                  : "a lesson reads and writes files only in its scratch folder " + scratch_ +
                                        "/ and reads its own folder " + folder_ + "/";
    throw Error(where + ": '" + path + "' " + why,
                mode == lang::FileMode::load_code
                    ? "ship the file next to the lesson and name it relative to the lesson"
                    : "use a plain name such as save(\"x.npy\", x): it goes to the scratch folder");
  };
  if (path.empty()) refuse("is not a file name");
  const fs::path given(path);
  fs::path candidate;
  if (given.is_absolute()) {
    candidate = given;
  } else if (mode == lang::FileMode::write) {
    candidate = scratch / given;
  } else if (mode == lang::FileMode::load_code) {
    candidate = folder / given;
  } else {  // a file the lesson wrote, else one it ships with
    std::error_code ec;
    candidate = fs::exists(scratch / given, ec) ? scratch / given : folder / given;
  }
  // Symlinks and `..` are resolved before the check, so neither leads out unseen.
  const fs::path real = canonical_or_self(candidate);
  const bool in_scratch = inside(real, scratch), in_folder = inside(real, folder);
  switch (mode) {
    case lang::FileMode::read:
      if (!in_scratch && !in_folder) refuse("is outside them");
      break;
    case lang::FileMode::load_code:
      if (!in_folder) refuse("is outside it");
      break;
    case lang::FileMode::write: {
      if (!in_scratch) refuse(in_folder ? "is in the lesson's folder, which lessons may only read" : "is outside them");
      std::error_code ec;
      // A symlink left in the scratch folder is written through by fopen: never, whatever it names.
      if (fs::is_symlink(fs::symlink_status(candidate, ec))) refuse("is a symbolic link");
      fs::create_directories(real.parent_path(), ec);
      if (ec)
        throw Error("cannot create the lesson's scratch folder " + real.parent_path().string() + ": " + ec.message());
      break;
    }
  }
  return real.string();
}

std::shared_ptr<const LessonFilePolicy> lesson_file_policy(const Lesson& lesson) {
  return std::make_shared<LessonFilePolicy>(lesson.path, lesson.slug);
}

FilePolicyScope::FilePolicyScope(lang::Interpreter& in, std::shared_ptr<const lang::FilePolicy> policy)
    : in_(in), previous_(in.file_policy_ptr()) {
  in_.set_file_policy(std::move(policy));
}

FilePolicyScope::~FilePolicyScope() { in_.set_file_policy(previous_); }

}  // namespace opscope::lesson
