// Loading extensions: a C++ (.cpp) or CUDA (.cu) file of operators, compiled with opscope's own
// toolchain into a shared object cached by a hash of the source and the opscope build, or a
// shared object built with the installed CMake package. Its OPSCOPE_REGISTER_OPS blocks run
// inside dlopen under a registry capture; what they declare is checked (collisions with the
// built-ins and other files, the ABI) and then registered all together, or not at all.
//
// Libraries are never unloaded (no dlclose): graph nodes, programs and registered kernels keep
// pointers to code and definitions inside them. Loading an edited file loads a new library
// beside the old one, whose definitions stay alive for the nodes made with them. A kernel
// that crashes takes the process with it, as in PyTorch; one that throws opscope::Error fails
// its statement like any other.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/op.h"

namespace opscope::ext {

// A load that failed; `details` holds the compiler's errors (file:line:col, its source lines).
class ExtensionError : public Error {
 public:
  ExtensionError(std::string message, std::string hint, std::string details = {})
      : Error(std::move(message), std::move(hint)), details_(std::move(details)) {}
  const std::string& details() const { return details_; }

 private:
  std::string details_;
};

struct LoadOptions {
  std::set<std::string, std::less<>> reserved_names;  // the language's builtin functions
};

struct LoadReport {
  enum class Status { loaded, unchanged, reloaded } status = Status::loaded;
  std::string file;  // as the caller named it
  std::vector<std::string> ops_added, ops_replaced, ops_removed;
  std::vector<std::string> algorithms_added, algorithms_removed;  // "matmul: mine [cpu]"
  bool compiled = false;  // false: the cached build, or a prebuilt .so
  bool prebuilt = false;  // a .so built outside opscope (the CMake package)
  double compile_seconds = 0, load_seconds = 0;
  std::string warnings;  // the compiler's about the file, and what its ops lack
  std::string summary() const;  // what the REPL prints
};

// One version of one file as its library registered it (kept to reload, restore or re-attach).
struct LoadedFile {
  std::string origin;  // the file's canonical path: OpDef::origin of its ops
  std::string display;  // as the caller named it
  std::string hash;
  std::shared_ptr<const RegistryCapture> capture;
};

class ExtensionLoader {
 public:
  static ExtensionLoader& instance();

  // Where compiled libraries are kept: $OPSCOPE_EXTENSION_CACHE, else
  // $XDG_CACHE_HOME/opscope/extensions, else ~/.cache/opscope/extensions.
  void set_cache_dir(std::string dir) { cache_dir_ = std::move(dir); }
  std::string cache_dir() const;

  // Throws ExtensionError (nothing registered, the previous version of the file kept).
  LoadReport load(const std::string& path, const LoadOptions& options = {});
  // The second half of load: registers what an opened library captured, after checking it
  // (`file.origin` names the file; a file loaded before is replaced). Tests call it directly.
  LoadReport adopt(const LoadedFile& file, const LoadOptions& options = {});
  // Removes the file's ops and algorithms from the registry (the library stays mapped).
  void unload(const std::string& path);
  // For undoing a load in a failed statement: the file's state before, and putting it back.
  std::optional<LoadedFile> state_of(const std::string& path) const;
  void restore(const std::string& path, const std::optional<LoadedFile>& before);
  std::vector<LoadedFile> loaded() const;

 private:
  std::string cached_library(const std::string& path, const std::string& canonical, bool prebuilt,
                             const std::string& hash, bool loaded_before, LoadReport& report) const;
  std::shared_ptr<const RegistryCapture> open_library(const std::string& so_path, const std::string& display);
  void check(const LoadedFile& next, const LoadOptions& options) const;
  // Moves the registry from the file's current version (if any) to `next`, after checking it.
  void commit(const LoadedFile& next, const LoadOptions& options, LoadReport& report);
  void withdraw(const LoadedFile& file, const RegistryCapture* keep, LoadReport* report);
  void attach_others_kernels(const std::string& op, const std::string& except_origin);

  std::string cache_dir_;
  std::map<std::string, LoadedFile> files_;  // by origin
  std::map<std::string, std::shared_ptr<const RegistryCapture>> libraries_;  // by .so path; never closed
};

// opscope's shipped examples (assets/examples in the source tree, PREFIX/share/opscope/examples
// when installed); `relative` is checked to be one of them.
std::string example_path(const std::string& relative);
// True when `path` is a file inside the shipped examples (trusted code: lessons may load them).
bool is_shipped_example(const std::string& path);

}  // namespace opscope::ext
