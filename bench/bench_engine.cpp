// The engine's measured claims: dispatch overhead, matmul against Eigen, elementwise and
// softmax against copy bandwidth, and the MLP's memory against a hand count.
// Run: ./build/bench_engine   (prints tables; exit code 0 whatever the numbers)
#include <Eigen/Dense>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "bench/bench_util.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/workspace.h"
#include "ops/cpu/kernels.h"
#include "ops/gemm.h"

using namespace opscope;
using namespace opscope::bench;

namespace {

void bench_dispatch(Workspace& ws) {
  std::printf("\n== Dispatch overhead (1-element float32 add, autograd on) ==\n");
  const OpDef& add = OpRegistry::instance().get("add");
  const Attrs none = add.resolve({});
  Tensor a = random_tensor({1}, 1).set_requires_grad(true), b = random_tensor({1}, 2).set_requires_grad(true);
  const int kCalls = 2000;
  std::vector<double> per_op;
  for (int r = 0; r < 31; ++r) {
    ws.reset_graph();
    double t0 = now_s();
    for (int i = 0; i < kCalls; ++i) ws.call_multi(add, {a, b}, none);
    per_op.push_back((now_s() - t0) / kCalls);
  }
  std::sort(per_op.begin(), per_op.end());
  const double op_ns = per_op[per_op.size() / 2] * 1e9;
  // Reference: the same add as a bare loop over the same buffers (what the kernel itself costs).
  float* pa = a.data<float>();
  float* pb = b.data<float>();
  volatile float sink = 0;
  double raw = median_time(
                   [&] {
                     for (int i = 0; i < kCalls; ++i) sink = sink + pa[0] + pb[0];
                   },
                   31) /
               kCalls * 1e9;

  // A chain of 100 tiny ops, forward and backward.
  Tensor x = random_tensor({1}, 3).set_requires_grad(true);
  Tensor c = Tensor::scalar(0.999f);
  const OpDef& mul = OpRegistry::instance().get("mul");
  const OpDef& tanh = OpRegistry::instance().get("tanh");
  const Attrs tanh_attrs = tanh.resolve({});
  double chain = median_time(
      [&] {
        ws.reset_graph();
        Tensor y = x;
        for (int i = 0; i < 50; ++i) {
          y = ws.call_multi(mul, {y, c}, none)[0];
          y = ws.call_multi(tanh, {y}, tanh_attrs)[0];
        }
        ws.backward(y);
      },
      51, 3);
  std::printf("%-44s %12s %12s %8s\n", "measure", "measured", "target", "verdict");
  std::printf("%-44s %9.0f ns %9s ns %8s\n", "tiny add, median per call", op_ns, "<= 1000", verdict(op_ns <= 1000));
  std::printf("%-44s %9.1f ns %12s\n", "  reference: bare loop doing the same add", raw, "");
  std::printf("%-44s %9.1f x\n", "  engine / bare loop", op_ns / raw);
  std::printf("%-44s %9.0f us %9s us %8s\n", "chain of 100 tiny ops, forward + backward", chain * 1e6, "<= 300",
              verdict(chain * 1e6 <= 300));
  ws.reset_graph();
}

// The engine's matmul algorithms against the libraries called directly on the same buffers,
// at one thread and at all cores: `blas` against OpenBLAS itself (with its own threads), `eigen`
// (built per instruction set) against Eigen compiled into this benchmark for the x86-64-v3
// baseline, i.e. the `eigen` of a build without run-time dispatch.
void bench_matmul(Workspace& ws) {
  std::printf("\n== matmul float32: the engine's algorithms vs the libraries called directly on the same buffers ==\n");
  std::printf("kernels: %s\n", cpu_description().c_str());
  std::printf("%7s %6s %-30s %10s %9s %9s %8s %8s\n", "threads", "n", "algo", "time (ms)", "GFLOP/s", "vs ref",
              "target", "verdict");
  const OpDef& mm = OpRegistry::instance().get("matmul");
  const Attrs none = mm.resolve({});
  const cpu::BlasLibrary* openblas = cpu::blas_available() ? cpu::blas_library() : nullptr;
  NoGradGuard ng;
  std::map<std::string, double> at512;
  const int all = hardware_threads();
  for (int threads : all > 1 ? std::vector<int>{1, all} : std::vector<int>{1}) {
    NumThreadsScope nt(threads);
    for (int64_t n : {256, 512, 1024}) {
      Tensor a = random_tensor({n, n}, 5), b = random_tensor({n, n}, 6);
      Tensor c = Tensor::empty({n, n});
      using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const RowMat> A(a.data<float>(), n, n), B(b.data<float>(), n, n);
      Eigen::Map<RowMat> C(c.data<float>(), n, n);
      const int reps = n <= 256 ? 41 : n <= 512 ? 15 : 7;
      const double flops = 2.0 * n * n * n;
      auto row = [&](const std::string& label, double t, double ref, double target) {
        const bool is_ref = ref <= 0;
        std::printf("%7d %6lld %-30s %10.3f %9.1f %9s %8s %8s\n", threads, (long long)n, label.c_str(), t * 1e3,
                    flops / t / 1e9, is_ref ? "1.00" : std::to_string(ref / t).substr(0, 4).c_str(),
                    target > 0 ? (">= " + std::to_string(target).substr(0, 4)).c_str() : "",
                    is_ref       ? "ref"
                    : target > 0 ? verdict(ref / t >= target)
                                 : "");
      };
      auto engine = [&](const std::string& algo) {
        return median_time(
            [&] {
              ws.reset_graph();
              ws.call_multi(mm, {a, b}, none, algo);
            },
            algo == "naive" ? 3 : reps);
      };
      // The library and the engine's algorithm in turns (see interleaved_medians).
      double direct_blas = 0, t_blas = 0, direct_eigen = 0, t_eigen = 0;
      auto run_blas_direct = [&] {
        const int N = static_cast<int>(n);
        openblas->sgemm(101, 111, 111, N, N, N, 1.f, a.data<float>(), N, b.data<float>(), N, 0.f, c.data<float>(), N);
      };
      auto run_engine = [&](const char* algo) {
        return [&, algo] {
          ws.reset_graph();
          ws.call_multi(mm, {a, b}, none, algo);
        };
      };
      if (openblas) {
        // OpenBLAS's own pool, as a program calling it would use it (opscope calls it single-threaded).
        // Not in turns with opscope's: OpenBLAS's idle workers spin (~0.1 s) after each call and
        // would take a core from opscope's threads, so the two run one after the other, in three
        // rounds, each side keeping its best median: on a shared VM one slow spell (the second
        // vCPU gone for a while) would otherwise decide the ratio.
        for (int round = 0; round < 3; ++round) {
          openblas->set_num_threads(threads);
          const double d = median_time(run_blas_direct, reps);
          openblas->set_num_threads(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its workers go to sleep
          const double t = median_time(run_engine("blas"), reps);
          direct_blas = round == 0 ? d : std::min(direct_blas, d);
          t_blas = round == 0 ? t : std::min(t_blas, t);
        }
        row("OpenBLAS direct", direct_blas, 0, 0);
      } else {
        t_blas = engine("blas");
      }
      row("blas", t_blas, direct_blas, openblas ? 0.9 : 0);
      {
        auto m = interleaved_medians({[&] { C.noalias() = A * B; }, run_engine("eigen")}, reps);
        direct_eigen = m[0];
        t_eigen = m[1];
      }
      if (threads == 1) row("Eigen direct (x86-64-v3 build)", direct_eigen, 0, 0);
      row(std::string("eigen (") + cpu_isa_short_name(cpu::kernels().isa) + ")", t_eigen, direct_eigen,
          threads == 1 && cpu::kernels().isa == CpuIsa::avx512 ? 1.3 : 0);
      if (threads == 1) {
        const double blocked = engine("blocked");
        row("blocked", blocked, direct_eigen, 0);
        if (n == 512) {
          at512["blocked"] = blocked;
          at512["naive"] = engine("naive");
          row("naive", at512["naive"], direct_eigen, 0);
        }
      }
    }
  }
  const double speedup = at512["naive"] / at512["blocked"];
  std::printf("blocked vs naive at 512: %.1fx (target >= 5x) %s\n", speedup, verdict(speedup >= 5));
  std::printf("(Eigen direct runs on one thread: Eigen has no threads without OpenMP.)\n");
  ws.reset_graph();
}

void bench_bandwidth(Workspace& ws) {
  std::printf("\n== Bandwidth-bound ops on 4096x4096 float32, against memcpy measured now ==\n");
  const int64_t n = 4096;
  NoGradGuard ng;
  Tensor a = random_tensor({n, n}, 7), b = random_tensor({n, n}, 8), out = Tensor::empty({n, n});
  const double bytes = static_cast<double>(a.nbytes());
  double copy = median_time([&] { std::memcpy(out.raw_data(), a.raw_data(), static_cast<size_t>(bytes)); }, 9);
  const double copy_gbs = 2 * bytes / copy / 1e9;
  std::printf("%-26s %10s %12s %12s %10s %8s\n", "op", "time (ms)", "bytes moved", "GB/s", "of copy", "verdict");
  std::printf("%-26s %10.2f %12.0f %12.1f %10s %8s\n", "memcpy (reference)", copy * 1e3, 2 * bytes, copy_gbs, "100%",
              "ref");
  struct Case {
    const char* label;
    const char* op;
    std::vector<Tensor> in;
    double traffic;  // bytes read + written at minimum
    AttrMap attrs;
  };
  std::vector<Case> cases = {{"add", "add", {a, b}, 3 * bytes, {}},
                             {"mul", "mul", {a, b}, 3 * bytes, {}},
                             {"relu", "relu", {a}, 2 * bytes, {}},
                             {"sigmoid", "sigmoid", {a}, 2 * bytes, {}},
                             {"gelu (tanh form)", "gelu", {a}, 2 * bytes, {{"approximate", std::string("tanh")}}},
                             {"softmax (stable, rows)", "softmax", {a}, 2 * bytes, {}}};
  for (auto& c : cases) {
    const OpDef& op = OpRegistry::instance().get(c.op);
    Attrs attrs = op.resolve(c.attrs);
    double t = median_time(
        [&] {
          ws.reset_graph();
          ws.call_multi(op, c.in, attrs);
        },
        9, 2);
    const double gbs = c.traffic / t / 1e9;
    std::printf("%-26s %10.2f %12.0f %12.1f %9.0f%% %8s\n", c.label, t * 1e3, c.traffic, gbs, 100 * gbs / copy_gbs,
                verdict(gbs >= 0.5 * copy_gbs));
  }
  ws.reset_graph();
}

// Pooling on the CNN's first activation (64×16×28×28 float32, 2×2 windows, stride 2) against
// memcpy of the input measured in turns with it: bytes moved = what the op must read and write.
void bench_pool(Workspace& ws) {
  std::printf("\n== Pooling on x [64, 16, 28, 28] float32, 2x2 stride 2, against memcpy of x ==\n");
  std::printf("%7s %-30s %10s %12s %9s %9s %8s\n", "threads", "op [algo]", "time (ms)", "bytes moved", "GB/s",
              "of copy", "verdict");
  NoGradGuard ng;
  Tensor x = random_tensor({64, 16, 28, 28}, 11), dy = random_tensor({64, 16, 14, 14}, 12),
         out = Tensor::empty({64, 16, 28, 28});
  const double xb = static_cast<double>(x.nbytes()), yb = static_cast<double>(dy.nbytes());
  const AttrMap k2 = {{"kernel_size", int64_t{2}}};
  AttrMap k2s = k2;
  k2s.push_back({"shape", std::vector<int64_t>{64, 16, 28, 28}});
  struct Case {
    const char* op;
    std::vector<Tensor> in;
    AttrMap attrs;
    double bytes;
  };
  const std::vector<Case> cases = {{"max_pool2d", {x}, k2, xb + yb},
                                   {"max_pool2d_backward", {x, dy}, k2, xb + yb + xb},
                                   {"avg_pool2d", {x}, k2, xb + yb},
                                   {"avg_pool2d_backward", {dy}, k2s, yb + xb}};
  const int all = hardware_threads();
  for (int threads : all > 1 ? std::vector<int>{1, all} : std::vector<int>{1})
    for (const char* algo : {"vectorized", "direct"}) {
      if (threads > 1 && std::string(algo) == "direct") continue;  // the reference loop is single-threaded
      NumThreadsScope nt(threads);
      for (const Case& c : cases) {
        const OpDef& op = OpRegistry::instance().get(c.op);
        const Attrs attrs = op.resolve(c.attrs);
        auto m = interleaved_medians({[&] { std::memcpy(out.raw_data(), x.raw_data(), static_cast<size_t>(xb)); },
                                      [&] {
                                        ws.reset_graph();
                                        ws.call_multi(op, c.in, attrs, algo);
                                      }},
                                     41, 3);
        const double copy_gbs = 2 * xb / m[0] / 1e9, gbs = c.bytes / m[1] / 1e9;
        const std::string label = std::string(c.op) + " [" + algo + "]";
        std::printf("%7d %-30s %10.3f %12.0f %9.1f %8.0f%% %8s\n", threads, label.c_str(), m[1] * 1e3, c.bytes, gbs,
                    100 * gbs / copy_gbs, std::string(algo) == "vectorized" ? verdict(gbs >= 0.5 * copy_gbs) : "");
      }
    }
  std::printf("(memcpy runs on one thread: the target is half of what one core copies)\n");
  ws.reset_graph();
}

void bench_mlp_memory() {
  std::printf("\n== Memory of an MLP 784-256-256-10, batch 64, float32: tracker vs hand count ==\n");
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t B = 64;
  auto p = [](Shape s, uint32_t seed) { return random_tensor(s, seed).set_requires_grad(true); };
  Tensor W1 = p({256, 784}, 11), b1 = p({256}, 12), W2 = p({256, 256}, 13), b2 = p({256}, 14), W3 = p({10, 256}, 15),
         b3 = p({10}, 16);
  Tensor x = random_tensor({B, 784}, 17);
  Tensor y = Tensor::zeros({B}, DType::i64);
  for (int64_t i = 0; i < B; ++i) y.data<int64_t>()[i] = i % 10;
  auto& tr = ws.tracker();
  tr.reset_peak();
  Tensor a1 = ws.call("relu", {ws.call("linear", {x, W1, b1})});
  Tensor a2 = ws.call("relu", {ws.call("linear", {a1, W2, b2})});
  Tensor loss = ws.call("cross_entropy", {ws.call("linear", {a2, W3, b3}), y});
  a1 = Tensor();
  a2 = Tensor();  // only the graph's saved tensors keep them now
  const int64_t f = 4;
  const int64_t hand_params = (256 * 784 + 256 + 256 * 256 + 256 + 10 * 256 + 10) * f;
  const int64_t hand_inputs = B * 784 * f + B * 8;
  // Saved for backward: relu keeps its outputs a1, a2 (also linear's inputs); cross_entropy keeps the logits.
  const int64_t hand_saved = (B * 256 + B * 256 + B * 10) * f;
  const int64_t hand_act = 1 * f;  // the loss
  // Peak activation: while relu runs, its input h (not saved) and its output are both live.
  const int64_t hand_act_peak = 2 * B * 256 * f;
  std::printf("%-34s %14s %14s %8s\n", "after forward", "tracker (B)", "hand count (B)", "match");
  auto row = [](const char* l, int64_t a, int64_t b) {
    std::printf("%-34s %14lld %14lld %8s\n", l, (long long)a, (long long)b, a == b ? "yes" : "NO");
  };
  row("parameters", tr.live(MemCategory::parameter), hand_params);
  row("inputs (x, labels)", tr.live(MemCategory::input), hand_inputs);
  row("activations (live)", tr.live(MemCategory::activation), hand_act);
  row("activations (peak)", tr.peak(MemCategory::activation), hand_act_peak);
  row("saved for backward", tr.live(MemCategory::saved), hand_saved);
  ws.backward(loss);
  std::printf("%-34s\n", "after backward");
  row("saved for backward", tr.live(MemCategory::saved), 0);
  row("gradients (.grad of 6 parameters)", tr.live(MemCategory::gradient), hand_params);
  std::printf("peak total during the step: %s (training); parameters alone: %s\n", bytes_str(tr.peak_total()).c_str(),
              bytes_str(hand_params).c_str());
}

}  // namespace

// Usage: bench_engine [dispatch|matmul|pool|bandwidth|memory]...  (no argument: all sections)
int main(int argc, char** argv) {
  auto want = [&](const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
      if (std::strcmp(argv[i], section) == 0) return true;
    return false;
  };
  print_build_info();
  Workspace ws;
  WorkspaceScope scope(ws);
  if (want("dispatch")) bench_dispatch(ws);
  if (want("matmul")) bench_matmul(ws);
  if (want("pool")) bench_pool(ws);
  if (want("bandwidth")) bench_bandwidth(ws);
  if (want("memory")) bench_mlp_memory();
  return 0;
}
