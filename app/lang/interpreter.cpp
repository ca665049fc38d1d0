#include "app/lang/interpreter.h"
#include "app/lang/kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ostream>

#include "app/lang/arithmetic.h"
#include "app/lang/expr_text.h"
#include "app/lang/extension_builtins.h"
#include "app/lang/onnx_builtins.h"
#include "app/lang/parser.h"
#include "app/lang/source_scan.h"
#include "app/lang/user_ops.h"
#include "core/interrupt.h"

namespace opscope::lang {

namespace {
const char* const kKeywords[] = {"def",     "return", "if",     "elif",  "else",  "for",      "in",
                                 "and",     "or",     "not",    "True",  "False", "None",     "pass",
                                 "no_grad", "static", "assert", "while", "break", "continue", "class"};

// Names the language gives to operators: `a + b` is add(a, b).
const char* binary_op_name(Operator op) {
  switch (op) {
    case Operator::add: return "add";
    case Operator::sub: return "sub";
    case Operator::mul: return "mul";
    case Operator::div: return "div";
    case Operator::matmul: return "matmul";
    case Operator::pow: return "pow";
    case Operator::mod: return "mod";  // Python's remainder: the sign of the divisor
    default: return nullptr;
  }
}
const char* compare_op_name(Operator op) {
  switch (op) {
    case Operator::eq: return "eq";
    case Operator::ne: return "ne";
    case Operator::lt: return "lt";
    case Operator::le: return "le";
    case Operator::gt: return "gt";
    case Operator::ge: return "ge";
    default: return nullptr;
  }
}

// Methods a tensor has besides the operators (x.sum() calls the op sum).
const char* const kTensorMethods[] = {"item",  "tolist", "detach", "backward", "numel",   "dim",  "size",
                                      "float", "double", "long",   "to",       "reshape", "view", "permute"};
const char* const kTensorAttrs[] = {"shape", "grad", "dtype", "device", "requires_grad", "T", "ndim", "name"};

// An op's input name without its "?" or "..." ("bias?" -> "bias").
std::string input_name(const OpDef& op, size_t i) {
  std::string n = op.input_names[std::min(i, op.input_names.size() - 1)];
  while (!n.empty() && (n.back() == '?' || n.back() == '.')) n.pop_back();
  return n;
}
std::string input_list(const OpDef& op) {
  std::string s;
  for (auto& n : op.input_names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Return from a user function: unwinds the interpreter's C++ stack to the call.
struct ReturnSignal {
  Value value;
};
// break and continue: unwind to the innermost loop (the parser allows them only inside one).
struct BreakSignal {};
struct ContinueSignal {};

// A dict key: what Python can hash (numbers, strings, None, tuples of those).
bool hashable(const Value& k) {
  if (k.is_number() || k.kind() == Value::string || k.kind() == Value::none) return true;
  if (k.kind() != Value::tuple) return false;
  for (auto& x : *k.items())
    if (!hashable(x)) return false;
  return true;
}

void check_key(const Interpreter& in, const Value& k, Pos p) {
  if (!hashable(k))
    in.fail(p, std::string("a ") + kind_name(k) + " cannot be a dict key",
            "keys are strings, numbers, None or tuples of them");
}
}  // namespace

bool is_tensor_method(const std::string& name) {
  for (const char* m : kTensorMethods)
    if (name == m) return true;
  return OpRegistry::instance().find(name) != nullptr;
}

std::vector<std::string> tensor_member_names() {
  std::vector<std::string> names(std::begin(kTensorMethods), std::end(kTensorMethods));
  names.insert(names.end(), std::begin(kTensorAttrs), std::end(kTensorAttrs));
  for (const OpDef* op : OpRegistry::instance().all())
    if (op->checked_via.empty()) names.push_back(op->name);
  return names;
}

Interpreter::Interpreter(Workspace& ws, StatementRollback& rollback, TapePruner& tape)
    : ws_(ws), rollback_(rollback), tape_(tape), user_ops_(std::make_shared<UserOps>(*this)) {
  install_builtins();
  install_commands();
  tape_.set_pins([this] { return tape_pins(); });
  // A student's function handed a check's tensor must not change it in place (an optimizer
  // step on it, then a result that agrees with the changed tensor).
  rollback_.undo().before_data_change = [this](const Tensor& t) {
    if (check_globals_.empty() || running_owner() != Owner::student) return;
    const Storage* s = &t.storage();
    auto held = [s](const Value& v) {
      return v.kind() == Value::tensor && v.as_tensor().defined() && !v.as_tensor().is_symbolic() &&
             &v.as_tensor().storage() == s;
    };
    for (const auto& [name, v] : check_globals_) {
      bool hit = held(v);
      if (!hit && (v.kind() == Value::list || v.kind() == Value::tuple))
        hit = std::any_of(v.items()->begin(), v.items()->end(), held);
      if (hit)
        throw Error("your code changes the checks' tensor '" + name + "' in place (an optimizer step on it)",
                    "the checks' tensors are theirs: compute on a copy (" + name + " * 1.0) or on your own parameters");
    }
  };
}

void Interpreter::install_builtins() {
  install_builtin_functions(*this, builtins_);
  install_check_builtins(builtins_);
  install_expect_builtins(builtins_);
  install_training_builtins(builtins_);
  install_static_builtins(*this, builtins_);
  install_user_op_builtins(builtins_);
  install_kernel_builtins(builtins_);
}
void Interpreter::install_commands() {
  install_repl_commands(*this);
  install_static_commands(*this);
  install_extension_commands(*this);
  install_onnx_commands(*this);
}

void Interpreter::fail(Pos p, const std::string& message, const std::string& hint) const {
  LangError e(message, p.line, p.col, hint);
  e.set_source(source_);
  throw e;
}

void Interpreter::add_command(Command c) { commands_[c.name] = std::move(c); }

// ---------------------------------------------------------------------------------------------
// Statements and rollback

std::string Interpreter::resolve_path(const std::string& path, FileMode mode, Pos p) const {
  try {
    std::string resolved = file_policy_ ? file_policy_->resolve(path, mode) : path;
    if (mode == FileMode::write) written_files_.push_back(resolved);
    return resolved;
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    fail(p, e.what(), e.hint());
  }
}

void Interpreter::run_statement(const Stmt& s, std::ostream& out) {
  out_ = &out;
  rollback_.begin(session_state());
  tape_.begin_statement();
  iterations_ = 0;
  call_depth_ = 0;
  progress_depth_ = 0;
  frames_.clear();
  try {
    if (interrupt::requested()) fail_interrupted(s.pos);  // pressed between two statements
    exec(s);
    rollback_.commit();
  } catch (...) {
    rollback_.rollback(session_state());
    throw;
  }
  tape_.end_statement();
}

TapePruner::Pins Interpreter::tape_pins() const {
  TapePruner::Pins pins;
  if (pending_) pins.nodes = pending_->nodes();  // a stepped backward still to run
  pins.values = statics_->last_options.fetch;  // :compile compiles them again
  pins.values.insert(pins.values.end(), statics_->last_options.wrt.begin(), statics_->last_options.wrt.end());
  return pins;
}

void Interpreter::start_pending_pass(std::unique_ptr<ScheduleRun> pass) {
  auto before = std::make_shared<std::unique_ptr<ScheduleRun>>(std::move(pending_));
  on_undo(&pending_, StatementUndo::pending_pass, [this, before] { pending_ = std::move(*before); });
  pending_ = std::move(pass);
}

void Interpreter::exec_block(const Block& b) {
  for (auto& s : b) exec(*s);
}

void Interpreter::fail_interrupted(Pos p) const {
  LangError e("interrupted", p.line, p.col, Interrupted().hint());
  e.set_source(source_);
  e.set_interrupted();
  throw e;
}

void Interpreter::check_interrupt(Pos p) {
  try {
    interrupt::check();
  } catch (const Interrupted&) {
    fail_interrupted(p);
  }
}

// Every loop's back-edge (for and while alike) comes through here.
void Interpreter::count_iteration(Pos p) {
  if (++iterations_ > kMaxIterations)
    fail(p, "more than " + std::to_string(kMaxIterations) + " loop iterations in one statement",
         "loops here are for small teaching examples; use tensor operations for bulk work");
  check_interrupt(p);
  // An @op's body is traced into a graph of its own: its loops are not the statement's tape.
  if (user_ops_->tracing()) return;
  tape_.on_iteration(p.line, source_);
  if (on_iteration_) on_iteration_();
}

namespace {
struct LoopLevel {  // a loop runs: the tape pruner tracks the outermost one's iterations
  TapePruner& tape;
  explicit LoopLevel(TapePruner& t) : tape(t) { tape.enter_loop(); }
  ~LoopLevel() { tape.leave_loop(); }
};
}  // namespace

bool Interpreter::run_loop_body(const Block& body) {
  try {
    exec_block(body);
  } catch (const BreakSignal&) {
    return false;
  } catch (const ContinueSignal&) {}
  return true;
}

void Interpreter::exec_for(const Stmt& s) {
  Value it = eval(*s.value);
  const LoopLevel level(tape_);
  LoopFrameGuard loop(ws_);  // the figure shows the last iteration's nodes, with a count
  int iteration = 0;
  const Expr& target = *s.targets[0];
  auto each = [&](const Value& x) {
    count_iteration(s.pos);
    loop.iteration(iteration++);
    assign_target(target, x);
    return run_loop_body(s.body);
  };
  switch (it.kind()) {
    case Value::list:
    case Value::tuple: {
      auto items = it.items();  // keep alive while the body may reassign
      for (auto& x : *items)
        if (!each(x)) break;
      return;
    }
    case Value::string:
      for (char c : std::string(it.as_str()))
        if (!each(Value::Str(std::string(1, c)))) break;
      return;
    case Value::dict: {  // its keys, as they are when the loop starts
      std::vector<Value> keys;
      for (auto& [k, _] : it.as_dict()->entries) keys.push_back(k);
      for (auto& k : keys)
        if (!each(k)) break;
      return;
    }
    case Value::tensor: {
      if (it.as_tensor().dim() == 0) fail(s.value->pos, "cannot iterate over a 0-d tensor");
      const int64_t n = it.as_tensor().size(0);
      for (int64_t i = 0; i < n; ++i) {
        Tensor row =
            ws_.call("reshape",
                     {ws_.call("slice", {it.as_tensor()}, {{"axis", int64_t{0}}, {"start", i}, {"stop", i + 1}})},
                     {{"shape", Shape(it.as_tensor().shape().begin() + 1, it.as_tensor().shape().end())}});
        if (!each(Value::Tensor_(row))) break;
      }
      return;
    }
    case Value::object: {
      auto obj = it.as_native();
      const int64_t n = obj->length();
      if (n < 0) break;
      // A loop over batches() reports its progress (the terminal's progress line).
      struct Progress {
        Interpreter& in;
        bool on;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
        double seconds() const {
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        ~Progress() {
          if (!on) return;
          --in.progress_depth_;
          if (in.on_progress_) in.on_progress_({LoopProgress::done, 0, 0, seconds()});
        }
      } progress{*this, obj->shows_progress()};
      if (progress.on) ++progress_depth_;
      for (int64_t i = 0; i < n; ++i) {
        if (progress.on && on_progress_) on_progress_({LoopProgress::step, i, n, progress.seconds()});
        if (!each(obj->item(*this, i, s.value->pos))) break;
      }
      return;
    }
    default: break;
  }
  fail(s.value->pos, std::string("cannot iterate over a value of type ") + kind_name(it),
       "write for i in range(n): or loop over a list, a dict or batches(x, y)");
}

// An engine error that no expression positioned (say, a tensor read in the middle of a method)
// points at its own statement, never at line 1.
void Interpreter::exec(const Stmt& s) {
  try {
    exec_statement(s);
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    fail(s.pos, e.what(), e.hint());
  }
}

Tensor Interpreter::values_for_reading(const Tensor& t, const Expr* written, Pos p, const std::string& what) {
  if (!t.defined() || !t.is_symbolic()) return t;
  const std::string name = written ? expr_text(*written) : t.name().empty() ? std::string("this tensor") : t.name();
  std::string why;
  try {
    return evaluate_for_reading(*this, t);
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    why = e.what();
  }
  // "this value depends on the input 'x', so it has no value before the program runs"
  if (why.rfind("this value ", 0) == 0) why = "it " + why.substr(11);
  fail(p, "'" + name + "' is symbolic: " + why + (what.empty() ? "" : " (" + what + " needs its values)"),
       "v = run(" + name + ", x=...) computes its values; :mode dynamic runs statements at once");
}

void Interpreter::exec_statement(const Stmt& s) {
  switch (s.kind) {
    case Stmt::expr: {
      Value v = eval(*s.value);
      if (frames_.empty() && v.kind() == Value::tensor && v.as_tensor().defined() &&
          v.as_tensor().is_symbolic()) {  // shown with values when it has them
        try {
          v.as_tensor() = evaluate_for_reading(*this, v.as_tensor());
        } catch (const Error&) {}
      }
      if (frames_.empty() && v.kind() != Value::none) {
        if (v.kind() == Value::builtin_fn && (v.as_builtin().name == "exit" || v.as_builtin().name == "quit")) {
          if (echo_) out() << "Use exit(), :quit or Ctrl-D to leave\n";
          return;
        }
        show(s.source, v);
        if (echo_) out() << repr(v) << "\n";
      }
      return;
    }
    case Stmt::assign: {
      Value v = eval(*s.value);
      for (auto& t : s.targets) assign_target(*t, v);
      return;
    }
    case Stmt::aug_assign: {
      const Expr& t = *s.targets[0];
      Value cur = eval(t);
      Value rhs = eval(*s.value);
      assign_target(t, eval_binary(s.op, cur, rhs, s.pos));
      return;
    }
    case Stmt::def: {
      auto f = std::make_shared<Function>();
      f->name = s.text;
      for (auto& p : s.params) {
        f->params.push_back(p.name);
        f->defaults.push_back(p.default_value ? std::make_shared<Value>(eval(*p.default_value)) : nullptr);
      }
      f->body = &s.body;
      f->source = source_;
      f->decorators = s.decorators;
      f->file_policy = file_policy_;
      if (user_ops_->define(s, f)) return;  // @op, @NAME.backward
      if (define_kernel(*this, s, f)) return;  // @kernel: launched on the simulated GPU
      for (auto& d : s.decorators)
        if (d != "composite" && d != "static")
          fail(s.pos, "unknown decorator '@" + d + "'",
               "the decorators are @op (a user-defined operator), @NAME.backward (its backward), @static (its body "
               "builds a static graph), @composite and @kernel (a GPU kernel on the simulator)");
      assign(s.text, Value::Of(f));
      return;
    }
    case Stmt::ret:
      if (frames_.empty()) fail(s.pos, "'return' outside a function");
      throw ReturnSignal{s.value ? eval(*s.value) : Value::None()};
    case Stmt::if_:
      if (truthy(eval(*s.value), s.value->pos, s.value.get())) exec_block(s.body);
      else exec_block(s.orelse);
      return;
    case Stmt::for_: exec_for(s); return;
    case Stmt::while_: {
      const LoopLevel level(tape_);
      LoopFrameGuard loop(ws_);  // the figure shows the last iteration's nodes, with a count
      int iteration = 0;
      while (truthy(eval(*s.value), s.value->pos, s.value.get())) {
        count_iteration(s.pos);
        loop.iteration(iteration++);
        if (!run_loop_body(s.body)) break;
      }
      return;
    }
    case Stmt::break_: throw BreakSignal{};
    case Stmt::continue_: throw ContinueSignal{};
    case Stmt::class_: exec_class(s); return;
    case Stmt::block: {
      if (s.text == "no_grad") {
        NoGradGuard ng;
        exec_block(s.body);
        return;
      }
      if (s.text == "static") {  // the statements inside build the graph; compile/run execute it
        StaticModeGuard guard(ws_, true);
        exec_block(s.body);
        return;
      }
      fail(s.pos, "unknown block '" + s.text + ":'", "the blocks are no_grad: and static:");
    }
    case Stmt::pass: return;
    case Stmt::command: return;
    case Stmt::assert_: exec_assert(s); return;
  }
}

namespace {
// A value as an assertion's failure shows it: short enough for one line.
std::string short_repr(const Value& v) {
  std::string r = repr(v);
  if (r.size() > 160) r = r.substr(0, 157) + "...";
  return r;
}
}  // namespace

// `assert cond[, message]`. A failed comparison shows both sides' values, so a lesson's check
// (or a student's) says what the engine computed, not only that it differs.
void Interpreter::exec_assert(const Stmt& s) {
  std::string text = s.source;
  if (text.rfind("assert", 0) == 0) text = text.substr(6);
  text = text.substr(std::min(text.size(), text.find_first_not_of(" \t")));
  if (s.message) {  // the condition alone, without ", message": up to its first comma outside brackets and strings
    const size_t comma = find_in_code(text, [](size_t, char c, int depth) { return c == ',' && depth == 0; });
    const size_t end = text.find_last_not_of(" \t", comma == 0 ? 0 : comma - 1);
    if (comma < text.size()) text = end == std::string::npos ? std::string() : text.substr(0, end + 1);
  }
  const Expr& c = *s.value;
  std::string values;
  bool ok = false;
  if (c.kind == Expr::compare) {
    Value l = eval(*c.items[0]);
    Value r = eval(*c.items[1]);
    ok = truthy(eval_compare(c.op, l, r, c.pos), c.pos);
    values = "left side: " + short_repr(l) + ", right side: " + short_repr(r);
  } else {
    Value v = eval(c);
    ok = truthy(v, c.pos);
    values = "the condition's value: " + short_repr(v);
  }
  if (ok) return;
  std::string message = "assertion failed: " + text;
  if (s.message) message += " — " + str(eval(*s.message));
  fail(s.pos, message, values);
}

// ---------------------------------------------------------------------------------------------
// Names

void Interpreter::set_source(std::shared_ptr<const SourceText> s) {
  if (s && next_owner_ != Owner::lesson && !owners_.count(s.get())) {
    owners_[s.get()] = next_owner_;
    owned_sources_.push_back(s);
  }
  source_ = std::move(s);
}

Interpreter::Owner Interpreter::running_owner() const {
  if (owners_.empty() || !source_) return Owner::lesson;
  auto it = owners_.find(source_.get());
  return it == owners_.end() ? Owner::lesson : it->second;
}

void Interpreter::refuse_forbidden(const std::string& name, Pos p) const {
  if (forbidden_.empty()) return;
  auto it = forbidden_.find(name);
  if (it == forbidden_.end() || running_owner() != Owner::student) return;
  fail(p, "this exercise does not let your code use " + name + ": " + it->second,
       "write it with the operators the exercise teaches");
}

const Value* Interpreter::lookup(const std::string& name) const {
  if (!frames_.empty()) {
    auto& locals = frames_.back();
    if (auto it = locals.find(name); it != locals.end()) return &it->second;
  }
  if (!check_globals_.empty() && running_owner() == Owner::checks)
    if (auto it = check_globals_.find(name); it != check_globals_.end()) return &it->second;
  if (auto it = globals_.find(name); it != globals_.end()) return &it->second;
  return nullptr;
}

void Interpreter::assign(const std::string& name, Value v) {
  if (!frames_.empty()) {
    if (user_ops_->tracing()) user_ops_->name_local(name, v);
    frames_.back()[name] = std::move(v);
    return;
  }
  if (running_owner() == Owner::checks) {  // out of the student's functions' sight
    const std::string* key = &*check_names_.insert(name).first;
    if (rollback_.running() && !rollback_.undo().keeps(key, StatementUndo::check_name)) {
      auto it = check_globals_.find(name);
      std::optional<Value> before = it == check_globals_.end() ? std::nullopt : std::optional<Value>(it->second);
      on_undo(key, StatementUndo::check_name, [this, name, before] {
        if (before) check_globals_[name] = *before;
        else check_globals_.erase(name);
      });
    }
    if (v.kind() == Value::tensor && v.as_tensor().defined() && v.as_tensor().name().empty())
      v.as_tensor().set_name(name);
    check_globals_[name] = std::move(v);
    return;
  }
  if (rollback_.running()) rollback_.undo().before_assign(name, globals_);
  if (v.kind() == Value::tensor && v.as_tensor().defined() && v.as_tensor().name().empty())
    v.as_tensor().set_name(name);
  globals_[name] = std::move(v);
}

std::vector<std::string> Interpreter::all_names() const {
  std::vector<std::string> names;
  for (auto& [n, _] : globals_) names.push_back(n);
  for (auto& [n, _] : builtins_) names.push_back(n);
  for (const OpDef* op : OpRegistry::instance().all())
    if (op->checked_via.empty()) names.push_back(op->name);
  for (const char* k : kKeywords) names.push_back(k);
  return names;
}

void Interpreter::assign_target(const Expr& t, const Value& v) {
  switch (t.kind) {
    case Expr::name: assign(t.text, v); return;
    case Expr::tuple:
    case Expr::list: {
      if (v.kind() != Value::list && v.kind() != Value::tuple)
        fail(t.pos, std::string("cannot unpack a value of type ") + kind_name(v) + " into " +
                        std::to_string(t.items.size()) + " names");
      if (v.items()->size() != t.items.size())
        fail(t.pos, "cannot unpack " + std::to_string(v.items()->size()) + " values into " +
                        std::to_string(t.items.size()) + " names");
      auto items = v.items();
      for (size_t i = 0; i < t.items.size(); ++i) assign_target(*t.items[i], (*items)[i]);
      return;
    }
    case Expr::attr: set_attr(eval(*t.items[0]), t.text, v, t.pos); return;
    case Expr::index: {
      Value obj = eval(*t.items[0]);
      if (obj.kind() == Value::list && t.items.size() == 2) {
        Value idx = eval(*t.items[1]);
        if (idx.kind() != Value::integer) fail(t.items[1]->pos, "list indices must be integers");
        int64_t n = static_cast<int64_t>(obj.items()->size()), i = idx.as_int() < 0 ? idx.as_int() + n : idx.as_int();
        if (i < 0 || i >= n) fail(t.items[1]->pos, "list index " + std::to_string(idx.as_int()) + " out of range");
        on_undo_list(obj.items());
        (*obj.items())[i] = v;
        return;
      }
      if (obj.kind() == Value::dict && t.items.size() == 2 && t.items[1]->kind != Expr::slice) {
        Value k = eval(*t.items[1]);
        check_key(*this, k, t.items[1]->pos);
        auto d = obj.as_dict();
        if (Value* old = d->find(k)) {
          on_undo([d, k, before = *old] { *d->find(k) = before; });
          *old = v;
        } else {
          on_undo([d] { d->entries.pop_back(); });
          d->entries.emplace_back(k, v);
        }
        return;
      }
      fail(t.pos, "cannot assign into an index of a " + std::string(kind_name(obj)),
           "tensors are not changed in place here: build a new one (e.g. with where or concat)");
    }
    default: fail(t.pos, "cannot assign to this expression");
  }
}

// ---------------------------------------------------------------------------------------------
// Expressions

bool Interpreter::truthy(const Value& v, Pos p, const Expr* written) {
  switch (v.kind()) {
    case Value::none: return false;
    case Value::boolean: return v.as_bool();
    case Value::integer: return v.as_int() != 0;
    case Value::real: return v.as_real() != 0;
    case Value::string: return !v.as_str().empty();
    case Value::list:
    case Value::tuple: return !v.items()->empty();
    case Value::dict: return !v.as_dict()->entries.empty();
    case Value::tensor:
      if (v.as_tensor().is_symbolic())
        return truthy(Value::Tensor_(values_for_reading(v.as_tensor(), written, p, "a truth value")), p);
      if (v.as_tensor().numel() != 1)
        fail(p, "the truth value of a tensor with " + std::to_string(v.as_tensor().numel()) + " elements is ambiguous",
             "reduce it first: (x > 0).sum() > 0, or use .item() on a one-element tensor");
      return v.as_tensor().item() != 0;
    default: return true;
  }
}

Tensor Interpreter::to_tensor(const Value& v, Pos p, DType like, bool like_given) {
  switch (v.kind()) {
    case Value::tensor: return v.as_tensor();
    case Value::boolean:
    case Value::integer: return Tensor::scalar(v.number(), like_given ? like : DType::i64, MemCategory::input);
    case Value::real:
      return Tensor::scalar(v.as_real(), like_given && is_floating(like) ? like : DType::f32, MemCategory::input);
    case Value::list:
    case Value::tuple: {
      CallArgs a;
      a.positional.push_back(v);
      a.pos = p;
      a.positions.push_back(p);
      if (like_given) a.keyword.emplace_back("dtype", Value::Str(dtype_name(like)));
      return builtins_.at("tensor").fn(*this, a).as_tensor();
    }
    default:
      fail(p, std::string("expected a tensor or a number, got ") + kind_name(v),
           v.kind() == Value::none ? "this value is None: did a function forget to return?" : "");
  }
}

Value Interpreter::tensor_op(const char* op, std::vector<Tensor> inputs, Pos p, const AttrMap& attrs) {
  try {
    if (on_op_call_) on_op_call_(OpRegistry::instance().get(op), inputs);
    if (attrs.empty()) {  // the operators of + - * / @ **: no attributes to resolve
      const OpDef& def = OpRegistry::instance().get(op);
      static const std::vector<AttrValue> kNone;
      if (def.attrs.empty()) return Value::Tensor_(ws_.call_multi(def, inputs, Attrs(&def, kNone))[0]);
    }
    return Value::Tensor_(ws_.call(op, inputs, attrs));
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    fail(p, e.what(), e.hint());
  }
}

Value Interpreter::eval_binary(Operator op, const Value& l, const Value& r, Pos p) {
  if (l.kind() != Value::tensor && r.kind() != Value::tensor) return binary_on_values(*this, op, l, r, p);
  const char* name = binary_op_name(op);
  if (!name) fail(p, "operator '" + std::string(name_of(op)) + "' is not defined for tensors", "use + - * / @ ** %");
  // A plain number takes the tensor's dtype (as in NumPy/PyTorch: 2 * x keeps x's dtype).
  DType like = l.kind() == Value::tensor ? l.as_tensor().dtype() : r.as_tensor().dtype();
  Tensor a = to_tensor(l, p, like, true), b = to_tensor(r, p, like, true);
  if (op == Operator::matmul && (a.dim() < 2 || b.dim() < 2))
    fail(p, "matmul needs tensors of rank >= 2, got " + shape_str(a.shape()) + " @ " + shape_str(b.shape()),
         "reshape a vector first: v.reshape(1, n) or v.reshape(n, 1)");
  return tensor_op(name, {a, b}, p);
}

Value Interpreter::eval_compare(Operator op, const Value& l, const Value& r, Pos p) {
  if (op == Operator::in || (l.kind() != Value::tensor && r.kind() != Value::tensor))
    return compare_values(*this, op, l, r, p);
  DType like = l.kind() == Value::tensor ? l.as_tensor().dtype() : r.as_tensor().dtype();
  return tensor_op(compare_op_name(op), {to_tensor(l, p, like, true), to_tensor(r, p, like, true)}, p);
}

Value Interpreter::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::integer: return Value::Int(e.int_value);
    case Expr::real: return Value::Real(e.real_value);
    case Expr::string: return Value::Str(e.text);
    case Expr::boolean: return Value::Bool(e.bool_value);
    case Expr::none: return Value::None();
    case Expr::name: {
      if (!forbidden_.empty()) refuse_forbidden(e.text, e.pos);
      // The checks reach the real built-ins and operators whatever the student's globals are.
      if (!owners_.empty() && running_owner() == Owner::checks && !(!frames_.empty() && frames_.back().count(e.text)) &&
          !check_globals_.count(e.text)) {
        if (auto it = builtins_.find(e.text); it != builtins_.end()) {
          return Value::Of(it->second);
        }
        if (const OpDef* op = OpRegistry::instance().find(e.text); op && !user_ops_->find_own(e.text)) {
          return Value::Of(*op);
        }
      }
      if (const Value* v = lookup(e.text)) {
        if (user_ops_->tracing()) user_ops_->check_global(e.text, *v, e.pos);
        return *v;
      }
      if (auto it = builtins_.find(e.text); it != builtins_.end()) {
        return Value::Of(it->second);
      }
      if (const OpDef* op = OpRegistry::instance().find(e.text)) {
        return Value::Of(*op);
      }
      std::string near = closest_name(e.text, all_names());
      fail(e.pos, "unknown name '" + e.text + "'",
           near.empty() ? "define it first (x = ...), or see :vars and :ops" : "did you mean '" + near + "'?");
    }
    case Expr::list:
    case Expr::tuple: {
      std::vector<Value> items;
      items.reserve(e.items.size());
      for (auto& it : e.items) items.push_back(eval(*it));
      return Value::List(std::move(items), e.kind == Expr::list ? Value::list : Value::tuple);
    }
    case Expr::unary: {
      Value v = eval(*e.items[0]);
      if (e.op == Operator::not_) return Value::Bool(!truthy(v, e.pos));
      if (e.op == Operator::plus) return v;
      if (v.kind() == Value::tensor) return tensor_op("neg", {v.as_tensor()}, e.pos);
      if (v.kind() == Value::integer) {
        if (v.as_int() == INT64_MIN) fail(e.pos, "integer overflow in -(" + std::to_string(v.as_int()) + ")");
        return Value::Int(-v.as_int());
      }
      if (v.kind() == Value::real) return Value::Real(-v.as_real());
      if (v.kind() == Value::boolean) return Value::Int(v.as_bool() ? -1 : 0);
      fail(e.pos, std::string("cannot negate a ") + kind_name(v));
    }
    case Expr::binary: {
      Value l = eval(*e.items[0]);
      Value r = eval(*e.items[1]);
      if (!ws_.static_mode())  // a symbolic operand in dynamic mode: its values, or what the student wrote
        for (int k = 0; k < 2; ++k)
          if (Value& v = k ? r : l; v.kind() == Value::tensor && v.as_tensor().is_symbolic())
            v.as_tensor() = values_for_reading(v.as_tensor(), e.items[k].get(), e.items[k]->pos, "dynamic mode");
      return eval_binary(e.op, l, r, e.pos);
    }
    case Expr::compare: {
      Value l = eval(*e.items[0]);
      Value r = eval(*e.items[1]);
      return eval_compare(e.op, l, r, e.pos);
    }
    case Expr::logical: {
      Value l = eval(*e.items[0]);
      bool t = truthy(l, e.items[0]->pos);
      if (e.op == Operator::and_) return t ? eval(*e.items[1]) : l;
      return t ? l : eval(*e.items[1]);
    }
    case Expr::call: {
      Value callee = eval(*e.items[0]);
      CallArgs args;
      args.pos = e.pos;
      for (auto& a : e.args) {
        if (a.name.empty()) {
          args.positional.push_back(eval(*a.value));
          args.positions.push_back(a.value->pos);
        } else {
          for (auto& [k, _] : args.keyword)
            if (k == a.name) fail(a.pos, "keyword argument '" + a.name + "' given twice");
          args.keyword.emplace_back(a.name, eval(*a.value));
        }
      }
      read_symbolic_args(e, callee, args);
      try {
        return call_value(callee, args);
      } catch (const LangError&) {
        throw;
      } catch (const Error& err) {
        fail(e.pos, err.what(), err.hint());
      }
    }
    case Expr::attr: return get_attr(eval(*e.items[0]), e.text, e.pos);
    case Expr::index: return eval_index(eval(*e.items[0]), e);
    case Expr::cond: return truthy(eval(*e.items[1]), e.items[1]->pos) ? eval(*e.items[0]) : eval(*e.items[2]);
    case Expr::dict: {
      auto d = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i]);
        check_key(*this, k, e.items[i]->pos);
        Value v = eval(*e.items[i + 1]);
        if (Value* old = d->find(k)) *old = std::move(v);
        else d->entries.emplace_back(std::move(k), std::move(v));
      }
      Value out = Value::Of(d);
      return out;
    }
    case Expr::slice: fail(e.pos, "a slice a:b can only appear inside [ ]");
  }
  fail(e.pos, "internal: unknown expression");
}

