// `opscope`: the command line (CLI11). See DESIGN.md's command-line contract.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/kernel_lab.h"
#include "app/lang/session.h"
#include "app/ops_listing.h"
#include "app/repl.h"
#include "core/device.h"
#include "core/describe.h"
#include "core/error.h"
#include "core/op.h"
#include "core/workspace.h"
#include "viz/export.h"

namespace {

using namespace opscope;

// --json: the values of top-level expressions and printed tensors.
std::string shown_json(const lang::Session& s, bool ok) {
  nlohmann::json values = nlohmann::json::array();
  for (const auto& v : s.shown()) {
    nlohmann::json j{{"source", v.source}, {"type", v.kind}, {"text", v.text}};
    if (v.kind == "tensor") {
      j["shape"] = v.shape;
      j["dtype"] = v.dtype;
      j["data"] = v.data;
    } else if (!v.data.empty()) {
      j["value"] = v.data[0];
    }
    values.push_back(j);
  }
  return nlohmann::json{{"ok", ok}, {"values", values}}.dump(2);
}

// Runs code from a file or -c; prints --json to stdout after the program's own output.
int run_code(const std::string& code, const std::string& name, bool json) {
  lang::Session session(current_workspace());
  session.set_color(!json && isatty(2) && !std::getenv("NO_COLOR"));
  std::ostringstream captured;
  std::ostream& out = json ? static_cast<std::ostream&>(captured) : std::cout;
  bool ok = session.run(code, name, out, std::cerr);
  if (json) std::cout << shown_json(session, ok) << "\n";
  return ok ? 0 : 1;
}

int run_interactive() {
  lang::Session session(current_workspace());
  app::ReplOptions o;
  o.history_path = app::default_history_path();
  o.version = OPSCOPE_VERSION;
  return app::run_repl(session, o);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"opscope: a laboratory for how deep-learning frameworks work inside"};
  app.set_version_flag("--version", std::string("opscope ") + OPSCOPE_VERSION);
  app.require_subcommand(0, 1);
  std::string code;
  bool json_top = false;
  app.add_option("-c", code, "run code given inline");
  app.add_flag("--json", json_top, "with -c: print values as JSON");

  auto* repl = app.add_subcommand("repl", "the terminal REPL");

  auto* run = app.add_subcommand("run", "run a script; on error print FILE:LINE:COL and exit 1");
  std::string file;
  bool run_json = false;
  run->add_option("FILE", file, "the script")->required();
  run->add_flag("--json", run_json, "print the values of top-level expressions and printed tensors as JSON");

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
  gc->add_option("--device", device, "cpu (cuda: see opscope_tests \"[cuda]\")")->check(CLI::IsMember({"cpu", "cuda"}));

  auto* bench = app.add_subcommand("bench", "the kernel lab: every algorithm of an op on the same inputs");
  std::string bench_op;
  std::vector<int64_t> bench_sizes;
  bool bench_json = false;
  int bench_repeats = 5;
  bench->add_option("OP", bench_op, "matmul, conv2d, softmax, layer_norm or attention")->required();
  bench->add_option("--sizes", bench_sizes, "the inputs' sizes (see `opscope bench OP --help-sizes`)");
  bench->add_option("--repeats", bench_repeats, "timed runs per algorithm (median)")->check(CLI::Range(1, 1000));
  bench->add_flag("--json", bench_json, "print JSON");
  std::string bench_device = "cpu";
  bench->add_option("--device", bench_device, "cpu or cuda (CUDA events time each kernel)")
      ->check(CLI::IsMember({"cpu", "cuda"}));

  auto* exp = app.add_subcommand("export", "run a script and write its graph (DOT) or its executed steps (Chrome trace)");
  std::string export_file, dot_out, trace_out;
  exp->add_option("FILE", export_file, "the script")->required();
  exp->add_option("--dot", dot_out, "write the graph as Graphviz DOT");
  exp->add_option("--trace", trace_out, "write the steps in Chrome's trace-event format (Perfetto, chrome://tracing)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (!code.empty() || app.count("-c")) return run_code(code, "<string>", json_top);
    if (*run) {
      std::ifstream f(file, std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "error: cannot open '%s'\n", file.c_str());
        return 1;
      }
      std::stringstream ss;
      ss << f.rdbuf();
      return run_code(ss.str(), file, run_json);
    }
    if (*exp) {
      if (dot_out.empty() && trace_out.empty()) throw Error("export needs --dot OUT or --trace OUT");
      std::ifstream f(export_file, std::ios::binary);
      if (!f) throw Error("cannot open '" + export_file + "'");
      std::stringstream ss;
      ss << f.rdbuf();
      Workspace& ws = current_workspace();
      viz::TraceRecorder recorder(ws.executor());
      lang::Session session(ws);
      std::ostringstream out;
      if (!session.run(ss.str(), export_file, out, std::cerr)) return 1;
      auto write = [](const std::string& path, const std::string& text) {
        std::ofstream o(path, std::ios::binary);
        if (!(o << text)) throw Error("cannot write '" + path + "'");
      };
      if (!dot_out.empty()) write(dot_out, viz::graph_to_dot(ws.graph()));
      if (!trace_out.empty()) write(trace_out, viz::chrome_trace_json(recorder.events(), recorder.labels));
      return 0;
    }
    if (*bench) {
      auto r = app::run_lab(bench_op, bench_sizes, bench_repeats, parse_device(bench_device));
      std::cout << (bench_json ? app::lab_json(r) + "\n" : app::lab_table(r));
      return 0;
    }
    if (*ops) {
      if (!ops_name.empty()) std::cout << describe_op(OpRegistry::instance().get(ops_name));
      else std::cout << (ops_as_json ? app::ops_json() + "\n" : app::ops_table());
      return 0;
    }
    if (*gc) {
      if (device == "cuda") {  // the CUDA kernels are checked against the CPU by the [cuda] tests
        std::cout << (device_available(Device::cuda) ? "SKIPPED: run opscope_tests \"[cuda]\" to check the CUDA kernels against the CPU\n"
                                                      : "SKIPPED: " + device_missing_message(Device::cuda) + "\n");
        return 0;
      }
      return app::run_gradcheck(gc_all ? std::string() : gc_op, gc_verbose) == 0 ? 0 : 1;
    }
    // `opscope` and `opscope repl`: the GUI and lessons are later issues; the REPL now.
    (void)repl;
    return run_interactive();
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return 1;
  }
}
