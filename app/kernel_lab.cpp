#include "app/kernel_lab.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/device.h"
#include "core/error.h"
#include "core/workspace.h"

namespace opscope::app {

namespace {

Tensor random_tensor(const Shape& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0, 1);
  Tensor t = Tensor::empty(s, DType::f32, MemCategory::input);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = nd(rng);
  return t;
}

// How to feed one op: its inputs and attributes from the user's sizes.
struct LabSpec {
  std::string op;
  std::string sizes_help;  // "N" or "N C H W K R"
  std::vector<int64_t> defaults;
  std::function<std::pair<std::vector<Tensor>, AttrMap>(const std::vector<int64_t>&)> make;
  std::string (*describe)(const std::vector<int64_t>&);
};

std::string dims(const std::vector<int64_t>& s) {
  std::string r;
  for (auto v : s) r += (r.empty() ? "" : "×") + std::to_string(v);
  return r;
}

const std::map<std::string, LabSpec>& specs() {
  static const std::map<std::string, LabSpec> table = {
      {"matmul",
       {"matmul", "N [M K]: A is N×K, B is K×M", {512},
        [](const std::vector<int64_t>& s) {
          int64_t n = s[0], m = s.size() > 1 ? s[1] : n, k = s.size() > 2 ? s[2] : n;
          return std::make_pair(std::vector<Tensor>{random_tensor({n, k}, 1), random_tensor({k, m}, 2)}, AttrMap{});
        },
        [](const std::vector<int64_t>& s) { return "A " + dims({s[0], s.size() > 2 ? s[2] : s[0]}) + " @ B"; }}},
      {"conv2d",
       {"conv2d", "N C H W K R: x N×C×H×W, weight K×C×R×R, padding R/2", {8, 64, 56, 56, 64, 3},
        [](const std::vector<int64_t>& s) {
          return std::make_pair(std::vector<Tensor>{random_tensor({s[0], s[1], s[2], s[3]}, 1),
                                                    random_tensor({s[4], s[1], s[5], s[5]}, 2)},
                                AttrMap{{"padding", s[5] / 2}});
        },
        [](const std::vector<int64_t>& s) {
          return "x " + dims({s[0], s[1], s[2], s[3]}) + ", w " + dims({s[4], s[1], s[5], s[5]}) + ", padding " +
                 std::to_string(s[5] / 2);
        }}},
      {"softmax",
       {"softmax", "ROWS COLS", {4096, 4096},
        [](const std::vector<int64_t>& s) {
          return std::make_pair(std::vector<Tensor>{random_tensor({s[0], s.size() > 1 ? s[1] : s[0]}, 1)}, AttrMap{});
        },
        [](const std::vector<int64_t>& s) { return "x " + dims({s[0], s.size() > 1 ? s[1] : s[0]}); }}},
      {"layer_norm",
       {"layer_norm", "ROWS COLS", {4096, 4096},
        [](const std::vector<int64_t>& s) {
          const int64_t cols = s.size() > 1 ? s[1] : s[0];
          return std::make_pair(std::vector<Tensor>{random_tensor({s[0], cols}, 1)}, AttrMap{{"normalized_shape", cols}});
        },
        [](const std::vector<int64_t>& s) { return "x " + dims({s[0], s.size() > 1 ? s[1] : s[0]}); }}},
      {"scaled_dot_product_attention",
       {"scaled_dot_product_attention", "T [D]: q, k, v are T×D", {1024, 64},
        [](const std::vector<int64_t>& s) {
          int64_t t = s[0], d = s.size() > 1 ? s[1] : 64;
          return std::make_pair(
              std::vector<Tensor>{random_tensor({t, d}, 1), random_tensor({t, d}, 2), random_tensor({t, d}, 3)},
              AttrMap{});
        },
        [](const std::vector<int64_t>& s) { return "q, k, v " + dims({s[0], s.size() > 1 ? s[1] : 64}); }}},
      // A plain copy (cast to its own dtype): the bandwidth ceiling the bandwidth-bound ops are measured against.
      {"copy",
       {"cast", "ROWS COLS", {4096, 4096},
        [](const std::vector<int64_t>& s) {
          return std::make_pair(std::vector<Tensor>{random_tensor({s[0], s.size() > 1 ? s[1] : s[0]}, 1)},
                                AttrMap{{"dtype", std::string("float32")}});
        },
        [](const std::vector<int64_t>& s) { return "copy of x " + dims({s[0], s.size() > 1 ? s[1] : s[0]}); }}},
  };
  return table;
}

const LabSpec& spec_for(const std::string& op) {
  std::string name = op == "attention" ? "scaled_dot_product_attention" : op;
  auto it = specs().find(name);
  if (it == specs().end() && name == "cast") it = specs().find("copy");
  if (it == specs().end()) {
    std::string all;
    for (auto& [n, _] : specs()) all += (all.empty() ? "" : ", ") + n;
    throw Error("the kernel lab cannot feed '" + op + "' yet", "it knows: " + all);
  }
  if (!OpRegistry::instance().find(it->second.op)) throw Error("operator '" + name + "' is not built yet");
  return it->second;
}

}  // namespace

