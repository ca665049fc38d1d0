// Static mode against dynamic mode, measured in one run (issue 4's claims):
//  1. MLP 784-256-256-10, batch 64, one training step: peak memory of dynamic mode vs static
//     mode with and without the memory plan (the tracker's real numbers), and recomputation
//     (every other activation): activation bytes held into backward and extra FLOPs.
//  2. fuse_elementwise on gelu(x*w + b) over 4096×4096: time and bytes moved, fused vs not.
//  3. Compile time of a 1000-node graph.
#include <cstdio>

#include "bench/bench_util.h"
#include "core/program.h"
#include "core/program_run.h"
#include "core/workspace.h"

using namespace opscope;
using namespace opscope::bench;

namespace {

struct Mlp {
  Tensor w1, b1, w2, b2, w3, b3;
  std::vector<Tensor> all() const { return {w1, b1, w2, b2, w3, b3}; }
};

Tensor param_tensor(const Shape& s, uint64_t seed, double scale) {
  Tensor t = random_tensor(s, seed, MemCategory::input);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(p[i] * scale);
  t.set_requires_grad(true);
  return t;
}

Mlp make_mlp() {
  Mlp m;
  m.w1 = param_tensor({784, 256}, 1, 0.05);
  m.b1 = param_tensor({256}, 2, 0.0);
  m.w2 = param_tensor({256, 256}, 3, 0.05);
  m.b2 = param_tensor({256}, 4, 0.0);
  m.w3 = param_tensor({256, 10}, 5, 0.05);
  m.b3 = param_tensor({10}, 6, 0.0);
  return m;
}

Tensor mlp_loss(Workspace& ws, const Mlp& m, const Tensor& x, const Tensor& y) {
  Tensor h1 = ws.call("relu", {ws.call("add", {ws.call("matmul", {x, m.w1}), m.b1})});
  Tensor h2 = ws.call("relu", {ws.call("add", {ws.call("matmul", {h1, m.w2}), m.b2})});
  Tensor logits = ws.call("add", {ws.call("matmul", {h2, m.w3}), m.b3});
  return ws.call("cross_entropy", {logits, y});
}

void sgd_in_place(const Mlp& m, float lr) {
  for (auto& p : m.all()) {
    float* w = p.data<float>();
    const float* g = p.grad().data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) w[i] -= lr * g[i];
  }
}

void clear_grads(const Mlp& m) {
  for (auto& p : m.all()) p.set_grad(Tensor());
}

struct Row {
  std::string name;
  int64_t peak = 0, peak_no_params = 0, held = 0;
  double flops = 0;
};

void print_row(const Row& r, const Row& ref) {
  std::printf("%-44s %12s %9.0f%% %14s %9.0f%% %12s %10.1f M\n", r.name.c_str(), bytes_str(r.peak).c_str(),
              100.0 * static_cast<double>(r.peak) / static_cast<double>(ref.peak), bytes_str(r.peak_no_params).c_str(),
              100.0 * static_cast<double>(r.peak_no_params) / static_cast<double>(ref.peak_no_params),
              bytes_str(r.held).c_str(), r.flops / 1e6);
}

