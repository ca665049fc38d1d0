// opscope and PyTorch side by side on this machine, in one run: each workload's training step
// written in opscope's language (bench/vs_torch/NAME.ops, driven through a lang::Session as a
// student's script runs) and in PyTorch (bench/vs_torch/torch_workloads.py, run with
// /usr/bin/python3), at one thread and at all cores. Prints a table of both medians and their
// ratio, with the kernels, threads and BLAS of each side. Exit code 0 whatever the numbers.
//
// Run under the shared lock: flock /tmp/opscope-cpu.lock ./build/bench_vs_torch [--repeats N]
// [--rounds R] [--workloads mlp,cnn,...] (default: 20 repeats, 5 rounds, all workloads)
//
// After the table (when the Transformer block is among the workloads): the block's GEMMs as a
// fraction of this core's FMA peak, both measured in this run (bench/fma_peak.h, ops/gemm.h's
// tally), at each thread count.
//
// The last row, one Fashion-MNIST epoch (bench/fashion_epoch.h: the training example run by the
// language, against bench/vs_torch/fashion_epoch.py), is 938 steps in one time, so it takes the
// best of the first two rounds only; it needs dataset-fashion-mnist.
//
// Each round times every workload in opscope (every thread count), then in PyTorch; each side
// keeps its best median over the rounds. On a shared VM a side's time can double for a few
// seconds: with the two sides alternating, one slow spell cannot decide a ratio.
//
// PyTorch gets the same BLAS threads as its own (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS,
// torch.set_num_threads) and the OpenBLAS kernels opscope chose for this CPU
// (OPENBLAS_CORETYPE): Debian's OpenBLAS 0.3.21 does not recognise CPUs newer than itself and
// falls back to its SSE3 kernels, which would make PyTorch's matrix products ~4× slower there.
// An OPENBLAS_CORETYPE already in the environment is the user's: both sides keep it, and the
// table's footer says so (opscope's default GEMM may then be Eigen: ops/gemm.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/lang/session.h"
#include "bench/bench_util.h"
#include "bench/fashion_epoch.h"
#include "bench/fma_peak.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "ops/gemm.h"
#include "ops/onednn_conv.h"

using namespace opscope;
using namespace opscope::bench;

