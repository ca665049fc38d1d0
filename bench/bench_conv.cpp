// conv2d's five algorithms on one ResNet-like layer (N=8, C=64→64, 56×56, 3×3, padding 1,
// float32): time, GFLOP/s (of the direct 2·MACs count), multiplications and workspace from the
// op's cost, im2col against naive, winograd and onednn against im2col; then forward+backward of
// the fastest algorithm (its backward ops run their default, im2col) against PyTorch's CPU conv
// (oneDNN) in the same run, one thread.
// Run: ./build/bench_conv   (prints tables; exit code 0 whatever the numbers)
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "bench/bench_util.h"
#include "core/workspace.h"
#include "ops/onednn_conv.h"

using namespace opscope;
using namespace opscope::bench;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const float *pa = a.data<float>(), *pb = b.data<float>();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, static_cast<double>(std::fabs(pa[i] - pb[i])));
  return m;
}

// PyTorch forward+backward seconds (median); -1 when torch is missing, -2 when the script failed.
double torch_fwd_bwd(int N, int C, int K, int H, int R, int pad) {
  if (std::system("/usr/bin/python3 -c \"import torch\" >/dev/null 2>&1") != 0) return -1;
  char cmd[2048];
  std::snprintf(cmd, sizeof cmd,
                "/usr/bin/python3 -c \"import torch, time\n"
                "torch.set_num_threads(1)\n"
                "x = torch.randn(%d, %d, %d, %d, requires_grad=True)\n"
                "w = torch.randn(%d, %d, %d, %d, requires_grad=True)\n"
                "def f():\n"
                "    y = torch.nn.functional.conv2d(x, w, padding=%d)\n"
                "    y.backward(torch.ones_like(y))\n"
                "f()\n"
                "ts = []\n"
                "for i in range(5):\n"
                "    t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)\n"
                "ts.sort(); print(ts[len(ts) // 2])\" 2>/dev/null",
                N, C, H, H, K, C, R, R, pad);
  FILE* p = popen(cmd, "r");
  if (!p) return -2;
  double t = -2;
  if (std::fscanf(p, "%lf", &t) != 1) t = -2;
  pclose(p);
  return t;
}

}  // namespace

