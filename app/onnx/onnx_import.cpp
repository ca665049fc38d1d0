#include "app/onnx/onnx_import.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <unordered_map>

#include "app/onnx/map_context.h"
#include "core/interrupt.h"

namespace opscope::interop {

std::pair<std::string, Shape> parse_shape_option(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string hint = "--shape NAME=DIMS, e.g. --shape x=1,3,224,224";
  if (eq == std::string::npos || eq == 0) throw Error("cannot read the shape '" + text + "'", hint);
  Shape s;
  std::stringstream ss(text.substr(eq + 1));
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      size_t used = 0;
      const long long v = std::stoll(part, &used);
      if (used != part.size() || v < 0) throw std::invalid_argument(part);
      s.push_back(v);
    } catch (const std::logic_error&) {
      throw Error("cannot read the size '" + part + "' in '" + text + "'", hint);
    }
  }
  return {text.substr(0, eq), s};
}

std::vector<std::string> mapped_op_types() {
  std::vector<std::string> names;
  for (auto& [n, _] : mapper_table()) names.push_back(n);
  return names;
}

namespace {

std::string dims_str(const std::vector<OnnxDim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += i ? ", " : "";
    s += dims[i].fixed() ? std::to_string(dims[i].value) : dims[i].param.empty() ? "?" : dims[i].param;
  }
  return s + "]";
}

// Every op type the table lacks, with the nodes that use it: one error for the whole model.
void check_op_types(const OnnxModel& m) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const OnnxNode& n : m.nodes)
    if (!mapper_table().count(n.qualified_type()))
      missing[n.qualified_type()].push_back(n.name.empty() ? "#" + std::to_string(n.index) : "'" + n.name + "'");
  if (missing.empty()) return;
  std::string list;
  for (auto& [type, nodes] : missing) {
    std::string names;
    for (size_t i = 0; i < nodes.size() && i < 3; ++i) names += (i ? ", " : "") + nodes[i];
    if (nodes.size() > 3) names += " and " + std::to_string(nodes.size() - 3) + " more";
    list += (list.empty() ? "" : "; ") + type + " (node" + (nodes.size() == 1 ? " " : "s ") + names + ")";
  }
  throw Unsupported(m.path + ": " + std::to_string(missing.size()) + " operator type" +
                        (missing.size() == 1 ? "" : "s") + " that opscope does not map: " + list,
                    "opscope import --ops lists the ONNX operators it maps");
}

// Names of the initializers that are BatchNormalization's running statistics (inputs 3 and 4)
// and nothing else: state, not weights (PyTorch's buffers).
std::set<std::string> running_statistics(const OnnxModel& m) {
  std::set<std::string> stats, other;
  for (const OnnxNode& n : m.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.op_type == "BatchNormalization" && (i == 3 || i == 4)) stats.insert(n.inputs[i]);
      else other.insert(n.inputs[i]);
    }
  for (auto& o : other) stats.erase(o);
  return stats;
}

// Identity nodes that give a floating-point initializer another name (PyTorch's deduplication
// of initializers with equal values), grouped by the initializer.
std::vector<ImportedModel::Tie> find_ties(const OnnxModel& m) {
  std::map<std::string, const OnnxInitializer*> floats;
  for (auto& init : m.initializers)
    if (is_floating(init.value.dtype())) floats[init.name] = &init;
  std::set<std::string> outputs;
  for (auto& o : m.outputs) outputs.insert(o.name);
  std::vector<ImportedModel::Tie> ties;
  for (const OnnxNode& n : m.nodes) {
    if (n.qualified_type() != "Identity" || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        !floats.count(n.inputs[0]) || outputs.count(n.outputs[0]) || n.outputs[0] == n.inputs[0])
      continue;
    auto it =
        std::find_if(ties.begin(), ties.end(), [&](const ImportedModel::Tie& t) { return t.shared == n.inputs[0]; });
    if (it == ties.end()) ties.push_back({n.inputs[0], {}}), it = ties.end() - 1;
    it->uses.push_back(n.outputs[0]);
  }
  return ties;
}