namespace {

struct Workload {
  std::string name, label;
  double target;  // opscope / PyTorch at most (issue 42: 0.8 for every training step)
  int repeat_factor = 1;
  // Algorithms the script's `conv_algo` takes in turn; the row reports the fastest (opscope's best).
  std::vector<std::string> algos = {};
};

const std::vector<Workload> kWorkloads = {
    {"mlp", "MLP 784-256-256-10, batch 64, train step", 0.8},
    {"cnn", "2-conv CNN 28x28, batch 64, train step", 0.8},
    {"transformer", "Transformer block 8x128x256 causal, train step", 0.8},
    {"tiny_chain", "chain of 100 tiny ops, forward + backward", 0.5, 10},
    {"conv", "conv2d N8 64->64 56x56 3x3, forward", 1.5, 1, {"im2col", "winograd", "onednn"}},
};

// The epoch row: not a step script, so not in kWorkloads (see the top of the file).
const char* const kEpochName = "epoch";
const char* const kEpochLabel = "Fashion-MNIST epoch (CNN, Adam, 938 steps)";
constexpr double kEpochTarget = 0.8;
constexpr int kEpochRounds = 2;

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A workload script: setup statements, then the step after a line "# --- step ---".
struct Script {
  std::string setup, step;
};

Script load_script(const std::string& name) {
  const std::string text = read_text(std::string(OPSCOPE_VS_TORCH_DIR) + "/" + name + ".ops");
  const std::string marker = "# --- step ---\n";
  const size_t at = text.find(marker);
  if (text.empty() || at == std::string::npos) {
    std::fprintf(stderr, "bench_vs_torch: %s.ops is missing or has no '# --- step ---' line\n", name.c_str());
    std::exit(1);
  }
  return {text.substr(0, at), text.substr(at + marker.size())};
}

// Median seconds of the step, run by the language in a fresh workspace; -1 on a script error.
// `algo`: the value of the script's conv_algo (set after its setup), or "".
double time_opscope(const Workload& w, int repeats, const std::string& algo = "") {
  const Script s = load_script(w.name);
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session session(ws);
  std::ostringstream out, err;
  const std::string setup = s.setup + (algo.empty() ? "" : "conv_algo = \"" + algo + "\"\n");
  if (!session.run(setup, w.name + ".ops", out, err)) {
    std::fprintf(stderr, "%s", err.str().c_str());
    return -1;
  }
  bool ok = true;
  const double t = median_time(
      [&] {
        if (ok && !session.run(s.step, w.name + ".ops (step)", out, err)) {
          std::fprintf(stderr, "%s", err.str().c_str());
          ok = false;
        }
      },
      repeats * w.repeat_factor, 3);
  return ok ? t : -1;
}

// The PyTorch side: one python process per thread count, all workloads.
struct TorchRun {
  bool available = false;
  std::string why;
  nlohmann::json info;
  std::map<std::string, double> seconds;
};

TorchRun run_torch(int threads, int repeats, const std::string& workloads) {
  TorchRun r;
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0) {
    r.why = "reference not installed (PyTorch for /usr/bin/python3: apt install python3-torch)";
    return r;
  }
  const std::string core = reference_openblas_core();
  char cmd[2048];
  std::snprintf(
      cmd, sizeof cmd,
      "OPENBLAS_CORETYPE=%s OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d /usr/bin/python3 %s/torch_workloads.py "
      "--threads %d --repeats %d --workloads %s",
      core.c_str(), threads, threads, OPSCOPE_VS_TORCH_DIR, threads, repeats, workloads.c_str());
  FILE* p = popen(cmd, "r");
  if (!p) {
    r.why = "could not start /usr/bin/python3";
    return r;
  }
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("info")) r.info = j["info"];
      else r.seconds[j.at("workload").get<std::string>()] = j.at("seconds").get<double>();
    } catch (const std::exception&) {}
  }
  r.available = pclose(p) == 0 && !r.seconds.empty();
  if (!r.available) r.why = "the PyTorch script failed (run bench/vs_torch/torch_workloads.py by hand to see why)";
  return r;
}

// The Transformer block's GEMMs against this core's FMA peak (bench/fma_peak.h), measured in
// turns: each round times the FMA loop, then a few of the block's steps with the GEMM tally on
// (ops/gemm.h: every product's time on its thread and its 2·M·N·K). A neighbour on the shared
// machine only slows either down, so the table keeps the best of the rounds for both.
struct BlockGemms {
  double step_s = -1, gemm_core_s = 0, gemm_flops = 0, peak_gflops = 0;
  double best_rate = 0;  // GEMM FLOP/s per core (flops / core-seconds), best round
  std::vector<double> round_fractions;  // each round's rate over its own peak
  std::vector<cpu::GemmShapeTally> shapes;  // the fastest round's products, by shape and library
  int steps = 0;  // per round
  const char* vectors = "";
};

BlockGemms measure_block_gemms(int rounds, int steps) {
  BlockGemms r;
  r.steps = steps;
  const Script s = load_script("transformer");
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session session(ws);
  std::ostringstream out, err;
  if (!session.run(s.setup, "transformer.ops", out, err)) {
    std::fprintf(stderr, "%s", err.str().c_str());
    return r;
  }
  auto step = [&] { return session.run(s.step, "transformer.ops (step)", out, err); };
  for (int i = 0; i < 3; ++i) step();  // warm: the allocator's cache, OpenBLAS's buffers
  for (int round = 0; round < rounds; ++round) {
    const FmaPeak peak = measure_fma_peak_on(num_threads(), 0.2);  // every core the step uses, busy at once
    cpu::gemm_tally_start();
    const double t0 = now_s();
    for (int i = 0; i < steps; ++i)
      if (!step()) {
        cpu::gemm_tally_stop();
        std::fprintf(stderr, "%s", err.str().c_str());
        return r;
      }
    const double step_s = (now_s() - t0) / steps;
    const cpu::GemmTally tally = cpu::gemm_tally_stop();
    const double rate = tally.seconds > 0 ? tally.flops / tally.seconds : 0;
    r.vectors = peak.vectors;
    r.peak_gflops = std::max(r.peak_gflops, peak.gflops);
    r.round_fractions.push_back(rate / 1e9 / peak.gflops);
    if (r.step_s < 0 || step_s < r.step_s) {  // the fastest round's step and its GEMM time
      r.step_s = step_s;
      r.gemm_core_s = tally.seconds / steps;
      r.gemm_flops = tally.flops / steps;
      r.shapes = tally.shapes;
    }
    r.best_rate = std::max(r.best_rate, rate);
  }
  return r;
}

