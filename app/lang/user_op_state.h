// What the closures of one user @op's OpDef share: its definition, what every call returns
// and saves, and its traces (one body per input shapes and attributes). Private to
// user_ops.cpp and user_op_trace.cpp.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/lang/user_ops.h"
#include "core/body.h"

namespace opscope::lang {

struct OpTrace {
  std::shared_ptr<const NodeBody> body;
  std::vector<TensorMeta> outputs;  // returned tensors, then the saved intermediates (hidden)
  Cost cost;  // the sum of the body's costs
};

struct UserOp {
  std::string name;
  bool is_backward = false;
  std::shared_ptr<Function> fn;
  Pos pos;
  std::string origin;  // "@op at FILE:LINE"
  std::string where;  // "FILE:LINE"
  std::vector<std::string> tensor_params;  // the inputs, in order
  std::vector<std::string> attr_params;  // the attributes, in order
  UserOps* owner = nullptr;  // null once its session ended
  OpDef* def = nullptr;  // as registered
  std::shared_ptr<UserOp> backward;  // forward ops: set by @name.backward
  std::weak_ptr<UserOp> forward;  // backward ops: the op they differentiate

  // What every call returns and saves, fixed by the first trace (so OpDef::saves and the
  // outputs are the op's, not one call's).
  struct Layout {
    bool known = false;
    int returned = 0;  // forward: outputs; backward: gradients, None included
    // Forward: each saved tensor is an input, one of the returned outputs, or computed in the
    // body (then a hidden output of the node, saved for backward).
    struct Saved {
      enum Kind { input, output, computed } kind;
      int index;  // input index, or output index (hidden outputs follow the returned ones)
      bool operator==(const Saved&) const = default;
    };
    std::vector<Saved> saved;
    std::vector<std::string> saved_names;  // forward: the saved tensors' names in the body
    std::vector<int> grad_of;  // backward: output k is the gradient of input grad_of[k]
  } layout;

  // From the source, before any call: save()'s argument names when the body calls it once
  // with plain names, and the return statements' arity (-1: not known until traced).
  bool static_saves_known = false;
  std::vector<std::string> static_saves;
  int static_returns = -1;

  std::map<std::string, std::shared_ptr<const OpTrace>> traces;
};

// The trace of `u` for these inputs and attributes (cached). Throws LangError positioned in
// the body for a body that fails, Error for a session that ended.
std::shared_ptr<const OpTrace> trace_op(UserOp& u, const std::vector<TensorMeta>& inputs, const Attrs& attrs);

// "x [2, 3] float32, beta=1": what a trace was made for (error messages).
std::string traced_for(const UserOp& u, const std::vector<TensorMeta>& inputs, const Attrs& attrs);

// Checks the backward's tensor parameters against what the forward hands it (output gradients,
// then saved tensors) once both are known; throws Error naming both ops.
void check_backward_arity(const UserOp& fwd, const UserOp& bwd);

}  // namespace opscope::lang