std::vector<std::string> lab_ops() {
  std::vector<std::string> r;
  for (auto& [n, s] : specs())
    if (OpRegistry::instance().find(s.op)) r.push_back(n);
  return r;
}

std::string lab_usage(const std::string& op) {
  const LabSpec& s = spec_for(op);
  std::string d;
  for (auto v : s.defaults) d += (d.empty() ? "" : " ") + std::to_string(v);
  return s.op + " sizes: " + s.sizes_help + " (default " + d + ")";
}

LabResult run_lab(const std::string& op_name, const std::vector<int64_t>& given, int repeats, Device device) {
  const LabSpec& spec = spec_for(op_name);
  std::vector<int64_t> sizes = given.empty() ? spec.defaults : given;
  for (auto v : sizes)
    if (v <= 0) throw Error("bench sizes must be positive", lab_usage(op_name));
  if (spec.op == "conv2d" && sizes.size() < 6) throw Error("conv2d needs six sizes", lab_usage(op_name));
  const OpDef& op = OpRegistry::instance().get(spec.op);

  Workspace ws;  // private: the lab measures without touching the student's graph
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  if (!device_available(device)) throw Error(device_missing_message(device), "benchmark on the cpu: --device cpu");
  auto [host_inputs, attr_map] = spec.make(sizes);
  std::vector<Tensor> inputs;
  for (auto& t : host_inputs) inputs.push_back(t.to(device));
  host_inputs.clear();
  const Attrs attrs = op.resolve(attr_map);
  std::vector<TensorMeta> in_meta;
  for (auto& t : inputs) in_meta.push_back({t.shape(), t.dtype(), t.device()});
  const auto out_meta = ws.infer(op, in_meta, attrs);

  LabResult result;
  result.op = spec.op;
  result.description = spec.describe(sizes);
  result.device = device;
  result.device_description = device == Device::cpu ? "one thread" : device_backend(device)->description();
  // The reference is the simplest correct algorithm: "naive" when there is one, except for the
  // norms, whose "naive" is the one-pass E[x²] − E[x]² that the lab exists to show failing.
  std::vector<std::string> algos;
  for (auto& a : op.algorithms)
    if (op.find_kernel(device, a)) algos.push_back(a);
  if (algos.empty()) throw Error(op.name + " has no " + device_name(device) + " kernel yet");
  const char* simplest = spec.op == "layer_norm" ? "two_pass" : "naive";
  auto naive = std::find(algos.begin(), algos.end(), simplest);
  if (naive != algos.end()) std::rotate(algos.begin(), naive, naive + 1);
  result.reference_algo = algos.front();

  Tensor reference;
  for (const std::string& algo : algos) {
    LabRow row;
    row.algo = algo;
    const std::string* added = op.added_by(device, algo);
    row.origin = added ? *added : op.origin;
    try {
      const int64_t live_before = ws.tracker().live(MemCategory::workspace);
      ws.tracker().reset_peak();
      Tensor out = ws.call_multi(op, inputs, attrs, algo)[0];
      row.workspace_bytes = ws.tracker().peak(MemCategory::workspace) - live_before;
      // The naive reference can be slow: one run is its measurement when it takes over a second.
      std::vector<double> times;
      for (int r = 0; r < repeats; ++r) {
        ws.reset_graph();
        auto t0 = std::chrono::steady_clock::now();
        ws.call_multi(op, inputs, attrs, algo);
        if (device == Device::cpu) {
          times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        } else {  // the device's own time between CUDA events around the kernel (no launch latency)
          times.push_back(static_cast<double>(ws.graph().node(ws.graph().num_nodes() - 1).stats.last_time_ns) * 1e-9);
        }
        if (times.back() > 1.0) break;
      }
      std::sort(times.begin(), times.end());
      row.seconds = times[times.size() / 2];
      const Cost c = op.cost(in_meta, out_meta, attrs, algo);
      row.gflops = c.flops / row.seconds / 1e9;
      row.gbytes = (c.bytes_read + c.bytes_written) / row.seconds / 1e9;
      row.multiplications = c.multiplications;
      if (out.device() != Device::cpu) out = out.to(Device::cpu, MemCategory::temporary);
      if (!reference.defined()) {  // the first algorithm that accepts the inputs is the reference
        reference = out.contiguous();
        result.reference_algo = algo;
      } else {
        Tensor o = out.contiguous();
        double max_ref = 0, max_diff = 0;
        const float* pr = reference.data<float>();
        const float* po = o.data<float>();
        for (int64_t i = 0; i < o.numel(); ++i) {
          max_ref = std::max(max_ref, std::fabs(static_cast<double>(pr[i])));
          max_diff = std::max(max_diff, std::fabs(static_cast<double>(po[i]) - pr[i]));
        }
        row.max_error = max_ref > 0 ? max_diff / max_ref : max_diff;
      }
      ws.reset_graph();
    } catch (const Error& e) {
      row.ok = false;
      row.error = e.what();
    }
    result.rows.push_back(row);
  }
  return result;
}