// untie: each use becomes an initializer of its own (a copy of the shared values) and its
// Identity node goes.
void untie_initializers(OnnxModel& m, const std::vector<ImportedModel::Tie>& ties) {
  std::set<std::string> uses;
  for (auto& t : ties) {
    const auto shared =
        std::find_if(m.initializers.begin(), m.initializers.end(), [&](auto& i) { return i.name == t.shared; });
    const OnnxInitializer source = *shared;  // (the vector grows below)
    for (auto& u : t.uses) {
      OnnxInitializer copy = source;
      copy.name = u;
      copy.value = source.value.clone(MemCategory::parameter);
      m.initializers.push_back(std::move(copy));
      uses.insert(u);
    }
  }
  std::erase_if(m.nodes, [&](const OnnxNode& n) {
    return n.qualified_type() == "Identity" && n.outputs.size() == 1 && uses.count(n.outputs[0]);
  });
}

// The module path of a PyTorch node name ("/layer/self_attn/MatMul" -> "layer/self_attn"): the
// scope its nodes carry, so the graph view can fold a module like a function.
std::string scope_of(const std::string& node_name) {
  if (node_name.size() < 2 || node_name[0] != '/') return {};
  const size_t last = node_name.rfind('/');
  return last == 0 ? std::string() : node_name.substr(1, last - 1);
}

struct Lowering {
  const ImportedModel& model;
  Workspace& ws;
  std::unordered_map<std::string, Slot> values;
  std::set<std::string> read;  // names some node or the graph output reads
  std::unique_ptr<Workspace> scratch;  // folds known nodes without touching ws's graph
  int folded = 0;

  Lowering(const ImportedModel& m, Workspace& w) : model(m), ws(w) {
    for (const OnnxNode& n : m.model().nodes) read.insert(n.inputs.begin(), n.inputs.end());
    for (auto& o : m.model().outputs) read.insert(o.name);
    for (auto& p : m.parameters()) values[p.name] = Slot{p.tensor, false};
    for (auto& b : m.buffers()) values[b.name] = Slot{b.tensor, false};
    for (auto& init : m.model().initializers)
      if (!values.count(init.name)) values[init.name] = Slot{init.value, true};  // integer constants
    for (auto& c : m.bound_inputs()) values[c.name] = Slot{c.tensor, true};
  }

  std::string prefix(const OnnxNode& n) const { return model.path() + ": node " + n.label() + ": "; }

  std::vector<Slot> run_node(const OnnxNode& n) {
    std::vector<Slot> ins;
    bool all_known = true;
    for (auto& name : n.inputs) {
      if (name.empty()) {
        ins.emplace_back();
        continue;
      }
      ins.push_back(values.at(name));
      all_known = all_known && ins.back().known;
    }
    std::vector<bool> used;
    for (auto& o : n.outputs) used.push_back(!o.empty() && read.count(o));
    const MapperFn& map = mapper_table().at(n.qualified_type());
    NodeCtx ctx(n, model.model().opset, std::move(ins), used, all_known);
    std::vector<Slot> outs;
    if (all_known) {
      if (!scratch) {
        scratch = std::make_unique<Workspace>();
        scratch->tracker().set_cap(ws.tracker().cap());
      }
      {
        WorkspaceScope in_scratch(*scratch);
        NoGradGuard no_grad;
        outs = map(ctx);
      }
      WorkspaceScope back(ws);
      for (auto& s : outs)
        if (s.defined()) s = Slot{s.t.clone(MemCategory::input), true};
      ++folded;
    } else {
      WorkspaceScope here(ws);
      const std::string scope = scope_of(n.name);
      if (!scope.empty()) ws.push_scope(scope, false);  // a name prefix: every node of it in one scope
      try {
        outs = map(ctx);
      } catch (...) {
        if (!scope.empty()) ws.pop_scope();
        throw;
      }
      if (!scope.empty()) ws.pop_scope();
      if (outs.size() > n.outputs.size()) outs.resize(n.outputs.size());  // a mapper may make more (LSTM's Y_c)
      name_outputs(n, ctx, outs);
    }
    if (outs.size() > n.outputs.size()) outs.resize(n.outputs.size());
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (used[i] && (i >= outs.size() || !outs[i].defined()))
        throw Error("output " + std::to_string(i + 1) + " ('" + n.outputs[i] + "') is not computed by opscope's " +
                    n.op_type);
    return outs;
  }

