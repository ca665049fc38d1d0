#include "app/onnx/onnx_fold.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace opscope::interop {

namespace {

// Who makes and who reads each value, and the constants (Constant nodes and initializers).
class ModelIndex {
 public:
  explicit ModelIndex(const OnnxModel& m) : m_(m) {
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      for (auto& o : m.nodes[i].outputs) producer_[o] = i;
      for (auto& in : m.nodes[i].inputs) readers_[in].push_back(i);
    }
    for (auto& o : m.outputs) graph_outputs_.insert(o.name);
    for (auto& init : m.initializers) initializers_[init.name] = &init.value;
  }
  // The node of type `type` (default domain) that makes `value`, or nullptr.
  const OnnxNode* made_by(const std::string& value, const char* type) const {
    auto it = producer_.find(value);
    if (it == producer_.end()) return nullptr;
    const OnnxNode& n = m_.nodes[it->second];
    return n.op_type == type && (n.domain.empty() || n.domain == "ai.onnx") ? &n : nullptr;
  }
  // The one node that reads `value` when it is of `type` and nothing else reads it (nor is it an
  // output of the graph), else nullptr.
  const OnnxNode* only_reader(const std::string& value, const char* type) const {
    auto it = readers_.find(value);
    if (it == readers_.end() || it->second.size() != 1 || graph_outputs_.count(value)) return nullptr;
    const OnnxNode& n = m_.nodes[it->second[0]];
    return n.op_type == type && (n.domain.empty() || n.domain == "ai.onnx") ? &n : nullptr;
  }
  const Tensor* constant(const std::string& value) const {
    if (auto it = initializers_.find(value); it != initializers_.end()) return it->second;
    const OnnxNode* c = made_by(value, "Constant");
    const OnnxAttribute* a = c ? c->attribute("value") : nullptr;
    return a && a->kind == OnnxAttribute::Kind::t ? &a->t : nullptr;
  }
  // A constant's values, or nothing.
  std::optional<std::vector<double>> values(const std::string& value) const {
    const Tensor* t = constant(value);
    if (!t) return std::nullopt;
    std::vector<double> v;
    for (int64_t i = 0; i < t->numel(); ++i) v.push_back(t->get(i));
    return v;
  }

 private:
  const OnnxModel& m_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::set<std::string> graph_outputs_;
  std::map<std::string, const Tensor*> initializers_;
};

bool all_equal(const std::vector<double>& v, double x) {
  return std::all_of(v.begin(), v.end(), [x](double e) { return e == x; });
}

// Unsqueeze(p, axes 1..k) of a per-channel tensor into [C, 1, ...]: p's name, or "".
std::string per_channel_source(const ModelIndex& ix, const OnnxNode& u) {
  if (u.op_type != "Unsqueeze" || u.inputs.empty()) return "";
  std::vector<double> axes;
  if (const OnnxAttribute* a = u.attribute("axes")) axes.assign(a->ints.begin(), a->ints.end());
  else if (u.inputs.size() > 1) axes = ix.values(u.inputs[1]).value_or(std::vector<double>{});
  if (axes.empty()) return "";
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != static_cast<double>(i + 1)) return "";
  return u.inputs[0];
}

// A Mul or Add node of the pattern: the other input is Unsqueeze(p) of a per-channel p, read by
// this node alone. Returns p and the Unsqueeze node.
std::pair<std::string, const OnnxNode*> affine_operand(const ModelIndex& ix, const OnnxNode& n,
                                                       const std::string& main) {
  if (n.inputs.size() != 2) return {"", nullptr};
  const std::string& other = n.inputs[0] == main ? n.inputs[1] : n.inputs[0];
  const OnnxNode* u = ix.made_by(other, "Unsqueeze");
  if (!u || !ix.only_reader(other, n.op_type.c_str())) return {"", nullptr};
  const std::string p = per_channel_source(ix, *u);
  return {p, p.empty() ? nullptr : u};
}

struct GroupNormMatch {
  std::vector<const OnnxNode*> nodes;  // replaced by one node
  OnnxNode folded;
};

