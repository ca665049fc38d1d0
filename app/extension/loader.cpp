#include "app/extension/loader.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/extension/compiler.h"
#include "app/extension/toolchain.h"
#include "platform/platform.h"

namespace opscope::ext {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// FNV-1a over the parts (each followed by a separator): a cache key, not a security measure.
std::string hash_hex(const std::vector<std::string>& parts) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (const std::string& p : parts) {
    for (unsigned char c : p) mix(c);
    mix(0xff);
  }
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ExtensionError("cannot read '" + path + "'", "check the file's permissions");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string r;
  for (const std::string& s : v) r += (r.empty() ? "" : sep) + s;
  return r;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

enum class Kind { source, library };
Kind kind_of(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".so") return Kind::library;
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".cu") return Kind::source;
  throw ExtensionError("cannot load '" + path + "' as an extension",
                       "load_extension takes a C++ file (.cpp, .cc, .cxx), a CUDA file (.cu) or a shared object (.so)");
}

// A file name safe for the cache: the stem's letters, digits, '-' and '_'.
std::string cache_stem(const std::string& path) {
  std::string s = fs::path(path).stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s.empty() ? "extension" : s;
}

// Writes through a temporary name and renames, so a process reading the cache never sees half a file.
void install_atomically(const fs::path& tmp, const fs::path& final_path) {
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec)
    throw ExtensionError("cannot write to the extension cache: " + ec.message(),
                         "set OPSCOPE_EXTENSION_CACHE to a writable folder");
}

std::string temp_name(const fs::path& final_path) { return final_path.string() + ".tmp" + std::to_string(::getpid()); }

// dlopen's message with a mangled C++ name made readable.
std::string explain_dlerror(const char* message) {
  std::string m = message ? message : "unknown error";
  const std::string key = "undefined symbol: ";
  const size_t at = m.find(key);
  if (at == std::string::npos) return m;
  std::string symbol = m.substr(at + key.size());
  int status = 0;
  char* demangled = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  if (status == 0 && demangled) symbol = demangled;
  std::free(demangled);
  return "it calls " + symbol + ", which this opscope does not define";
}

std::string owner_description(const OpDef& op) {
  if (op.builtin()) return "the built-in operator " + op.name + " (" + op.family + ")";
  return "the operator " + op.name + " of " + op.origin;
}

std::string kernel_owner(const OpDef& op, Device d, const std::string& algo) {
  if (const std::string* file = op.added_by(d, algo)) return "added by " + *file;
  return op.builtin() ? "built in" : "from " + op.origin;
}

std::string algorithm_label(const KernelAddition& k) {
  return k.op + ": " + k.algo + " [" + device_name(k.device) + "]";
}

const OpDef* captured_op(const RegistryCapture& c, const std::string& name) {
  for (const auto& op : c.ops)
    if (op->name == name) return op.get();
  return nullptr;
}

std::vector<std::string> registry_names() {
  std::vector<std::string> names;
  for (const OpDef* op : OpRegistry::instance().all()) names.push_back(op->name);
  return names;
}

// What the ops of a file lack, as warnings (the built-ins are held to these by the test suite).
std::string missing_parts(const OpDef& op) {
  std::string w;
  if (op.doc.empty()) w += "warning: " + op.name + " has no doc (its formula, for :doc)\n";
  if (!op.cost) w += "warning: " + op.name + " has no cost model: its FLOPs and bytes count as 0\n";
  if (op.differentiable && !op.backward)
    w += "warning: " + op.name +
         " has no backward: backward() through it fails (set d.backward, or d.differentiable = false)\n";
  if (op.differentiable && op.gradcheck.empty())
    w += "warning: " + op.name + " has no gradcheck cases, so gradcheck cannot check its backward\n";
  return w;
}

// A file's identity: its canonical path, or (a file since deleted) its absolute path.
std::string key_of(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::canonical(path, ec);
  return ec ? fs::absolute(path).lexically_normal().string() : c.string();
}

}  // namespace

ExtensionLoader& ExtensionLoader::instance() {
  static ExtensionLoader loader;
  return loader;
}