  // The node's name on what it computes, so the graph reads like the ONNX file: the outputs
  // carry the node's name (several outputs: their ONNX value names), intermediate results of a
  // node that took several ops "name.op".
  void name_outputs(const OnnxNode& n, const NodeCtx& ctx, const std::vector<Slot>& outs) {
    const std::string base = n.name.empty() ? n.outputs.empty() ? n.op_type : n.outputs[0] : n.name;
    std::set<TensorImpl*> finals;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!outs[i].defined()) continue;
      TensorImpl* impl = outs[i].t.impl();
      const bool made =
          std::any_of(ctx.made().begin(), ctx.made().end(), [&](const Tensor& t) { return t.impl() == impl; });
      if (!made || finals.count(impl)) continue;
      finals.insert(impl);
      Tensor t = outs[i].t;
      t.set_name(outs.size() == 1 || n.outputs[i].empty() ? base : n.outputs[i]);
    }
    for (const Tensor& t : ctx.made())
      if (!finals.count(t.impl()) && t.name().empty()) {
        Tensor named = t;
        const int v = t.impl()->value_id;
        const std::string op =
            v >= 0 && ws.graph().value(v).producer >= 0 ? ws.graph().node(ws.graph().value(v).producer).op->name : "";
        named.set_name(base + (op.empty() ? "" : "." + op));
      }
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    const auto& decl = model.inputs();
    for (size_t i = 0; i < decl.size(); ++i) values[decl[i].name] = Slot{inputs[i], false};
    for (const OnnxNode& n : model.model().nodes) {
      interrupt::check();  // a big model: the window draws (and Interrupt answers) while it traces
      std::vector<Slot> outs;
      try {
        outs = run_node(n);
      } catch (const Unsupported& e) {
        throw Unsupported(prefix(n) + e.what(), e.hint());
      } catch (const Error& e) {
        throw Error(prefix(n) + e.what(), e.hint());
      }
      for (size_t i = 0; i < n.outputs.size(); ++i)
        if (!n.outputs[i].empty() && i < outs.size() && outs[i].defined()) values[n.outputs[i]] = outs[i];
    }
    std::vector<Tensor> results;
    for (auto& o : model.model().outputs) results.push_back(values.at(o.name).t);
    return results;
  }
};

}  // namespace

std::shared_ptr<ImportedModel> ImportedModel::load(const std::string& path, const ImportOptions& options) {
  MemoryTracker& tr = current_workspace().tracker();
  return from_model(read_onnx_file(path, tr.cap() - tr.live_total()), options);
}