// A call that reads a symbolic tensor's values (item, float, tolist, print) or runs an operator
// on one in dynamic mode gets its values when it depends on no input (static mode's constants,
// run()'s results, parameters), else fails first, naming the expression the student wrote.
void Interpreter::read_symbolic_args(const Expr& call, Value& callee, CallArgs& args) {
  static const char* const kReaders[] = {"item", "float", "int", "tolist", "print", "str"};
  auto reads_values = [](const std::string& n) {
    return std::find(std::begin(kReaders), std::end(kReaders), n) != std::end(kReaders);
  };
  const bool dynamic = !ws_.static_mode();
  const Method* method = callee.kind() == Value::method ? &callee.as_method() : nullptr;
  const Tensor* self = method ? method->tensor() : nullptr;
  if (self && self->is_symbolic()) {  // x.item(), x.relu()
    const Expr* receiver = call.items[0]->kind == Expr::attr ? call.items[0]->items[0].get() : nullptr;
    if (reads_values(method->name) || (dynamic && OpRegistry::instance().find(method->name)))
      callee = Value::Of(
          Method{method->name,
                 values_for_reading(*self, receiver, receiver ? receiver->pos : call.pos, "." + method->name + "()"),
                 nullptr});
  }
  const bool printing =
      callee.kind() == Value::builtin_fn && (callee.as_builtin().name == "print" || callee.as_builtin().name == "str");
  const bool reader = callee.kind() == Value::builtin_fn && reads_values(callee.as_builtin().name);
  const bool op = callee.kind() == Value::op_ref || (callee.kind() == Value::method && callee.as_method().tensor() &&
                                                     OpRegistry::instance().find(callee.as_method().name));
  if (!reader && !(dynamic && op)) return;
  size_t k = 0;
  for (auto& a : call.args) {
    if (!a.name.empty() || k >= args.positional.size()) continue;
    Value& v = args.positional[k++];
    if (v.kind() != Value::tensor || !v.as_tensor().defined() || !v.as_tensor().is_symbolic()) continue;
    if (printing) {  // print shows a symbolic value's shape when it has no values yet
      try {
        v.as_tensor() = evaluate_for_reading(*this, v.as_tensor());
      } catch (const Error&) {}
      continue;
    }
    v.as_tensor() = values_for_reading(v.as_tensor(), a.value.get(), a.value->pos,
                                       reader ? callee.as_builtin().name + "()" : "dynamic mode");
  }
}

