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
#include "app/lesson/lesson.h"
#include "app/lesson/progress.h"
#include "app/lesson/terminal_player.h"
#include "app/ops_listing.h"
#include "app/repl.h"
#include "core/device.h"
#include "core/describe.h"
#include "core/error.h"
#include "core/op.h"
#include "core/workspace.h"
#include "app/lang/interpreter.h"
#include "viz/export.h"
#ifdef OPSCOPE_HAVE_GRAPHVIZ
#include "viz/graphviz.h"
#endif
#include "app/gui/gui_app.h"  // options only; run_gui exists when the GUI is built
#ifdef OPSCOPE_HAVE_GUI
#include "app/lesson/gui_lesson_panel.h"
#endif

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
  try {  // :lesson in the REPL; a missing lessons folder only leaves it out
    lesson::TerminalPlayerOptions lo;
    lo.dir = lesson::lessons_dir();
    lo.progress_path = lesson::default_progress_path();
    lo.lang = lesson::load_progress(lo.progress_path).lang;
    lo.color = isatty(1) && !std::getenv("NO_COLOR");
    lo.interactive = isatty(0);
    lesson::install_lesson_command(session, lo);
  } catch (const Error&) {
  }
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
  std::string export_file, dot_out, trace_out, svg_out, png_out;
  exp->add_option("FILE", export_file, "the script")->required();
  exp->add_option("--dot", dot_out, "write the graph as Graphviz DOT");
  exp->add_option("--svg", svg_out, "render the graph to SVG through Graphviz (for slides)");
  exp->add_option("--png", png_out, "render the graph to PNG through Graphviz");
  exp->add_option("--trace", trace_out, "write the steps in Chrome's trace-event format (Perfetto, chrome://tracing)");

  auto* lesson_cmd = app.add_subcommand("lesson", "play a lesson in the terminal, or check every lesson (--check)");
  std::string lesson_id, lesson_lang;
  bool lesson_check = false, lesson_list = false;
  lesson_cmd->add_option("ID", lesson_id, "the lesson's number or part of its name (default: where you left off)");
  lesson_cmd->add_option("--lang", lesson_lang, "en or zh (default: the language you used last)")->check(CLI::IsMember({"en", "zh"}));
  lesson_cmd->add_flag("--check", lesson_check, "run every cell, check and quiz of the lessons headless (both languages unless --lang)");
  lesson_cmd->add_flag("--list", lesson_list, "list the lessons and your progress");

  auto* gui = app.add_subcommand("gui", "the window: live graph, stepping, inspector, memory, console");
  std::string gui_size;
  app::GuiOptions gui_opts;
  gui->add_option("--script", gui_opts.script, "run this script first");
  gui->add_option("--lesson", gui_opts.lesson, "open this lesson");
  gui->add_option("--frames", gui_opts.frames, "render N frames and exit (headless use)")->check(CLI::Range(1, 100000));
  gui->add_option("--screenshot", gui_opts.screenshot, "write the last frame as PNG");
  gui->add_option("--state-json", gui_opts.state_json, "write what is on screen as JSON");
  gui->add_option("--actions", gui_opts.actions, "UI actions, one per frame: \"step;step;select n3;toggle backward\"");
  gui->add_option("--size", gui_size, "window size WxH (default 1600x1000)");
  gui->add_flag("--dark", gui_opts.dark, "the dark theme");

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
      if (dot_out.empty() && trace_out.empty() && svg_out.empty() && png_out.empty())
        throw Error("export needs --dot, --svg, --png or --trace OUT");
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
      // A script that compiled a static program exports the program as it runs.
      const auto& program = session.interpreter().statics->last;
      if (!dot_out.empty())
        write(dot_out, program ? viz::graph_to_dot(program->graph, program->schedule) : viz::graph_to_dot(ws.graph()));
      if (!trace_out.empty()) write(trace_out, viz::chrome_trace_json(recorder.events(), recorder.labels));
      if (!svg_out.empty() || !png_out.empty()) {
#ifdef OPSCOPE_HAVE_GRAPHVIZ
        const std::string dot = viz::graph_to_dot(ws.graph());
        if (!svg_out.empty()) viz::render_dot(dot, "svg", svg_out);
        if (!png_out.empty()) viz::render_dot(dot, "png", png_out);
#else
        throw Error("this opscope was built without Graphviz", "use --dot and run `dot -Tsvg`, or install libgraphviz-dev (tools/setup.sh) and rebuild");
#endif
      }
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
    if (*lesson_cmd) {
      const std::string dir = lesson::lessons_dir();
      if (lesson_check) return lesson::check_lessons(dir, lesson_lang, lesson_id, std::cout, std::cerr);
      lesson::TerminalPlayerOptions o;
      o.dir = dir;
      o.progress_path = lesson::default_progress_path();
      o.lang = lesson_lang.empty() ? lesson::load_progress(o.progress_path).lang : lesson_lang;
      if (lesson_list) {
        lesson::list_lessons(dir, o.lang, o.progress_path, std::cout);
        return 0;
      }
      o.id = lesson_id;
      o.color = isatty(1) && !std::getenv("NO_COLOR");
      o.interactive = isatty(0);
      return lesson::play_in_terminal(o, std::cin, std::cout);
    }
#ifdef OPSCOPE_HAVE_GUI
    if (*gui) {
      if (!gui_size.empty() && std::sscanf(gui_size.c_str(), "%dx%d", &gui_opts.width, &gui_opts.height) != 2)
        throw Error("--size takes WIDTHxHEIGHT", "e.g. --size 1600x1000");
      if (!gui_opts.lesson.empty()) gui_opts.lesson_panel = lesson::make_gui_lesson_panel(gui_opts.lesson);
      return app::run_gui(gui_opts);
    }
    // `opscope` alone: the window when there is a display, on the lesson last opened (lesson 1
    // the first time); else the terminal REPL.
    if (!*repl && app::display_available()) {
      app::GuiOptions o;
      const std::string last = lesson::load_progress(lesson::default_progress_path()).last;
      o.lesson = last.empty() ? "1" : last;
      o.lesson_panel = lesson::make_gui_lesson_panel(o.lesson);
      return app::run_gui(o);
    }
#else
    (void)repl;
    if (*gui)
      throw Error("this opscope was built without the GUI",
                  "install libimgui-dev, libglfw3-dev and libgraphviz-dev (tools/setup.sh) and rebuild; `opscope repl` works now");
#endif
    return run_interactive();
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return 1;
  }
}
