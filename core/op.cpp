#include "core/op.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/workspace.h"

namespace opscope {

std::string axes_attr_type(int axes) {
  return axes == 1 ? "int or (l,)" : axes == 2 ? "int or (h, w)" : "int or (d, h, w)";
}

// The same, in a sentence: "an int or a pair (h, w)".
std::string axes_attr_phrase(int axes) {
  return axes == 1   ? "an int or a 1-tuple (l,)"
         : axes == 2 ? "an int or a pair (h, w)"
                     : "an int or a triple (d, h, w)";
}

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::integer: return "int";
    case AttrType::real: return "float";
    case AttrType::boolean: return "bool";
    case AttrType::string: return "str";
    case AttrType::int_list: return "list[int]";
  }
  return "?";
}

std::string attr_value_str(const AttrValue& v) {
  struct V {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const {
      char b[32];
      std::snprintf(b, sizeof b, "%g", x);
      return b;
    }
    std::string operator()(bool x) const { return x ? "True" : "False"; }
    std::string operator()(const std::string& x) const { return "\"" + x + "\""; }
    std::string operator()(const std::vector<int64_t>& x) const { return shape_str(x); }
  };
  return std::visit(V{}, v);
}

const AttrValue& Attrs::get(std::string_view name) const {
  for (size_t i = 0; i < op_->attrs.size(); ++i)
    if (op_->attrs[i].name == name) return values_[i];
  throw Error("internal: op '" + op_->name + "' has no attribute '" + std::string(name) + "'");
}

std::string Attrs::str(bool all) const {
  std::string r;
  if (!op_) return r;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (!all && !op_->attrs[i].required && values_[i] == op_->attrs[i].default_value) continue;
    if (!r.empty()) r += ", ";
    const auto* axes = op_->attrs[i].spatial_axes ? std::get_if<std::vector<int64_t>>(&values_[i]) : nullptr;
    const bool uniform =
        axes && !axes->empty() && std::all_of(axes->begin(), axes->end(), [&](int64_t v) { return v == (*axes)[0]; });
    r += op_->attrs[i].name + "=" + (uniform ? std::to_string((*axes)[0]) : attr_value_str(values_[i]));
  }
  return r;
}

AttrMap Attrs::to_map() const {
  AttrMap m;
  if (!op_) return m;
  for (size_t i = 0; i < values_.size(); ++i) m.emplace_back(op_->attrs[i].name, values_[i]);
  return m;
}

// ---------------------------------------------------------------------------------------------

void InferCtx::fail(const std::string& message, const std::string& hint) const {
  throw Error(op.name + ": " + message, hint);
}

void InferCtx::expect_float(size_t i) const {
  if (!is_floating(inputs[i].dtype))
    fail(std::string("expected a floating-point tensor for '") +
             op.input_names[std::min(i, op.input_names.size() - 1)] + "', got " + dtype_name(inputs[i].dtype),
         "convert it first, e.g. x.float() or cast(x, dtype=\"float32\")");
}

void InferCtx::expect_rank(size_t i, int64_t lo, int64_t hi) const {
  int64_t r = static_cast<int64_t>(inputs[i].shape.size());
  if (r < lo || r > hi) {
    std::string want =
        lo == hi ? std::to_string(lo)
                 : (hi >= 64 ? "at least " + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi));
    fail("expected a tensor of rank " + want + " for '" + op.input_names[std::min(i, op.input_names.size() - 1)] +
         "', got shape " + shape_str(inputs[i].shape));
  }
}

void InferCtx::expect_dtype(size_t i, DType d) const {
  if (inputs[i].dtype != d)
    fail(std::string("expected ") + dtype_name(d) + " for '" + op.input_names[std::min(i, op.input_names.size() - 1)] +
         "', got " + dtype_name(inputs[i].dtype));
}

Tensor KernelCtx::workspace(const Shape& shape, DType dtype) const {
  // On the device the kernel runs on (where its outputs live).
  const Device d = !out_meta.empty() ? out_meta[0].device : !inputs.empty() ? inputs[0].device() : Device::cpu;
  return Tensor::empty(shape, dtype, MemCategory::workspace, d);
}