// The products behind the fraction, costliest first: which library ran each shape (ops/gemm.cpp
// sends float32 products of 2^20 multiply-adds and more to oneDNN) and how fast.
void print_block_gemm_shapes(const BlockGemms& b, int threads) {
  if (b.shapes.empty() || b.peak_gflops <= 0) return;
  std::printf("\n  the block's products at %d thread%s, fastest round, per step (op(A) M×K times op(B) K×N):\n",
              threads, threads == 1 ? "" : "s");
  std::printf("  %-4s %18s %9s %7s %9s %10s %9s\n", "op", "M x N x K", "library", "calls", "core-ms", "GF/s",
              "fraction");
  for (const cpu::GemmShapeTally& s : b.shapes) {
    char shape[48], ops[8];
    std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", static_cast<long long>(s.M), static_cast<long long>(s.N),
                  static_cast<long long>(s.K));
    std::snprintf(ops, sizeof ops, "%c%c", s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N');
    const double gflops = s.seconds > 0 ? s.flops / s.seconds / 1e9 : 0;
    std::printf("  %-4s %18s %9s %7lld %9.2f %10.1f %9.2f\n", ops, shape, cpu::gemm_library_name(s.library),
                static_cast<long long>(s.calls / b.steps), s.seconds / b.steps * 1e3, gflops, gflops / b.peak_gflops);
  }
}

