// Inside app/onnx: how one ONNX node becomes calls of registered opscope ops. Each mapped op
// type has one function (map_math.cpp, map_nn.cpp, map_shape.cpp) that reads the node's
// attributes and inputs through a NodeCtx and returns its outputs. A value is "known" when it
// depends on no graph input and no parameter (Constant, Shape, integer initializers): a node
// whose inputs are all known is folded at import, so PyTorch's shape arithmetic never reaches
// the graph.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "app/onnx/onnx_fold.h"
#include "app/onnx/onnx_model.h"
#include "core/op.h"
#include "core/workspace.h"

namespace opscope::interop {

// One value flowing through the lowering: a tensor (concrete, or symbolic in static mode).
struct Slot {
  Tensor t;
  bool known = false;  // a constant computable at import time
  bool defined() const { return t.defined(); }
};

class NodeCtx {
 public:
  NodeCtx(const OnnxNode& node, int64_t opset, std::vector<Slot> inputs, std::vector<bool> outputs_used, bool folding)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), used_(std::move(outputs_used)), folding_(folding) {}

  const OnnxNode& node() const { return node_; }
  int64_t opset() const { return opset_; }
  bool folding() const { return folding_; }

  // --- inputs ---
  size_t num_inputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i].defined(); }
  const Tensor& in(size_t i) const;  // a present input, else an error naming the node
  bool known(size_t i) const { return has(i) && inputs_[i].known; }
  const Slot& slot(size_t i) const { return inputs_.at(i); }  // passes an input through (Identity)
  // A known integer input's values (Reshape's shape, Slice's starts): Unsupported/clear error
  // when it depends on the graph's inputs.
  std::vector<int64_t> ints_input(size_t i, const char* what) const;
  double scalar_input(size_t i, const char* what) const;  // a known one-element input

  // --- outputs ---
  size_t num_outputs() const { return used_.size(); }
  bool output_used(size_t i) const { return i < used_.size() && used_[i]; }

  // --- attributes (validated: a wrong kind is an error naming the node) ---
  bool has_attr(const char* name) const { return node_.attribute(name) != nullptr; }
  int64_t attr_int(const char* name, int64_t def) const;
  double attr_float(const char* name, double def) const;
  std::string attr_string(const char* name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const char* name, const std::vector<int64_t>& def = {}) const;
  std::vector<double> attr_floats(const char* name) const;
  const Tensor* attr_tensor(const char* name) const;
  // Attributes the mapper reads; any other attribute of the node is Unsupported (so a model is
  // never run with an attribute silently ignored).
  void allow_attrs(std::initializer_list<const char*> names) const;

  // --- building the graph: registered ops in the current workspace ---
  Tensor call(std::string_view op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {});
  std::vector<Tensor> call_multi(std::string_view op, const std::vector<Tensor>& inputs, const AttrMap& attrs = {});
  // A constant output whatever the inputs (Shape: from the input's shape alone).
  Slot constant(const Tensor& t) const { return Slot{t, true}; }
  // The tensors this node's calls made (they are named after the node).
  const std::vector<Tensor>& made() const { return made_; }

  [[noreturn]] void unsupported(const std::string& why, const std::string& hint = {}) const;
  [[noreturn]] void fail(const std::string& message, const std::string& hint = {}) const;

 private:
  const OnnxAttribute& attr_of_kind(const char* name, OnnxAttribute::Kind kind) const;
  const OnnxNode& node_;
  int64_t opset_;
  std::vector<Slot> inputs_;
  std::vector<bool> used_;
  bool folding_;
  std::vector<Tensor> made_;
};

// One ONNX op type: its outputs (one Slot per node output; empty for unused optional ones).
using MapperFn = std::function<std::vector<Slot>(NodeCtx&)>;
using MapperTable = std::map<std::string, MapperFn>;

void add_math_mappers(MapperTable& table);  // elementwise, activations, comparisons, reductions, MatMul, Gemm
void add_nn_mappers(MapperTable& table);  // Conv, pools, normalizations, softmax, dropout
void add_shape_mappers(MapperTable& table);  // reshape family, slicing, gathering, constants, Shape, Cast, Pad
void add_vision_mappers(
    MapperTable& table);  // ConvTranspose, InstanceNormalization, GroupNorm (folded), Resize, Upsample
void add_index_mappers(MapperTable& table);  // GatherElements, GatherND, ScatterND, TopK, CumSum, Trilu, Einsum
void add_rnn_mappers(MapperTable& table);  // LSTM, GRU, RNN
const MapperTable& mapper_table();

// --- helpers shared by the mapper files ---
// Normalizes an ONNX axis (negative counts from the end) for a tensor of `rank`.
int64_t onnx_axis(const NodeCtx& c, int64_t axis, int64_t rank);
// A known 0-d or 1-d int64 tensor from values (for constants the mappers make).
Tensor int_tensor(const std::vector<int64_t>& values, bool scalar = false);
// The one output of a mapper.
inline std::vector<Slot> one(Tensor t) { return {Slot{std::move(t), false}}; }

}  // namespace opscope::interop