std::string lab_table(const LabResult& r) {
  std::string out = r.op + " on " + r.description + " (float32, " + r.device_description + "; error vs " +
                    r.reference_algo + ")\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %11s %9s %9s %14s %12s %10s\n", "algorithm", "time (ms)", "GFLOP/s", "GB/s",
                "multiplies", "workspace", "max error");
  out += line;
  for (const LabRow& row : r.rows) {
    if (!row.ok) {
      out += row.algo + std::string(row.algo.size() < 10 ? 10 - row.algo.size() : 0, ' ') + " refused: " + row.error + "\n";
      continue;
    }
    char err[32];
    if (row.algo == r.reference_algo) std::snprintf(err, sizeof err, "reference");
    else std::snprintf(err, sizeof err, "%.1e", row.max_error);
    std::snprintf(line, sizeof line, "%-10s %11.3f %9.1f %9.1f %14.3g %12s %10s\n", row.algo.c_str(), row.seconds * 1e3,
                  row.gflops, row.gbytes, row.multiplications, bytes_str(row.workspace_bytes).c_str(), err);
    out += line;
  }
  for (const LabRow& row : r.rows)  // algorithms loaded from extensions say where they come from
    if (!row.origin.empty()) out += row.algo + ": from " + row.origin + "\n";
  return out;
}

std::string lab_json(const LabResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const LabRow& row : r.rows) {
    nlohmann::json j{{"algorithm", row.algo}, {"ok", row.ok}};
    if (!row.origin.empty()) j["origin"] = row.origin;
    if (row.ok) {
      j["seconds"] = row.seconds;
      j["gflops_per_s"] = row.gflops;
      j["gbytes_per_s"] = row.gbytes;
      j["multiplications"] = row.multiplications;
      j["workspace_bytes"] = row.workspace_bytes;
      j["max_error"] = row.max_error;
    } else {
      j["error"] = row.error;
    }
    rows.push_back(j);
  }
  return nlohmann::json{{"op", r.op},
                        {"inputs", r.description},
                        {"device", device_name(r.device)},
                        {"device_description", r.device_description},
                        {"reference", r.reference_algo},
                        {"rows", rows}}
      .dump(2);
}

}  // namespace opscope::app