// ---------------------------------------------------------------------------------------------
// Indexing: x[0], x[:, 1:3], lists

int64_t Interpreter::index_int(const ExprPtr& x, int64_t def) {
  if (!x) return def;  // an omitted slice bound
  Value v = eval(*x);
  if (v.kind() != Value::integer) fail(x->pos, "indices must be integers or slices a:b:c");
  return v.as_int();
}

Value Interpreter::eval_index(const Value& obj, const Expr& e) {
  const size_t nsub = e.items.size() - 1;
  if (obj.kind() == Value::dict) {
    if (nsub != 1 || e.items[1]->kind == Expr::slice) fail(e.pos, "a dict takes one key: d[key]");
    Value k = eval(*e.items[1]);
    check_key(*this, k, e.items[1]->pos);
    auto& d = *obj.as_dict();
    if (Value* v = d.find(k)) return *v;
    std::vector<std::string> keys;
    for (auto& [key, _] : d.entries) keys.push_back(key.kind() == Value::string ? key.as_str() : repr(key));
    std::string near = k.kind() == Value::string ? closest_name(k.as_str(), keys) : "";
    std::string all;
    for (auto& key : d.entries) all += (all.empty() ? "" : ", ") + repr(key.first);
    fail(e.items[1]->pos, "key " + repr(k) + " is not in the dict",
         !near.empty() ? "did you mean '" + near + "'?"
         : all.empty() ? "the dict is empty"
                       : "its keys: " + all);
  }
  if (obj.kind() == Value::list || obj.kind() == Value::tuple || obj.kind() == Value::string) {
    if (nsub != 1) fail(e.pos, "lists take one index");
    const Expr& sub = *e.items[1];
    const int64_t n = obj.kind() == Value::string ? static_cast<int64_t>(obj.as_str().size())
                                                  : static_cast<int64_t>(obj.items()->size());
    auto int_of = [&](const ExprPtr& x, int64_t def) { return index_int(x, def); };
    if (sub.kind == Expr::slice) {
      int64_t step = int_of(sub.items[2], 1);
      if (step <= 0) fail(sub.pos, "slice step must be positive");
      int64_t a = int_of(sub.items[0], 0), b = int_of(sub.items[1], n);
      if (a < 0) a += n;
      if (b < 0) b += n;
      a = std::clamp<int64_t>(a, 0, n);
      b = std::clamp<int64_t>(b, 0, n);
      if (obj.kind() == Value::string) {
        std::string s;
        for (int64_t k = a; k < b; k += step) s += obj.as_str()[k];
        return Value::Str(s);
      }
      std::vector<Value> out;
      for (int64_t k = a; k < b; k += step) out.push_back((*obj.items())[k]);
      return Value::List(std::move(out), obj.kind());
    }
    int64_t i = int_of(e.items[1], 0), k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
      fail(sub.pos, "index " + std::to_string(i) + " is out of range for length " + std::to_string(n));
    return obj.kind() == Value::string ? Value::Str(std::string(1, obj.as_str()[k])) : (*obj.items())[k];
  }
  if (obj.kind() == Value::object) {  // a builtin object that takes subscripts (a kernel: k[blocks, threads])
    std::vector<Value> subs;
    for (size_t k = 1; k < e.items.size(); ++k) {
      if (e.items[k]->kind == Expr::slice)
        fail(e.items[k]->pos, std::string("a ") + kind_name(obj) + " takes no slices");
      subs.push_back(eval(*e.items[k]));
    }
    if (auto v = obj.as_native()->subscript(*this, subs, e.pos)) return *v;
  }
  if (obj.kind() != Value::tensor) fail(e.pos, std::string("a ") + kind_name(obj) + " cannot be indexed");
  Tensor t = obj.as_tensor();
  if (static_cast<int64_t>(nsub) > t.dim())
    fail(e.pos, "too many indices: " + std::to_string(nsub) + " for a tensor of shape " + shape_str(t.shape()));
  // Each subscript becomes a slice node; integer subscripts then drop their axis with a reshape.
  std::vector<int64_t> drop;
  for (size_t k = 0; k < nsub; ++k) {
    const Expr& sub = *e.items[k + 1];
    const int64_t n = t.shape()[k];
    auto int_of = [&](const ExprPtr& x, int64_t def) { return index_int(x, def); };
    if (sub.kind == Expr::slice) {
      int64_t step = int_of(sub.items[2], 1);
      if (step <= 0) fail(sub.pos, "slice step must be positive");
      int64_t a = int_of(sub.items[0], 0), b = int_of(sub.items[1], n);
      if (!sub.items[0] && !sub.items[1] && step == 1) continue;  // ':' keeps the axis as it is
      t = tensor_op("slice", {t}, sub.pos,
                    {{"axis", static_cast<int64_t>(k)}, {"start", a}, {"stop", b}, {"step", step}})
              .as_tensor();
    } else {
      int64_t i = int_of(e.items[k + 1], 0), j = i < 0 ? i + n : i;
      if (j < 0 || j >= n)
        fail(sub.pos, "index " + std::to_string(i) + " is out of range for axis " + std::to_string(k) + " of size " +
                          std::to_string(n));
      t = tensor_op("slice", {t}, sub.pos, {{"axis", static_cast<int64_t>(k)}, {"start", j}, {"stop", j + 1}})
              .as_tensor();
      drop.push_back(static_cast<int64_t>(k));
    }
  }
  if (!drop.empty()) {
    Shape s;
    for (int64_t k = 0; k < t.dim(); ++k)
      if (std::find(drop.begin(), drop.end(), k) == drop.end()) s.push_back(t.shape()[k]);
    t = tensor_op("reshape", {t}, e.pos, {{"shape", s}}).as_tensor();
  }
  return Value::Tensor_(t);
}

