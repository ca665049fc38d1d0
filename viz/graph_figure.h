// What the figure of a graph shows, before any geometry: which nodes are drawn and which stay
// out (the nodes that computed a parameter's initial value, a loop's earlier iterations), the
// calls of user functions that fold into one box each, and the loops with their iteration
// counts. No Graphviz or ImGui here.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"

namespace opscope::viz {

// One level of where a node was recorded: a call of a user function (or a name prefix of an
// imported model's nodes), or an iteration of a loop.
struct FigureFrame {
  enum Kind : uint8_t { call, loop } kind = call;
  std::string key;  // calls: "attention/heads@15" (the call's frame id), or the scope path
      // itself when no call was recorded; loops: "loop@7"
  std::string name;  // calls: the scope path ("attention/heads"); loops: ""
  std::string label;  // "heads()", or "loop: last of 150 iterations"
};

// The frames of node `n`, outermost first.
std::vector<FigureFrame> node_frames(const Graph& g, const Node& n);

// How many iterations each run of a loop statement recorded (by loop frame id), and which one
// the figure shows. The one place that counts them: a tape that drops earlier iterations' dead
// nodes adds what it dropped here.
struct LoopCount {
  int iterations = 0;  // iterations that ran (the highest recorded iteration + 1)
  int last = 0;  // the iteration shown
};
std::map<int, LoopCount> loop_counts(const Graph& g);

// Per node: why it is left out of the figure (or kept).
enum class NodeShown : uint8_t { shown, initialisation, earlier_iteration, not_listed };

struct FigureContent {
  std::vector<NodeShown> nodes;  // per node id
  std::map<int, std::vector<int>> init_nodes_of;  // parameter value -> nodes that made its initial value
};
// `only_nodes` empty: every node may be shown; else only those (a compiled program's schedule).
FigureContent figure_content(const Graph& g, const std::vector<int>& only_nodes);

// The nodes whose outputs only fed a parameter's initial value, e.g. the `mul` of
// param(randn(16, 32) * 0.1), in creation order.
std::vector<int> initialisation_nodes(const Graph& g, int parameter_value);

// "mul(·, 0.5)": the op's label with its 0-d constant operands written in (the figure draws no
// box for them).
std::string node_title(const Graph& g, const Node& n);
bool is_inline_constant(const ValueInfo& v);

// The badge over a box whose nodes keep tensors for backward: "saved 1.5 KiB" while held,
// "freed" once backward released them, "" when they save nothing.
std::string saved_badge(const Graph& g, const std::vector<int>& nodes);

}  // namespace opscope::viz
