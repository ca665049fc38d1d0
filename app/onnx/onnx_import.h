// An imported ONNX model: its initializers as opscope parameters, and its graph applied to
// tensors as ordinary registered ops in the workspace's current mode — recorded ops in dynamic
// mode (backward fills the parameters' .grad, :step steps it), traced symbolic nodes in static
// mode (compile/run and every pass apply). Import is a front end, like the language: nothing
// here executes a kernel of its own.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/onnx/onnx_model.h"
#include "core/workspace.h"

namespace opscope::interop {

struct ImportOptions {
  // --shape name=1,3,224,224: sizes for a graph input (its symbolic dimensions, or all of them).
  std::map<std::string, Shape> shapes;
  int64_t default_dim = 1;  // the size of a symbolic dimension nobody gave
  // Graph inputs bound to values at import, as if the file held them as Constant nodes (the
  // conformance runner binds the shape-like inputs of a test this way): known, so the nodes
  // that need them (Reshape's shape, Slice's starts) resolve, and no longer inputs of m.
  std::map<std::string, Tensor> constants;
  // Give each name of a tied initializer its own parameter (see ImportedModel::ties()).
  bool untie = false;
};

// "x=1,3,28,28" -> {"x", [1, 3, 28, 28]}; a clear error for anything else.
std::pair<std::string, Shape> parse_shape_option(const std::string& text);

class ImportedModel {
 public:
  struct Input {
    std::string name;
    DType dtype = DType::f32;
    std::vector<OnnxDim> dims;  // as the file declares them
    Shape shape;  // resolved: fixed sizes, given sizes, or default_dim
  };
  struct Output {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;  // for the resolved input shapes
  };
  struct Named {
    std::string name;
    Tensor tensor;
  };
  // Initializers the file ties together: PyTorch's exporter merges initializers of equal values
  // into one and names the others by Identity nodes of it (a TransformerEncoderLayer's
  // norm1.bias and norm2.bias become Identity(self_attn.out_proj.bias) when all are zeros), so
  // parameters that PyTorch trains apart share one gradient. `uses`: the Identity outputs.
  struct Tie {
    std::string shared;
    std::vector<std::string> uses;
  };

  // Reads the file, lists every op type it cannot map (one error), makes the initializers
  // parameters and traces the graph once (shapes only, in a scratch workspace) so that a bad
  // shape is an error now, naming the file and the node. Nothing stays behind on failure.
  static std::shared_ptr<ImportedModel> load(const std::string& path, const ImportOptions& options = {});
  static std::shared_ptr<ImportedModel> from_model(OnnxModel model, const ImportOptions& options = {});

  const std::string& path() const { return model_.path; }
  std::string name() const;  // the file's stem: "encoder"
  const OnnxModel& model() const { return model_; }
  const std::vector<Input>& inputs() const { return inputs_; }
  const std::vector<Output>& outputs() const { return outputs_; }
  // Floating-point initializers that a gradient can reach: requires_grad, named after the ONNX names.
  const std::vector<Named>& parameters() const { return parameters_; }
  // Initializers that are state, not weights: BatchNormalization's running mean and variance.
  const std::vector<Named>& buffers() const { return buffers_; }
  const std::vector<Named>& bound_inputs() const { return constants_; }  // ImportOptions::constants
  const std::vector<Tie>& ties() const { return ties_; }
  bool untied() const { return untied_; }  // loaded with untie: each use is a parameter of its own
  // What a student should know about ties(), one paragraph ("" when there are none).
  std::string ties_note() const;
  // A parameter or buffer by its ONNX name; throws with the closest name when there is none.
  const Tensor& param(const std::string& name) const;
  int64_t parameter_count() const;  // elements of the parameters

  // Applies the graph to `inputs` (graph inputs in order) in the workspace's current mode and
  // returns the graph outputs. Shapes must match the declared ones (symbolic sizes are free:
  // the graph is lowered again for new sizes). Nodes are named after the ONNX nodes.
  // `folded` (optional) counts the ONNX nodes folded at import (all their inputs known).
  std::vector<Tensor> apply(Workspace& ws, const std::vector<Tensor>& inputs, int* folded = nullptr) const;
  // Static mode: input() placeholders named after the graph inputs (resolved shapes), and the
  // outputs traced against them.
  struct Traced {
    std::vector<Tensor> placeholders, outputs;
    int folded = 0;  // ONNX nodes folded away (shape arithmetic, constants)
  };
  Traced trace(Workspace& ws) const;

  // What `opscope import` prints: producer, opset, inputs, outputs, parameters, op types.
  std::string summary() const;

 private:
  explicit ImportedModel(OnnxModel m) : model_(std::move(m)) {}
  OnnxModel model_;
  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  std::vector<Named> parameters_, buffers_, constants_;
  std::vector<Tie> ties_;
  bool untied_ = false;
};

// The ONNX op types the importer maps, sorted ("Abs", "Add", ...).
std::vector<std::string> mapped_op_types();

}  // namespace opscope::interop
