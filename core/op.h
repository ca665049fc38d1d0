// The OpDef interface: everything about one operator, declared once in its family file
// (ops/*.cpp) and found by name in the registry. Core knows operators only through this.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace opscope {

// ---------------------------------------------------------------------------------------------
// Attributes
enum class AttrType : uint8_t { integer, real, boolean, string, int_list };
const char* attr_type_name(AttrType t);
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
std::string attr_value_str(const AttrValue& v);

struct AttrSpec {
  std::string name;
  AttrType type;
  AttrValue default_value;
  std::string doc;
  // Validation: numeric range for integer/real (inclusive); allowed strings for string attrs.
  std::optional<double> min, max;
  std::vector<std::string> choices;
  bool required = false;  // no default: the caller must give it
  // An int_list holding one size per spatial axis (conv and pooling, as PyTorch): 1 (L),
  // 2 (h, w) or 3 (d, h, w); 0 for any other attribute. An int n or [n] means n along every
  // axis; labels show n when all are equal.
  int spatial_axes = 0;
};

// One way to declare an attribute: make_attr("axis", AttrType::integer, int64_t{-1}, "doc").
inline AttrSpec make_attr(std::string name, AttrType type, AttrValue default_value, std::string doc,
                          std::optional<double> min = {}, std::optional<double> max = {},
                          std::vector<std::string> choices = {}, bool required = false) {
  AttrSpec a;
  a.name = std::move(name);
  a.type = type;
  a.default_value = std::move(default_value);
  a.doc = std::move(doc);
  a.min = min;
  a.max = max;
  a.choices = std::move(choices);
  a.required = required;
  return a;
}

// An int-or-tuple attribute over `axes` spatial axes: make_axes_attr("stride", 1, "doc", 3, 1)
// accepts 2, (2, 1, 1) or [2, 1, 1].
inline AttrSpec make_axes_attr(std::string name, int64_t default_value, std::string doc, int axes,
                               std::optional<double> min = {}) {
  AttrSpec a = make_attr(std::move(name), AttrType::int_list,
                         std::vector<int64_t>(static_cast<size_t>(axes), default_value), std::move(doc), min);
  a.spatial_axes = axes;
  return a;
}
// An int-or-pair attribute: make_pair_attr("stride", 1, "doc", 1) accepts 2, (2, 1) or [2, 1].
inline AttrSpec make_pair_attr(std::string name, int64_t default_value, std::string doc,
                               std::optional<double> min = {}) {
  return make_axes_attr(std::move(name), default_value, std::move(doc), 2, min);
}
// How a per-axis attribute is written in a signature: "int or (h, w)".
std::string axes_attr_type(int axes);

// What a caller passes: name -> value (from keyword arguments).
using AttrMap = std::vector<std::pair<std::string, AttrValue>>;

struct OpDef;

// Resolved attributes of one call: one value per AttrSpec, in spec order.
class Attrs {
 public:
  Attrs() = default;
  Attrs(const OpDef* op, std::vector<AttrValue> values) : op_(op), values_(std::move(values)) {}
  int64_t i(std::string_view name) const { return std::get<int64_t>(get(name)); }
  double f(std::string_view name) const { return std::get<double>(get(name)); }
  bool b(std::string_view name) const { return std::get<bool>(get(name)); }
  const std::string& s(std::string_view name) const { return std::get<std::string>(get(name)); }
  const std::vector<int64_t>& ints(std::string_view name) const { return std::get<std::vector<int64_t>>(get(name)); }
  const AttrValue& get(std::string_view name) const;
  const std::vector<AttrValue>& values() const { return values_; }
  // Only the attributes that differ from their defaults, "name=value" (for labels).
  std::string str(bool all = false) const;
  AttrMap to_map() const;

 private:
  const OpDef* op_ = nullptr;
  std::vector<AttrValue> values_;
};

// ---------------------------------------------------------------------------------------------
// Shape inference
struct TensorMeta {
  Shape shape;
  DType dtype = DType::f32;
  Device device = Device::cpu;
};