std::string ExtensionLoader::cache_dir() const {
  if (!cache_dir_.empty()) return cache_dir_;
  if (const char* e = std::getenv("OPSCOPE_EXTENSION_CACHE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "opscope" / "extensions").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "opscope" / "extensions").string();
  return (fs::temp_directory_path() / "opscope-extensions").string();
}

LoadReport ExtensionLoader::load(const std::string& path, const LoadOptions& options) {
  if (is_cuda_source(path) && !platform::has(platform::Feature::cxx_extensions))
    throw ExtensionError(
        "load_extension('" + path +
            "'): .cu files need the desktop app (a C++ compiler builds them, "
            "for a GPU or for the simulated one, into a shared library a browser cannot load)",
        "in the browser, write the kernel in the language: @kernel def k(A, B, n): ... launched as "
        "k[blocks, threads](A, B, n), runs on the same simulated GPU with the same checks and counters");
  platform::require(platform::Feature::cxx_extensions, "load_extension('" + path + "')");
  const auto t0 = Clock::now();
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  if (ec || !fs::is_regular_file(canonical))
    throw ExtensionError("cannot open '" + path + "'", "the path is relative to the folder opscope was started in");
  const Kind kind = kind_of(path);

  LoadReport report;
  report.file = path;
  LoadedFile next{canonical.string(), path, {}, nullptr};
  const std::string bytes = read_bytes(canonical.string());
  // The key: the text, the ABI and the whole command (compiler, flags, headers' place).
  std::vector<std::string> key{bytes, toolchain().abi};
  if (kind == Kind::source)
    for (const auto& cmd : compile_commands(canonical.string(), "OUTPUT"))
      for (const std::string& arg : cmd) key.push_back(arg == canonical.string() ? "SOURCE" : arg);
  next.hash = hash_hex(key);
  if (auto it = files_.find(next.origin); it != files_.end() && it->second.hash == next.hash) {
    report.status = LoadReport::Status::unchanged;
    return report;
  }

  const bool loaded_before = files_.count(next.origin) > 0;  // a failed compile keeps that version
  const std::string so_path =
      cached_library(path, canonical.string(), kind == Kind::library, next.hash, loaded_before, report);
  next.capture = open_library(so_path, path);
  LoadReport adopted = adopt(next, options);
  adopted.compiled = report.compiled;
  adopted.prebuilt = kind == Kind::library;
  adopted.compile_seconds = report.compile_seconds;
  adopted.warnings = report.warnings + adopted.warnings;
  adopted.load_seconds = seconds_since(t0);
  return adopted;
}

// The shared object for this version of the file in the cache: compiled there when it is not
// yet (a failure throws the compiler's errors), or a private copy of a prebuilt .so.
std::string ExtensionLoader::cached_library(const std::string& path, const std::string& canonical, bool prebuilt,
                                            const std::string& hash, bool loaded_before, LoadReport& report) const {
  std::error_code ec;
  const fs::path dir = cache_dir();
  fs::create_directories(dir, ec);
  if (ec)
    throw ExtensionError("cannot create the extension cache '" + dir.string() + "': " + ec.message(),
                         "set OPSCOPE_EXTENSION_CACHE to a writable folder");
  const std::string stem = cache_stem(path) + "-" + hash;
  const fs::path so_path = dir / (stem + ".so"), log_path = dir / (stem + ".log");
  if (!prebuilt && !fs::exists(so_path)) {
    const std::string tmp = temp_name(so_path);
    // Compiled by the name the caller gave, so the compiler's messages name the file that way.
    CompileResult r = compile(path, tmp, log_path.string());
    if (!r.ok) {
      std::error_code ignore;
      fs::remove(tmp, ignore);
      const size_t n = count(r.diagnostics, true);
      throw ExtensionError(path + " did not compile" +
                               (n ? " (" + std::to_string(n) + " error" + (n == 1 ? ")" : "s)") : std::string()) +
                               (loaded_before ? "; the version loaded before stays" : "; nothing was loaded"),
                           "fix the file and load it again (the compiler's whole output: " + log_path.string() + ")",
                           format_errors(r.diagnostics, path, r.output));
    }
    install_atomically(tmp, so_path);
    report.compiled = true;
    report.compile_seconds = r.seconds;
    report.warnings += format_warnings(r.diagnostics, path);
  } else if (prebuilt && !fs::exists(so_path)) {
    // A private copy: the file opened by dlopen must never change under it (a rebuild in place
    // would crash the process), and each version needs its own name for dlopen to load it.
    const std::string tmp = temp_name(so_path);
    fs::copy_file(canonical, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec) throw ExtensionError("cannot copy '" + path + "' into the extension cache: " + ec.message(), "");
    install_atomically(tmp, so_path);
  }
  return so_path.string();
}

LoadReport ExtensionLoader::adopt(const LoadedFile& file, const LoadOptions& options) {
  LoadReport report;
  report.file = file.display;
  if (files_.count(file.origin)) report.status = LoadReport::Status::reloaded;
  commit(file, options, report);
  return report;
}

std::shared_ptr<const RegistryCapture> ExtensionLoader::open_library(const std::string& so_path,
                                                                     const std::string& display) {
  if (auto it = libraries_.find(so_path); it != libraries_.end()) return it->second;
  OpRegistry& registry = OpRegistry::instance();
  registry.begin_capture(toolchain().abi);
  void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed (see loader.h)
  const char* error = handle ? nullptr : dlerror();
  auto capture = std::make_shared<const RegistryCapture>(registry.end_capture());
  if (!handle)
    throw ExtensionError(display + " could not be loaded: " + explain_dlerror(error),
                         "an extension can call what opscope's public headers declare (core/*.h, ops/cpu_util.h)");
  libraries_[so_path] = capture;
  return capture;
}

// Everything `next` registers is checked against the registry before anything changes: the
// capture's own errors, names, collisions with the built-ins and other files, kernels' targets.
void ExtensionLoader::check(const LoadedFile& next, const LoadOptions& options) const {
  OpRegistry& registry = OpRegistry::instance();
  const RegistryCapture& cap = *next.capture;
  const std::string& file = next.display;
  auto current_it = files_.find(next.origin);
  const LoadedFile* current = current_it == files_.end() ? nullptr : &current_it->second;
  const std::string keep_note = current ? "; the version loaded before stays" : "; nothing was registered";

  if (!cap.errors.empty())
    throw ExtensionError(file + " was not loaded: " + join(cap.errors, "; ") + keep_note, "fix it and load it again");
  if (cap.unchecked)
    throw ExtensionError(file + " registers operators without opscope's extension check" + keep_note,
                         "compile the source with load_extension, or build it with the CMake package "
                         "(find_package(opscope) and opscope_add_extension)");
  if (cap.ops.empty() && cap.kernels.empty())
    throw ExtensionError(file + " declares no operators" + keep_note,
                         "declare them in an OPSCOPE_REGISTER_OPS block: registry.add(std::move(d)), or "
                         "registry.add_kernel(\"matmul\", Device::cpu, \"mine\", kernel) for a new algorithm");
  std::set<std::string> own;
  for (const auto& op : cap.ops) {
    const std::string& n = op->name;
    if (!is_identifier(n))
      throw ExtensionError(file + ": operator name '" + n + "' is not a name the language can call",
                           "use letters, digits and _");
    if (!own.insert(n).second) throw ExtensionError(file + " declares operator '" + n + "' twice" + keep_note, "");
    if (options.reserved_names.count(n))
      throw ExtensionError(file + " declares operator '" + n + "', but " + n +
                               "() is a builtin function of the language" + keep_note,
                           "rename the operator");
    if (const OpDef* existing = registry.find(n); existing && existing->origin != next.origin)
      throw ExtensionError(file + " declares operator '" + n + "', which is already " + owner_description(*existing) +
                               keep_note,
                           "rename the operator in " + file + ", or add an algorithm to " + n +
                               " with registry.add_kernel(\"" + n + "\", Device::cpu, \"mine\", kernel)");
    if (!op->infer)
      throw ExtensionError(file + ": operator " + n + " has no shape inference" + keep_note, "set d.infer");
    if (op->kernels.empty())
      throw ExtensionError(file + ": operator " + n + " has no kernel" + keep_note,
                           "add one: d.kernel(Device::cpu, \"default\", fn)");
  }
  for (const KernelAddition& k : cap.kernels) {
    if (!is_identifier(k.algo))
      throw ExtensionError(file + ": algorithm name '" + k.algo + "' of " + k.op + " is not a plain name",
                           "use letters, digits and _");
    if (const OpDef* mine = captured_op(cap, k.op)) {
      if (mine->find_kernel(k.device, k.algo))
        throw ExtensionError(file + " gives " + k.op + " two " + device_name(k.device) + " kernels named '" + k.algo +
                                 "'" + keep_note,
                             "");
      continue;
    }
    const OpDef* target = registry.find(k.op);
    if (!target || (current && target->origin == next.origin)) {  // an op of this file's previous version goes away
      const std::string near = closest_name(k.op, registry_names());
      throw ExtensionError(file + " adds algorithm '" + k.algo + "' to '" + k.op + "', which is not an operator" +
                               keep_note,
                           near.empty() ? "list the operators with :ops" : "did you mean '" + near + "'?");
    }
    // A kernel for an algorithm the op has on another device is that algorithm on a new device
    // (swish_cuda.cu gives swish's "fused" a CUDA kernel); the same device and name is taken.
    const std::string* owner = target->added_by(k.device, k.algo);
    if (target->find_kernel(k.device, k.algo) && !(owner && *owner == next.origin))
      throw ExtensionError(file + " adds algorithm '" + k.algo + "' to " + k.op + ", which already has a " +
                               device_name(k.device) + " kernel '" + k.algo + "' (" +
                               kernel_owner(*target, k.device, k.algo) + ")" + keep_note,
                           "give your algorithm another name");
  }
}

void ExtensionLoader::commit(const LoadedFile& next, const LoadOptions& options, LoadReport& report) {
  check(next, options);
  OpRegistry& registry = OpRegistry::instance();
  const RegistryCapture& cap = *next.capture;
  auto current_it = files_.find(next.origin);
  const LoadedFile* current = current_it == files_.end() ? nullptr : &current_it->second;
  std::set<std::string> own;
  for (const auto& op : cap.ops) own.insert(op->name);
  std::vector<std::string> old_algorithms;
  if (current) {
    for (const KernelAddition& k : current->capture->kernels) old_algorithms.push_back(algorithm_label(k));
    withdraw(*current, &cap, &report);
  }
  for (const auto& op : cap.ops) {
    OpDef def = *op;
    def.origin = next.origin;
    const bool existed = registry.find(def.name) != nullptr;
    report.warnings += missing_parts(def);
    registry.replace(std::move(def));
    (existed ? report.ops_replaced : report.ops_added).push_back(op->name);
    attach_others_kernels(op->name, next.origin);
  }
  std::vector<std::string> new_algorithms;
  for (const KernelAddition& k : cap.kernels) {
    KernelAddition copy = k;
    if (!own.count(k.op)) {
      copy.origin = next.origin;
      new_algorithms.push_back(algorithm_label(k));
    }
    registry.add_kernel(std::move(copy));
  }
  report.algorithms_added = new_algorithms;
  for (const std::string& a : old_algorithms)
    if (std::find(new_algorithms.begin(), new_algorithms.end(), a) == new_algorithms.end())
      report.algorithms_removed.push_back(a);
  files_[next.origin] = next;
}

void ExtensionLoader::withdraw(const LoadedFile& file, const RegistryCapture* keep, LoadReport* report) {
  OpRegistry& registry = OpRegistry::instance();
  for (const KernelAddition& k : file.capture->kernels) {
    if (captured_op(*file.capture, k.op)) continue;  // goes with its op
    const OpDef* target = registry.find(k.op);
    const std::string* owner = target ? target->added_by(k.device, k.algo) : nullptr;
    if (owner && *owner == file.origin) registry.remove_kernel(k.op, k.device, k.algo);
  }
  for (const auto& op : file.capture->ops) {
    if (keep && captured_op(*keep, op->name)) continue;  // replaced, not removed
    const OpDef* registered = registry.find(op->name);
    if (!registered || registered->origin != file.origin) continue;
    registry.remove(op->name);
    if (report) report->ops_removed.push_back(op->name);
  }
}

// Another file's algorithms for `op` go onto its new definition (they were on the old one).
void ExtensionLoader::attach_others_kernels(const std::string& op, const std::string& except_origin) {
  for (const auto& [origin, f] : files_) {
    if (origin == except_origin) continue;
    for (const KernelAddition& k : f.capture->kernels)
      if (k.op == op) {
        KernelAddition copy = k;
        copy.origin = origin;
        OpRegistry::instance().add_kernel(std::move(copy));
      }
  }
}

void ExtensionLoader::unload(const std::string& path) {
  auto it = files_.find(key_of(path));
  if (it == files_.end()) return;
  withdraw(it->second, nullptr, nullptr);
  files_.erase(it);
}

std::optional<LoadedFile> ExtensionLoader::state_of(const std::string& path) const {
  auto it = files_.find(key_of(path));
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

void ExtensionLoader::restore(const std::string& path, const std::optional<LoadedFile>& before) {
  if (!before) {
    unload(path);
    return;
  }
  LoadReport ignored;
  commit(*before, {}, ignored);
}

std::vector<LoadedFile> ExtensionLoader::loaded() const {
  std::vector<LoadedFile> r;
  for (const auto& [_, f] : files_) r.push_back(f);
  return r;
}

std::string LoadReport::summary() const {
  if (status == Status::unchanged) return file + " is already loaded and unchanged\n";
  std::vector<std::string> parts;
  if (status == Status::reloaded) {
    if (!ops_replaced.empty()) parts.push_back("replaced " + join(ops_replaced, ", "));
    if (!ops_added.empty()) parts.push_back("new " + join(ops_added, ", "));
    if (!ops_removed.empty()) parts.push_back("removed " + join(ops_removed, ", "));
  } else if (!ops_added.empty()) {
    parts.push_back(std::string(ops_added.size() == 1 ? "operator " : "operators ") + join(ops_added, ", "));
  }
  if (!algorithms_added.empty())
    parts.push_back(std::string(algorithms_added.size() == 1 ? "algorithm " : "algorithms ") +
                    join(algorithms_added, ", "));
  if (!algorithms_removed.empty()) parts.push_back("removed algorithm " + join(algorithms_removed, ", "));
  char timing[96];
  if (compiled) std::snprintf(timing, sizeof timing, "compiled in %.1f s", compile_seconds);
  else
    std::snprintf(timing, sizeof timing, "%s, loaded in %.1f ms", prebuilt ? "prebuilt" : "cached build",
                  load_seconds * 1e3);
  std::string s = std::string(status == Status::reloaded ? "reloaded " + file + " (edited)" : "loaded " + file) + ": " +
                  join(parts, "; ") + " (" + timing + ")\n";
  if (status == Status::reloaded) s += "  nodes made before keep the definitions they were made with\n";
  return s + warnings;
}

// ---------------------------------------------------------------------------------------------

namespace {
std::string examples_dir() {
  std::vector<fs::path> tried;
  if (const char* env = std::getenv("OPSCOPE_EXAMPLES"); env && *env) tried.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) tried.push_back(exe.parent_path().parent_path() / "share" / "opscope" / "examples");
#ifdef OPSCOPE_EXAMPLES_DIR
  tried.emplace_back(OPSCOPE_EXAMPLES_DIR);
#endif
  for (const fs::path& d : tried)
    if (fs::is_directory(d, ec)) return fs::canonical(d, ec).string();
  return {};
}
}  // namespace

std::string example_path(const std::string& relative) {
  const std::string dir = examples_dir();
  if (dir.empty())
    throw Error("cannot find opscope's examples folder", "set OPSCOPE_EXAMPLES to the repository's assets/examples");
  const fs::path p = fs::path(dir) / relative;
  if (!is_shipped_example(p.string())) {
    std::string names;
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) names += (names.empty() ? "" : ", ") + fs::relative(e.path(), dir).string();
    throw Error("no example '" + relative + "'", "the examples are " + names);
  }
  return p.string();
}

bool is_shipped_example(const std::string& path) {
  const std::string dir = examples_dir();
  std::error_code ec;
  const fs::path p = fs::canonical(path, ec);
  if (dir.empty() || ec || !fs::is_regular_file(p, ec)) return false;
  const std::string s = p.string();
  return s.size() > dir.size() && s.compare(0, dir.size(), dir) == 0 && s[dir.size()] == '/';
}

}  // namespace opscope::ext