// ---------------------------------------------------------------------------------------------

Shape Val::shape() const { return ctx->meta(id).shape; }
DType Val::dtype() const { return ctx->meta(id).dtype; }

std::vector<Val> GradCtx::call_multi(std::string_view op, const std::vector<Val>& inputs, const AttrMap& attrs) {
  return call_op(OpRegistry::instance().get(op), inputs, attrs);
}

Val operator+(const Val& a, const Val& b) { return a.ctx->call("add", {a, b}); }
Val operator-(const Val& a, const Val& b) { return a.ctx->call("sub", {a, b}); }
Val operator*(const Val& a, const Val& b) { return a.ctx->call("mul", {a, b}); }
Val operator/(const Val& a, const Val& b) { return a.ctx->call("div", {a, b}); }
Val operator-(const Val& a) { return a.ctx->call("neg", {a}); }
Val operator*(const Val& a, double s) { return a.ctx->call("mul", {a, a.ctx->scalar_like(s, a)}); }
Val operator*(double s, const Val& a) { return a * s; }

// ---------------------------------------------------------------------------------------------

OpDef OpDef::declare(std::string name, std::string family, std::string doc, std::vector<std::string> inputs) {
  OpDef d;
  d.name = std::move(name);
  d.family = std::move(family);
  d.doc = std::move(doc);
  d.input_names = std::move(inputs);
  d.min_inputs = 0;
  d.max_inputs = static_cast<int>(d.input_names.size());
  for (auto& in : d.input_names) {
    if (in.ends_with("...")) d.max_inputs = -1;
    if (!in.ends_with("?")) ++d.min_inputs;
  }
  return d;
}

OpDef& OpDef::kernel(Device d, const std::string& algo, KernelFn fn) {
  if (std::find(algorithms.begin(), algorithms.end(), algo) == algorithms.end()) algorithms.push_back(algo);
  kernels[{d, algo}] = std::move(fn);
  return *this;
}

void OpDef::remove_kernel(Device d, std::string_view algo) {
  for (auto it = kernels.begin(); it != kernels.end(); ++it)
    if (it->first.first == d && it->first.second == algo) {
      kernels.erase(it);
      break;
    }
  if (device_default[static_cast<int>(d)] == algo) device_default[static_cast<int>(d)].clear();
  kernel_origin.erase({d, std::string(algo)});
  for (auto& [key, _] : kernels)
    if (key.second == algo) return;  // another device still has it
  std::erase(algorithms, algo);
}

const std::string* OpDef::added_by(Device d, std::string_view algo) const {
  for (auto& [key, file] : kernel_origin)
    if (key.first == d && key.second == algo) return &file;
  return nullptr;
}

const KernelFn* OpDef::find_kernel(Device d, std::string_view algo) const {
  for (auto& [key, fn] : kernels)  // a handful of entries: a scan beats building a key
    if (key.first == d && key.second == algo) return &fn;
  return nullptr;
}

std::vector<double> OpDef::formula_params(const Attrs& a) const {
  std::vector<double> out;
  for (const std::string& name : pointwise.params) {
    const AttrSpec* spec = find_attr(name);
    if (!spec) throw Error("internal: pointwise op '" + this->name + "' has no attribute '" + name + "'");
    const AttrValue& v = a.get(name);
    if (auto p = std::get_if<double>(&v)) out.push_back(*p);
    else if (auto p = std::get_if<int64_t>(&v)) out.push_back(static_cast<double>(*p));
    else if (auto p = std::get_if<bool>(&v)) out.push_back(*p ? 1.0 : 0.0);
    else if (auto p = std::get_if<std::string>(&v)) {
      auto it = std::find(spec->choices.begin(), spec->choices.end(), *p);
      if (it == spec->choices.end())
        throw Error("internal: '" + *p + "' is not a choice of " + this->name + "." + name);
      out.push_back(static_cast<double>(it - spec->choices.begin()));
    } else {
      throw Error("internal: a list attribute cannot be a parameter of " + this->name + "'s formula");
    }
  }
  return out;
}

