// Training in the language: optimizers (SGD, Adam, AdamW) as builtin objects whose steps are
// registered ops of phase `update`, data (IDX files, Fashion-MNIST, mini-batches), models
// (parameters(model)), metrics (log) and accuracy. The builtins are installed by
// install_training_builtins (interpreter.h); static mode's compile(loss, optimizer=opt) asks
// the optimizer for its updates here.
#pragma once
#include <map>
#include <string>

#include "app/lang/value.h"
#include "core/program.h"

namespace opscope::lang {

class Interpreter;
struct Builtin;

// compile(loss, optimizer=opt): fills `out.update` with the optimizer's update of each of its
// parameters (allocating state it has not made yet). Fails at `p` if `opt` is no optimizer.
void use_optimizer(Interpreter& in, const Value& opt, Pos p, CompileOptions& out);

void install_optimizer_builtins(std::map<std::string, Builtin>& table);  // SGD, Adam, AdamW
void install_data_builtins(std::map<std::string, Builtin>& table);  // load_idx, fashion_mnist, batches
void install_model_builtins(std::map<std::string, Builtin>& table);  // parameters, log, accuracy

}  // namespace opscope::lang
