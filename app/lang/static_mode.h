// Static mode in the language: input(...) placeholders, compile(...), run(...), checkpoint(...),
// and the :mode, :passes and :compile commands. The language only builds the symbolic graph
// and calls core's compiler (core/program.h); it adds no execution of its own.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/program.h"
#include "core/program_run.h"

namespace opscope::lang {

class Interpreter;
struct Builtin;

struct StaticState {
  std::set<std::string> disabled;  // passes switched off with :passes off NAME
  CompileOptions last_options;  // of the last compile (fetch ids are the workspace's)
  std::shared_ptr<const Program> last;  // the last compiled program
  std::unique_ptr<ProgramRun> run;  // a run being stepped: run(..., step=True) or :replay
  std::string run_kind;  // "program" or "replay"
  // @static functions: compiled once per function and argument shapes.
  struct Traced {
    std::shared_ptr<const Program> program;
    std::vector<int> placeholders;  // in parameter order
  };
  std::map<std::string, Traced> traced;
};

void install_static_builtins(Interpreter& in, std::map<std::string, Builtin>& table);
void install_static_commands(Interpreter& in);

// Compiles with the session's pass switches and remembers the program.
std::shared_ptr<const Program> compile_for(Interpreter& in, CompileOptions opt);
// Values of a symbolic tensor that depends on no input (param(randn(...) * 0.05) in static
// mode: a parameter's initial value is computed when it is declared).
Tensor evaluate_constant(Interpreter& in, const Tensor& t);
// The same for a value a statement reads (.item(), print, run()'s results combined in static
// mode): a measuring run, so reading changes nothing (no .grad, no running statistics).
Tensor evaluate_for_reading(Interpreter& in, const Tensor& t);
// Prints the per-pass table of a program (`:compile`).
void print_compile_table(const Program& p, std::ostream& out);

}  // namespace opscope::lang
