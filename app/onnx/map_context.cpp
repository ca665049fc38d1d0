#include "app/onnx/map_context.h"

#include <algorithm>

namespace opscope::interop {

const Tensor& NodeCtx::in(size_t i) const {
  if (!has(i)) fail("input " + std::to_string(i + 1) + " is missing", "this input is required by the ONNX operator");
  return inputs_[i].t;
}

std::vector<int64_t> NodeCtx::ints_input(size_t i, const char* what) const {
  const Tensor& t = in(i);
  if (!inputs_[i].known)
    throw Unsupported(
        std::string(what) + " ('" + node_.inputs[i] +
            "') is computed from the model's inputs, so it cannot be resolved at import",
        "opscope fixes every shape when it imports a model: give the inputs fixed sizes (--shape name=dims)");
  if (t.dtype() != DType::i64) fail(std::string(what) + " must be integers, got " + dtype_name(t.dtype()));
  if (t.dim() > 1) fail(std::string(what) + " must be a list (1-D), got shape " + shape_str(t.shape()));
  // Read as integers: INT64_MAX (PyTorch's "to the end" in Slice) does not survive a double.
  const Tensor c = t.device() == Device::cpu ? t.contiguous() : t.to(Device::cpu, MemCategory::temporary);
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

double NodeCtx::scalar_input(size_t i, const char* what) const {
  const Tensor& t = in(i);
  if (!inputs_[i].known)
    throw Unsupported(std::string(what) + " ('" + node_.inputs[i] +
                      "') is computed from the model's inputs, so it cannot be resolved at import");
  if (t.numel() != 1) fail(std::string(what) + " must hold one value, got shape " + shape_str(t.shape()));
  return t.get(0);
}

const OnnxAttribute& NodeCtx::attr_of_kind(const char* name, OnnxAttribute::Kind kind) const {
  const OnnxAttribute* a = node_.attribute(name);
  if (a->kind != kind)
    fail(std::string("attribute '") + name + "' must be of type " + attribute_kind_name(kind) + ", got " +
         attribute_kind_name(a->kind));
  return *a;
}

int64_t NodeCtx::attr_int(const char* name, int64_t def) const {
  return has_attr(name) ? attr_of_kind(name, OnnxAttribute::Kind::i).i : def;
}
double NodeCtx::attr_float(const char* name, double def) const {
  return has_attr(name) ? attr_of_kind(name, OnnxAttribute::Kind::f).f : def;
}
std::string NodeCtx::attr_string(const char* name, const std::string& def) const {
  return has_attr(name) ? attr_of_kind(name, OnnxAttribute::Kind::s).s : def;
}
std::vector<int64_t> NodeCtx::attr_ints(const char* name, const std::vector<int64_t>& def) const {
  return has_attr(name) ? attr_of_kind(name, OnnxAttribute::Kind::ints).ints : def;
}
std::vector<double> NodeCtx::attr_floats(const char* name) const {
  return has_attr(name) ? attr_of_kind(name, OnnxAttribute::Kind::floats).floats : std::vector<double>{};
}
const Tensor* NodeCtx::attr_tensor(const char* name) const {
  return has_attr(name) ? &attr_of_kind(name, OnnxAttribute::Kind::t).t : nullptr;
}

void NodeCtx::allow_attrs(std::initializer_list<const char*> names) const {
  for (const auto& a : node_.attributes) {
    const bool ok = std::any_of(names.begin(), names.end(), [&](const char* n) { return a.name == n; });
    if (!ok) unsupported("attribute '" + a.name + "' is not read by opscope's " + node_.op_type);
  }
}

std::vector<Tensor> NodeCtx::call_multi(std::string_view op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  const OpDef& def = OpRegistry::instance().get(op);
  auto outs = current_workspace().call_multi(def, inputs, def.resolve(attrs));
  made_.insert(made_.end(), outs.begin(), outs.end());
  return outs;
}

Tensor NodeCtx::call(std::string_view op, const std::vector<Tensor>& inputs, const AttrMap& attrs) {
  return call_multi(op, inputs, attrs).at(0);
}

void NodeCtx::unsupported(const std::string& why, const std::string& hint) const { throw Unsupported(why, hint); }
void NodeCtx::fail(const std::string& message, const std::string& hint) const { throw Error(message, hint); }

int64_t onnx_axis(const NodeCtx& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    c.fail("axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Tensor int_tensor(const std::vector<int64_t>& values, bool scalar) {
  return Tensor::from_vector<int64_t>(values, scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())}, DType::i64,
                                      MemCategory::input);
}

const MapperTable& mapper_table() {
  static const MapperTable table = [] {
    MapperTable t;
    add_math_mappers(t);
    add_nn_mappers(t);
    add_shape_mappers(t);
    add_vision_mappers(t);
    add_index_mappers(t);
    add_rnn_mappers(t);
    return t;
  }();
  return table;
}

}  // namespace opscope::interop
