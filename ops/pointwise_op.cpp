#include "ops/pointwise_op.h"

#include <sstream>

#include "core/error.h"
#include "core/op.h"

namespace opscope {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

}  // namespace

pointwise::Params pointwise_params(const OpDef& op, const Attrs& attrs) {
  pointwise::Params p;
  if (op.pointwise.params.empty()) return p;  // most formulas have none: no allocation per call
  const std::vector<double> v = op.formula_params(attrs);
  if (v.size() > 0) p.p0 = v[0];
  if (v.size() > 1) p.p1 = v[1];
  return p;
}

std::vector<FusedInstruction> parse_fused_chain(const std::string& chain, size_t num_inputs) {
  std::vector<FusedInstruction> out;
  for (const std::string& text : split(chain, ';')) {
    std::stringstream ss(text);
    std::string head, arg;
    ss >> head;
    const std::vector<std::string> parts = split(head, '/');
    const std::string name = parts.empty() ? std::string() : parts[0];
    const OpDef* op = OpRegistry::instance().find(name);
    if (!op || !op->is_pointwise() || op->pointwise.formula < 0)
      throw Error("fused_elementwise: '" + name + "' cannot be fused",
                  "fusible: the ops with a pointwise formula (ops/pointwise.h)");
    FusedInstruction in;
    in.formula = static_cast<pointwise::Formula>(op->pointwise.formula);
    in.arity = op->pointwise.arity;
    if (parts.size() - 1 != op->pointwise.params.size())
      throw Error("fused_elementwise: " + name + " takes " + std::to_string(op->pointwise.params.size()) +
                  " parameters, got " + std::to_string(parts.size() - 1) + " in '" + head + "'");
    try {
      if (parts.size() > 1) in.params.p0 = std::stod(parts[1]);
      if (parts.size() > 2) in.params.p1 = std::stod(parts[2]);
    } catch (const std::exception&) {
      throw Error("fused_elementwise: bad parameter in '" + head + "'");
    }
    int n = 0;
    while (ss >> arg) {
      if (n == 2 || arg.size() < 2 || (arg[0] != 'i' && arg[0] != 'r'))
        throw Error("fused_elementwise: bad operand '" + arg + "' in '" + text + "'");
      int index = -1;
      try {
        index = std::stoi(arg.substr(1));
      } catch (const std::exception&) {}
      const size_t limit = arg[0] == 'i' ? num_inputs : out.size();
      if (index < 0 || static_cast<size_t>(index) >= limit)
        throw Error("fused_elementwise: operand " + arg + " does not exist");
      in.kind[n] = arg[0];
      in.index[n] = index;
      ++n;
    }
    if (n != in.arity) throw Error("fused_elementwise: " + name + " takes " + std::to_string(in.arity) + " operands");
    out.push_back(in);
  }
  if (out.empty()) throw Error("fused_elementwise: empty chain");
  return out;
}

}  // namespace opscope
