// The interpreter: evaluates parsed statements against a Workspace, one top-level statement
// at a time, undoing everything a failed statement did (variables, graph, memory timeline).
#pragma once
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "app/lang/file_policy.h"
#include "app/lang/session.h"
#include "app/lang/statement_run.h"
#include "app/lang/statement_undo.h"
#include "app/lang/static_mode.h"
#include "app/lang/value.h"
#include "core/workspace.h"
#include "viz/metrics.h"

namespace opscope::lang {

constexpr int64_t kMaxIterations = 1'000'000;  // loop iterations in one top-level statement
constexpr int kMaxCallDepth = 64;  // user function recursion
struct Command {
  std::string name;  // without ':'
  std::string args;  // "[topic]"
  std::string help;
  std::function<void(Interpreter&, const std::string& args, std::ostream& out)> fn;
};

class UserOps;  // user_ops.h: the session's @op definitions
struct UserOp;
struct OpTrace;

class Interpreter {
 public:
  // `rollback` and `tape` are the session's (statement_run.h): they outlive the interpreter.
  Interpreter(Workspace& ws, StatementRollback& rollback, TapePruner& tape);

  Workspace& ws() { return ws_; }
  // Runs one parsed top-level statement; on failure restores the state before it and rethrows.
  void run_statement(const Stmt& s, std::ostream& out);
  // Runs a `:command` line (without the newline).
  void run_command(const std::string& line, std::ostream& out);

  Value eval(const Expr& e);
  void exec(const Stmt& s);  // errors without a position get the statement's
  void exec_assert(const Stmt& s);
  Value call_value(const Value& callee, CallArgs& args);
  Value call_op(const OpDef& op, CallArgs& args, const Value* self = nullptr);

  // --- helpers for builtins ---
  [[noreturn]] void fail(Pos p, const std::string& message, const std::string& hint = {}) const;
  // The values of a tensor a statement reads: a symbolic one (static mode) is computed now when
  // it depends on no input; else "'sum(y)' is symbolic: it depends on the input 'x' ..." at `p`,
  // naming `written` (the expression that made it; else its variable name). `what` says what
  // needed the values.
  Tensor values_for_reading(const Tensor& t, const Expr* written, Pos p, const std::string& what = {});
  Tensor to_tensor(const Value& v, Pos p, DType like = DType::f32, bool like_given = false);
  Shape to_shape(const std::vector<Value>& args, Pos p);  // zeros(2, 3) or zeros([2, 3])
  AttrValue to_attr(const Value& v, Pos p);
  bool truthy(const Value& v, Pos p, const Expr* written = nullptr);  // `written`: named if it is symbolic
  // The generator; its state is saved the first time a statement draws from it, so a failed
  // statement can put it back without copying 2.5 KB on every statement.
  std::mt19937_64& rng() {
    rollback_.before_drawing(rng_);
    return rng_;
  }

  // --- names ---
  const Value* lookup(const std::string& name) const;
  // The locals of the user function running now (null at the top level).
  const std::map<std::string, Value>* locals() const { return frames_.empty() ? nullptr : &frames_.back(); }
  void assign(const std::string& name, Value v);
  const std::map<std::string, Value>& globals() const { return globals_; }
  std::vector<std::string> all_names() const;  // variables, builtins, ops, keywords
  const std::map<std::string, Builtin>& builtins() const { return builtins_; }

  // --- grading (DESIGN.md "Grading that can be trusted") ---
  // Whose code a source is: the lesson's (cells, an exercise's setup, the REPL), a student's
  // answer, or an exercise's checks. The checks' top-level names live in a layer of their own
  // that the student's functions cannot see, and the checks always reach the real built-ins
  // whatever the student defined; the student's code may not name a forbidden built-in.
  enum class Owner { lesson, student, checks };
  // Sources run from now on (by Session::run) belong to `o`.
  void set_code_owner(Owner o) { next_owner_ = o; }
  Owner running_owner() const;
  // The student's code may not use `name` (a built-in or an op); the error says `reason`.
  void forbid(const std::string& name, const std::string& reason) { forbidden_[name] = reason; }
  // Fails at `p` when the running code is the student's and `name` is forbidden.
  void refuse_forbidden(const std::string& name, Pos p) const;
  const std::map<std::string, Value>& check_globals() const { return check_globals_; }

  // --- commands (one registry; later issues add :mode, :step, :lesson, :device) ---
  void add_command(Command c);
  const std::map<std::string, Command>& commands() const { return commands_; }