// ---------------------------------------------------------------------------------------------
// Calls

Value Interpreter::call_value(const Value& callee, CallArgs& args) {
  switch (callee.kind()) {
    case Value::builtin_fn:
      if (user_ops_->tracing()) user_ops_->check_builtin(callee.as_builtin(), args.pos);
      try {
        return callee.as_builtin().fn(*this, args);
      } catch (const LangError&) {
        throw;
      } catch (const Error& e) {
        fail(args.pos, callee.as_builtin().name + ": " + e.what(), e.hint());
      }
    case Value::op_ref: return call_op(callee.as_op(), args);
    case Value::function: return call_function(*callee.as_function(), args);
    case Value::class_: return instantiate(callee.as_class(), args);
    case Value::instance: return call_instance(callee, args);
    case Value::object: return call_object(callee, args);
    case Value::method: {
      const Method& m = callee.as_method();
      if (m.object()) return call_bound(m, args);
      if (const Items* list = m.list()) {  // list.append
        if (args.positional.size() != 1) fail(args.pos, "append takes one argument");
        on_undo_list(*list);
        (*list)->push_back(args.positional[0]);
        return Value::None();
      }
      return call_method(*m.tensor(), m.name, args);
    }
    default:
      fail(args.pos, std::string("a ") + kind_name(callee) + " is not callable",
           callee.kind() == Value::tensor ? "use x[i] to index a tensor" : "");
  }
}

