#include "app/kernel_lab.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "core/device.h"
#include "core/error.h"
#include "core/random.h"
#include "core/timing.h"
#include "core/workspace.h"

namespace opscope::app {

namespace {

// Names the lab also answers to: the course says "attention" and "copy".
const OpDef* lab_op(const std::string& name) {
  const std::string op = name == "attention" ? "scaled_dot_product_attention" : name == "copy" ? "cast" : name;
  const OpDef* d = OpRegistry::instance().find(op);
  return d && d->lab.make ? d : nullptr;
}

const OpDef& lab_op_or_throw(const std::string& name) {
  if (const OpDef* d = lab_op(name)) return *d;
  std::string all;
  for (auto& n : lab_ops()) all += (all.empty() ? "" : ", ") + n;
  throw Error("the kernel lab cannot feed '" + name + "' yet", "it knows: " + all);
}

// "x 8×64×56×56, weight 64×64×3×3, padding=1": the case's inputs by name, and its attributes.
std::string describe_case(const OpDef& op, const GradcheckCase& c) {
  std::string r;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::string name = op.input_names[std::min(i, op.input_names.size() - 1)];
    while (!name.empty() && (name.back() == '?' || name.back() == '.')) name.pop_back();
    std::string dims;
    for (auto v : c.inputs[i].shape) dims += (dims.empty() ? "" : "×") + std::to_string(v);
    r += (r.empty() ? "" : ", ") + name + " " + dims;
  }
  for (auto& [name, v] : c.attrs) r += ", " + name + "=" + attr_value_str(v);
  return r;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string r;
  for (const auto& n : names) r += (r.empty() ? "" : ", ") + n;
  return r;
}

}  // namespace

std::vector<std::string> lab_ops() {
  std::vector<std::string> r;
  for (const OpDef* op : OpRegistry::instance().all())
    if (op->lab.make) r.push_back(op->name);
  return r;
}

std::string lab_usage(const std::string& op) {
  const OpDef& d = lab_op_or_throw(op);
  std::string sizes;
  for (auto v : d.lab.defaults) sizes += (sizes.empty() ? "" : " ") + std::to_string(v);
  return d.name + " sizes: " + d.lab.help + " (default " + sizes + ")";
}

LabResult run_lab(const std::string& op_name, const std::vector<int64_t>& given, int repeats, Device device,
                  const std::string& gpu, const LabOptions& options) {
  const OpDef& op = lab_op_or_throw(op_name);
  std::vector<int64_t> sizes = given.empty() ? op.lab.defaults : given;
  for (auto v : sizes)
    if (v <= 0) throw Error("bench sizes must be positive", lab_usage(op_name));
  if (sizes.size() < op.lab.min_sizes)
    throw Error(op.name + " needs " + std::to_string(op.lab.min_sizes) + " sizes", lab_usage(op_name));
  const GradcheckCase lab_case = op.lab.make(sizes);

  Workspace ws;  // private: the lab measures without touching the student's graph
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  if (!device_available(device)) throw Error(device_missing_message(device), "benchmark on the cpu: --device cpu");
  std::vector<Tensor> host_inputs = make_case_inputs(lab_case, 1, DType::f32);
  std::vector<Tensor> inputs;
  for (auto& t : host_inputs) inputs.push_back(t.to(device));
  host_inputs.clear();
  const Attrs attrs = op.resolve(lab_case.attrs);
  std::vector<TensorMeta> in_meta;
  for (auto& t : inputs) in_meta.push_back({t.shape(), t.dtype(), t.device()});
  const auto out_meta = ws.infer(op, in_meta, attrs);

  LabResult result;
  result.op = op.name;
  result.description = describe_case(op, lab_case);
  result.device = device;
  LaunchReporter* reporter = launch_reporter(device);
  if (reporter) reporter->choose_gpu(gpu);  // the device line names the preset's own figures
  result.device_description = device == Device::cpu ? "one thread" : device_backend(device)->description();
  if (reporter) {
    // The simulator runs every kernel version as an sm_90 would; the GPU chosen is the one its
    // time bounds are for, and the device line gives its figures (SMs, clock, memory) and says so.
    result.gpu = gpu;
    result.device_description += ", time bounds for a " + gpu;
  }
  // The reference is the simplest correct algorithm: the op's lab says which, else "naive" when
  // there is one, else the first that runs.
  std::vector<std::string> algos;
  for (auto& a : op.algorithms)
    if (op.find_kernel(device, a)) algos.push_back(a);
  if (algos.empty()) throw Error(op.name + " has no " + device_name(device) + " kernel yet");
  const std::string simplest = op.lab.reference_algo.empty() ? "naive" : op.lab.reference_algo;
  auto naive = std::find(algos.begin(), algos.end(), simplest);
  if (naive != algos.end()) std::rotate(algos.begin(), naive, naive + 1);
  result.reference_algo = algos.front();
  if (!options.only_algo.empty()) {  // the reference, then the one asked for
    if (std::find(algos.begin(), algos.end(), options.only_algo) == algos.end())
      throw Error(op.name + " has no " + device_name(device) + " algorithm '" + options.only_algo + "'",
                  std::string("its ") + device_name(device) + " algorithms: " + join_names(algos));
    algos.resize(1);
    if (options.only_algo != algos.front()) algos.push_back(options.only_algo);
  }

  Tensor reference;
  for (const std::string& algo : algos) {
    LabRow row;
    row.algo = algo;
    const std::string* added = op.added_by(device, algo);
    row.origin = added ? *added : op.origin;
    try {
      const int64_t live_before = ws.tracker().live(MemCategory::workspace);
      ws.tracker().reset_peak();
      if (reporter) reporter->start();
      if (reporter && options.trace_requests && algo == options.only_algo)
        reporter->trace_next_launch(options.trace_requests);
      Tensor out = ws.call_multi(op, inputs, attrs, algo)[0];
      if (reporter) row.device_report = reporter->take_json(gpu);
      row.workspace_bytes = ws.tracker().peak(MemCategory::workspace) - live_before;
      // The naive reference can be slow: one run is its measurement when it takes over a second.
      std::vector<double> times;
      for (int r = 0; r < repeats; ++r) {
        auto reset = [&ws] { ws.reset_graph(); };
        auto call = [&] { ws.call_multi(op, inputs, attrs, algo); };
        if (device == Device::cpu) {
          times.push_back(seconds_per_run(reset, call));  // a coarse clock (the browser's): the average of a batch
        } else {  // the device's own time between CUDA events around the kernel (no launch latency)
          reset();
          call();
          times.push_back(static_cast<double>(ws.graph().node(ws.graph().num_nodes() - 1).stats.last_time_ns) * 1e-9);
        }
        if (times.back() > 1.0) break;
      }
      std::sort(times.begin(), times.end());
      row.seconds = times[times.size() / 2];
      const Cost c = op.cost(in_meta, out_meta, attrs, algo);
      row.flops = c.flops;
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
      if (reporter && row.device_report.empty())
        row.device_report = reporter->take_json(gpu);  // the hazard that stopped it
    }
    result.rows.push_back(row);
  }
  return result;
}

