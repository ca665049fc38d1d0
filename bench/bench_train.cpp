// One Fashion-MNIST epoch of assets/examples/fashion_mnist_cnn.ops (2 conv + batch norm +
// pooling, Adam, batch 64), side by side with the same model, initialisation scheme, batch size
// and optimizer in PyTorch (Debian's python3-torch, one thread; bench/vs_torch/fashion_epoch.py),
// measured in the same run when it is installed. Also: memory over the epoch (live and peak after
// batch 10 and batch 900). bench_vs_torch times the same epoch at every thread count.
//
//   ./build/bench_train            (about a minute on one core: the epoch twice, once per framework)
#include <cstdio>
#include <string>

#include "bench/bench_util.h"
#include "bench/fashion_epoch.h"
#include "core/parallel.h"
#include "core/workspace.h"

using namespace opscope;

int main() {
  NumThreadsScope one_thread(1);  // PyTorch's side runs one thread too
  bench::print_build_info();  // after it: its "run:" line says 1 thread
  // opscope: the example as a student runs it; the training loop's batches give the memory
  // checkpoints.
  Workspace& ws = current_workspace();
  int64_t live10 = 0, peak10 = 0, live900 = 0, peak900 = 0, batches = 0;
  size_t nodes10 = 0, nodes900 = 0;
  const bench::EpochResult ours = bench::run_opscope_epoch(ws, [&](int64_t done, int64_t total) {
    batches = total;
    if (done == 2) ws.tracker().reset_peak();  // the first steps make Adam's state
    if (done == 10)
      live10 = ws.tracker().live_total(), peak10 = ws.tracker().peak_total(), nodes10 = ws.graph().node_count();
    if (done == 900)
      live900 = ws.tracker().live_total(), peak900 = ws.tracker().peak_total(), nodes900 = ws.graph().node_count();
  });
  if (ours.epoch_s < 0) return 1;
  const double epoch_s = ours.epoch_s, accuracy = ours.accuracy;

  const bench::EpochResult torch = bench::run_torch_epoch(1, bench::reference_openblas_core());
  std::printf(
      "\n== One Fashion-MNIST epoch: %lld batches of 64, CNN conv16-bn-pool-conv32-bn-pool-linear, Adam lr 2e-3 ==\n",
      static_cast<long long>(batches));
  std::printf("%-36s %12s %14s %12s\n", "framework", "epoch (s)", "test accuracy", "time ratio");
  std::printf("%-36s %12.2f %14.4f %12s\n", "opscope (the example, language)", epoch_s, accuracy,
              torch.epoch_s > 0 ? (std::to_string(epoch_s / torch.epoch_s).substr(0, 4) + "×").c_str() : "-");
  if (torch.epoch_s > 0)
    std::printf("%-36s %12.2f %14.4f %12s\n", ("PyTorch " + torch.version + ", 1 thread").c_str(), torch.epoch_s,
                torch.accuracy, "1.00× (ref)");
  else std::printf("%-36s reference not run (apt-get install python3-torch)\n", "PyTorch");
  if (!torch.blas.empty()) std::printf("  PyTorch's BLAS (libraries mapped): %s\n", torch.blas.c_str());

  std::printf("\n== Memory over the epoch (tracker; peaks from batch 2 on, after Adam made its state) ==\n");
  std::printf("%-24s %14s %14s %14s\n", "after batch", "live", "peak", "nodes held");
  std::printf("%-24s %14s %14s %14zu\n", "10", bytes_str(live10).c_str(), bytes_str(peak10).c_str(), nodes10);
  std::printf("%-24s %14s %14s %14zu\n", "900", bytes_str(live900).c_str(), bytes_str(peak900).c_str(), nodes900);
  std::printf("  (live includes the data sets: %s of images and labels; the tape no tensor reaches is dropped)\n",
              bytes_str(int64_t{70000} * (784 * 4 + 8)).c_str());
  const double growth = peak10 > 0 ? static_cast<double>(peak900) / static_cast<double>(peak10) : 0;

  std::printf("\n%-58s %10s %10s %8s\n", "claim", "measured", "target", "verdict");
  std::printf("%-58s %10.4f %10s %8s\n", "test accuracy after one epoch", accuracy, ">= 0.88",
              bench::verdict(accuracy >= 0.88));
  std::printf("%-58s %9.1f%% %10s %8s\n", "peak after batch 900 vs after batch 10", 100 * (growth - 1), "<= 5%",
              bench::verdict(growth > 0 && growth <= 1.05));
  return 0;
}