void print_block_gemms(const std::vector<int>& thread_counts, int rounds) {
  constexpr double kTarget = 0.8;
  std::printf(
      "\n== Transformer block: its GEMMs against this core's FMA peak (best of %d rounds, each: FMA loop, "
      "then 5 steps) ==\n",
      rounds);
  std::printf("%7s %9s %12s %9s %11s %12s %12s %9s %15s %8s %8s\n", "threads", "step ms", "GEMM core-ms", "GEMM GF",
              "GEMM share", "GEMM GF/s", "peak GF/s", "fraction", "rounds", "target", "verdict");
  const char* vectors = "";
  BlockGemms first;
  for (int t : thread_counts) {
    NumThreadsScope nt(t);
    const BlockGemms b = measure_block_gemms(rounds, 5);
    if (t == thread_counts.front()) first = b;
    if (b.step_s <= 0) {
      std::printf("%7d  the block's script failed\n", t);
      continue;
    }
    vectors = b.vectors;
    const double fraction = b.best_rate / 1e9 / b.peak_gflops;
    std::vector<double> f = b.round_fractions;
    std::sort(f.begin(), f.end());
    char range[48];
    std::snprintf(range, sizeof range, "%.2f-%.2f", f.front(), f.back());
    // share: the GEMMs' core-seconds over the step's core-seconds (t cores busy at most)
    std::printf("%7d %9.2f %12.2f %9.2f %10.0f%% %12.1f %12.1f %9.2f %15s %8s %8s\n", t, b.step_s * 1e3,
                b.gemm_core_s * 1e3, b.gemm_flops / 1e9, 100.0 * b.gemm_core_s / (b.step_s * t), b.best_rate / 1e9,
                b.peak_gflops, fraction, range, ">= 0.80", verdict(fraction >= kTarget));
  }
  std::printf(
      "  GEMM GF/s: the products' FLOPs (2·M·N·K, causal tiles skipped are not counted) over the time they ran, "
      "per core;\n  peak: one core's float32 FMA loop, %s (bench/fma_peak.h), run on as many cores at once as the "
      "row's threads (the lowest core's rate); fraction = GEMM GF/s / peak; rounds: each round's own fraction\n",
      vectors);
  print_block_gemm_shapes(first, thread_counts.front());
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string fmt_ms(double s) {
  if (s < 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

// A row of the table; a ratio and a verdict where both sides have a time.
void print_row(const std::string& label, int threads, double ours, double theirs, double target) {
  std::string ratio = "-", target_s = target > 0 ? "<= " + std::to_string(target).substr(0, 3) : "", v = "";
  if (ours > 0 && theirs > 0) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", ours / theirs);
    ratio = b;
    if (target > 0) v = verdict(ours / theirs <= target);
  }
  std::printf("%-48s %7d %12s %12s %9s %8s %8s\n", label.c_str(), threads, fmt_ms(ours).c_str(), fmt_ms(theirs).c_str(),
              ratio.c_str(), target_s.c_str(), v.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 20, rounds = 5;
  std::vector<Workload> workloads = kWorkloads;
  std::string names, all_names;  // names: the step workloads PyTorch's script runs
  for (const Workload& w : kWorkloads) names += (names.empty() ? "" : ",") + w.name;
  all_names = names + "," + kEpochName;
  bool with_epoch = true;
  for (int i = 1; i < argc; ++i) {
    const bool known =
        i + 1 < argc && (std::strcmp(argv[i], "--repeats") == 0 || std::strcmp(argv[i], "--rounds") == 0 ||
                         std::strcmp(argv[i], "--workloads") == 0);
    if (!known) {
      std::fprintf(stderr, "usage: bench_vs_torch [--repeats N] [--rounds R] [--workloads %s]\n", all_names.c_str());
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 1;
    }
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--workloads") == 0) {
      const std::string asked = std::string(",") + argv[i + 1] + ",";
      workloads.clear();
      names.clear();
      for (const Workload& w : kWorkloads)
        if (asked.find("," + w.name + ",") != std::string::npos) {
          workloads.push_back(w);
          names += (names.empty() ? "" : ",") + w.name;
        }
      with_epoch = asked.find(std::string(",") + kEpochName + ",") != std::string::npos;
      if (workloads.empty() && !with_epoch) {
        std::fprintf(stderr, "bench_vs_torch: --workloads takes names from: %s\n", all_names.c_str());
        return 1;
      }
    }
    ++i;  // the option's value
  }
  print_build_info();
  std::printf("machine: %s, %d cores\n", cpu_model().c_str(), hardware_threads());
  const int all = hardware_threads();
  const std::vector<int> thread_counts = all > 1 ? std::vector<int>{1, all} : std::vector<int>{1};

  std::map<int, std::map<std::string, double>> ours;
  std::map<int, std::map<std::string, std::string>> best_algo;  // of workloads with several
  std::map<int, TorchRun> theirs;
  std::map<int, double> epoch_ours, epoch_theirs;
  const bool epoch_data = have_fashion_mnist();
  // The best of a side's medians: -1 (a failed run) never wins over a time.
  auto keep_best = [](double& best, double s) {
    if (s > 0 && (best <= 0 || s < best)) best = s;
  };
  for (int round = 0; round < rounds; ++round) {
    // All of opscope's runs of a round, then PyTorch's: no PyTorch process (its runtime and its
    // gigabyte of memory) comes and goes between two of opscope's workloads.
    for (int t : thread_counts) {
      NumThreadsScope nt(t);
      for (const Workload& w : workloads) {
        double& best = ours[t].try_emplace(w.name, -1.0).first->second;
        if (w.algos.empty()) {
          keep_best(best, time_opscope(w, repeats));
          continue;
        }
        for (const std::string& a : w.algos) {
          if (a == "onednn" && !cpu::onednn_available()) continue;  // "oneDNN: not available" below says why
          const double s = time_opscope(w, repeats, a);
          if (s > 0 && (best <= 0 || s < best)) best_algo[t][w.name] = a;
          keep_best(best, s);
        }
      }
    }
    const bool epoch_round = with_epoch && epoch_data && round < kEpochRounds;
    for (int t : epoch_round ? thread_counts : std::vector<int>{}) {
      NumThreadsScope nt(t);
      Workspace ws;
      WorkspaceScope scope(ws);
      keep_best(epoch_ours.try_emplace(t, -1.0).first->second, run_opscope_epoch(ws).epoch_s);
    }
    for (int t : names.empty() ? std::vector<int>{} : thread_counts) {
      TorchRun r = run_torch(t, repeats, names);
      if (round == 0 || !theirs[t].available) {
        theirs[t] = std::move(r);
      } else if (r.available) {
        for (auto& [name, s] : r.seconds) keep_best(theirs[t].seconds[name], s);
      }
    }
    for (int t : epoch_round ? thread_counts : std::vector<int>{})
      keep_best(epoch_theirs.try_emplace(t, -1.0).first->second, run_torch_epoch(t, reference_openblas_core()).epoch_s);
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the machine settles before the next round
  }

  std::printf(
      "\n== opscope vs PyTorch: median time per step (%d repeats, after 3 warm-up runs; best of %d rounds) ==\n",
      repeats, rounds);
  std::printf("%-48s %7s %12s %12s %9s %8s %8s\n", "workload", "threads", "opscope ms", "PyTorch ms", "ratio", "target",
              "verdict");
  for (const Workload& w : workloads)
    for (int t : thread_counts) {
      const TorchRun& tr = theirs[t];
      const double p = tr.available && tr.seconds.count(w.name) ? tr.seconds.at(w.name) : -1;
      std::string label = w.label;
      if (best_algo[t].count(w.name)) label += " [" + best_algo[t][w.name] + "]";
      print_row(label, t, ours[t][w.name], p, w.target);
    }
  if (with_epoch && !epoch_data)
    std::printf("%-48s %7s %12s  (dataset-fashion-mnist is not installed)\n", kEpochLabel, "-", "not run");
  else if (with_epoch)
    for (int t : thread_counts)
      print_row(kEpochLabel, t, epoch_ours[t], epoch_theirs.count(t) ? epoch_theirs[t] : -1, kEpochTarget);
  if (with_epoch)
    std::printf("  epoch: the training loop of assets/examples/fashion_mnist_cnn.ops, one time (best of %d rounds)\n",
                std::min(rounds, kEpochRounds));
  std::printf("  [algo]: opscope's fastest conv2d algorithm of the row (each timed: im2col, winograd, onednn)\n");

  for (const Workload& w : workloads)
    if (w.name == "transformer") print_block_gemms(thread_counts, rounds);

  std::printf("\nopscope: %s\n", cpu_description().c_str());
  for (int t : names.empty() ? std::vector<int>{} : thread_counts) {  // the epoch's script reports no libraries
    const TorchRun& tr = theirs[t];
    if (!tr.available) {
      std::printf("PyTorch (%d thread%s): %s\n", t, t == 1 ? "" : "s", tr.why.c_str());
      continue;
    }
    const nlohmann::json& i = tr.info;
    const nlohmann::json blas = i.value("blas", nlohmann::json::object());
    std::printf(
        "PyTorch %s (%d thread%s): %s kernels (ATen CPU capability), oneDNN %s for conv; BLAS: %s, %s kernels "
        "(%s)\n",
        i.value("torch", "?").c_str(), i.value("threads", 0), i.value("threads", 0) == 1 ? "" : "s",
        i.value("isa", "?").c_str(), i.value("mkldnn", false) ? "on" : "off",
        blas.value("config", blas.value("library", std::string("?"))).c_str(),
        blas.value("kernels", std::string("?")).c_str(), blas.value("library", std::string("?")).c_str());
  }
  if (const char* user_core = std::getenv("OPENBLAS_CORETYPE"))
    std::printf(
        "OPENBLAS_CORETYPE=%s was set in the environment: PyTorch's OpenBLAS and opscope's `blas` ran %s "
        "kernels; opscope's default GEMM: %s.\n",
        user_core, user_core, cpu::default_gemm_description().c_str());
  else
    std::printf(
        "PyTorch ran with OPENBLAS_CORETYPE=%s, the kernels of opscope's own OpenBLAS calls on this CPU "
        "(Debian's OpenBLAS 0.3.21 takes its SSE3 kernels on CPUs newer than itself).\n",
        reference_openblas_core().c_str());
  return 0;
}
