// `opscope`: the command line (CLI11). See DESIGN.md's command-line contract.
//
// Each subcommand is one function `add_NAME_command` that declares its options and returns
// what runs it; main() only parses and dispatches. A new subcommand is one such function and
// one line in `commands`.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "app/extension/loader.h"
#include "app/kernel_lab.h"
#include "app/lang/extension_builtins.h"
#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "app/lesson/exercise_class.h"
#include "app/lesson/exercise_sandbox.h"
#include "app/lesson/exercise_text.h"
#include "app/lesson/lesson.h"
#include "app/lesson/progress.h"
#include "app/lesson/terminal_player.h"
#include "app/onnx/conformance.h"
#include "app/onnx/onnx_export.h"
#include "app/onnx/onnx_import.h"
#include "app/ops_listing.h"
#include "app/progress_line.h"
#include "app/repl.h"
#include "app/sigint.h"
#include "core/body.h"
#include "core/cpu_isa.h"
#include "core/describe.h"
#include "core/device.h"
#include "core/error.h"
#include "core/op.h"
#include "core/parallel.h"
#include "core/program.h"
#include "core/workspace.h"
#include "platform/platform.h"
#include "viz/export.h"
#include "viz/metrics.h"
#ifdef OPSCOPE_HAVE_GRAPHVIZ
#include "app/figure_module.h"  // Graphviz is a module (viz/figure_module.h)
#endif
#include "app/gui/gui_app.h"  // options only; the window is a module (window_module.h)
#ifdef OPSCOPE_HAVE_GUI
#include "app/gui/window_module.h"
#endif
#ifdef OPSCOPE_HAVE_CLASS
#include "app/class/class_command.h"  // the server is a module (app/class/class_module.h)
#endif

namespace {

using namespace opscope;

// A subcommand: its CLI11 node and what runs it once the command line is parsed.
struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

// [SECTION] Running code: -c, run, the REPL

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

// Runs code from a file or -c; prints --json to stdout after the program's own output and
// writes the logged metrics to `metrics_csv` (when given) even if the program failed.
int run_code(const std::string& code, const std::string& name, bool json, const std::string& metrics_csv = {}) {
  lang::Session session(current_workspace());
  session.set_color(!json && isatty(2) && !std::getenv("NO_COLOR"));
  if (!json) app::install_progress_line(session.interpreter());
  std::ostringstream captured;
  std::ostream& out = json ? static_cast<std::ostream&>(captured) : std::cout;
  app::SigintInterrupts ctrl_c;  // Ctrl-C: the statement stops and rolls back, then exit 130
  bool ok = session.run(code, name, out, std::cerr);
  if (json) std::cout << shown_json(session, ok) << "\n";
  if (!metrics_csv.empty()) {
    std::ofstream f(metrics_csv, std::ios::binary);
    if (!(f << viz::metrics_csv(session.interpreter().metrics()))) {
      std::fprintf(stderr, "error: cannot write '%s'\n", metrics_csv.c_str());
      return 1;
    }
  }
  if (session.interrupted()) return 130;
  return ok ? 0 : 1;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
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
  } catch (const Error&) {}
  app::ReplOptions o;
  o.history_path = app::default_history_path();
  o.version = OPSCOPE_VERSION;
  return app::run_repl(session, o);
}

Command add_run_command(CLI::App& app) {
  struct Opts {
    std::string file, metrics;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("run", "run a script; on error print FILE:LINE:COL and exit 1");
  sub->add_option("FILE", o->file, "the script")->required();
  sub->add_flag("--json", o->json, "print the values of top-level expressions and printed tensors as JSON");
  sub->add_option("--metrics", o->metrics, "write what the script log()ged as CSV (name,step,value)");
  return {sub, [o] {
            std::ifstream f(o->file, std::ios::binary);
            if (!f) {
              std::fprintf(stderr, "error: cannot open '%s'\n", o->file.c_str());
              return 1;
            }
            return run_code(read_file(o->file), o->file, o->json, o->metrics);
          }};
}

// [SECTION] export: the graph as DOT/SVG/PNG, the steps as a Chrome trace

void write_text(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary);
  if (!(o << text)) throw Error("cannot write '" + path + "'");
}

