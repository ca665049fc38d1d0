// The kernel lab: every algorithm of an operator on the same inputs, each checked against the
// simplest one, with time, GFLOP/s, GB/s, multiplications, workspace bytes and max error.
// Drives `opscope bench OP` and the REPL's `:bench`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace opscope::app {

struct LabRow {
  std::string algo;
  double seconds = 0;  // median of repeats
  double gflops = 0, gbytes = 0;  // per second, from the op's cost model
  double multiplications = 0;
  double flops = 0;  // one call's FLOPs by the op's cost model (declared, not counted)
  int64_t workspace_bytes = 0;  // the tracker's real peak of workspace memory during the call
  double max_error = 0;  // max |out - reference| / max |reference|
  bool ok = true;
  std::string error;  // an algorithm that refused these inputs says why
  std::string origin;  // "" for a built-in algorithm, else the extension that added it
  std::string device_report;  // sim: the launches' counters as JSON (core/device.h LaunchReporter)
};

struct LabResult {
  std::string op, reference_algo, description;  // description: the inputs' shapes
  Device device = Device::cpu;
  std::string device_description;  // "one CPU thread" or the GPU's name
  std::string gpu;  // sim: the GPU preset the time bounds are for
  std::vector<LabRow> rows;
};

std::vector<std::string> lab_ops();  // ops the lab knows how to feed
std::string lab_usage(const std::string& op);
// On cuda: only the algorithms with a CUDA kernel, each timed by CUDA events (the executor's
// step time); throws "no CUDA device found" without a GPU.
// On sim (the simulated GPU): the times are the simulation's on this CPU; each row also carries
// its launches' counters and time bounds on the GPU preset `gpu` (T4, RTX4090, H100, H200).
// What the Kernel Lab's warp view asks beyond a table: one algorithm only (after the reference,
// which still checks it), and its first launch's first block traced request by request (the
// row's device_report then carries "trace").
struct LabOptions {
  std::string only_algo;
  size_t trace_requests = 0;  // 0: no trace; else at most this many requests kept
};
LabResult run_lab(const std::string& op, const std::vector<int64_t>& sizes, int repeats = 5,
                  Device device = Device::cpu, const std::string& gpu = "H100", const LabOptions& options = {});
std::string lab_table(const LabResult& r);
std::string lab_json(const LabResult& r);

}  // namespace opscope::app