struct InferCtx {
  const OpDef& op;
  const std::vector<TensorMeta>& inputs;
  const Attrs& attrs;
  // Helpers that throw a clear error naming the op.
  [[noreturn]] void fail(const std::string& message, const std::string& hint = {}) const;
  void expect_float(size_t input) const;  // "exp: expected a floating-point tensor, got int64"
  void expect_rank(size_t input, int64_t min_rank, int64_t max_rank = 64) const;
  void expect_dtype(size_t input, DType dtype) const;
};

// ---------------------------------------------------------------------------------------------
// Kernels
class Workspace;
struct NodeBody;

struct KernelCtx {
  const OpDef& op;
  const std::vector<Tensor>& inputs;
  const Attrs& attrs;
  const std::vector<TensorMeta>& out_meta;
  std::vector<Tensor>& outputs;  // pre-allocated (contiguous) unless the op makes views
  Workspace& ws;
  MemCategory out_category = MemCategory::activation;  // what fresh outputs count as (gradient in backward)
  const NodeBody* body = nullptr;  // the node's body, for ops whose kernel runs one (OpDef::body)
  // Scratch memory counted as workspace (im2col, FFT buffers); freed when the kernel returns.
  Tensor workspace(const Shape& shape, DType dtype) const;
  const Tensor& in(size_t i) const { return inputs[i]; }
  Tensor& out(size_t i = 0) const { return outputs[i]; }
};
using KernelFn = std::function<void(KernelCtx&)>;

// ---------------------------------------------------------------------------------------------
// Backward: written as calls of registered ops on symbolic values, so the backward pass is
// itself a graph (drawn, stepped, run on any device).
class GradCtx;

// A symbolic value in the graph under construction (a graph value id).
struct Val {
  GradCtx* ctx = nullptr;
  int id = -1;
  bool defined() const { return id >= 0; }
  Shape shape() const;  // a copy: the graph's storage moves as nodes are added
  DType dtype() const;
};

class GradCtx {
 public:
  virtual ~GradCtx() = default;
  virtual Val grad_output(size_t i) = 0;  // dL/d(output i)
  virtual Val input(size_t i) = 0;  // forward input i (must be listed in OpDef::saves)
  virtual Val output(size_t i) = 0;  // forward output i (must be listed in OpDef::saves)
  virtual const Attrs& attrs() const = 0;
  virtual const TensorMeta& input_meta(size_t i) const = 0;
  virtual const TensorMeta& output_meta(size_t i) const = 0;
  virtual size_t num_inputs() const = 0;
  virtual bool needs_grad(size_t input) const = 0;
  // Appends a node calling `op` and returns its outputs.
  virtual std::vector<Val> call_op(const OpDef& op, const std::vector<Val>& inputs, const AttrMap& attrs = {}) = 0;
  std::vector<Val> call_multi(std::string_view op, const std::vector<Val>& inputs, const AttrMap& attrs = {});
  virtual Val scalar(double value, DType dtype) = 0;  // a 0-d constant
  virtual const TensorMeta& meta(int value_id) const = 0;  // valid until the next call()

  Val call(std::string_view op, const std::vector<Val>& inputs, const AttrMap& attrs = {}) {
    return call_multi(op, inputs, attrs).at(0);
  }
  Val scalar_like(double value, const Val& like) { return scalar(value, like.dtype()); }
};

// Arithmetic on symbolic values reads like the formula it implements.
Val operator+(const Val& a, const Val& b);
Val operator-(const Val& a, const Val& b);
Val operator*(const Val& a, const Val& b);
Val operator/(const Val& a, const Val& b);
Val operator-(const Val& a);
Val operator*(const Val& a, double s);
Val operator*(double s, const Val& a);

// Gradients for each input (undefined Val = no gradient). Broadcast reduction (sum_to) and
// dtype casts back to the input's dtype are added by the engine, not by each op.
using BackwardFn = std::function<std::vector<Val>(GradCtx&)>;

// ---------------------------------------------------------------------------------------------
// Cost
struct Cost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double multiplications = 0;  // for algorithms that trade multiplications (Winograd)
  double workspace_bytes = 0;
};
using CostFn = std::function<Cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out,
                                  const Attrs& attrs, std::string_view algo)>;