  // --- output and settings ---
  std::ostream& out() { return *out_; }
  bool echo() const { return echo_; }  // the REPL prints the values of expression statements
  void set_echo(bool on) { echo_ = on; }
  bool color() const { return color_; }  // ANSI colours in errors and listings
  void set_color(bool on) { color_ = on; }
  bool quit_requested() const { return quit_; }  // exit() / :quit
  void request_quit() { quit_ = true; }
  const std::vector<ShownValue>& shown() const { return shown_; }  // for --json
  void show(const std::string& source, const Value& v);  // records a value for --json
  const std::vector<std::string>& history() const { return history_; }  // the sources run, for :history
  void add_history(std::string source) { history_.push_back(std::move(source)); }
  void set_source(std::shared_ptr<const SourceText> s);
  // Files: the path to open for a script's `path` under the file policy (none: full access);
  // a refusal fails at `p` with the policy's message.
  std::string resolve_path(const std::string& path, FileMode mode, Pos p) const;
  // The paths resolved for writing since the last call (save(), save_onnx()): a front end
  // hands them to the user (the browser downloads them).
  std::vector<std::string> take_written_files() { return std::exchange(written_files_, {}); }
  void set_file_policy(std::shared_ptr<const FilePolicy> policy) { file_policy_ = std::move(policy); }
  const FilePolicy* file_policy() const { return file_policy_.get(); }
  const std::shared_ptr<const FilePolicy>& file_policy_ptr() const { return file_policy_; }
  const std::shared_ptr<const SourceText>& source() const { return source_; }
  void reset();  // :reset
  // A backward pass built by backward(y, step=True), run by :step / :run (null: none).
  ScheduleRun* pending_pass() const { return pending_.get(); }
  // Makes `pass` the one to step; if the running statement fails, the one before comes back.
  void start_pending_pass(std::unique_ptr<ScheduleRun> pass);
  void finish_pending_pass() { pending_.reset(); }
  // Static mode: pass switches, the last compiled program, a program run being stepped.
  StaticState& statics() { return *statics_; }
  const StaticState& statics() const { return *statics_; }
  // Parsed programs that defined functions stay alive as long as the interpreter.
  void keep_alive(std::shared_ptr<Block> program) {
    if (programs_.empty() || programs_.back() != program) programs_.push_back(std::move(program));
  }
  // The @ops this session defined (and the hooks that keep their bodies honest while traced).
  UserOps& user_ops() { return *user_ops_; }
  // Undoes an in-place change if the statement fails. Keyed by the object changed (and a field
  // of it): only the first change of each in a statement is kept, so loops stay bounded; `owner`
  // is what the object belongs to (the entry goes when it does).
  void on_undo(const void* object, int field, std::weak_ptr<void> owner, std::function<void()> undo) {
    rollback_.undo().on_change(object, field, std::move(owner), std::move(undo));
  }
  // Counts top-level statements: an object changed in place saves its state once per statement.
  uint64_t statement_serial() const { return rollback_.serial(); }

  // --- training: the logged metrics, and what a front end sees while a loop runs ---
  viz::MetricLog& metrics() { return metrics_; }
  // A loop over batches(): `step` before each batch, `output` before print() writes inside
  // it, `done` when the loop ends (normally or not). The terminal draws its progress line.
  struct LoopProgress {
    enum Event { step, output, done } event = step;
    int64_t done_items = 0, total = 0;
    double seconds = 0;  // since the loop started
  };
  using ProgressHook = std::function<void(const LoopProgress&)>;
  void set_progress_hook(ProgressHook hook) { on_progress_ = std::move(hook); }
  void progress_output() {  // print() calls this before writing
    if (on_progress_ && progress_depth_ > 0) on_progress_({LoopProgress::output, 0, 0, 0});
  }
  // Told of every operator the language calls, with its inputs, before it runs (an exercise's
  // check counts the products a student's blocked matmul makes, thrown-away ones too).
  // Returns the hook it replaces.
  using OpCallHook = std::function<void(const OpDef&, const std::vector<Tensor>&)>;
  OpCallHook set_op_call_hook(OpCallHook hook) { return std::exchange(on_op_call_, std::move(hook)); }
  // Called at every loop back-edge (the GUI draws a frame now and then while a loop runs).
  void set_iteration_hook(std::function<void()> hook) { on_iteration_ = std::move(hook); }
  void on_undo(const void* object, int field, std::function<void()> undo) {
    rollback_.undo().on_change(object, field, std::move(undo));
  }
  void on_undo(std::function<void()> undo) { rollback_.undo().on_change(std::move(undo)); }  // every call is kept
  // Before a list changes in place: its items as they were at the start of the statement.
  void on_undo_list(const std::shared_ptr<std::vector<Value>>& items) {
    if (!rollback_.running() || rollback_.undo().keeps(items.get(), StatementUndo::list_items)) return;
    std::weak_ptr<std::vector<Value>> weak = items;
    on_undo(items.get(), StatementUndo::list_items, items, [weak, before = *items] {
      if (auto l = weak.lock()) *l = before;
    });
  }
  const StatementUndo& statement_undo() const { return rollback_.undo(); }
  // The tape a long loop left: what the last statement with a loop dropped (see LoopTape).
  const LoopTape& last_loop() const { return tape_.last_loop(); }
  // Throws the running statement's interrupt, positioned at `p` (see core/interrupt.h).
  [[noreturn]] void fail_interrupted(Pos p) const;