std::shared_ptr<ImportedModel> ImportedModel::from_model(OnnxModel model, const ImportOptions& options) {
  fold_pytorch_patterns(model);
  check_op_types(model);
  std::vector<Tie> ties = find_ties(model);
  if (options.untie) untie_initializers(model, ties);
  std::shared_ptr<ImportedModel> m(new ImportedModel(std::move(model)));
  m->ties_ = std::move(ties);
  m->untied_ = options.untie;
  const OnnxModel& om = m->model_;
  // Initializers: floating-point ones are parameters (or, for BatchNormalization's running
  // statistics, buffers); integer ones are constants the lowering folds.
  const std::set<std::string> stats = running_statistics(om);
  for (const OnnxInitializer& init : om.initializers) {
    if (!is_floating(init.value.dtype())) continue;
    Tensor t = init.value;
    t.set_name(init.name);
    if (stats.count(init.name)) {
      m->buffers_.push_back({init.name, t});
    } else {
      t.set_requires_grad(true);
      m->parameters_.push_back({init.name, t});
    }
  }
  // Input shapes: fixed sizes from the file, --shape sizes, default_dim for the symbolic rest.
  std::set<std::string> given;
  for (auto& [name, _] : options.shapes) given.insert(name);
  for (const auto& bound : options.constants) {
    const std::string& name = bound.first;
    auto it = std::find_if(om.inputs.begin(), om.inputs.end(), [&](const OnnxValueInfo& v) { return v.name == name; });
    if (it == om.inputs.end())
      throw Error(om.path + ": '" + name + "' is bound to a value but is not an input of the model");
    m->constants_.push_back({name, bound.second});
    given.erase(name);
  }
  for (const OnnxValueInfo& v : om.inputs) {
    if (options.constants.count(v.name)) continue;
    Input in{v.name, v.dtype, v.dims, {}};
    auto it = options.shapes.find(v.name);
    given.erase(v.name);
    if (it != options.shapes.end()) {
      if (v.has_shape && it->second.size() != v.dims.size())
        throw Error(om.path + ": input '" + v.name + "' has " + std::to_string(v.dims.size()) + " dimensions " +
                        dims_str(v.dims) + ", but --shape gives " + shape_str(it->second),
                    "give one size per dimension");
      for (size_t d = 0; v.has_shape && d < v.dims.size(); ++d)
        if (v.dims[d].fixed() && v.dims[d].value != it->second[d])
          throw Error(om.path + ": input '" + v.name + "' fixes dimension " + std::to_string(d) + " to " +
                          std::to_string(v.dims[d].value) + ", but --shape gives " + std::to_string(it->second[d]),
                      "only the symbolic dimensions " + dims_str(v.dims) + " can take other sizes");
      in.shape = it->second;
    } else if (!v.has_shape) {
      throw Error(om.path + ": input '" + v.name + "' has no shape in the file, so opscope cannot size it",
                  "give one: opscope import " + om.path + " --shape " + v.name +
                      "=1,3,224,224 (or load_onnx(path, shapes={...}))");
    } else {
      for (auto& d : v.dims) in.shape.push_back(d.fixed() ? d.value : options.default_dim);
    }
    m->inputs_.push_back(std::move(in));
  }
  if (!given.empty()) {
    std::string names;
    for (auto& i : om.inputs) names += (names.empty() ? "" : ", ") + i.name;
    throw Error(om.path + ": --shape names '" + *given.begin() + "', which is not an input of the model",
                "its inputs: " + (names.empty() ? std::string("none") : names));
  }
  // One trace in a scratch workspace: every shape error surfaces now, and the outputs' shapes.
  Workspace scratch;
  scratch.tracker().set_cap(current_workspace().tracker().cap());
  Traced t = m->trace(scratch);
  for (size_t i = 0; i < om.outputs.size(); ++i)
    m->outputs_.push_back({om.outputs[i].name, t.outputs[i].dtype(), t.outputs[i].shape()});
  return m;
}

std::string ImportedModel::ties_note() const {
  if (ties_.empty()) return "";
  std::string list;
  for (const Tie& t : ties_) {
    std::string uses;
    for (size_t i = 0; i < t.uses.size(); ++i)
      uses += (i ? (i + 1 == t.uses.size() ? " and '" : ", '") : "'") + t.uses[i] + "'";
    list += (list.empty() ? "" : "; ") + uses +
            (untied_ ? " copied from '" : (t.uses.size() == 1 ? " is '" : " are '")) + t.shared + "'";
  }
  if (untied_)
    return "untied: " + list +
           ", each a parameter of its own (PyTorch's exporter had merged them because their values were equal)";
  return "tied parameters: " + list +
         " in this file (one parameter, one gradient). PyTorch's exporter merges initializers whose "
         "values are equal at export, so these may have been separate parameters in PyTorch; load_onnx(path, "
         "untie=True) gives "
         "each its own, as the PyTorch module had";
}

std::string ImportedModel::name() const { return std::filesystem::path(model_.path).stem().string(); }

const Tensor& ImportedModel::param(const std::string& name) const {
  for (auto* list : {&parameters_, &buffers_})
    for (auto& p : *list)
      if (p.name == name) return p.tensor;
  std::vector<std::string> names;
  for (auto* list : {&parameters_, &buffers_})
    for (auto& p : *list) names.push_back(p.name);
  const std::string near = closest_name(name, names);
  throw Error(model_.path + " has no parameter named '" + name + "'",
              near.empty() ? "m.parameters() lists them" : "did you mean '" + near + "'?");
}

int64_t ImportedModel::parameter_count() const {
  int64_t n = 0;
  for (auto& p : parameters_) n += p.tensor.numel();
  return n;
}