namespace {

// sim: FLOPs counted as the kernels ran (mma_sync, library GEMMs: the only FLOPs the simulator
// sees, since the scalar arithmetic of a lane is not instrumented) against the op's cost model;
// what the counters miss, the scalar kernels' FLOPs, is the cost model's estimate.
nlohmann::json sim_flops(const LabRow& row, const nlohmann::json& report) {
  double counted = 0;
  for (const auto& l : report["launches"]) counted += l.value("flops", 0.0);
  return {{"cost_model", row.flops},
          {"counted", counted},
          {"scalar_estimated", std::max(0.0, row.flops - counted)},
          {"note",
           "counted: mma_sync and library GEMMs as they ran; scalar_estimated: the op's cost model minus the "
           "counted FLOPs (the scalar kernels' arithmetic, declared by the op, not counted per instruction)"}};
}

}  // namespace

std::string lab_table(const LabResult& r) {
  std::string out =
      r.op + " on " + r.description + " (float32, " + r.device_description + "; error vs " + r.reference_algo + ")\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %11s %9s %9s %14s %12s %10s\n", "algorithm", "time (ms)", "GFLOP/s", "GB/s",
                "multiplies", "workspace", "max error");
  out += line;
  for (const LabRow& row : r.rows) {
    if (!row.ok) {
      out += row.algo + std::string(row.algo.size() < 10 ? 10 - row.algo.size() : 0, ' ') + " refused: " + row.error +
             "\n";
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
  if (!r.gpu.empty()) {
    out +=
        "simulated: the times are the simulator's on this CPU; --json gives each launch's counters and its time "
        "bound on a " +
        r.gpu + "\n";
    for (const LabRow& row : r.rows) {
      if (!row.ok || row.device_report.empty()) continue;
      const nlohmann::json f = sim_flops(row, nlohmann::json::parse(row.device_report));
      std::snprintf(line, sizeof line,
                    "%s: %.4g FLOPs by the cost model; %.4g counted (mma_sync, library), %.4g estimated (scalar)\n",
                    row.algo.c_str(), f["cost_model"].get<double>(), f["counted"].get<double>(),
                    f["scalar_estimated"].get<double>());
      out += line;
    }
  }
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
    if (!row.device_report.empty()) {
      j["sim"] = nlohmann::json::parse(row.device_report);
      if (row.ok) j["flops"] = sim_flops(row, j["sim"]);
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