 private:
  void exec_block(const Block& b);
  void exec_statement(const Stmt& s);
  void read_symbolic_args(const Expr& call, Value& callee, CallArgs& args);
  void assign_target(const Expr& target, const Value& v);
  Value eval_binary(Operator op, const Value& l, const Value& r, Pos p);
  Value eval_compare(Operator op, const Value& l, const Value& r, Pos p);
  Value eval_index(const Value& obj, const Expr& e);
  int64_t index_int(const ExprPtr& x, int64_t def);  // a subscript or slice bound
  Value get_attr(const Value& obj, const std::string& name, Pos p);
  void set_attr(const Value& obj, const std::string& name, const Value& v, Pos p);
  Value call_function(const Function& f, CallArgs& args);
  Value call_method(const Tensor& self, const std::string& name, CallArgs& args);
  Value tensor_op(const char* op, std::vector<Tensor> inputs, Pos p, const AttrMap& attrs = {});
  void count_iteration(Pos p);
  bool run_loop_body(const Block& body);  // false when the body broke out of the loop
  void exec_for(const Stmt& s);
  void exec_class(const Stmt& s);
  Value instantiate(const std::shared_ptr<ClassDef>& cls, CallArgs& args);
  Value call_instance(const Value& obj, CallArgs& args);
  Value call_object(const Value& obj, CallArgs& args);  // a builtin object with __call__ (an imported model)
  Value get_member(const Value& obj, const std::string& name, Pos p);  // dict, class, instance and object attributes
  Value call_bound(const Method& m, CallArgs& args);  // methods of dicts, instances and objects
  Value dict_method(Dict& d, const std::string& name, CallArgs& args);
  // A loop back-edge or a call: the interrupt's step boundary (and the GUI's idle frame).
  void check_interrupt(Pos p);
  // What the tape pruner must keep: a stepped pass's nodes, the last compiled program's values.
  TapePruner::Pins tape_pins() const;
  SessionState session_state() { return {globals_, frames_, shown_, metrics_, rng_}; }
  void install_builtins();
  void install_commands();

  Workspace& ws_;
  std::map<std::string, Value> globals_;
  std::map<std::string, Value> check_globals_;  // an exercise's checks' names (see Owner)
  std::set<std::string> check_names_;  // their names, interned: keys of their undo entries
  Owner next_owner_ = Owner::lesson;
  std::map<const SourceText*, Owner> owners_;  // sources not the lesson's
  std::vector<std::shared_ptr<const SourceText>> owned_sources_;  // kept alive: their addresses stay unique
  std::map<std::string, std::string> forbidden_;  // name -> why
  std::vector<std::map<std::string, Value>> frames_;  // locals of running user functions
  std::map<std::string, Builtin> builtins_;
  std::map<std::string, Command> commands_;
  std::mt19937_64 rng_{0};
  std::shared_ptr<const SourceText> source_;
  std::shared_ptr<const FilePolicy> file_policy_;
  mutable std::vector<std::string> written_files_;
  std::ostream* out_ = nullptr;
  int64_t iterations_ = 0;  // loop iterations of the running statement
  int progress_depth_ = 0;  // loops over batches() running
  viz::MetricLog metrics_;
  int call_depth_ = 0;
  StatementRollback& rollback_;  // undoes a failed statement (the session's)
  TapePruner& tape_;  // drops dead tape, tracks the statement's loop (the session's)
  bool echo_ = false, color_ = false, quit_ = false;
  std::vector<ShownValue> shown_;
  std::vector<std::string> history_;
  std::unique_ptr<ScheduleRun> pending_;
  std::shared_ptr<StaticState> statics_ = std::make_shared<StaticState>();
  ProgressHook on_progress_;
  OpCallHook on_op_call_;
  std::function<void()> on_iteration_;
  std::vector<std::shared_ptr<Block>> programs_;
  std::shared_ptr<UserOps> user_ops_;
};

void install_builtin_functions(Interpreter& in, std::map<std::string, Builtin>& table);
// "(389961 earlier nodes were dropped ...; the loop at line 3 ran 10000 iterations, 9999 of
// them dropped whole)": what :graph and the GUI say under a loop's last iteration.
std::string tape_drops_line(const Graph& g, const LoopTape& loop);
void install_check_builtins(std::map<std::string, Builtin>& table);  // allclose, all_finite, gradcheck
void install_expect_builtins(
    std::map<std::string, Builtin>& table);  // expect_close, saved_for_backward: exercises' checks
void install_training_builtins(std::map<std::string, Builtin>& table);  // optimizers, data, metrics, models
void install_user_op_builtins(std::map<std::string, Builtin>& table);  // save() in an @op's body
bool is_tensor_method(const std::string& name);
std::vector<std::string> tensor_member_names();  // attributes, methods and operators of x.
void install_repl_commands(Interpreter& in);

}  // namespace opscope::lang