// ---------------------------------------------------------------------------------------------
// The op's cases: inputs and attributes, the one list that gradcheck (float64 central
// differences, for differentiable ops), the generated CUDA-vs-CPU tests and the checks of what
// backward reads all iterate. Values are drawn by make_case_inputs (core/random.h).
enum class Domain : uint8_t {
  any,  // uniform in [-1, 1]
  positive,  // uniform in [0.5, 2]
  away_zero,  // |x| in [0.2, 1], random sign (kinks at 0: relu, abs, leaky_relu)
  distinct,  // a shuffled arithmetic sequence: no ties (max, maximum)
  index,  // int64 in [0, index_max)
  mask,  // int64 0/1
  normal,  // standard normal (benchmarks and the kernel lab)
};
struct InputSpec {
  Shape shape;
  Domain domain = Domain::any;
  int64_t index_max = 0;
  bool differentiable = true;  // false: check no gradient for it (targets, masks)
  std::optional<DType> dtype =
      std::nullopt;  // a dtype of its own, whatever the case runs in (Adam's float32 step count)
};
struct GradcheckCase {
  std::vector<InputSpec> inputs;
  AttrMap attrs;
  double atol = 1e-6, rtol = 1e-5;
  std::string note;
  // A device kernel's float32 result against the CPU's float64: the largest max|err| / max|ref|
  // allowed (the CUDA and simulator case tests). Long float32 chains need more: the norms and
  // attention sum whole rows (1e-4).
  double float32_rtol = 1e-5;
};

// How the kernel lab feeds an op from a student's sizes: what the sizes mean, their defaults,
// and the case they make (shapes and attributes; the lab draws normal float32 values).
struct LabSizes {
  std::string help;  // "N [M K]: A is N×K, B is K×M"
  std::vector<int64_t> defaults;  // {512}
  size_t min_sizes = 1;
  std::function<GradcheckCase(const std::vector<int64_t>&)> make;  // empty: not in the lab
  // The simplest correct algorithm, which the others are checked against; empty: "naive" when
  // the op has one, else the first that runs.
  std::string reference_algo;
};

// Which forward tensors an op keeps for backward (what its formula uses).
struct SavedRef {
  enum Kind : uint8_t { input, output } kind;
  int index;
};

// ---------------------------------------------------------------------------------------------
// Traits: what the engine's passes and executor ask about an op. Core never asks for an op by
// name except the primitives of the contract below; a pass asks a trait.

// A pointwise op computes y[i] = f(a[i][, b[i]]) (NumPy broadcasting) with a scalar formula
// written once in ops/pointwise.h, from which its CPU and CUDA kernels and both devices'
// fused kernels are derived. fuse_elementwise turns chains of pointwise ops into one
// `fused_elementwise` node; its chain names each op with its parameters.
struct PointwiseTrait {
  int arity = 0;  // 0: not pointwise; else 1 or 2 operands
  int formula = -1;  // the formula's code in ops/pointwise.h (opaque to core)
  // Attributes that are numbers of the formula, in order (leaky_relu's slope). A string
  // attribute counts as the index of its value among its choices (gelu's form: 0 erf, 1 tanh).
  std::vector<std::string> params;
};

// An op that can take over the op making one of its inputs (an epilogue fusion): when input
// `input` is made by an op named `producer` and read by nothing else, both become one node of
// op `into`, whose inputs are this op's with that input replaced by the producer's inputs:
// sgd_update(w, matmul(a, b)) → sgd_matmul_update(w, a, b). `into` gets this op's attributes;
// its shape inference must accept the inputs and it must have a kernel on their device.
struct AbsorbRule {
  std::string producer;
  int input = 0;
  std::string into;
  // Only for these calls (empty: always): e.g. plain SGD, not momentum, which reads more than
  // the gradient. `into` gets those of this op's attributes that it declares.
  std::function<bool(const Attrs& attrs, size_t num_inputs)> when = nullptr;
};

// Elements [start, start + len) along `axis` (normalized: 0 <= axis < rank).
struct AxisWindow {
  int64_t axis = 0, start = 0, len = 0;
};