Value Interpreter::call_function(const Function& f, CallArgs& args) {
  check_interrupt(args.pos);
  if (call_depth_ >= kMaxCallDepth)
    fail(args.pos, "recursion deeper than " + std::to_string(kMaxCallDepth) + " calls (in " + f.name + ")",
         "check the function's stopping condition");
  std::map<std::string, Value> locals;
  if (args.positional.size() > f.params.size())
    fail(args.pos, f.name + "() takes " + std::to_string(f.params.size()) + " arguments, got " +
                       std::to_string(args.positional.size()));
  for (size_t i = 0; i < args.positional.size(); ++i) locals[f.params[i]] = args.positional[i];
  for (auto& [k, v] : args.keyword) {
    if (std::find(f.params.begin(), f.params.end(), k) == f.params.end())
      fail(args.pos, f.name + "() has no parameter '" + k + "'");
    if (locals.count(k)) fail(args.pos, f.name + "() got '" + k + "' twice");
    locals[k] = v;
  }
  for (size_t i = 0; i < f.params.size(); ++i)
    if (!locals.count(f.params[i])) {
      if (!f.defaults[i]) fail(args.pos, f.name + "() is missing the argument '" + f.params[i] + "'");
      locals[f.params[i]] = *f.defaults[i];
    }
  // A user function called on tensors is a composite op: its nodes carry its scope.
  auto saved_source = source_;
  source_ = f.source;
  // Code keeps the file policy it was written under: a lesson's function stays confined when
  // the student calls it from the console.
  auto saved_policy = file_policy_;
  if (f.file_policy) file_policy_ = f.file_policy;
  struct RestorePolicy {
    std::shared_ptr<const FilePolicy>& slot;
    std::shared_ptr<const FilePolicy> before;
    ~RestorePolicy() { slot = std::move(before); }
  } restore_policy{file_policy_, std::move(saved_policy)};
  frames_.push_back(std::move(locals));
  ++call_depth_;
  ws_.push_scope(f.name);
  Value result;
  const bool static_fn = std::find(f.decorators.begin(), f.decorators.end(), "static") != f.decorators.end();
  StaticModeGuard static_guard(ws_, static_fn || ws_.static_mode());
  try {
    exec_block(*f.body);
  } catch (ReturnSignal& r) {
    result = std::move(r.value);
  } catch (...) {
    ws_.pop_scope();
    --call_depth_;
    frames_.pop_back();
    source_ = saved_source;
    throw;
  }
  ws_.pop_scope();
  --call_depth_;
  frames_.pop_back();
  source_ = saved_source;
  return result;
}

