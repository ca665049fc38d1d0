// Where a script may read and write files. The REPL and the scripts a user runs have full
// access; code from elsewhere (lessons are shared between teachers) runs under a policy that
// confines it. Every builtin or command that touches a file asks Interpreter::resolve_path.
#pragma once
#include <string>

namespace opscope::lang {

// load_code: a file whose code will run in this process (an extension); lessons may load
// extensions only from their own folder.
enum class FileMode { read, write, load_code };

class FilePolicy {
 public:
  virtual ~FilePolicy() = default;
  // The path to open for `path` as the script wrote it; throws opscope::Error (a message that
  // says where this code may read and write, and a hint) when the access is refused.
  virtual std::string resolve(const std::string& path, FileMode mode) const = 0;
};

}  // namespace opscope::lang