// ---------------------------------------------------------------------------------------------
// The primitive contract: the only ops of ops/ that core names (tests/test_core.cpp fails if
// core/ names any other).
//   add sub mul div neg  the arithmetic of Val (backward formulas read like maths)
//   sum_to               autograd reduces a broadcast input's gradient to its shape
//   cast                 autograd casts a gradient back to its input's dtype
//   expand               the zero gradient of an output nobody used (a 0-d zero expanded)
//   sgd_update           compile(loss, lr=...) appends w ← w − lr·dw per parameter (inputs w, dw; attr lr)
//   concat               autograd joins the gradients of slices that tile an axis (OpDef::gradient_window)
//   fused_elementwise    fuse_elementwise's node: inputs x..., attrs chain ("mul i0 i1;gelu/0 r0":
//                        op[/param...] then operands iK = input K, rK = result of instruction K;
//                        the last instruction is the output) and shape; it takes at most
//                        kMaxFusedOps instructions and kMaxFusedInputs inputs (the CUDA
//                        kernel holds the chain's registers and inputs' indices on chip)
inline constexpr std::array<std::string_view, 11> kPrimitiveOps = {
    "add", "sub", "mul", "div", "neg", "sum_to", "cast", "expand", "sgd_update", "fused_elementwise", "concat"};
inline constexpr size_t kMaxFusedOps = 32;
inline constexpr size_t kMaxFusedInputs = 8;

// ---------------------------------------------------------------------------------------------
struct OpDef {
  std::string name;
  std::string family;  // "elementwise", "reduction", "matmul", ...
  std::string doc;  // one line with the formula
  std::vector<std::string> input_names;  // last may end in "..." (variadic) or "?" (optional)
  int min_inputs = 1, max_inputs = 1;  // max -1: variadic
  int num_outputs = 1;
  // The last `hidden_outputs` outputs are tensors the kernel keeps for backward (a user @op's
  // saved activations): graph values with bytes of their own, not returned to the caller.
  int hidden_outputs = 0;
  std::vector<std::string> output_names;  // optional ("output", "output 1", ... when empty)
  std::vector<AttrSpec> attrs;
  std::function<std::vector<TensorMeta>(const InferCtx&)> infer;

  // Kernels keyed by (device, algorithm); `algorithms` in the order they were registered.
  std::map<std::pair<Device, std::string>, KernelFn> kernels;
  std::vector<std::string> algorithms;
  // The algorithm a call without algo= runs. Must be set when there are several (the registry
  // refuses an op that leaves it to chance); an op with one algorithm defaults to it.
  std::string default_algo;
  // Algorithms that compute in float32 only (a library with no float64 kernels: conv2d's
  // "onednn"). Gradcheck, which runs in float64, leaves them out; the op's tests check them in
  // float32 against its reference algorithm.
  std::vector<std::string> float32_only;
  // Algorithms that compute in fewer bits than float32, with the relative error they are held to
  // instead of each case's float32_rtol (matmul's Tensor Core kernels: TF32 and half inputs keep
  // 10 mantissa bits, 1e-2).
  std::map<std::string, double> reduced_precision;
  // The relative error `algo` is held to on a case that allows `case_rtol` in float32.
  double float32_rtol(const std::string& algo, double case_rtol) const {
    const auto it = reduced_precision.find(algo);
    return it != reduced_precision.end() ? it->second : case_rtol;
  }
  // A device's default when the op's default has no kernel there (matmul on cuda: "cublas").
  std::array<std::string, kNumDevices> device_default;
  bool makes_views = false;  // kernel sets outputs to views of inputs (no allocation)
  bool accepts_strided = false;  // kernel handles any strides; else inputs are made contiguous
  bool updates_input0 = false;  // optimizer steps: a compiled program writes the output over input 0

  // Traits (see above) --------------------------------------------------------------------
  PointwiseTrait pointwise;  // a scalar formula per element: fusible
  bool elementwise = false;  // out[i] reads the inputs at i only: may be written over a dying input
  bool stateful = false;  // its kernel also writes state that is no output (batch_norm's
      // running statistics): never merged, folded or recomputed
  bool random = false;  // draws random numbers: two calls are two samples (never merged by
      // CSE, never recomputed)
  std::string anomaly_hint;  // what to do when its output has NaN/Inf (:anomaly on)
  std::string output_name_suffix;  // in backward graphs its output is named after its input plus this ("B.T")
  std::vector<AbsorbRule> absorbs;

