// The simulated GPU's speed: the matmul kernels on sim at a few sizes, with the counters
// recorded (every global and shared access logged and grouped into requests) and without (the
// checks only). Prints simulated accesses per second; the acceptance target is ≥ 20 M/s.
#include <chrono>
#include <cstdio>
#include <string>

#include "core/device.h"
#include "core/tensor.h"
#include "core/workspace.h"
#include "gpusim/report.h"

using namespace opscope;

namespace {

double seconds_of(Workspace& ws, const Tensor& a, const Tensor& b, const std::string& algo) {
  const auto t0 = std::chrono::steady_clock::now();
  ws.call("matmul", {a, b}, {}, algo);
  device_backend(Device::sim)->synchronize();
  ws.reset_graph();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  if (!device_available(Device::sim)) {
    std::printf("the simulated GPU is not built in this configuration\n");
    return 0;
  }
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard ng;
  std::printf("simulated GPU (sim): matmul n×n×n, float32, one CPU thread\n");
  std::printf("%-18s %5s %12s %12s %14s %12s\n", "algorithm", "n", "accesses", "recorded ms", "accesses/s",
              "checks ms");
  for (const char* algo : {"naive", "tiled", "tiled_conflicting", "register_blocked", "wmma"})
    for (int64_t n : {64, 128}) {
      Tensor a = Tensor::full({n, n}, 1.0, DType::f32).to(Device::sim),
             b = Tensor::full({n, n}, 0.5, DType::f32).to(Device::sim);
      seconds_of(ws, a, b, algo);  // warm: stacks, allocator, line tables
      gpusim::start_recording();
      const double recorded = seconds_of(ws, a, b, algo);
      uint64_t accesses = 0;
      for (const auto& r : gpusim::take_records()) accesses += r.accesses;
      const double checks = seconds_of(ws, a, b, algo);
      std::printf("%-18s %5lld %12llu %12.1f %14.3g %12.1f\n", algo, static_cast<long long>(n),
                  static_cast<unsigned long long>(accesses), recorded * 1e3, double(accesses) / recorded, checks * 1e3);
    }
  return 0;
}
