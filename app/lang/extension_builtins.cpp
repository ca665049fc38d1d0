#include "app/lang/extension_builtins.h"

#include <ostream>

#include "app/lang/interpreter.h"

namespace opscope::lang {

ext::LoadOptions extension_load_options(const Interpreter& in) {
  ext::LoadOptions o;
  for (const auto& [name, _] : in.builtins()) o.reserved_names.insert(name);
  return o;
}

namespace {

// The file to load. opscope's shipped examples are its own code and load from anywhere; any
// other path goes through the file policy (a lesson may load only from its own folder).
std::string extension_file(Interpreter& in, const std::string& path, Pos p) {
  if (ext::is_shipped_example(path)) return path;
  return in.resolve_path(path, FileMode::load_code, p);
}

// Loads `given` and prints what changed; errors point at `p` (a refused path at `path_pos`).
// A statement that fails later puts the registry back as it was before the load.
void load_into(Interpreter& in, const std::string& given, Pos p, Pos path_pos, std::ostream& out) {
  const std::string path = extension_file(in, given, path_pos);
  ext::ExtensionLoader& loader = ext::ExtensionLoader::instance();
  const std::optional<ext::LoadedFile> before = loader.state_of(path);
  ext::LoadReport r;
  try {
    r = loader.load(path, extension_load_options(in));
  } catch (const ext::ExtensionError& e) {
    LangError le(e.what(), p.line, p.col, e.hint());
    le.set_source(in.source());
    le.set_details(e.details());
    throw le;
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    in.fail(p, e.what(), e.hint());
  }
  if (r.status != ext::LoadReport::Status::unchanged)
    in.on_undo([path, before] {
      try {
        ext::ExtensionLoader::instance().restore(path, before);
      } catch (const Error&) {  // the state before was loadable once; nothing better to do here
      }
    });
  out << r.summary();
}

void list_loaded(std::ostream& out) {
  const auto files = ext::ExtensionLoader::instance().loaded();
  if (files.empty()) {
    out << "no extensions loaded: :load FILE.cpp (or .cu, .so) compiles and loads one\n";
    return;
  }
  for (const ext::LoadedFile& f : files) {
    std::string what;
    for (const auto& op : f.capture->ops) what += (what.empty() ? "" : ", ") + op->name;
    for (const KernelAddition& k : f.capture->kernels)
      what += (what.empty() ? "" : ", ") + k.op + ":" + k.algo + " [" + device_name(k.device) + "]";
    out << f.display << "  " << what << "\n";
  }
}

}  // namespace

void install_extension_builtins(BuiltinTable& B) {
  B.add("load_extension", "load_extension(path)",
        "compiles a C++ (.cpp) or CUDA (.cu) file of operators with opscope's own compiler and flags, and loads it "
        "(a .so built with opscope's CMake package loads as it is); loading it again after an edit replaces its ops",
        [](Interpreter& in, CallArgs& a) {
          need_args(in, a, "load_extension", 1, 1);
          if (a.positional[0].kind() != Value::string)
            in.fail(a.positions[0], "load_extension() needs a file name", "e.g. load_extension(\"my_ops.cpp\")");
          load_into(in, a.positional[0].as_str(), a.pos, a.positions[0], in.out());
          return Value::None();
        });
  B.add("example_path", "example_path(name)",
        "the path of an example shipped with opscope, e.g. example_path(\"extensions/swish.cpp\")",
        [](Interpreter& in, CallArgs& a) {
          need_args(in, a, "example_path", 1, 1);
          if (a.positional[0].kind() != Value::string) in.fail(a.positions[0], "example_path() needs a name");
          try {
            return Value::Str(ext::example_path(a.positional[0].as_str()));
          } catch (const Error& e) {
            in.fail(a.positions[0], e.what(), e.hint());
          }
        });
}

void install_extension_commands(Interpreter& in) {
  in.add_command({"load", "[FILE]",
                  "compile and load a C++/CUDA extension (load_extension); no FILE: the extensions loaded",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    std::string path = args;
                    path.erase(0, path.find_first_not_of(" \t"));
                    path.erase(path.find_last_not_of(" \t\r\n") + 1);
                    if (path.size() >= 2 && (path[0] == '"' || path[0] == '\'') && path.back() == path[0])
                      path = path.substr(1, path.size() - 2);
                    if (path.empty()) return list_loaded(out);
                    load_into(in, path, Pos{}, Pos{}, out);
                  }});
}

}  // namespace opscope::lang