  // An op whose output is a window of its input 0 (slice): the window, for these attributes and
  // input, when it is contiguous along one axis (step 1), else nothing. Its backward puts dy in
  // that window of a zero tensor; when the windows of one tensor's readers tile an axis (q, k,
  // v sliced out of qkv), autograd joins their gradients with one concat instead (no zeros, no
  // adds): append_backward_nodes.
  std::function<std::optional<AxisWindow>(const Attrs& attrs, const TensorMeta& input)> gradient_window;

  bool differentiable = true;  // false: outputs never require grad (comparisons)
  std::vector<SavedRef> saves;
  BackwardFn backward;
  std::string backward_note;  // e.g. "dA = dC·Bᵀ, dB = Aᵀ·dC"
  // For ops used only inside backward formulas: the op whose gradcheck exercises this one.
  std::string checked_via;

  CostFn cost;
  // The op's cases (every op has some; gradcheck runs them when it is differentiable).
  std::vector<GradcheckCase> gradcheck;
  // The kernel lab's inputs (`opscope bench OP SIZES`, `:bench OP`); ops without it are not in the lab.
  LabSizes lab;

  // Ops whose kernel runs a body of other ops (a user @op): the body of one call, from its
  // input metadata and attributes. Every call site stores it in the node (Node::body).
  std::function<std::shared_ptr<const NodeBody>(const std::vector<TensorMeta>& inputs, const Attrs& attrs)> body;

  // Where the op comes from: "" for the built-ins of ops/; a user `@op` or a loaded extension
  // records its source ("@op at lesson.ops:3", "my_ops.cpp"), so collisions can name both.
  std::string origin;
  bool builtin() const { return origin.empty(); }
  // Kernels added to this op at run time by another file (an extension's
  // add_kernel("matmul", Device::cpu, "mine", ...)): (device, algorithm) -> that file.
  std::map<std::pair<Device, std::string>, std::string> kernel_origin;
  // The file that added the kernel, or nullptr for the op's own.
  const std::string* added_by(Device d, std::string_view algo) const;

  // Registration helpers ------------------------------------------------------------------
  // Name, family, formula and inputs; an input ending in "?" is optional and one ending in
  // "..." takes any number, which sets min_inputs/max_inputs.
  static OpDef declare(std::string name, std::string family, std::string doc, std::vector<std::string> inputs);
  OpDef& kernel(Device d, const std::string& algo, KernelFn fn);
  // Drops the kernel; the algorithm goes too once no device has it.
  void remove_kernel(Device d, std::string_view algo);
  const KernelFn* find_kernel(Device d, std::string_view algo) const;
  const std::string& default_algorithm() const {
    return default_algo.empty() && algorithms.size() == 1 ? algorithms[0] : default_algo;
  }
  bool is_pointwise() const { return pointwise.arity > 0; }
  // The numbers of the formula of a pointwise op, from a call's attributes (PointwiseTrait::params).
  std::vector<double> formula_params(const Attrs& attrs) const;
  const AttrSpec* find_attr(std::string_view name) const;
  // Resolves caller attributes against the spec: defaults, conversions, validation.
  Attrs resolve(const AttrMap& given) const;
};

// ---------------------------------------------------------------------------------------------
// A kernel for an op declared elsewhere (OpRegistry::add_kernel).
struct KernelAddition {
  std::string op;
  Device device = Device::cpu;
  std::string algo;
  KernelFn fn;
  bool device_default = false;  // this algorithm is the op's default on `device`
  std::string origin;  // "" for the built-ins; else the extension's file
};