const AttrSpec* OpDef::find_attr(std::string_view n) const {
  for (auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {
AttrValue convert_attr(const OpDef& op, const AttrSpec& spec, const AttrValue& v) {
  auto bad = [&](const char* got) -> Error {
    return Error(op.name + ": attribute '" + spec.name + "' must be " + attr_type_name(spec.type) + ", got " + got,
                 spec.doc.empty() ? std::string() : spec.name + ": " + spec.doc);
  };
  const char* got = std::visit(
      [](auto&& x) -> const char* {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, int64_t>) return "int";
        else if constexpr (std::is_same_v<X, double>) return "float";
        else if constexpr (std::is_same_v<X, bool>) return "bool";
        else if constexpr (std::is_same_v<X, std::string>) return "str";
        else return "list";
      },
      v);
  switch (spec.type) {
    case AttrType::integer:
      if (auto p = std::get_if<int64_t>(&v)) return *p;
      if (auto p = std::get_if<bool>(&v)) return int64_t(*p);
      if (auto p = std::get_if<double>(&v); p && std::floor(*p) == *p) return static_cast<int64_t>(*p);
      throw bad(got);
    case AttrType::real:
      if (auto p = std::get_if<double>(&v)) return *p;
      if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
      throw bad(got);
    case AttrType::boolean:
      if (auto p = std::get_if<bool>(&v)) return *p;
      if (auto p = std::get_if<int64_t>(&v); p && (*p == 0 || *p == 1)) return *p == 1;
      throw bad(got);
    case AttrType::string:
      if (auto p = std::get_if<std::string>(&v)) return *p;
      throw bad(got);
    case AttrType::int_list:
      if (const size_t n = static_cast<size_t>(spec.spatial_axes)) {  // n, [n] or one per axis: stored as n sizes
        if (auto p = std::get_if<int64_t>(&v)) return std::vector<int64_t>(n, *p);
        if (auto p = std::get_if<std::vector<int64_t>>(&v); p && (p->size() == 1 || p->size() == n))
          return p->size() == 1 ? std::vector<int64_t>(n, (*p)[0]) : *p;
        throw Error(op.name + ": attribute '" + spec.name + "' must be " + axes_attr_phrase(spec.spatial_axes) +
                        ", got " +
                        (std::holds_alternative<std::vector<int64_t>>(v) ? attr_value_str(v) : std::string(got)),
                    n == 1 ? spec.name + "=2 means 2 along L"
                    : n == 2
                        ? spec.name + "=2 means 2 along both H and W; " + spec.name + "=(2, 1) gives H and W their own"
                        : spec.name + "=2 means 2 along D, H and W; " + spec.name + "=(1, 2, 2) gives each its own");
      }
      if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
      if (auto p = std::get_if<int64_t>(&v)) return std::vector<int64_t>{*p};
      throw bad(got);
  }
  throw bad(got);
}

void validate_attr(const OpDef& op, const AttrSpec& spec, const AttrValue& v) {
  auto range = [&](double x) {
    if ((spec.min && x < *spec.min) || (spec.max && x > *spec.max)) {
      std::string r = spec.min && spec.max
                          ? "between " + attr_value_str(*spec.min) + " and " + attr_value_str(*spec.max)
                      : spec.min ? ">= " + attr_value_str(*spec.min)
                                 : "<= " + attr_value_str(*spec.max);
      throw Error(op.name + ": attribute '" + spec.name + "' must be " + r + ", got " + attr_value_str(v),
                  spec.doc.empty() ? std::string() : spec.name + ": " + spec.doc);
    }
  };
  if (auto p = std::get_if<int64_t>(&v)) range(static_cast<double>(*p));
  if (auto p = std::get_if<double>(&v)) range(*p);
  if (auto p = std::get_if<std::vector<int64_t>>(&v))
    for (auto x : *p) range(static_cast<double>(x));
  if (auto p = std::get_if<std::string>(&v);
      p && !spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), *p) == spec.choices.end()) {
    std::string all;
    for (auto& c : spec.choices) all += (all.empty() ? "\"" : ", \"") + c + "\"";
    throw Error(op.name + ": attribute '" + spec.name + "' must be one of " + all + ", got \"" + *p + "\"");
  }
}
}  // namespace