// --expand all|3,7: the nodes whose body the exported graph draws.
std::set<int> expanded_nodes(const Graph& g, const std::string& spec) {
  std::set<int> out;
  if (spec.empty()) return out;
  if (spec == "all") {
    for (const Node& n : g.nodes())
      if (node_body(g, n)) out.insert(n.id);
    return out;
  }
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      const int id = std::stoi(item);
      if (id < 0 || id >= static_cast<int>(g.num_nodes())) throw std::out_of_range("node");
      out.insert(id);
    } catch (const std::logic_error&) {
      throw Error("--expand: '" + item + "' is not a node of the graph",
                  "give node ids as :graph lists them (3,7), or all");
    }
  }
  return out;
}

Command add_export_command(CLI::App& app) {
  struct Opts {
    std::string file, dot, trace, svg, png, onnx, expand;
  };
  auto o = std::make_shared<Opts>();
  auto* sub =
      app.add_subcommand("export", "run a script and write its graph (DOT) or its executed steps (Chrome trace)");
  sub->add_option("--expand", o->expand,
                  "draw these nodes as the ops inside them (an @op, a fused node): all, or ids like 3,7");
  sub->add_option("FILE", o->file, "the script")->required();
  sub->add_option("--dot", o->dot, "write the graph as Graphviz DOT");
  sub->add_option("--svg", o->svg, "draw the graph as the window does (lanes, folding) to SVG, for slides");
  sub->add_option("--png", o->png, "draw the graph as the window does to PNG");
  sub->add_option("--trace", o->trace, "write the steps in Chrome's trace-event format (Perfetto, chrome://tracing)");
  sub->add_option("--onnx", o->onnx,
                  "write the forward graph as an ONNX model (opset 17): the last compiled program's outputs, else the "
                  "graph's results");
  return {sub, [o] {
            if (o->dot.empty() && o->trace.empty() && o->svg.empty() && o->png.empty() && o->onnx.empty())
              throw Error("export needs --dot, --svg, --png, --trace or --onnx OUT");
            const std::string code = read_file(o->file);
            Workspace& ws = current_workspace();
            viz::TraceRecorder recorder(ws.executor());
            lang::Session session(ws);
            std::ostringstream out;
            if (!session.run(code, o->file, out, std::cerr)) return 1;
            // A script that compiled a static program exports the program as it runs.
            const auto& program = session.interpreter().statics().last;
            const Graph& shown = program ? program->graph : ws.graph();
            std::vector<int> nodes;
            if (program) nodes = program->schedule;
            else
              for (const Node& n : ws.graph().nodes()) nodes.push_back(n.id);
            const std::set<int> expand = expanded_nodes(shown, o->expand);
            if (!o->dot.empty()) write_text(o->dot, viz::graph_to_dot(shown, nodes, expand));
            if (!o->trace.empty()) write_text(o->trace, viz::chrome_trace_json(recorder.events(), recorder.labels));
            if (!o->onnx.empty()) {
              const auto info = interop::save_onnx_values(ws,
                                                          program ? session.interpreter().statics().last_options.fetch
                                                                  : interop::forward_sinks(ws.graph()),
                                                          o->onnx);
              std::cout << "wrote " << o->onnx << ": " << info.nodes << " ONNX nodes, " << info.initializers
                        << " initializers, " << info.inputs << " inputs, opset " << info.opset << "\n";
            }
            if (!o->svg.empty() || !o->png.empty()) {
#ifdef OPSCOPE_HAVE_GRAPHVIZ
              // The figure as the window opens it: lanes, folds, what is not the model left out.
              const std::vector<int> only = program ? program->schedule : std::vector<int>{};
              if (!o->svg.empty()) app::render_window_figure(shown, only, expand, "svg", o->svg);
              if (!o->png.empty()) app::render_window_figure(shown, only, expand, "png", o->png);
#else
              throw Error("this opscope was built without Graphviz",
                          "use --dot and run `dot -Tsvg`, or install libgraphviz-dev (tools/setup.sh) and rebuild");
#endif
            }
            return 0;
          }};
}