// What a shared library registered while it was being loaded (see OpRegistry::begin_capture).
struct RegistryCapture {
  std::string abi;  // the ABI id the library must have been built with
  std::vector<std::unique_ptr<OpDef>> ops;  // stable addresses: add() returns a reference
  std::vector<KernelAddition> kernels;
  std::vector<std::string> errors;  // a wrong ABI, an exception from a block, ...
  bool unchecked = false;  // a block registered without the ABI check
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  OpDef& add(OpDef def);  // throws on duplicate names
  // Run-time registration (user `@op`s, extensions): adds `def`, or replaces the op of the same
  // name. A replaced or removed definition stays alive (nodes of existing graphs and programs
  // point at it) but is no longer found by name.
  OpDef& replace(OpDef def);
  void remove(std::string_view name);
  // Puts a replaced or removed definition back under its name (undoing replace/remove: the
  // same object, so nodes made before see the registry exactly as it was).
  void reinstate(const OpDef* def);
  const OpDef* find(std::string_view name) const;
  const OpDef& get(std::string_view name) const;  // throws "unknown operator" with suggestions
  std::vector<const OpDef*> all() const;  // sorted by name
  size_t size() const { return ops_.size(); }
  // A kernel for an op declared in another file (the CUDA kernels of ops/cuda): attached now
  // if the op exists, else when it is added (static initialisation order is not defined).
  // `device_default`: this algorithm is the op's default on `d`.
  void add_kernel(const std::string& op, Device d, const std::string& algo, KernelFn fn, bool device_default = false);
  void add_kernel(KernelAddition k);
  // Removes an algorithm added by add_kernel (an extension unloaded or reloaded).
  void remove_kernel(std::string_view op, Device d, std::string_view algo);

  // Loading at run time (extensions). A shared library's OPSCOPE_REGISTER_OPS blocks run during
  // dlopen; between begin_capture and end_capture, add() and add_kernel() collect what they are
  // given instead of registering it, so the loader can check every name and commit all of it
  // or nothing. Nothing thrown in a block escapes into dlopen: it is recorded in `errors`.
  void begin_capture(std::string abi);
  RegistryCapture end_capture();
  // An extension's registrar: runs `fn` if the library was built with the ABI id the capture
  // expects (the same headers and flags as this opscope), else records why not.
  void register_extension(const char* abi, void (*fn)(OpRegistry&));

 private:
  std::unique_ptr<RegistryCapture> capture_;
  int checked_blocks_ = 0;  // > 0 while register_extension runs a block
  std::vector<KernelAddition> pending_;
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
  std::vector<std::unique_ptr<OpDef>> retired_;  // replaced or removed, still pointed at by nodes
  std::unordered_map<std::string_view, const OpDef*> index_;  // fast lookup by name (dispatch)
};

// Levenshtein-based suggestion among `candidates` ("did you mean 'relu'?"), empty if none close.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

// Runs `fn` at static-initialisation time (ops/ is an object library, so nothing is dropped).
struct OpRegistrar {
  explicit OpRegistrar(void (*fn)(OpRegistry&)) { fn(OpRegistry::instance()); }
};
// In an extension (compiled by load_extension, or with the CMake package's opscope::extension,
// both of which define OPSCOPE_EXTENSION_ABI) a block registers through the loader, which runs
// it only when the library was built against this opscope's headers and flags.
struct ExtensionOpRegistrar {
  ExtensionOpRegistrar(const char* abi, void (*fn)(OpRegistry&)) { OpRegistry::instance().register_extension(abi, fn); }
};
#define OPSCOPE_CAT2(a, b) a##b
#define OPSCOPE_CAT(a, b) OPSCOPE_CAT2(a, b)
#ifdef OPSCOPE_EXTENSION_ABI
#define OPSCOPE_REGISTRAR_(fn) \
  static ::opscope::ExtensionOpRegistrar OPSCOPE_CAT(registrar_, fn)(OPSCOPE_EXTENSION_ABI, &fn)
#else
#define OPSCOPE_REGISTRAR_(fn) static ::opscope::OpRegistrar OPSCOPE_CAT(registrar_, fn)(&fn)
#endif
#define OPSCOPE_REGISTER_OPS(fn)          \
  static void fn(::opscope::OpRegistry&); \
  OPSCOPE_REGISTRAR_(fn);                 \
  static void fn(::opscope::OpRegistry& registry)

}  // namespace opscope