Value Interpreter::call_op(const OpDef& op, CallArgs& args, const Value* self) {
  std::vector<Tensor> inputs;
  AttrMap attrs;
  std::string algo;
  std::vector<Value> pos = args.positional;
  std::vector<Pos> where = args.positions;
  if (self) {
    pos.insert(pos.begin(), *self);
    where.insert(where.begin(), args.pos);
  }
  // Inputs first (a list for variadic ops), then further positional values are attributes in order.
  size_t k = 0;
  DType like = DType::f32;
  bool like_given = false;
  for (auto& v : pos)
    if (v.kind() == Value::tensor) {
      like = v.as_tensor().dtype();
      like_given = true;
      break;
    }
  const bool variadic = op.max_inputs < 0;
  if (variadic && !pos.empty() && (pos[0].kind() == Value::list || pos[0].kind() == Value::tuple)) {
    for (auto& v : *pos[0].items()) inputs.push_back(to_tensor(v, where[0], like, like_given));
    k = 1;
  } else {
    while (k < pos.size()) {
      const Value& v = pos[k];
      const bool need = static_cast<int>(inputs.size()) < op.min_inputs;
      const bool room = variadic || static_cast<int>(inputs.size()) < op.max_inputs;
      if (!room) break;
      if (v.kind() == Value::tensor || (need && (v.is_number() || v.kind() == Value::list))) {
        inputs.push_back(to_tensor(v, where[k], like, like_given));
        ++k;
      } else {
        break;
      }
    }
  }
  // As in PyTorch, an optional input may also follow the attributes (layer_norm(x, [4], w, b))
  // or come by name (bias=b); None leaves it out, and nothing after a left-out input may be given.
  int left_out = -1;  // the first optional input given as None
  auto given_slots = [&] { return inputs.size() + (left_out >= 0 ? 1 : 0); };
  auto add_input = [&](const Value& v, Pos p, size_t slot) {
    if (v.kind() == Value::none) {
      if (static_cast<int>(slot) < op.min_inputs)
        fail(p, op.name + "(): '" + input_name(op, slot) + "' is None", "a function forgot to return? print it to see");
      if (left_out < 0) left_out = static_cast<int>(slot);
      return;
    }
    if (left_out >= 0)
      fail(p,
           op.name + "(): '" + input_name(op, slot) + "' is given but '" +
               input_name(op, static_cast<size_t>(left_out)) + "' is not",
           "optional inputs come in order (" + input_list(op) + "): give the earlier one too");
    inputs.push_back(to_tensor(v, p, like, like_given));
  };
  size_t attr_index = 0;
  for (; k < pos.size(); ++k) {
    if ((pos[k].kind() == Value::tensor || pos[k].kind() == Value::none) && !variadic &&
        static_cast<int>(given_slots()) < op.max_inputs) {
      add_input(pos[k], where[k], given_slots());
      continue;
    }
    if (attr_index >= op.attrs.size())
      fail(
          where[k],
          op.name + "() got too many positional arguments", "signature: " + op.name + "(" + input_list(op) + [&] {
            std::string s;
            for (auto& a : op.attrs) s += ", " + a.name + "=";
            return s;
          }() + ")");
    attrs.emplace_back(op.attrs[attr_index++].name, to_attr(pos[k], where[k]));
  }
  std::map<size_t, const Value*> named_inputs;  // slot -> value of inputs given by name
  for (auto& [name, v] : args.keyword) {
    if (name == "algo") {
      if (v.kind() != Value::string)
        fail(args.pos, "algo must be a string, e.g. algo=\"" + op.default_algorithm() + "\"");
      algo = v.as_str();
      continue;
    }
    if (!op.find_attr(name) && !variadic) {
      size_t slot = 0;
      while (slot < op.input_names.size() && input_name(op, slot) != name) ++slot;
      if (slot < op.input_names.size()) {
        if (slot < given_slots())
          fail(args.pos, op.name + "(): input '" + name + "' is given twice (by position and by name)");
        named_inputs[slot] = &v;
        continue;
      }
    }
    std::string key = name;
    // NumPy/PyTorch spelling: sum(x, axis=1) for an op whose attribute is `axes`.
    if ((key == "axis" || key == "dim") && !op.find_attr(key) && op.find_attr("axes")) key = "axes";
    if (key == "dim" && !op.find_attr("dim") && op.find_attr("axis")) key = "axis";
    if (key == "keepdims" && op.find_attr("keepdim")) key = "keepdim";
    attrs.emplace_back(key, to_attr(v, args.pos));
  }
  for (auto& [slot, v] : named_inputs) {
    while (given_slots() < slot) add_input(Value::None(), args.pos, given_slots());  // a gap: left out
    add_input(*v, args.pos, slot);
  }
  try {
    const Attrs resolved = op.resolve(attrs);
    if (on_op_call_) on_op_call_(op, inputs);
    const bool on_sim = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) {
      return t.defined() && !t.is_symbolic() && t.device() == Device::sim;
    });
    const SimLaunchCapture capture(on_sim);  // its launches become last_launch()'s
    auto outs = ws_.call_multi(op, inputs, resolved, algo);
    // Hidden outputs (an @op's saved intermediates) stay graph values, named for the figure.
    for (size_t i = outs.size() - std::min<size_t>(outs.size(), static_cast<size_t>(op.hidden_outputs));
         i < outs.size(); ++i)
      if (i < op.output_names.size())
        ws_.graph().name_value(outs[i].impl()->value_id, op.name + "." + op.output_names[i]);
    outs.resize(outs.size() - std::min<size_t>(outs.size(), static_cast<size_t>(op.hidden_outputs)));
    if (outs.size() == 1) return Value::Tensor_(outs[0]);
    std::vector<Value> vs;
    for (auto& t : outs) vs.push_back(Value::Tensor_(t));
    return Value::List(std::move(vs), Value::tuple);
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    fail(args.pos, e.what(), e.hint());
  }
}

