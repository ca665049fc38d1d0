// User-defined operators: `@op def swish(x, beta=1.0): ...` registers an ordinary OpDef whose
// kernel is its body (traced once per input shapes and attributes into a NodeBody), and
// `@swish.backward def swish_backward(dy, x, s, beta=1.0): ...` its hand-written backward,
// another registered op. `save(...)` in the body names what backward receives: a saved input
// stays an input; a saved intermediate becomes a hidden output of the node (saved for backward).
//
// The registry is global and sessions are not: an @op belongs to the session that defined it.
// Redefining one's own op replaces it (nodes made before keep the old definition); a built-in,
// an extension's op or another live session's op of that name is an error naming both; the
// session's end (and :reset) unregisters its ops; a failed statement undoes a definition.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/lang/value.h"
#include "core/body.h"

namespace opscope::lang {

class Interpreter;
struct UserOp;

class UserOps {
 public:
  explicit UserOps(Interpreter& in);
  ~UserOps();
  UserOps(const UserOps&) = delete;
  UserOps& operator=(const UserOps&) = delete;

  // True when `s` is an @op or @NAME.backward definition (then defines it: throws on bad input).
  bool define(const Stmt& s, const std::shared_ptr<Function>& f);
  // :reset: this session's ops leave the registry.
  void clear();
  // What :doc adds for an op this session defined (its source line, what it saves, its
  // backward's source line, its body's ops); "" for any other op.
  std::string describe(const OpDef& op) const;

  // --- while a body is traced (hooks the interpreter calls) ---
  bool tracing() const { return !stack_.empty(); }
  // A builtin called in a body: only those that make sense in a kernel traced once.
  void check_builtin(const Builtin& b, Pos p) const;
  // A global tensor read in a body: an op sees only its inputs and attributes.
  void check_global(const std::string& name, const Value& v, Pos p) const;
  // A body's local variable names its value in the body graph (drawn when expanded).
  void name_local(const std::string& name, const Value& v) const;
  // save(x, s) inside a body; outside it is an error (save("f.npy", x) writes a file).
  bool in_body_save(CallArgs& a);

  // Implementation, shared by user_ops.cpp and user_op_trace.cpp.
  struct Frame {
    UserOp* op;
    std::vector<Tensor> saved;
    std::vector<std::string> saved_names;
    bool save_called = false;
  };
  Interpreter& interp() { return in_; }
  std::vector<Frame>& stack() { return stack_; }
  const UserOp* find_own(const std::string& name) const;

 private:
  void define_forward(const Stmt& s, const std::shared_ptr<Function>& f);
  void define_backward(const Stmt& s, const std::shared_ptr<Function>& f, const std::string& target);
  // Adds or replaces the op of `u`'s name in the registry (undone if the statement fails).
  void install(const std::shared_ptr<UserOp>& u, OpDef def, Pos p);
  void uninstall(const std::string& name);

  Interpreter& in_;
  std::map<std::string, std::shared_ptr<UserOp>> ops_;  // this session's current definitions
  std::vector<std::shared_ptr<UserOp>> all_;  // every definition made (told when the session ends)
  std::vector<Frame> stack_;  // bodies being traced, innermost last
};

}  // namespace opscope::lang
