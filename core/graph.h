// The workspace graph: nodes in creation order (stable ids), the values that flow between
// them, and the saved tensors each forward node keeps for its backward.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/op.h"
#include "core/stable_ids.h"
#include "core/tensor.h"

namespace opscope {

enum class Phase : uint8_t { forward, backward, update };
const char* phase_name(Phase p);

enum class ValueKind : uint8_t { op_output, parameter, input, constant, grad_seed };
const char* value_kind_name(ValueKind k);

struct ValueInfo {
  TensorMeta meta;
  ValueKind kind = ValueKind::op_output;
  int producer = -1;  // node id, -1 for leaves
  int out_index = 0;
  std::string name;  // the user's variable name, when known
  bool requires_grad = false;
  bool placeholder = false;  // static mode's input("x", shape): fed by run(...)
  bool checkpoint = false;  // checkpoint(x): recomputation keeps this value
  std::weak_ptr<TensorImpl> tensor;  // the live tensor, while someone holds it
  Tensor constant;  // constants and grad seeds are held by the graph
  // param(x) of a computed x: x's value. The nodes that computed it initialised the parameter
  // (the figure folds them into it). -1 otherwise.
  int initialised_from = -1;
  // How it was made: a parameter's call ("param(randn(16, 32) * 0.1)", on origin_line), a
  // backward formula's constant's value ("0").
  std::string origin;
  int origin_line = 0;
};

struct SavedTensor {
  int value_id;
  Tensor tensor;  // empty once released
};

struct NodeBody;  // core/body.h
// A user function's call or a loop's iteration around a node. The figure folds a call into one
// box and shows a loop's last iteration; ids are unique within the workspace.
struct NodeFrame {
  enum Kind : uint8_t { call, loop } kind = call;
  int id = -1;  // the call, or the loop's run (a loop statement starts a new run each time)
  int iteration = 0;  // loops: 0, 1, ...
  bool operator==(const NodeFrame&) const = default;
};

// A node's value ids and frames: a handful each, kept in place (no allocation per node).
using ValueIds = InlineVector<int, 4>;
using NodeFrames = InlineVector<NodeFrame, 4>;

struct NodeStats {
  int64_t runs = 0;
  int64_t last_time_ns = 0;
  Cost cost;  // of the last run
};

struct Node {
  int id = -1;
  const OpDef* op = nullptr;
  Attrs attrs;
  std::string algo;
  ValueIds inputs, outputs;
  Phase phase = Phase::forward;
  std::string scope;  // composite function it belongs to ("" = top level)
  NodeFrames frames;  // the calls and loop iterations it ran in, outermost first
  int forward_of = -1;  // backward nodes: the forward node whose gradient they compute
  // The cost model's FLOPs for its shapes, taken when the op made it from the metadata at hand
  // (-1: not taken). A dropped tape's FLOPs add up from these: asking the model again at the
  // drop copied every node's metadata back out of the graph.
  double flops = -1;
  bool symbolic = false;  // built in static mode: runs only in a compiled program
  std::vector<Node> fused;  // a fused node: the nodes it replaced, in order (the GUI unfolds them)
  // An @op's node: the ops its kernel runs, traced for this call's input shapes (shared by
  // every call with the same shapes and attributes). node_body() gives a fused node's too.
  std::shared_ptr<const NodeBody> body;
  std::vector<SavedTensor> saved;
  bool saved_released = false;
  NodeStats stats;

  std::string label() const;  // "matmul" or "conv2d(stride=2)"
};

class Graph;
// The cost model's numbers for one node, from the metadata the graph keeps.
Cost node_cost(const Graph& g, const Node& n);

// What drop_unreachable freed since the graph was made: the GUI and :graph say how much of a
// long loop's tape is gone, and flops() still counts the work the dropped nodes did.
struct TapeDrops {
  int64_t nodes = 0, values = 0;  // dropped in all
  double flops = 0;  // FLOPs of the dropped nodes' runs (cost model × runs)
};

class Graph {
 public:
  // Taken by rvalue: a node or value is moved once, into place (a tiny op makes two of each).
  int add_value(ValueInfo&& v);
  int add_node(Node&& n);  // assigns the id
  // Ids are stable: a node dropped from the tape (drop_unreachable) leaves a gap, nothing is
  // renumbered. Asking for an id that is not there throws opscope::Error; has_node asks first.
  Node& node(int id) {
    if (Node* n = nodes_.find(id)) return *n;
    missing("node", id);
  }
  const Node& node(int id) const { return const_cast<Graph*>(this)->node(id); }
  ValueInfo& value(int id) {
    if (ValueInfo* v = values_.find(id)) return *v;
    missing("value", id);
  }
  const ValueInfo& value(int id) const { return const_cast<Graph*>(this)->value(id); }
  bool has_node(int id) const { return nodes_.find(id) != nullptr; }
  bool has_value(int id) const { return values_.find(id) != nullptr; }
  Node* find_node(int id) { return nodes_.find(id); }
  const Node* find_node(int id) const { return nodes_.find(id); }
  ValueInfo* find_value(int id) { return values_.find(id); }
  const ValueInfo* find_value(int id) const { return values_.find(id); }
  // The nodes held, in id order (each knows its id); values() pairs with value_ids().
  const std::vector<Node>& nodes() const { return nodes_.items(); }
  const std::vector<ValueInfo>& values() const { return values_.items(); }
  const std::vector<int>& value_ids() const { return values_.ids(); }
  // One past the largest id: every id is < num_nodes() (the next node gets num_nodes()).
  size_t num_nodes() const { return static_cast<size_t>(nodes_.end_id()); }
  size_t num_values() const { return static_cast<size_t>(values_.end_id()); }
  // How many are held now (fewer than num_nodes() once some were dropped).
  size_t node_count() const { return nodes_.size(); }
  size_t value_count() const { return values_.size(); }

  void name_value(int id, const std::string& name);
  // The user's name for a node: its first output's variable name, or "" if none.
  std::string node_var_name(int id) const;

  // Rollback to an earlier size (a failed statement leaves the graph as it was, what it
  // dropped counted as before too).
  struct Mark {
    size_t nodes, values;
    TapeDrops drops{};
  };
  Mark mark() const { return {num_nodes(), num_values(), drops_}; }
  void rollback(const Mark& m);
  void clear();
  // Nodes and values without the saved tensors (a compiled program starts from this).
  Graph copy_structure() const;

  // Frees the tape nobody can use, as PyTorch frees a graph no tensor refers to: drops the
  // nodes (with id >= from.nodes) that no live tensor reaches through their inputs, with their
  // saved tensors, and the values (id >= from.values) only they used. A node is kept with its
  // inputs' producers, its forward node and its backward nodes, so what is kept is a whole
  // graph; `pinned_*` are kept whatever their tensors (a stepped pass, a compiled program's
  // outputs). Nodes below `from` are never touched, so a rollback to a mark at or below
  // `from` stays exact. Returns what this call dropped.
  TapeDrops drop_unreachable(const Mark& from, const std::vector<int>& pinned_nodes = {},
                             const std::vector<int>& pinned_values = {});
  const TapeDrops& drops() const { return drops_; }

  // Bumped whenever nodes, edges or value names change, so views can re-layout only then.
  uint64_t version() const { return version_; }

 private:
  [[noreturn]] static void missing(const char* what, int id);
  StableIdVector<Node> nodes_;
  StableIdVector<ValueInfo> values_;
  TapeDrops drops_;
  uint64_t version_ = 0;
};

}  // namespace opscope
