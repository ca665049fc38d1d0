// The session stays bounded: lesson 3's training loop (w = param(detach(w - lr * w.grad)))
// on an MLP 784-256-256-10 (1.0 MiB of parameters), batch 64, run for 10,000 steps in one
// statement, against the same loop run for 10 steps. Each run is a fresh process (fork), so
// its peak resident memory is its own. Peaks are the tracker's real bytes; "nodes" is the
// most the graph held at once (sampled every executor step) and what it held at the end.
// Run: ./build/bench_soak [STEPS]   (default 10000; the references are 10 steps and STEPS/2)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "bench/bench_util.h"
#include "core/workspace.h"

using namespace opscope;
using namespace opscope::bench;

namespace {

std::string training_loop(int steps) {
  return ":seed 0\n"
         "x = randn(64, 784)\n"
         "t = randn(64, 10)\n"
         "w1 = param(randn(784, 256) * 0.05)\n"
         "w2 = param(randn(256, 256) * 0.05)\n"
         "w3 = param(randn(256, 10) * 0.05)\n"
         "for i in range(" +
         std::to_string(steps) +
         "):\n"
         "    loss = mse_loss(relu(relu(x @ w1) @ w2) @ w3, t)\n"
         "    backward(loss)\n"
         "    w1 = param(detach(w1 - 0.01 * w1.grad))\n"
         "    w2 = param(detach(w2 - 0.01 * w2.grad))\n"
         "    w3 = param(detach(w3 - 0.01 * w3.grad))\n";
}

struct Result {
  int steps = 0;
  bool ok = false;
  double seconds = 0;
  int64_t peak_total = 0, peak_parameter = 0, peak_gradient = 0;
  int64_t max_nodes = 0, end_nodes = 0, dropped_nodes = 0, dropped_iterations = 0;
  int64_t undo_entries = 0;
  double loss = 0;
  long max_rss_kb = 0;
};

// In the child: runs the loop, writes the numbers to `fd`.
void run_child(int steps, int fd) {
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session session(ws);
  Result r;
  r.steps = steps;
  int64_t max_nodes = 0;
  ws.executor().add_listener([&](const StepEvent&) {
    max_nodes = std::max<int64_t>(max_nodes, static_cast<int64_t>(ws.graph().node_count()));
  });
  std::ostringstream out, err;
  ws.tracker().reset_peak();
  const double t0 = now_s();
  r.ok = session.run(training_loop(steps) + "print(loss.item())\n", "<soak>", out, err);
  r.seconds = now_s() - t0;
  if (!r.ok) std::fprintf(stderr, "%s", err.str().c_str());
  r.loss = std::atof(out.str().c_str());
  auto& tr = ws.tracker();
  r.peak_total = tr.peak_total();
  r.peak_parameter = tr.peak(MemCategory::parameter);
  r.peak_gradient = tr.peak(MemCategory::gradient);
  r.max_nodes = max_nodes;
  r.end_nodes = static_cast<int64_t>(ws.graph().node_count());
  r.dropped_nodes = ws.graph().drops().nodes;
  r.dropped_iterations = session.interpreter().last_loop().dropped_iterations;
  r.undo_entries = static_cast<int64_t>(session.interpreter().statement_undo().peak_entries());
  (void)!write(fd, &r, sizeof r);
}

Result run(int steps) {
  int pipefd[2];
  if (pipe(pipefd) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    run_child(steps, pipefd[1]);
    _exit(0);
  }
  close(pipefd[1]);
  Result r;
  if (read(pipefd[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) r.ok = false;
  close(pipefd[0]);
  int status = 0;
  struct rusage use {};
  wait4(pid, &status, 0, &use);
  r.max_rss_kb = use.ru_maxrss;
  return r;
}

void print_row(const Result& r) {
  std::printf("%8d %8.2f %12s %12s %12s %10lld %9lld %12lld %11lld %11.1f  %s\n", r.steps, r.seconds,
              bytes_str(r.peak_total).c_str(), bytes_str(r.peak_parameter).c_str(), bytes_str(r.peak_gradient).c_str(),
              (long long)r.max_nodes, (long long)r.end_nodes, (long long)r.dropped_nodes,
              (long long)r.dropped_iterations, static_cast<double>(r.max_rss_kb) / 1024.0, r.ok ? "" : "FAILED");
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::max(11, std::atoi(argv[1])) : 10000;
  print_build_info();
  std::printf("\nlesson 3's training loop, MLP 784-256-256-10 (1.0 MiB of parameters), batch 64, one statement\n");
  std::printf("%8s %8s %12s %12s %12s %10s %9s %12s %11s %11s\n", "steps", "time (s)", "peak total", "peak params",
              "peak grads", "max nodes", "nodes end", "dropped", "iters gone", "max RSS MiB");
  const Result small = run(10);
  print_row(small);
  const Result half = run(steps / 2);
  print_row(half);
  const Result big = run(steps);
  print_row(big);
  const double peak_ratio =
      static_cast<double>(big.peak_total) / static_cast<double>(std::max<int64_t>(1, small.peak_total));
  const double rss_ratio =
      static_cast<double>(big.max_rss_kb) / static_cast<double>(std::max<long>(1, half.max_rss_kb));
  const bool nodes_bounded = big.max_nodes <= small.max_nodes + static_cast<int64_t>(4 * lang::kTapeCheckMin);
  std::printf("\nclaim: %d steps peak within 5%% of 10 steps (tracker): %.3f x -> %s\n", steps, peak_ratio,
              verdict(big.ok && peak_ratio <= 1.05));
  // The process keeps fixed-size windows (the tracker's last 16384 timeline points, the loop's
  // range list, the allocator's cache): resident memory grows until they are full, then not.
  std::printf("claim: resident memory stops growing: %d steps %.3f x %d steps -> %s (10 steps: %.1f MiB)\n", steps,
              rss_ratio, steps / 2, verdict(big.ok && rss_ratio <= 1.05),
              static_cast<double>(small.max_rss_kb) / 1024.0);
  std::printf("claim: node count bounded: at most %lld nodes held (10 steps: %lld) -> %s\n", (long long)big.max_nodes,
              (long long)small.max_nodes, verdict(big.ok && nodes_bounded));
  std::printf(
      "the statements' undo log held at most %lld entries (variables, .grad of leaves; dead leaves are compacted)\n",
      (long long)big.undo_entries);
  return big.ok && peak_ratio <= 1.05 && nodes_bounded ? 0 : 1;
}