std::vector<Tensor> ImportedModel::apply(Workspace& ws, const std::vector<Tensor>& inputs, int* folded) const {
  if (inputs.size() != inputs_.size()) {
    std::string names;
    for (auto& i : inputs_) names += (names.empty() ? "" : ", ") + i.name + " " + dims_str(i.dims);
    throw Error(name() + " takes " + std::to_string(inputs_.size()) + " input" + (inputs_.size() == 1 ? "" : "s") +
                " (" + names + "), got " + std::to_string(inputs.size()));
  }
  std::map<std::string, int64_t> symbols;  // one size per symbolic name across the inputs
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs_[i];
    const Tensor& t = inputs[i];
    if (!t.defined()) throw Error(name() + ": input '" + in.name + "' is None");
    if (t.dtype() != in.dtype)
      throw Error(name() + ": input '" + in.name + "' must be " + dtype_name(in.dtype) + ", got " +
                      dtype_name(t.dtype()),
                  std::string("convert it: x.") + (in.dtype == DType::i64   ? "long()"
                                                   : in.dtype == DType::f64 ? "double()"
                                                                            : "float()"));
    const bool declared = model_.inputs[i].has_shape;  // else any shape will do
    if (declared && t.dim() != static_cast<int64_t>(in.dims.size()))
      throw Error(name() + ": input '" + in.name + "' is " + dims_str(in.dims) + ", got a tensor of shape " +
                  shape_str(t.shape()));
    for (size_t d = 0; declared && d < in.dims.size(); ++d) {
      const OnnxDim& dim = in.dims[d];
      if (dim.fixed() && dim.value != t.shape()[d])
        throw Error(name() + ": input '" + in.name + "' is " + dims_str(in.dims) + ", got a tensor of shape " +
                        shape_str(t.shape()),
                    "dimension " + std::to_string(d) + " must be " + std::to_string(dim.value));
      if (!dim.fixed() && !dim.param.empty()) {
        auto [it, fresh] = symbols.emplace(dim.param, t.shape()[d]);
        if (!fresh && it->second != t.shape()[d])
          throw Error(name() + ": '" + dim.param + "' is " + std::to_string(it->second) + " in one input and " +
                          std::to_string(t.shape()[d]) + " in '" + in.name + "'",
                      "the inputs must agree on each named size");
      }
    }
  }
  Lowering lowering(*this, ws);
  auto outs = lowering.run(inputs);
  if (folded) *folded = lowering.folded;
  return outs;
}

ImportedModel::Traced ImportedModel::trace(Workspace& ws) const {
  WorkspaceScope scope(ws);
  StaticModeGuard static_mode(ws, true);
  Traced t;
  for (const Input& in : inputs_) t.placeholders.push_back(ws.placeholder(in.name, in.shape, in.dtype));
  t.outputs = apply(ws, t.placeholders, &t.folded);
  return t;
}

std::string ImportedModel::summary() const {
  std::ostringstream o;
  o << model_.path << ": ONNX IR " << model_.ir_version << ", opset " << model_.opset;
  if (!model_.producer.empty()) o << ", made by " << model_.producer;
  o << "\n";
  for (const Input& in : inputs_)
    o << "  input   " << in.name << "  " << dtype_name(in.dtype) << " " << dims_str(in.dims) << " -> "
      << shape_str(in.shape) << "\n";
  for (const Output& out : outputs_)
    o << "  output  " << out.name << "  " << dtype_name(out.dtype) << " " << shape_str(out.shape) << "\n";
  int64_t bytes = 0;
  for (auto& p : parameters_) bytes += p.tensor.nbytes();
  o << "  " << parameters_.size() << " parameters (" << parameter_count() << " values, " << bytes_str(bytes) << ")";
  if (!buffers_.empty()) o << ", " << buffers_.size() << " buffers (running statistics)";
  o << "\n";
  if (!ties_.empty()) o << "  " << ties_note() << "\n";
  std::map<std::string, int> types;
  for (const OnnxNode& n : model_.nodes) ++types[n.qualified_type()];
  o << "  " << model_.nodes.size() << " nodes:";
  for (auto& [t, k] : types) o << " " << t << "×" << k;
  o << "\n";
  return o.str();
}

}  // namespace opscope::interop
