// scaled_dot_product_attention: naive (materialises the T×S scores) against flash (tiles with
// the online softmax), one head, D = 64, float32, for growing T = S. Prints time and the peak
// bytes each call adds (workspace + its output activation), as the memory tracker counts them.
//
// Napkin math: both do 2·T²·(D + Dv) FLOPs and T² exps. Naive writes and re-reads the T×S
// matrix (4·T² bytes each way, 16 MiB at T = 2048: out of L2); flash keeps a 64×64 tile in L1.
// Targets at T = 2048: flash holds <= 10% of naive's bytes and runs within 2x of naive's time.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/op.h"
#include "core/workspace.h"

using namespace opscope;
using bench::random_tensor;

namespace {

struct Measure {
  double seconds = 0;
  int64_t bytes = 0;  // peak bytes above what was live before the call
};

Measure measure(Workspace& ws, const std::vector<Tensor>& ins, const std::string& algo, double budget_s) {
  Measure m;
  auto run = [&] { ws.call("scaled_dot_product_attention", ins, {}, algo); };
  // Memory first, on a call of its own (the output is freed when the call's result is dropped).
  const int64_t before = ws.tracker().live_total();
  ws.tracker().reset_peak();
  run();
  m.bytes = ws.tracker().peak_total() - before;
  // Repeats sized to the time budget from one timed run.
  const double t0 = bench::now_s();
  run();
  const double once = bench::now_s() - t0;
  const int repeats = std::max(1, std::min(15, static_cast<int>(budget_s / std::max(once, 1e-6))));
  m.seconds = bench::median_time(run, repeats, 0);
  return m;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

int main() {
  bench::print_build_info();
  Workspace ws;
  WorkspaceScope scope(ws);
  NoGradGuard no_grad;  // inference: nothing saved, so the bytes are the kernel's own
  const int64_t D = 64;
  std::printf("\nscaled_dot_product_attention, one head, D = Dv = %lld, float32, T = S, not causal\n",
              static_cast<long long>(D));
  std::printf("%6s | %10s %10s %7s | %12s %12s %7s | %8s\n", "T", "naive ms", "flash ms", "f/n", "naive peak",
              "flash peak", "f/n", "GFLOP/s*");
  std::printf("-------+--------------------------------+------------------------------------+---------\n");
  bool time_ok = false, mem_ok = false;
  // Skipping naive above this many bytes of scores keeps the run short and small; 4096² floats
  // (64 MiB) is still fine on these machines, so nothing is skipped by default.
  const int64_t kNaiveMaxScoreBytes = int64_t{256} << 20;
  const double t_start = bench::now_s();
  for (int64_t T : {128, 256, 512, 1024, 2048, 4096}) {
    Tensor q = random_tensor({1, T, D}, 1), k = random_tensor({1, T, D}, 2), v = random_tensor({1, T, D}, 3);
    const double budget = T >= 2048 ? 2.0 : 0.5;
    const Measure f = measure(ws, {q, k, v}, "flash", budget);
    const double flops = 2.0 * T * T * (2 * D);
    if (T * T * 4 > kNaiveMaxScoreBytes) {
      std::printf(
          "%6lld | %10s %10.2f %7s | %12s %12s %7s | %8.1f  (naive skipped: its %s of scores pass the %s limit)\n",
          static_cast<long long>(T), "-", f.seconds * 1e3, "-", "-", mib(f.bytes).c_str(), "-",
          flops / f.seconds * 1e-9, mib(T * T * 4).c_str(), mib(kNaiveMaxScoreBytes).c_str());
      continue;
    }
    const Measure n = measure(ws, {q, k, v}, "naive", budget);
    const double tr = f.seconds / n.seconds, mr = static_cast<double>(f.bytes) / static_cast<double>(n.bytes);
    std::printf("%6lld | %10.2f %10.2f %6.2fx | %12s %12s %6.1f%% | %8.1f\n", static_cast<long long>(T),
                n.seconds * 1e3, f.seconds * 1e3, tr, mib(n.bytes).c_str(), mib(f.bytes).c_str(), 100 * mr,
                flops / f.seconds * 1e-9);
    if (T == 2048) {
      time_ok = tr <= 2.0;
      mem_ok = mr <= 0.10;
    }
  }
  std::printf("* flash, counting the two GEMMs only (2·T²·(D + Dv) FLOPs)\n");
  std::printf(
      "peak = tracker.peak_total() after reset_peak(), minus the bytes live before the call: the\n"
      "       workspace (naive: T×S scores; flash: one 64×64 tile + row stats) plus the output [1, T, %lld]\n",
      static_cast<long long>(D));
  std::printf("\ntarget at T = 2048: flash bytes <= 10%% of naive's   %s\n", bench::verdict(mem_ok));
  std::printf("target at T = 2048: flash time <= 2x naive's         %s\n", bench::verdict(time_ok));
  std::printf("total bench time %.1f s\n", bench::now_s() - t_start);
  return 0;
}