AttrValue Interpreter::to_attr(const Value& v, Pos p) {
  switch (v.kind()) {
    case Value::integer: return v.as_int();
    case Value::real: return v.as_real();
    case Value::boolean: return v.as_bool();
    case Value::string: return v.as_str();
    case Value::list:
    case Value::tuple: {
      std::vector<int64_t> out;
      for (auto& x : *v.items()) {
        if (x.kind() != Value::integer) fail(p, "expected a list of integers");
        out.push_back(x.as_int());
      }
      return out;
    }
    default: fail(p, std::string("a ") + kind_name(v) + " cannot be an attribute value");
  }
}

Shape Interpreter::to_shape(const std::vector<Value>& args, Pos p) {
  std::vector<Value> dims = args;
  if (args.size() == 1 && (args[0].kind() == Value::list || args[0].kind() == Value::tuple)) dims = *args[0].items();
  Shape s;
  for (auto& d : dims) {
    if (d.kind() != Value::integer) fail(p, std::string("a shape is made of integers, got ") + kind_name(d));
    if (d.as_int() < 0) fail(p, "negative dimension " + std::to_string(d.as_int()) + " in a shape");
    s.push_back(d.as_int());
  }
  return s;
}

void Interpreter::show(const std::string& source, const Value& v) {
  ShownValue s;
  s.source = source;
  s.kind = kind_name(v);
  s.text = v.kind() == Value::tensor ? v.as_tensor().to_string() : repr(v);
  if (v.kind() == Value::tensor) {
    s.shape = v.as_tensor().shape();
    s.dtype = dtype_name(v.as_tensor().dtype());
    if (v.as_tensor().numel() <= 1'000'000 && !v.as_tensor().is_symbolic()) s.data = v.as_tensor().to_vector();
  } else if (v.is_number()) {
    s.data = {v.number()};
  }
  shown_.push_back(std::move(s));
}

std::string tape_drops_line(const Graph& g, const LoopTape& loop) {
  std::string s = "(" + std::to_string(g.drops().nodes) + " earlier nodes were dropped: no tensor could reach them";
  if (loop.dropped_iterations > 0)
    s += "; the loop at line " + std::to_string(loop.line) + " ran " + std::to_string(loop.iterations) +
         " iterations, " + std::to_string(loop.dropped_iterations) + " of them dropped whole";
  return s + ")";
}

void Interpreter::reset() {
  metrics_.clear();
  tape_.reset();
  pending_.reset();  // its node ids die with the graph
  statics_->run.reset();
  statics_->last.reset();
  statics_->traced.clear();
  globals_.clear();
  check_globals_.clear();
  user_ops_->clear();
  ws_.reset_graph();
  ws_.tracker().reset_peak();
  shown_.clear();
}

}  // namespace opscope::lang