int main() {
  print_build_info();
  Workspace ws;
  WorkspaceScope scope(ws);
  const OpDef& op = OpRegistry::instance().get("conv2d");
  // The kernel lab's default layer (ops/conv.cpp, `opscope bench conv2d`): one list of sizes for both.
  const GradcheckCase layer = op.lab.make(op.lab.defaults);
  const Shape x_shape = layer.inputs[0].shape, w_shape = layer.inputs[1].shape;
  const int64_t N = x_shape[0], C = x_shape[1], H = x_shape[2], K = w_shape[0], R = w_shape[2];
  const AttrMap attrs = layer.attrs;
  const Attrs resolved = op.resolve(attrs);
  const int64_t pad = resolved.ints("padding")[0];
  Tensor x = random_tensor(x_shape, 1), w = random_tensor(w_shape, 2);
  Tensor x1 = random_tensor({1, C, H, x_shape[3]}, 3);
  const std::vector<TensorMeta> in = {{x.shape(), DType::f32}, {w.shape(), DType::f32}};
  const std::vector<TensorMeta> out = ws.infer(op, in, resolved);
  const double direct_flops = op.cost(in, out, resolved, "naive").flops;

  std::printf("\n== conv2d float32, x %s, w %s, padding %lld (%.2f GFLOP direct) ==\n", shape_str(x_shape).c_str(),
              shape_str(w_shape).c_str(), static_cast<long long>(pad), direct_flops * 1e-9);
  std::printf("%-10s %12s %10s %16s %14s %14s %12s\n", "algo", "time (ms)", "GFLOP/s", "multiplications",
              "ws (cost, MB)", "ws (peak, MB)", "max |diff|");
  std::map<std::string, double> t;
  Tensor y_ref;
  {
    NoGradGuard ng;
    y_ref = ws.call("conv2d", {x, w}, attrs, "im2col");
    for (const std::string algo : {"naive", "im2col", "winograd", "fft", "onednn"}) {
      if (algo == "onednn" && !cpu::onednn_available()) {
        std::printf("%-10s %s\n", "onednn", ("not run: oneDNN " + cpu::onednn_description()).c_str());
        continue;
      }
      const bool scaled = algo == "naive";  // seven scalar loops: timed on N=1, scaled ×8
      const Tensor& xin = scaled ? x1 : x;
      ws.tracker().reset_peak();
      double s = median_time(
          [&] {
            ws.reset_graph();
            ws.call("conv2d", {xin, w}, attrs, algo);
          },
          scaled ? 1 : 5, scaled ? 0 : 1);
      if (scaled) s *= static_cast<double>(N);  // (N=1 timed)
      t[algo] = s;
      const double peak_ws = static_cast<double>(ws.tracker().peak(MemCategory::workspace));
      const Cost cost = op.cost(in, out, resolved, algo);
      double diff = 0;
      if (!scaled) diff = max_abs_diff(ws.call("conv2d", {x, w}, attrs, algo), y_ref);
      else {
        Tensor a = ws.call("conv2d", {x1, w}, attrs, "naive"), b = ws.call("conv2d", {x1, w}, attrs, "im2col");
        diff = max_abs_diff(a, b);
      }
      ws.reset_graph();
      std::printf("%-10s %9.1f%s %10.1f %16.3e %14.2f %14s %12.1e\n", algo.c_str(), s * 1e3, scaled ? " *" : "  ",
                  direct_flops / s * 1e-9, cost.multiplications, cost.workspace_bytes / 1048576.0,
                  scaled ? "(N=1)" : std::to_string(peak_ws / 1048576.0).substr(0, 6).c_str(), diff);
    }
  }
  std::printf("  * naive timed on N=1 and scaled ×%lld (the seven loops take seconds on the full batch)\n",
              static_cast<long long>(N));
  std::printf("  GFLOP/s counts the direct 2·N·K·OH·OW·C·R·S for every algorithm (effective rate)\n");
  const double mul_ratio =
      op.cost(in, out, resolved, "im2col").multiplications / op.cost(in, out, resolved, "winograd").multiplications;
  std::printf("  multiplications im2col / winograd: %.2f× (F(2×2, 3×3): 36 → 16 per 2×2 output tile)\n", mul_ratio);

  std::printf("\n%-44s %12s %12s %8s\n", "measure", "measured", "target", "verdict");
  const double speedup = t["naive"] / t["im2col"];
  std::printf("%-44s %11.1f× %12s %8s\n", "im2col speed-up over naive", speedup, ">= 20×", verdict(speedup >= 20));
  const double wi = t["winograd"] / t["im2col"];
  std::printf("%-44s %11.2f× %12s %8s\n", "winograd time / im2col time", wi, "<= 1.5×", verdict(wi <= 1.5));
  std::printf("%-44s %11.2f× %12s\n", "fft time / im2col time (fft pays off for large kernels)", t["fft"] / t["im2col"],
              "");
  if (t.count("onednn"))
    std::printf("%-44s %11.2f× %12s\n", "onednn time / im2col time", t["onednn"] / t["im2col"], "");

  // Forward + backward of the fastest algorithm (backward: conv2d_backward_input/_weight, default).
  std::string best = "im2col";
  for (const char* a : {"winograd", "fft", "onednn"})
    if (t.count(a) && t[a] < t[best]) best = a;
  Tensor xp = random_tensor({N, C, H, H}, 4).set_requires_grad(true);
  Tensor wp = random_tensor({K, C, R, R}, 5).set_requires_grad(true);
  Tensor dy = Tensor::full(out[0].shape, 1.0, DType::f32, MemCategory::input);
  const double fb = median_time(
      [&] {
        ws.reset_graph();
        ws.zero_grad({xp, wp});
        Tensor y = ws.call("conv2d", {xp, wp}, attrs, best);
        ws.backward(y, dy);
      },
      5, 1);
  ws.reset_graph();
  std::printf("\n== forward + backward (dx and dw), algo %s, backward ops %s ==\n", best.c_str(),
              OpRegistry::instance().get("conv2d_backward_input").default_algorithm().c_str());
  std::printf("%-44s %9.1f ms  (%.1f GFLOP/s of 3 × direct)\n", "opscope", fb * 1e3, 3 * direct_flops / fb * 1e-9);
  const double torch = torch_fwd_bwd(N, C, K, H, R, pad);
  if (torch == -2) {
    std::printf("%-44s reference failed to run (torch imports, but the timing script did not print)\n",
                "PyTorch CPU conv2d, 1 thread");
  } else if (torch < 0) {
    std::printf("%-44s reference not installed (apt-get install python3-torch)\n", "PyTorch CPU conv2d, 1 thread");
  } else {
    std::printf("%-44s %9.1f ms\n", "PyTorch CPU conv2d, 1 thread", torch * 1e3);
    std::printf("%-44s %11.2f× %12s %8s\n", "opscope / PyTorch", fb / torch, "<= 2×", verdict(fb / torch <= 2));
  }
  return 0;
}