Attrs OpDef::resolve(const AttrMap& given) const {
  std::vector<AttrValue> values;
  values.reserve(attrs.size());
  for (auto& spec : attrs) values.push_back(spec.default_value);
  std::vector<bool> seen(attrs.size(), false);
  for (auto& [name, v] : given) {
    size_t i = 0;
    while (i < attrs.size() && attrs[i].name != name) ++i;
    if (i == attrs.size()) {
      std::string valid;
      std::vector<std::string> names;
      for (auto& a : attrs) {
        valid += (valid.empty() ? "" : ", ") + a.name;
        names.push_back(a.name);
      }
      std::string near = closest_name(name, names);
      throw Error(this->name + ": unknown attribute '" + name + "'",
                  (near.empty() ? "" : "did you mean '" + near + "'? ") +
                      (valid.empty() ? this->name + " takes no attributes" : "valid attributes: " + valid));
    }
    values[i] = convert_attr(*this, attrs[i], v);
    seen[i] = true;
  }
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (attrs[i].required && !seen[i]) throw Error(name + ": missing attribute '" + attrs[i].name + "'", attrs[i].doc);
    if (seen[i] || attrs[i].required) validate_attr(*this, attrs[i], values[i]);
  }
  return Attrs(this, std::move(values));
}

// ---------------------------------------------------------------------------------------------

OpRegistry& OpRegistry::instance() {
  static OpRegistry r;
  return r;
}

OpDef& OpRegistry::add(OpDef def) {
  if (capture_) {  // a library being loaded: the loader checks and commits it afterwards
    if (checked_blocks_ == 0) capture_->unchecked = true;
    capture_->ops.push_back(std::make_unique<OpDef>(std::move(def)));
    return *capture_->ops.back();
  }
  if (ops_.count(def.name)) throw Error("internal: operator '" + def.name + "' registered twice");
  if (!def.infer) throw Error("internal: operator '" + def.name + "' has no shape inference");
  // The default algorithm is said, never the accident of which kernel came first.
  if (def.default_algo.empty() && def.algorithms.size() > 1) {
    std::string all;
    for (auto& a : def.algorithms) all += (all.empty() ? "" : ", ") + a;
    throw Error("internal: operator '" + def.name + "' has algorithms " + all + " but no default_algo");
  }
  if (def.default_algo.empty() && def.algorithms.size() == 1)
    def.default_algo = def.algorithms[0];  // kept when devices add theirs
  if (!def.default_algo.empty() &&
      std::find(def.algorithms.begin(), def.algorithms.end(), def.default_algo) == def.algorithms.end())
    throw Error("internal: operator '" + def.name + "' defaults to algorithm '" + def.default_algo +
                "', which it lacks");
  auto p = std::make_unique<OpDef>(std::move(def));
  auto& ref = *p;
  ops_.emplace(ref.name, std::move(p));
  index_[ref.name] = &ref;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->op == ref.name) {
      ref.kernel(it->device, it->algo, std::move(it->fn));
      if (it->device_default) ref.device_default[static_cast<int>(it->device)] = it->algo;
      if (!it->origin.empty()) ref.kernel_origin[{it->device, it->algo}] = it->origin;
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return ref;
}

OpDef& OpRegistry::replace(OpDef def) {
  remove(def.name);
  return add(std::move(def));
}

void OpRegistry::remove(std::string_view name) {
  auto it = ops_.find(name);
  if (it == ops_.end()) return;
  index_.erase(it->second->name);
  retired_.push_back(std::move(it->second));
  ops_.erase(it);
}

void OpRegistry::reinstate(const OpDef* def) {
  auto it = std::find_if(retired_.begin(), retired_.end(), [&](const auto& p) { return p.get() == def; });
  if (it == retired_.end()) throw Error("internal: reinstate of an operator that was never replaced or removed");
  std::unique_ptr<OpDef> p = std::move(*it);
  retired_.erase(it);
  remove(p->name);
  index_[p->name] = p.get();
  ops_.emplace(p->name, std::move(p));
}

