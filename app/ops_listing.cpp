#include "app/ops_listing.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/describe.h"
#include "core/gradcheck.h"
#include "core/op.h"

namespace opscope::app {

namespace {
nlohmann::json attr_json(const AttrValue& v) {
  return std::visit([](auto&& x) { return nlohmann::json(x); }, v);
}
}  // namespace

std::string ops_json() {
  nlohmann::json all = nlohmann::json::array();
  for (const OpDef* op : OpRegistry::instance().all()) {
    nlohmann::json j;
    j["name"] = op->name;
    j["family"] = op->family;
    j["doc"] = op->doc;
    j["signature"] = op_signature(*op);
    j["inputs"] = op->input_names;
    j["num_outputs"] = op->num_outputs;
    nlohmann::json attrs = nlohmann::json::array();
    for (auto& a : op->attrs) {
      nlohmann::json ja{{"name", a.name},
                        {"type", a.spatial_axes ? axes_attr_type(a.spatial_axes) : attr_type_name(a.type)},
                        {"doc", a.doc},
                        {"required", a.required}};
      if (!a.required) ja["default"] = attr_json(a.default_value);
      if (a.min) ja["min"] = *a.min;
      if (a.max) ja["max"] = *a.max;
      if (!a.choices.empty()) ja["choices"] = a.choices;
      attrs.push_back(ja);
    }
    j["attrs"] = attrs;
    nlohmann::json algos = nlohmann::json::object();
    for (auto& algo : op->algorithms) {
      std::vector<std::string> devices;
      for (auto& [key, _] : op->kernels)
        if (key.second == algo) devices.push_back(device_name(key.first));
      algos[algo] = devices;
    }
    j["algorithms"] = algos;
    j["default_algorithm"] = op->default_algorithm();
    j["differentiable"] = op->differentiable;
    nlohmann::json saves = nlohmann::json::array();
    for (auto& s : op->saves)
      saves.push_back(s.kind == SavedRef::input ? op->input_names[std::min<size_t>(s.index, op->input_names.size() - 1)]
                                                : "output" + (op->num_outputs > 1 ? std::to_string(s.index) : ""));
    j["saves"] = saves;
    j["backward"] = op->backward_note;
    if (!op->checked_via.empty()) j["checked_via"] = op->checked_via;
    j["gradcheck_cases"] = op->gradcheck.size();
    if (!op->builtin()) j["origin"] = op->origin;
    if (!op->kernel_origin.empty()) {
      nlohmann::json added = nlohmann::json::array();
      for (auto& [key, file] : op->kernel_origin)
        added.push_back({{"algorithm", key.second}, {"device", device_name(key.first)}, {"origin", file}});
      j["added_kernels"] = added;
    }
    all.push_back(j);
  }
  return all.dump(2);
}

std::string ops_table() {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %-12s %-26s %s\n", "op", "family", "algorithms", "doc");
  out += line;
  for (const OpDef* op : OpRegistry::instance().all()) {
    std::string algos;
    for (auto& a : op->algorithms) algos += (algos.empty() ? "" : ",") + a;
    // Where an operator or algorithm was loaded from, after its doc.
    std::string from = op->builtin() ? "" : "  [" + op->origin + "]";
    for (auto& [key, file] : op->kernel_origin)
      from += "  [" + key.second + " " + device_name(key.first) + ": " + file + "]";
    std::snprintf(line, sizeof line, "%-24s %-12s %-26s %s%s\n", op->name.c_str(), op->family.c_str(), algos.c_str(),
                  op->doc.c_str(), from.c_str());
    out += line;
  }
  return out;
}

int run_gradcheck(const std::string& name, bool verbose, Device device) {
  std::vector<const OpDef*> ops;
  if (name.empty()) {
    for (const OpDef* op : OpRegistry::instance().all())
      if (op->differentiable) ops.push_back(op);
  } else {
    ops.push_back(&OpRegistry::instance().get(name));
  }
  int failures = 0, total = 0;
  if (device == Device::sim)
    std::printf("on the simulated GPU (sim): each op's CUDA kernels, run lane by lane on this CPU\n");
  std::printf("%-18s %-10s %-4s %-28s %12s %12s %6s\n", "op", "algorithm", "case", "note", "max abs err", "max rel err",
              "pass");
  for (const OpDef* op : ops) {
    if (!op->differentiable) {
      std::printf("%-18s not differentiable%s\n", op->name.c_str(),
                  op->checked_via.empty() ? "" : (" (checked through " + op->checked_via + ")").c_str());
      continue;
    }
    for (const GradcheckResult& r : gradcheck_op(*op, 1234, device)) {
      ++total;
      if (!r.passed) ++failures;
      std::printf("%-18s %-10s %-4zu %-28.28s %12.2e %12.2e %6s\n", r.op.c_str(), r.algo.c_str(), r.case_index,
                  r.note.c_str(), r.max_abs_error, r.max_rel_error, r.passed ? "yes" : "NO");
      if (!r.passed || verbose) {
        if (!r.message.empty()) std::printf("    %s\n", r.message.c_str());
      }
    }
  }
  std::printf("%d passed, %d failed\n", total - failures, failures);
  return failures;
}

}  // namespace opscope::app
