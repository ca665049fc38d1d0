// One Fashion-MNIST epoch of assets/examples/fashion_mnist_cnn.ops (2 conv + batch norm +
// pooling, Adam, batch 64), side by side with the same model, initialisation scheme, batch size and optimizer
// in PyTorch (Debian's python3-torch, one thread), measured in the same run when it is
// installed. Also: memory over the epoch (live and peak after batch 10 and batch 900).
//
//   ./build/bench_train            (about a minute on one core: the epoch twice, once per framework)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "bench/bench_util.h"
#include "core/workspace.h"

using namespace opscope;

namespace {

const char* const kTorchScript = R"PY(
import gzip, sys, time, numpy as np, torch
torch.set_num_threads(1)
def idx(path, offset):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)
d = sys.argv[1]
x_train = torch.tensor(idx(d + "/train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 255.0, dtype=torch.float32)
y_train = torch.tensor(idx(d + "/train-labels-idx1-ubyte.gz", 8).astype(np.int64))
x_test = torch.tensor(idx(d + "/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 255.0, dtype=torch.float32)
y_test = torch.tensor(idx(d + "/t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
torch.manual_seed(0)
conv1, conv2 = torch.nn.Conv2d(1, 16, 3, padding=1, bias=False), torch.nn.Conv2d(16, 32, 3, padding=1, bias=False)
bn1, bn2, fc = torch.nn.BatchNorm2d(16), torch.nn.BatchNorm2d(32), torch.nn.Linear(32 * 49, 10)
with torch.no_grad():  # the example's initialisation: He normal for the convolutions, N(0, 1/1568), zero bias
    conv1.weight.normal_(0, (2 / 9) ** 0.5); conv2.weight.normal_(0, (2 / 144) ** 0.5); fc.weight.normal_(0, (1 / 1568) ** 0.5)
    fc.bias.zero_()
pool = torch.nn.functional.max_pool2d
def model(x):
    h = pool(torch.relu(bn1(conv1(x))), 2)
    h = pool(torch.relu(bn2(conv2(h))), 2)
    return fc(h.reshape(h.shape[0], -1))
params = [p for m in (conv1, bn1, conv2, bn2, fc) for p in m.parameters()]
opt = torch.optim.Adam(params, lr=2e-3)
order = torch.randperm(60000, generator=torch.Generator().manual_seed(0))
t0 = time.perf_counter()
for i in range(0, 60000, 64):
    b = order[i:i + 64]
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x_train[b]), y_train[b]).backward()
    opt.step()
epoch = time.perf_counter() - t0
bn1.eval(); bn2.eval()
with torch.no_grad():
    acc = (model(x_test).argmax(1) == y_test).float().mean().item()
blas = sorted({l.split()[-1].split("/")[-1] for l in open("/proc/self/maps") if "blas" in l.lower()})
print("epoch %.3f accuracy %.4f blas %s torch %s" % (epoch, acc, ",".join(blas) or "none", torch.__version__))
)PY";

struct Result {
  double epoch_s = -1, accuracy = -1;
  std::string blas, version;
};

Result run_torch(const std::string& data_dir) {
  Result r;
  if (std::system("/usr/bin/python3 -c \"import torch\" >/dev/null 2>&1") != 0) return r;
  const std::string path = "/tmp/opscope_bench_train.py";
  std::ofstream(path) << kTorchScript;
  FILE* p = popen(("/usr/bin/python3 " + path + " " + data_dir + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(epoch ([0-9.]+) accuracy ([0-9.]+) blas (\S+) torch (\S+))"))) {
    r.epoch_s = std::stod(m[1]);
    r.accuracy = std::stod(m[2]);
    r.blas = m[3];
    r.version = m[4];
  } else {
    std::fprintf(stderr, "PyTorch reference failed:\n%s\n", out.c_str());
  }
  return r;
}

}  // namespace

int main() {
  bench::print_build_info();
  const std::string example = std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/fashion_mnist_cnn.ops";
  std::ifstream f(example);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", example.c_str());
    return 1;
  }
  std::stringstream code;
  code << f.rdbuf();

  // opscope: the example as a student runs it; the training loop's progress events give the
  // epoch's time (the loop alone, not loading or evaluation) and the memory checkpoints.
  Workspace& ws = current_workspace();
  lang::Session session(ws);
  double epoch_s = -1;
  int64_t live10 = 0, peak10 = 0, live900 = 0, peak900 = 0, batches = 0;
  size_t nodes10 = 0, nodes900 = 0;
  bool first_loop = true;
  session.interpreter().on_progress = [&](const lang::Interpreter::LoopProgress& p) {
    if (!first_loop) return;
    using P = lang::Interpreter::LoopProgress;
    if (p.event == P::step) {
      batches = p.total;
      if (p.done_items == 2) ws.tracker().reset_peak();  // the first steps make Adam's state
      if (p.done_items == 10) live10 = ws.tracker().live_total(), peak10 = ws.tracker().peak_total(), nodes10 = ws.graph().node_count();
      if (p.done_items == 900) live900 = ws.tracker().live_total(), peak900 = ws.tracker().peak_total(), nodes900 = ws.graph().node_count();
    } else if (p.event == P::done) {
      epoch_s = p.seconds;
      first_loop = false;
    }
  };
  std::ostringstream out;
  if (!session.run(code.str(), example, out, std::cerr)) return 1;
  double accuracy = -1;
  std::smatch m;
  const std::string printed = out.str();
  if (std::regex_search(printed, m, std::regex(R"(test accuracy: ([0-9.]+))"))) accuracy = std::stod(m[1]);

  const Result torch = run_torch("/usr/share/datasets/fashion-mnist");
  std::printf("\n== One Fashion-MNIST epoch: %lld batches of 64, CNN conv16-bn-pool-conv32-bn-pool-linear, Adam lr 2e-3 ==\n",
              static_cast<long long>(batches));
  std::printf("%-36s %12s %14s %12s\n", "framework", "epoch (s)", "test accuracy", "time ratio");
  std::printf("%-36s %12.2f %14.4f %12s\n", "opscope (the example, language)", epoch_s, accuracy,
              torch.epoch_s > 0 ? (std::to_string(epoch_s / torch.epoch_s).substr(0, 4) + "×").c_str() : "-");
  if (torch.epoch_s > 0)
    std::printf("%-36s %12.2f %14.4f %12s\n", ("PyTorch " + torch.version + ", 1 thread").c_str(), torch.epoch_s,
                torch.accuracy, "1.00× (ref)");
  else
    std::printf("%-36s reference not run (apt-get install python3-torch)\n", "PyTorch");
  if (!torch.blas.empty()) std::printf("  PyTorch's BLAS (libraries mapped): %s\n", torch.blas.c_str());

  std::printf("\n== Memory over the epoch (tracker; peaks from batch 2 on, after Adam made its state) ==\n");
  std::printf("%-24s %14s %14s %14s\n", "after batch", "live", "peak", "nodes held");
  std::printf("%-24s %14s %14s %14zu\n", "10", bytes_str(live10).c_str(), bytes_str(peak10).c_str(), nodes10);
  std::printf("%-24s %14s %14s %14zu\n", "900", bytes_str(live900).c_str(), bytes_str(peak900).c_str(), nodes900);
  std::printf("  (live includes the data sets: %s of images and labels; the tape no tensor reaches is dropped)\n",
              bytes_str(int64_t{70000} * (784 * 4 + 8)).c_str());
  const double growth = peak10 > 0 ? static_cast<double>(peak900) / static_cast<double>(peak10) : 0;

  std::printf("\n%-58s %10s %10s %8s\n", "claim", "measured", "target", "verdict");
  std::printf("%-58s %10.4f %10s %8s\n", "test accuracy after one epoch", accuracy, ">= 0.88", bench::verdict(accuracy >= 0.88));
  std::printf("%-58s %9.1f%% %10s %8s\n", "peak after batch 900 vs after batch 10", 100 * (growth - 1), "<= 5%",
              bench::verdict(growth > 0 && growth <= 1.05));
  return 0;
}
