// `opscope`: the command line. The REPL, GUI and lessons plug in here as they arrive.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "app/ops_listing.h"
#include "core/describe.h"
#include "core/error.h"
#include "core/op.h"

int main(int argc, char** argv) {
  using namespace opscope;
  CLI::App app{"opscope: a laboratory for how deep-learning frameworks work inside"};
  app.set_version_flag("--version", std::string("opscope ") + OPSCOPE_VERSION);
  app.require_subcommand(0, 1);

  auto* ops = app.add_subcommand("ops", "list operators: attributes, algorithms, saved tensors, doc");
  bool ops_as_json = false;
  std::string ops_name;
  ops->add_flag("--json", ops_as_json, "print JSON");
  ops->add_option("OP", ops_name, "describe one operator");

  auto* gc = app.add_subcommand("gradcheck", "check every op's backward against central differences (float64)");
  std::string gc_op;
  bool gc_all = false, gc_verbose = false;
  gc->add_option("OP", gc_op, "one operator");
  gc->add_flag("--all", gc_all, "every differentiable operator (the default)");
  gc->add_flag("-v,--verbose", gc_verbose, "print details of each case");
  std::string device = "cpu";
  gc->add_option("--device", device, "cpu (cuda arrives with the CUDA backend)")->check(CLI::IsMember({"cpu", "cuda"}));

  CLI11_PARSE(app, argc, argv);
  try {
    if (*ops) {
      if (!ops_name.empty()) std::cout << describe_op(OpRegistry::instance().get(ops_name));
      else std::cout << (ops_as_json ? app::ops_json() + "\n" : app::ops_table());
      return 0;
    }
    if (*gc) {
      if (device == "cuda") {
        std::cout << "SKIPPED: this build has no CUDA backend\n";
        return 0;
      }
      return app::run_gradcheck(gc_all ? std::string() : gc_op, gc_verbose) == 0 ? 0 : 1;
    }
    std::cout << app.help() << "\nThe REPL, the GUI and the lessons are not built yet; try `opscope ops` or "
                               "`opscope gradcheck`.\n";
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return 1;
  }
}
