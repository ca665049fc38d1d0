#include "core/describe.h"

namespace opscope {

std::string op_signature(const OpDef& op) {
  std::string s = op.name + "(";
  for (size_t i = 0; i < op.input_names.size(); ++i) s += (i ? ", " : "") + op.input_names[i];
  for (auto& a : op.attrs) s += ", " + a.name + (a.required ? "" : "=" + attr_value_str(a.default_value));
  if (op.algorithms.size() > 1) s += ", algo=\"" + op.default_algorithm() + "\"";
  return s + ")";
}

std::string describe_op(const OpDef& op) {
  std::string doc = op.doc;  // a docstring may have several lines: indent them all
  for (size_t p = doc.find('\n'); p != std::string::npos; p = doc.find('\n', p + 3)) doc.replace(p, 1, "\n  ");
  std::string s = op_signature(op) + "\n  " + doc + "\n  family: " + op.family + "\n";
  if (!op.origin.empty()) s += "  defined by " + op.origin + "\n";
  if (!op.attrs.empty()) {
    s += "  attributes:\n";
    for (auto& a : op.attrs)
      s += "    " + a.name + ": " + (a.spatial_axes ? axes_attr_type(a.spatial_axes) : attr_type_name(a.type)) +
           (a.required ? " (required)" : " = " + attr_value_str(a.default_value)) +
           (a.doc.empty() ? "" : "  " + a.doc) + "\n";
  }
  s += "  algorithms:";
  for (auto& a : op.algorithms) {
    s += " " + a + " [";
    bool first = true;
    for (auto& [key, _] : op.kernels)
      if (key.second == a) {
        s += std::string(first ? "" : ", ") + device_name(key.first);
        first = false;
      }
    s += "]";
  }
  s += "\n";
  if (!op.builtin()) s += "  from: " + op.origin + "\n";
  for (auto& [key, file] : op.kernel_origin)
    s += "  algorithm " + key.second + " [" + device_name(key.first) + "] from: " + file + "\n";
  if (!op.differentiable) {
    s += "  not differentiable\n";
  } else {
    s += "  saves for backward:";
    if (op.saves.empty())
      s += op.body && op.output_names.empty() ? " known after its first call (its body is traced then)" : " nothing";
    for (auto& r : op.saves) {
      const auto& names = r.kind == SavedRef::input ? op.input_names : std::vector<std::string>{"output"};
      std::string n = r.kind == SavedRef::input ? names[std::min<size_t>(r.index, names.size() - 1)]
                      : static_cast<size_t>(r.index) < op.output_names.size()
                          ? op.output_names[r.index] +
                                (r.index >= op.num_outputs - op.hidden_outputs ? " (computed in the body)" : "")
                          : (op.num_outputs == 1 ? "output" : "output " + std::to_string(r.index));
      s += " " + n;
    }
    s += "\n";
    if (!op.backward_note.empty()) s += "  backward: " + op.backward_note + "\n";
  }
  return s;
}

}  // namespace opscope