// [SECTION] Operators: ops, gradcheck, bench

Command add_ops_command(CLI::App& app) {
  struct Opts {
    bool json = false;
    std::string name;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("ops", "list operators: attributes, algorithms, saved tensors, doc");
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("OP", o->name, "describe one operator");
  return {sub, [o] {
            if (!o->name.empty()) std::cout << describe_op(OpRegistry::instance().get(o->name));
            else std::cout << (o->json ? app::ops_json() + "\n" : app::ops_table());
            return 0;
          }};
}

Command add_gradcheck_command(CLI::App& app) {
  struct Opts {
    std::string op, device = "cpu";
    bool all = false, verbose = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("gradcheck", "check every op's backward against central differences (float64)");
  sub->add_option("OP", o->op, "one operator");
  sub->add_flag("--all", o->all, "every differentiable operator (the default)");
  sub->add_flag("-v,--verbose", o->verbose, "print details of each case");
  sub->add_option("--device", o->device,
                  "cpu, or sim (the simulated GPU's kernels; cuda: see opscope_tests \"[cuda]\")")
      ->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  return {sub, [o] {
            if (o->device == "cuda") {  // the CUDA kernels are checked against the CPU by the [cuda] tests
              std::cout << (device_available(Device::cuda)
                                ? "SKIPPED: run opscope_tests \"[cuda]\" to check the CUDA kernels against the CPU\n"
                                : "SKIPPED: " + device_missing_message(Device::cuda) + "\n");
              return 0;
            }
            const Device device = parse_device(o->device);
            if (!device_available(device)) throw Error(device_missing_message(device));
            return app::run_gradcheck(o->all ? std::string() : o->op, o->verbose, device) == 0 ? 0 : 1;
          }};
}

Command add_bench_command(CLI::App& app) {
  struct Opts {
    std::string op, device = "cpu";
    std::vector<int64_t> sizes;
    bool json = false;
    int repeats = 5;
    std::string gpu = "H100";
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("bench", "the kernel lab: every algorithm of an op on the same inputs");
  sub->add_option("OP", o->op, "matmul, conv2d, softmax, layer_norm or attention")->required();
  sub->add_option("--sizes", o->sizes, "the inputs' sizes (see `opscope bench OP --help-sizes`)");
  sub->add_option("--repeats", o->repeats, "timed runs per algorithm (median)")->check(CLI::Range(1, 1000));
  sub->add_flag("--json", o->json, "print JSON");
  sub->add_option("--device", o->device,
                  "cpu, cuda (CUDA events time each kernel) or sim (the simulated GPU: counters per launch)")
      ->check(CLI::IsMember({"cpu", "cuda", "sim"}));
  sub->add_option("--gpu", o->gpu, "sim: the GPU the time bounds are for (T4, RTX4090, H100, H200)")
      ->check(CLI::IsMember({"T4", "RTX4090", "H100", "H200"}));
  return {sub, [o] {
            auto r = app::run_lab(o->op, o->sizes, o->repeats, parse_device(o->device), o->gpu);
            std::cout << (o->json ? app::lab_json(r) + "\n" : app::lab_table(r));
            return 0;
          }};
}

// [SECTION] ONNX: import, the conformance runner

// Prints one model: what the file declares, then the graph traced in static mode.
void print_imported(const std::string& file, const interop::ImportOptions& opt) {
  Workspace ws;  // one per model, so the graphs of several files do not mix
  WorkspaceScope scope(ws);
  auto model = interop::ImportedModel::load(file, opt);
  std::cout << model->summary();
  const auto traced = model->trace(ws);
  CompileOptions copt;
  for (auto& t : traced.outputs) copt.fetch.push_back(ws.value_of(t));
  copt.gradients = false;
  auto program = compile_program(ws, copt);
  std::cout << "  traced in static mode against input(): " << ws.graph().num_nodes() << " opscope nodes ("
            << traced.folded << " ONNX nodes folded at import); compiled: " << program->schedule.size() << " nodes, "
            << program->flops() << " FLOPs, " << bytes_str(program->peak_bytes()) << " per run\n";
  lang::Session session(ws);
  std::ostringstream err;
  session.run(":graph", "<import>", std::cout, err);
}

Command add_import_command(CLI::App& app) {
  struct Opts {
    std::vector<std::string> files, shapes;
    bool ops = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub =
      app.add_subcommand("import",
                         "read ONNX models and print them traced in static mode (opscope gui --open shows one)");
  sub->add_option("MODEL", o->files, "the .onnx files");
  sub->add_option("--shape", o->shapes,
                  "NAME=DIMS: sizes for an input's symbolic dimensions (default 1), e.g. x=8,1,28,28");
  sub->add_flag("--ops", o->ops, "list the ONNX operator types opscope maps");
  return {sub, [o] {
            if (o->ops) {
              for (auto& t : interop::mapped_op_types()) std::cout << t << "\n";
              return 0;
            }
            if (o->files.empty())
              throw Error("import needs an .onnx file", "opscope import model.onnx [--shape x=1,3,224,224]");
            interop::ImportOptions opt;
            for (auto& s : o->shapes) opt.shapes.insert(interop::parse_shape_option(s));
            for (size_t i = 0; i < o->files.size(); ++i) {
              if (i) std::cout << "\n";
              print_imported(o->files[i], opt);
            }
            return 0;
          }};
}

Command add_onnx_test_command(CLI::App& app) {
  struct Opts {
    std::vector<std::string> dirs, ops;
    bool markdown = false, verbose = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("onnx-test",
                                 "run ONNX backend node tests through the importer: per op type passed/failed/skipped");
  sub->add_option("DIR", o->dirs,
                  "test folders (with model.onnx), or folders of them: /usr/share/libonnx-testdata/data/node")
      ->required();
  sub->add_option("--op", o->ops, "only the tests of these ONNX op types");
  sub->add_flag("--markdown", o->markdown, "print the table as Markdown (the README's)");
  sub->add_flag("-v,--verbose", o->verbose, "a line for every test");
  return {sub, [o] {
            interop::ConformanceOptions opt;
            opt.only_ops = o->ops;
            opt.verbose = o->verbose;
            const auto report = interop::run_conformance(o->dirs, opt, std::cout);
            std::cout << interop::conformance_table(report, o->markdown);
            return report.count(interop::ConformanceTest::failed) == 0 ? 0 : 1;
          }};
}

// [SECTION] Lessons

Command add_lesson_command(CLI::App& app) {
  struct Opts {
    std::string id, lang;
    bool check = false, list = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("lesson", "play a lesson in the terminal, or check every lesson (--check)");
  sub->add_option("ID", o->id, "the lesson's number or part of its name (default: where you left off)");
  sub->add_option("--lang", o->lang, "en or zh (default: the language you used last)")
      ->check(CLI::IsMember({"en", "zh"}));
  sub->add_flag("--check", o->check,
                "run every cell, check and quiz of the lessons headless (both languages unless --lang)");
  sub->add_flag("--list", o->list, "list the lessons and your progress");
  return {sub, [o] {
            const std::string dir = lesson::lessons_dir();
            if (o->check) return lesson::check_lessons(dir, o->lang, o->id, std::cout, std::cerr);
            lesson::TerminalPlayerOptions p;
            p.dir = dir;
            p.progress_path = lesson::default_progress_path();
            p.lang = o->lang.empty() ? lesson::load_progress(p.progress_path).lang : o->lang;
            if (o->list) {
              lesson::list_lessons(dir, p.lang, p.progress_path, std::cout);
              return 0;
            }
            p.id = o->id;
            p.color = isatty(1) && !std::getenv("NO_COLOR");
            p.interactive = isatty(0);
            return lesson::play_in_terminal(p, std::cin, std::cout);
          }};
}

// [SECTION] Exercises: list, show, check a student's file, grade a class

// `exercise show --solution` prints the hidden checks and the reference solution: only from a
// lessons folder this user owns and may write, a teacher's or an author's own copy (who can edit
// the solutions anyway). A copy installed for a lab's students (not theirs to write) keeps them;
// the site ships none (tools/strip_solutions.py). Marks never rest on this: the class server grades.
void require_own_lessons(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid == geteuid() && ::access(dir.c_str(), W_OK) == 0) return;
  throw Error("the solutions are for the teacher: the lessons in " + dir + " are not yours to change",
              "run it in your own copy of the lessons: OPSCOPE_LESSONS=DIR opscope exercise show ID --solution");
}

Command add_exercise_command(CLI::App& app) {
  struct Opts {
    std::string lang, id, file, dir, csv, shown_as;
    bool json = false, solution = false, in_process = false;
    size_t memory_mib = 4096;
    double seconds = 0;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("exercise",
                                 "the course's exercises: list, show, check a student's file, grade a class's folder");
  sub->require_subcommand(1);
  auto* list = sub->add_subcommand("list", "the exercises: id, lesson, title");
  list->add_flag("--json", o->json, "print JSON");
  auto* show = sub->add_subcommand("show", "one exercise: its story, prompt, starter code and what is checked");
  show->add_option("ID", o->id, "the exercise's id (opscope exercise list)")->required();
  show->add_flag("--solution", o->solution,
                 "for a teacher: the hints, the checks' code and the reference solution too (from a lessons folder you "
                 "own and may write)");
  auto* check =
      sub->add_subcommand("check", "run an exercise's hidden checks on a student's file (exit 0: passed, 1: not)");
  check->add_option("ID", o->id, "the exercise's id")->required();
  check->add_option("FILE", o->file, "the student's answer, a .ops file")->required();
  check->add_flag("--json", o->json, "print the result as JSON");
  // What the graded child runs (below); a person need not: the desktop grades in a child already.
  check->add_flag("--in-process", o->in_process, "grade in this process (no child process, no hard limits)")->group("");
  check->add_option("--as", o->shown_as, "the file's name in messages")->group("");
  auto* grade = sub->add_subcommand("grade", "grade a folder of students' answers, STUDENT/ID.ops, into one table");
  grade->add_option("DIR", o->dir, "the class's folder")->required();
  grade->add_option("--csv", o->csv, "also write the table as CSV");
  grade->add_flag("--json", o->json, "print every attempt as JSON instead of the table");
  for (CLI::App* c : {check, grade})
    c->add_option("--memory-mib", o->memory_mib,
                  "each attempt's memory cap in MiB of address space (desktop; default 4096)")
        ->check(CLI::Range(256, 1 << 20));
  for (CLI::App* c : {check, grade})
    c->add_option("--seconds", o->seconds, "each attempt's time limit (default: each exercise's own)")
        ->check(CLI::Range(0.1, 600.0));
  for (CLI::App* c : {list, show, check, grade})
    c->add_option("--lang", o->lang, "en or zh (default: the language you used last)")
        ->check(CLI::IsMember({"en", "zh"}));
  return {sub, [o, list, show, check, grade]() -> int {
            const std::string lang =
                o->lang.empty() ? lesson::load_progress(lesson::default_progress_path()).lang : o->lang;
            const auto course = lesson::course_exercises(lesson::lessons_dir(), lang);
            if (*list) {
              std::cout << (o->json ? lesson::exercise_list_json(course) + "\n" : lesson::exercise_list_text(course));
              return 0;
            }
            if (*show) {
              if (o->solution) require_own_lessons(lesson::lessons_dir());
              std::cout << lesson::exercise_text(lesson::find_exercise(course, o->id),
                                                 {isatty(1) && !std::getenv("NO_COLOR"), 88}, o->solution);
              return 0;
            }
            // Each graded attempt runs in a child process with a hard time and memory limit
            // (desktop); the child itself, and the browser, grade in-process.
            const bool in_child = !o->in_process && platform::has(platform::Feature::child_processes);
            lesson::SandboxLimits limits;
            limits.memory_bytes = o->memory_mib << 20;
            limits.seconds = o->seconds;
            lesson::AttemptOptions in_process;
            in_process.seconds = o->seconds;
            if (*check) {
              const lesson::ExerciseRef e = lesson::find_exercise(course, o->id);
              app::SigintInterrupts ctrl_c;  // Ctrl-C stops the attempt like its time limit
              const std::string shown = o->shown_as.empty() ? o->file : o->shown_as;
              if (in_child && !std::filesystem::is_regular_file(o->file))
                throw Error("cannot read '" + o->file + "'", "give the path of a .ops file");
              const lesson::Attempt a =
                  in_child ? lesson::run_attempt_in_child(e, o->file, shown, lang, limits)
                           : lesson::run_attempt(*e.lesson, *e.exercise, read_file(o->file), shown, in_process);
              if (o->json) std::cout << lesson::attempt_json(*e.exercise, a) << "\n";
              else if (a.status != lesson::AttemptStatus::passed && a.status != lesson::AttemptStatus::failed)
                std::cerr << lesson::feedback_text(*e.exercise, a, lang == "zh");
              else std::cout << a.output << lesson::feedback_text(*e.exercise, a, lang == "zh");
              return a.status == lesson::AttemptStatus::passed ? 0 : 1;
            }
            (void)grade;
            const lesson::GradeFile one_file = [&](const lesson::ExerciseRef& e, const std::string& code,
                                                   const std::string& path, const std::string& shown) {
              return in_child ? lesson::run_attempt_in_child(e, path, shown, lang, limits)
                              : lesson::run_attempt(*e.lesson, *e.exercise, code, shown, in_process);
            };
            const lesson::ClassGrades g = lesson::grade_class(
                o->dir, course, [](const std::string& f) { std::cerr << "grading " << f << "\n"; }, one_file);
            if (o->json) {
              std::cout << lesson::grades_json(g, course) << "\n";
            } else {
              std::cout << lesson::grades_table(g);
              for (const std::string& n : g.notes) std::cout << "note: " << n << "\n";
            }
            if (!o->csv.empty()) write_text(o->csv, lesson::grades_csv(g));
            return 0;
          }};
}

// [SECTION] The window

Command add_gui_command(CLI::App& app) {
  struct Opts {
    std::string size;
    app::GuiOptions gui;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("gui", "the window: live graph, stepping, inspector, memory, console");
  sub->add_option("--script", o->gui.script, "run this script first");
  sub->add_option("--open", o->gui.open, "open an ONNX model (as File > Open: traced in static mode)");
  sub->add_option("--lesson", o->gui.lesson, "open this lesson");
  sub->add_option("--lang", o->gui.lesson_lang, "the lesson's language: en or zh (default: the one used last)")
      ->check(CLI::IsMember({"en", "zh"}));
  sub->add_option("--frames", o->gui.frames, "render N frames and exit (headless use)")->check(CLI::Range(1, 100000));
  sub->add_option("--screenshot", o->gui.screenshot, "write the last frame as PNG");
  sub->add_option("--live-screenshot", o->gui.live_screenshot,
                  "write the last frame drawn while the script was still running (its loop) as PNG");
  sub->add_option("--state-json", o->gui.state_json, "write what is on screen as JSON");
  sub->add_option("--actions", o->gui.actions, "UI actions, one per frame: \"step;step;select n3;toggle backward\"");
  sub->add_option("--size", o->size, "window size WxH (default 1600x1000)");
  sub->add_flag("--dark", o->gui.dark, "the dark theme");
  sub->add_flag("--journal", o->gui.journal_on,
                "keep the console's statements for the next session, which offers to run them again (the default "
                "without --frames)");
  sub->add_flag("--no-journal", o->gui.journal_off, "do not keep them (nor offer the last session's)");
  sub->add_option("--zoom", o->gui.zoom, "View ▸ Zoom: 1 to 2.5 (default: the one you left it at)")
      ->check(CLI::Range(1.0, 2.5));
  sub->add_option("--layout", o->gui.layout_mode,
                  "where the graph's layouts are made: thread (default), slices (a few ms per frame) or sync (at once; "
                  "the default with --frames)");
  o->gui.process_start = std::chrono::steady_clock::now();  // (parsed at start-up: open_ms counts from here)
  return {sub, [o]() -> int {
#ifdef OPSCOPE_HAVE_GUI
            if (!o->size.empty() && std::sscanf(o->size.c_str(), "%dx%d", &o->gui.width, &o->gui.height) != 2)
              throw Error("--size takes WIDTHxHEIGHT", "e.g. --size 1600x1000");
            return app::open_window(o->gui);
#else
            throw Error("this opscope was built without the GUI",
                        "install libimgui-dev, libglfw3-dev and libgraphviz-dev (tools/setup.sh) and rebuild; `opscope repl` works now");
#endif
          }};
}

// `opscope` alone: the window when there is a display, on the lesson last opened (lesson 1 the
// first time); else the terminal REPL.
int run_default() {
#ifdef OPSCOPE_HAVE_GUI
  if (platform::has_display()) {
    app::GuiOptions o;
    const std::string last = lesson::load_progress(lesson::default_progress_path()).last;
    o.lesson = last.empty() ? "1" : last;
    return app::open_window(o);
  }
#endif
  return run_interactive();
}

// [SECTION] --extension: C++/CUDA operators loaded before any command

// Loads each file, telling stderr what it did (stdout stays the command's, e.g. its --json).
int load_extensions(const std::vector<std::string>& files) {
  if (files.empty()) return 0;
  lang::Session probe(current_workspace());  // for the names the language reserves
  const ext::LoadOptions options = lang::extension_load_options(probe.interpreter());
  for (const std::string& f : files) {
    try {
      std::cerr << ext::ExtensionLoader::instance().load(f, options).summary();
    } catch (const ext::ExtensionError& e) {
      std::fprintf(stderr, "error: %s\n%s", e.what(), e.details().c_str());
      if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

static int run_command_line(int argc, char** argv) {
  CLI::App app{"opscope: a laboratory for how deep-learning frameworks work inside"};
  // The kernels and the BLAS this binary runs here; the CUDA runtime is not started to say so.
  app.set_version_flag("--version", [] {
    return std::string("opscope ") + OPSCOPE_VERSION + "\ncpu: " + cpu_description() +
           "\ncuda: " + (device_built(Device::cuda) ? "built (started on first use)" : "not built");
  });
  int threads = 0;
  app.add_option("--threads", threads,
                 "threads the CPU kernels use (default: the machine's cores, or OPSCOPE_NUM_THREADS)")
      ->check(CLI::Range(1, kMaxThreads));
  app.fallthrough();  // --threads also after the subcommand: opscope run f.ops --threads 1
  app.require_subcommand(0, 1);
  std::string code;
  bool json_top = false;
  app.add_option("-c", code, "run code given inline");
  app.add_flag("--json", json_top, "with -c: print values as JSON");
  std::vector<std::string> extensions;
  app.add_option("--extension", extensions,
                 "load a C++ (.cpp), CUDA (.cu) or prebuilt (.so) extension first (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.fallthrough();  // `opscope gradcheck swish --extension swish.cpp`: after a subcommand too

  const Command repl{app.add_subcommand("repl", "the terminal REPL"), run_interactive};
  const std::vector<Command> commands = {
      repl,
      add_run_command(app),
      add_ops_command(app),
      add_gradcheck_command(app),
      add_bench_command(app),
      add_export_command(app),
      add_import_command(app),
      add_onnx_test_command(app),
      add_lesson_command(app),
      add_exercise_command(app),
      add_gui_command(app),
#ifdef OPSCOPE_HAVE_CLASS
      [&app] {
        auto [sub, run] = classroom::add_class_command(app);
        return Command{sub, run};
      }(),
#endif
  };

  CLI11_PARSE(app, argc, argv);
  try {
    if (threads > 0) set_num_threads(threads);
    if (const int rc = load_extensions(extensions)) return rc;
    if (!code.empty() || app.count("-c")) return run_code(code, "<string>", json_top);
    for (const Command& c : commands)
      if (*c.sub) return c.run();
    return run_default();
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return 1;
  }
}

int main(int argc, char** argv) {
  // The browser's command line comes from the page's address (platform/platform.h).
  platform::Arguments args = platform::start(argc, argv);
  return platform::finish(run_command_line(args.argc(), args.data()));
}