// PyTorch's GroupNorm (opset < 18): Reshape(x, [N, G, -1]) → InstanceNormalization(scale 1, bias
// 0) → Reshape(·, Shape(x)) [→ Mul(Unsqueeze(weight)) → Add(Unsqueeze(bias))].
std::optional<GroupNormMatch> match_group_norm(const ModelIndex& ix, const OnnxNode& in_norm) {
  if (in_norm.inputs.size() != 3 || in_norm.outputs.size() != 1) return std::nullopt;
  const OnnxNode* r1 = ix.made_by(in_norm.inputs[0], "Reshape");
  if (!r1 || r1->inputs.size() < 2 || !ix.only_reader(in_norm.inputs[0], "InstanceNormalization")) return std::nullopt;
  const auto shape = ix.values(r1->inputs[1]), scale = ix.values(in_norm.inputs[1]),
             bias = ix.values(in_norm.inputs[2]);
  if (!shape || shape->size() != 3 || (*shape)[1] < 1 || (*shape)[2] != -1) return std::nullopt;
  const double groups = (*shape)[1];
  if (!scale || !bias || scale->size() != static_cast<size_t>(groups) || !all_equal(*scale, 1) || !all_equal(*bias, 0))
    return std::nullopt;
  const std::string& x = r1->inputs[0];
  const OnnxNode* r2 = ix.only_reader(in_norm.outputs[0], "Reshape");
  if (!r2 || r2->inputs.size() < 2) return std::nullopt;
  const OnnxNode* s = ix.made_by(r2->inputs[1], "Shape");
  if (!s || s->inputs.empty() || s->inputs[0] != x || !s->attributes.empty()) return std::nullopt;
  GroupNormMatch m;
  m.nodes = {r1, &in_norm, r2};
  std::string out = r2->outputs[0], weight, bias_name;
  if (const OnnxNode* mul = ix.only_reader(out, "Mul")) {
    if (auto [w, u] = affine_operand(ix, *mul, out); u) {
      weight = w;
      m.nodes.insert(m.nodes.end(), {u, mul});
      out = mul->outputs[0];
      if (const OnnxNode* add = ix.only_reader(out, "Add")) {
        if (auto [b, ub] = affine_operand(ix, *add, out); ub) {
          bias_name = b;
          m.nodes.insert(m.nodes.end(), {ub, add});
          out = add->outputs[0];
        }
      }
    }
  }
  OnnxNode& f = m.folded;
  const OnnxNode& last = *m.nodes.back();
  f.index = last.index;
  const size_t slash = in_norm.name.rfind('/');
  f.name = (slash == std::string::npos ? std::string() : in_norm.name.substr(0, slash + 1)) + "GroupNorm";
  f.op_type = "GroupNorm";
  f.domain = kOpscopeDomain;
  f.inputs = {x};
  if (!weight.empty()) f.inputs.push_back(weight);
  if (!bias_name.empty()) f.inputs.push_back(bias_name);
  f.outputs = {out};
  OnnxAttribute g;
  g.name = "num_groups";
  g.kind = OnnxAttribute::Kind::i;
  g.i = static_cast<int64_t>(groups);
  OnnxAttribute eps;
  eps.name = "epsilon";
  eps.kind = OnnxAttribute::Kind::f;
  const OnnxAttribute* e = in_norm.attribute("epsilon");
  eps.f = e && e->kind == OnnxAttribute::Kind::f ? e->f : 1e-5;
  f.attributes = {g, eps};
  return m;
}

}  // namespace

int fold_pytorch_patterns(OnnxModel& model) {
  std::vector<GroupNormMatch> matches;
  {
    const ModelIndex ix(model);
    for (const OnnxNode& n : model.nodes)
      if (n.op_type == "InstanceNormalization" && (n.domain.empty() || n.domain == "ai.onnx"))
        if (auto m = match_group_norm(ix, n)) matches.push_back(std::move(*m));
  }
  if (matches.empty()) return 0;
  // The folded node takes the place of the chain's last node (after everything it reads).
  std::set<int> removed;
  std::map<int, OnnxNode> replacement;
  for (auto& m : matches) {
    for (const OnnxNode* n : m.nodes) removed.insert(n->index);
    replacement[m.nodes.back()->index] = m.folded;
  }
  std::vector<OnnxNode> nodes;
  for (OnnxNode& n : model.nodes) {
    if (auto it = replacement.find(n.index); it != replacement.end()) nodes.push_back(it->second);
    else if (!removed.count(n.index)) nodes.push_back(std::move(n));
  }
  model.nodes = std::move(nodes);
  return static_cast<int>(matches.size());
}

}  // namespace opscope::interop