void bench_mlp_memory() {
  std::printf("\n1. MLP 784-256-256-10, batch 64, one training step (forward, backward, SGD update)\n");
  Workspace ws;
  WorkspaceScope scope(ws);
  Mlp m = make_mlp();
  Tensor x = random_tensor({64, 784}, 7);
  std::vector<int64_t> labels(64);
  for (int i = 0; i < 64; ++i) labels[static_cast<size_t>(i)] = i % 10;
  Tensor y = Tensor::from_vector<int64_t>(labels, {64}, DType::i64);
  MemoryTracker& tr = ws.tracker();
  const int64_t params = tr.live(MemCategory::parameter);

  // Dynamic: the tape, backward(), then the update.
  Row dyn{"dynamic (eager: tape + backward + update)"};
  {
    tr.reset_peak();
    Tensor loss = mlp_loss(ws, m, x, y);
    dyn.held = tr.live(MemCategory::saved);
    ws.backward(loss);
    sgd_in_place(m, 0.01f);
    dyn.peak = tr.peak_total();
    dyn.peak_no_params = dyn.peak - params;
    double f = 0;
    for (auto& n : ws.graph().nodes()) f += node_cost(ws.graph(), n).flops;
    dyn.flops = f;
    clear_grads(m);
    ws.reset_graph();
  }
  // Static: the same function traced on placeholders.
  Tensor loss_sym;
  {
    StaticModeGuard sm(ws, true);
    Tensor xs = ws.placeholder("x", {64, 784}, DType::f32);
    Tensor ys = ws.placeholder("y", {64}, DType::i64);
    loss_sym = mlp_loss(ws, m, xs, ys);
  }
  const int loss_value = ws.value_of(loss_sym);
  auto run_static = [&](const std::string& name, CompileOptions opt) {
    opt.fetch = {loss_value};
    auto p = compile_program(ws, opt);
    std::unordered_map<int, Tensor> feeds;
    for (int v : p->placeholders) feeds[v] = p->graph.value(v).name == "x" ? x : y;
    tr.reset_peak();
    {
      ProgramRun run(ws, p, feeds);
      run.run_all();
      if (!opt.sgd_lr) sgd_in_place(m, 0.01f);
    }
    Row r{name};
    r.peak = tr.peak_total();
    r.peak_no_params = r.peak - params;
    r.held = p->held_activation_bytes();
    r.flops = p->flops();
    clear_grads(m);
    return r;
  };
  CompileOptions naive;
  naive.disabled = {"plan_memory"};
  CompileOptions planned;
  CompileOptions training = planned;
  training.sgd_lr = 0.01;
  CompileOptions recompute = training;
  recompute.recompute.kind = RecomputePolicy::every_k;
  recompute.recompute.k = 2;
  std::vector<Row> rows = {dyn, run_static("static, no plan_memory (a buffer per value)", naive),
                           run_static("static + plan_memory (.grad kept)", planned),
                           run_static("static + plan_memory + SGD in the graph", training),
                           run_static("  ... + recompute every 2nd activation", recompute)};
  std::printf("%-44s %12s %10s %14s %10s %12s %12s\n", "mode", "peak", "vs dyn", "peak − params", "vs dyn", "act. held",
              "FLOPs");
  for (auto& r : rows) print_row(r, dyn);
  const Row& best = rows[3];
  const double ratio_total = static_cast<double>(best.peak) / static_cast<double>(dyn.peak);
  const double ratio_step = static_cast<double>(best.peak_no_params) / static_cast<double>(dyn.peak_no_params);
  std::printf(
      "claim: static + plan_memory peak ≤ 60%% of dynamic: %.0f%% of the whole peak, %.0f%% of the step's own memory "
      "(parameters, %s, excluded) → %s\n",
      100 * ratio_total, 100 * ratio_step, bytes_str(params).c_str(), verdict(ratio_step <= 0.60));
  const Row &base = rows[3], &rc = rows[4];
  const double held_drop = 1.0 - static_cast<double>(rc.held) / static_cast<double>(base.held);
  const double extra = rc.flops / base.flops - 1.0;
  std::printf(
      "claim: recompute (every other layer) cuts activation bytes ≥ 40%% for ≤ 35%% more FLOPs: -%.0f%% bytes, "
      "+%.0f%% FLOPs → %s\n",
      100 * held_drop, 100 * extra, verdict(held_drop >= 0.40 && extra <= 0.35));
}