void OpRegistry::add_kernel(const std::string& op, Device d, const std::string& algo, KernelFn fn,
                            bool device_default) {
  add_kernel(KernelAddition{op, d, algo, std::move(fn), device_default, {}});
}

void OpRegistry::add_kernel(KernelAddition k) {
  if (capture_) {
    if (checked_blocks_ == 0) capture_->unchecked = true;
    capture_->kernels.push_back(std::move(k));
    return;
  }
  auto it = ops_.find(k.op);
  if (it == ops_.end()) {
    pending_.push_back(std::move(k));
    return;
  }
  OpDef& op = *it->second;
  op.kernel(k.device, k.algo, std::move(k.fn));
  if (k.device_default) op.device_default[static_cast<int>(k.device)] = k.algo;
  if (!k.origin.empty()) op.kernel_origin[{k.device, k.algo}] = k.origin;
}

void OpRegistry::remove_kernel(std::string_view op, Device d, std::string_view algo) {
  if (auto it = ops_.find(op); it != ops_.end()) it->second->remove_kernel(d, algo);
}

void OpRegistry::begin_capture(std::string abi) {
  if (capture_) throw Error("internal: an extension is already being loaded");
  capture_ = std::make_unique<RegistryCapture>();
  capture_->abi = std::move(abi);
}

RegistryCapture OpRegistry::end_capture() {
  if (!capture_) throw Error("internal: no extension is being loaded");
  RegistryCapture c = std::move(*capture_);
  capture_.reset();
  return c;
}

void OpRegistry::register_extension(const char* abi, void (*fn)(OpRegistry&)) {
  if (!capture_) {  // linked into a program instead of loaded: nothing checks it, so refuse
    std::fprintf(stderr, "opscope: an extension's OPSCOPE_REGISTER_OPS block ran outside load_extension; ignored\n");
    return;
  }
  if (capture_->abi != abi) {
    capture_->errors.push_back(std::string("it was built against other opscope headers or flags (ABI ") + abi +
                               ", this opscope is " + capture_->abi + ")");
    return;
  }
  ++checked_blocks_;
  try {
    fn(*this);
  } catch (const std::exception& e) {
    capture_->errors.push_back(std::string("its OPSCOPE_REGISTER_OPS block threw: ") + e.what());
  } catch (...) {
    capture_->errors.push_back("its OPSCOPE_REGISTER_OPS block threw something that is not a std::exception");
  }
  --checked_blocks_;
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const OpDef& OpRegistry::get(std::string_view name) const {
  if (auto p = find(name)) return *p;
  std::vector<std::string> names;
  for (auto& [n, _] : ops_) names.push_back(n);
  std::string near = closest_name(name, names);
  throw Error("unknown operator '" + std::string(name) + "'",
              near.empty() ? "list the operators with :ops" : "did you mean '" + near + "'?");
}

std::vector<const OpDef*> OpRegistry::all() const {
  // The first listing comes after start-up, when every file has declared its operators: a
  // kernel still waiting for its operator then was registered under a name no file declares (a
  // misspelt op in an OPSCOPE_CUDA_REGISTER block), and would wait silently forever. Said once,
  // on stderr, which the test cli_no_unattached_kernels reads.
  static std::atomic<bool> reported{false};
  if (!pending_.empty() && !reported.exchange(true)) {
    std::vector<std::string> names;
    for (auto& [n, _] : ops_) names.push_back(n);
    for (const KernelAddition& k : pending_) {
      const std::string near = closest_name(k.op, names);
      std::fprintf(stderr,
                   "opscope: internal: a %s kernel '%s' was registered for operator '%s', which no file declares%s: "
                   "fix the name where it is registered (ops/cuda/*.cu, ops/*.cpp)\n",
                   device_name(k.device), k.algo.c_str(), k.op.c_str(),
                   near.empty() ? "" : (" (did you mean '" + near + "'?)").c_str());
    }
  }
  std::vector<const OpDef*> r;
  for (auto& [_, p] : ops_) r.push_back(p.get());
  return r;
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance: Levenshtein plus adjacent transpositions ("rleu").
  auto dist = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(1, name.size() / 3) + 1;
  for (auto& c : candidates) {
    size_t d = dist(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace opscope