void bench_fusion() {
  std::printf("\n2. fuse_elementwise on y = gelu(x*w + b), x 4096×4096 float32 (w, b rows broadcast)\n");
  Workspace ws;
  WorkspaceScope scope(ws);
  const int64_t n = 4096;
  Tensor x = random_tensor({n, n}, 11);
  Tensor w = random_tensor({n}, 12), b = random_tensor({n}, 13);
  Tensor ysym;
  {
    StaticModeGuard sm(ws, true);
    Tensor xs = ws.placeholder("x", {n, n}, DType::f32);
    ysym = ws.call("gelu", {ws.call("add", {ws.call("mul", {xs, w}), b})});
  }
  const int yv = ws.value_of(ysym);
  auto time_program = [&](bool fuse, double& bytes, Tensor& out) {
    CompileOptions opt;
    opt.fetch = {yv};
    opt.gradients = false;
    if (!fuse) opt.disabled = {"fuse_elementwise"};
    auto p = compile_program(ws, opt);
    bytes = p->bytes_moved();
    std::unordered_map<int, Tensor> feeds{{p->placeholders.at(0), x}};
    return median_time(
        [&] {
          ProgramRun run(ws, p, feeds);
          run.run_all();
          out = run.results()[0];
        },
        5, 1);
  };
  double bytes_plain = 0, bytes_fused = 0;
  Tensor y_plain, y_fused;
  const double t_plain = time_program(false, bytes_plain, y_plain);
  const double t_fused = time_program(true, bytes_fused, y_fused);
  double maxdiff = 0;
  for (int64_t i = 0; i < y_plain.numel(); i += 997)
    maxdiff = std::max(maxdiff, std::fabs(y_plain.get(i) - y_fused.get(i)));
  std::printf("%-28s %10s %14s %12s\n", "program", "time", "bytes moved", "GB/s");
  std::printf("%-28s %8.1f ms %14s %12.1f\n", "unfused (mul, add, gelu)", t_plain * 1e3,
              bytes_str(static_cast<int64_t>(bytes_plain)).c_str(), bytes_plain / t_plain / 1e9);
  std::printf("%-28s %8.1f ms %14s %12.1f\n", "fused (mul, add, gelu)", t_fused * 1e3,
              bytes_str(static_cast<int64_t>(bytes_fused)).c_str(), bytes_fused / t_fused / 1e9);
  std::printf("max |fused − unfused| (sampled): %.2e\n", maxdiff);
  std::printf("claim: fused ≥ 1.5× faster than unfused: %.2f× → %s\n", t_plain / t_fused,
              verdict(t_plain / t_fused >= 1.5));
}

void bench_compile_time() {
  std::printf("\n3. compile time of a 1000-node graph (250 layers of h = tanh(h @ w + b) * 0.5)\n");
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor loss;
  {
    StaticModeGuard sm(ws, true);
    Tensor h = ws.placeholder("x", {8, 16}, DType::f32);
    Tensor half = Tensor::scalar(0.5);
    for (int i = 0; i < 250; ++i) {
      Tensor w = param_tensor({16, 16}, 100 + static_cast<uint64_t>(i), 0.25);
      Tensor b = param_tensor({16}, 1000 + static_cast<uint64_t>(i), 0.1);
      h = ws.call("mul", {ws.call("tanh", {ws.call("add", {ws.call("matmul", {h, w}), b})}), half});
    }
    loss = ws.call("sum", {h});
  }
  const int lv = ws.value_of(loss);
  size_t nodes_fwd = 0, nodes_all = 0;
  CompileOptions fwd;
  fwd.fetch = {lv};
  fwd.gradients = false;
  const double t_fwd = median_time([&] { nodes_fwd = compile_program(ws, fwd)->schedule.size(); }, 5, 1);
  CompileOptions train;
  train.fetch = {lv};
  const double t_train = median_time([&] { nodes_all = compile_program(ws, train)->schedule.size(); }, 5, 1);
  std::printf("%-46s %8s %10s\n", "program", "nodes", "compile");
  std::printf("%-46s %8zu %7.1f ms\n", "forward only (1001 traced nodes, every pass)", nodes_fwd, t_fwd * 1e3);
  std::printf("%-46s %8zu %7.1f ms\n", "with autodiff (+ backward graph, every pass)", nodes_all, t_train * 1e3);
  std::printf("claim: compiling a 1000-node graph takes ≤ 50 ms: %.1f ms (forward), %.1f ms (with its backward) → %s\n",
              t_fwd * 1e3, t_train * 1e3, verdict(t_fwd <= 0.050));
}

}  // namespace

int main() {
  print_build_info();
  bench_mlp_memory();
  bench_fusion();
  bench_compile_time();
  return 0;
}
