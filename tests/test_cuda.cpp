// The CUDA backend checked against the CPU: every op × algorithm with a CUDA kernel, on random
// inputs drawn fresh each run (the seed is printed on failure), odd sizes included, outputs
// poisoned with NaN before the launch (an element a kernel forgets to write fails the test),
// relative error max|gpu − cpu| / max|cpu| against the CPU computing in float64, under the
// tolerance stated with each case. Without a GPU every [cuda] test that needs one prints
// "SKIPPED: no CUDA device" and ctest counts it as skipped.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iostream>
#include <random>
#include <sstream>

#include "app/lang/session.h"
#include "core/device.h"
#include "core/error.h"
#include "core/random.h"
#include "core/workspace.h"
#include "tests/helpers.h"

namespace opscope {
namespace {

bool skip_without_gpu() {
  if (device_available(Device::cuda)) return false;
  std::cout << "SKIPPED: no CUDA device (CUDA built: " << (device_built(Device::cuda) ? "yes" : "no") << ")\n";
  return true;
}

// The simulated GPU (gpusim/) runs the same kernels on every machine where it is built (not in
// the sanitizer builds: ctest then counts its tests as skipped).
bool skip_without_sim() {
  if (device_available(Device::sim)) return false;
  std::cout << "SKIPPED: no CUDA device (" << device_missing_message(Device::sim) << ")\n";
  return true;
}

// The device the case lists run on: cuda in the [cuda] tests, sim in the [sim] tests.
Device g_device_under_test = Device::cuda;
Device dut() { return g_device_under_test; }

uint64_t fresh_seed() {
  static std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Float32 CPU tensors of the core helper's domains, from the test's one stream.
Tensor random_input(const Shape& shape, std::mt19937_64& rng, Domain domain = Domain::normal) {
  return random_tensor(InputSpec{shape, domain}, rng, DType::f32);
}

Tensor random_indices(const Shape& shape, int64_t max, std::mt19937_64& rng) {
  return random_tensor(InputSpec{shape, Domain::index, max}, rng);
}

// Large logits (softmax must not overflow): distinct values spread over ±scale.
Tensor scaled(const Tensor& t, double scale) {
  std::vector<double> v = t.to_vector();
  for (auto& x : v) x *= scale;
  return Tensor::from_vector<double>(v, t.shape(), t.dtype(), MemCategory::input);
}

// Runs op/algo's CUDA kernel directly on outputs filled with NaN (or a sentinel for int64).
std::vector<Tensor> run_poisoned(const OpDef& op, const std::string& algo, const std::vector<Tensor>& cpu_inputs,
                                 const Attrs& attrs) {
  Workspace& ws = current_workspace();
  std::vector<Tensor> ins;
  std::vector<TensorMeta> in_meta;
  for (auto& t : cpu_inputs) {
    ins.push_back(t.to(dut()));
    in_meta.push_back({t.shape(), t.dtype(), dut()});
  }
  const auto out_meta = ws.infer(op, in_meta, attrs);
  std::vector<Tensor> outs;
  for (auto& m : out_meta) {
    Tensor t = Tensor::empty(m.shape, m.dtype, MemCategory::activation, dut());
    t.fill(m.dtype == DType::i64 ? -7777.0 : NAN);
    outs.push_back(t);
  }
  const KernelFn* fn = op.find_kernel(dut(), algo);
  REQUIRE(fn != nullptr);
  KernelCtx ctx{op, ins, attrs, out_meta, outs, ws, MemCategory::activation};
  (*fn)(ctx);
  device_backend(dut())->synchronize();
  return outs;
}

// The CPU's answer in float64 (float inputs cast up, but for those of a dtype of their own), with
// the op's default CPU algorithm.
std::vector<Tensor> cpu_reference(const OpDef& op, const std::vector<Tensor>& cpu_inputs, const Attrs& attrs,
                                  const std::string& cpu_algo, const std::vector<bool>& own_dtype) {
  std::vector<Tensor> ins;
  for (size_t i = 0; i < cpu_inputs.size(); ++i) {
    const Tensor& t = cpu_inputs[i];
    const bool keep = i < own_dtype.size() && own_dtype[i];
    ins.push_back(t.dtype() == DType::f32 && !keep ? t.cast(DType::f64) : t.clone(MemCategory::input));
  }
  NoGradGuard ng;
  return current_workspace().call_multi(op, ins, attrs, cpu_algo);
}

// max |a − ref| / max |ref| (NaN where ref has none: infinity).
double relative_error(const Tensor& gpu, const Tensor& ref) {
  REQUIRE(gpu.shape() == ref.shape());
  const std::vector<double> a = gpu.to_vector(), b = ref.to_vector();
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) continue;
    if (std::isnan(a[i]) || (std::isinf(a[i]) != std::isinf(b[i]))) return INFINITY;
    if (std::isinf(b[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    max_ref = std::max(max_ref, std::fabs(b[i]));
    max_diff = std::max(max_diff, std::fabs(a[i] - b[i]));
  }
  return max_diff / std::max(max_ref, 1e-30);
}

struct Case {
  std::string op, algo;
  std::vector<Tensor> inputs;
  AttrMap attrs;
  double tol;
  std::string note = {};
  std::string cpu_algo = {};  // empty: the op's default on the CPU
  std::vector<bool> own_dtype = {};  // inputs the CPU reference keeps in their dtype (InputSpec::dtype)
};

void check_case(const Case& c, uint64_t seed) {
  const OpDef& op = OpRegistry::instance().get(c.op);
  const Attrs attrs = op.resolve(c.attrs);
  INFO(c.op << " algo=" << c.algo << " (" << c.note << "), seed " << seed << ", tolerance " << c.tol);
  const auto gpu = run_poisoned(op, c.algo, c.inputs, attrs);
  const auto ref = cpu_reference(op, c.inputs, attrs, c.cpu_algo, c.own_dtype);
  REQUIRE(gpu.size() == ref.size());
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double err = relative_error(gpu[i], ref[i]);
    INFO("output " << i << " shape " << shape_str(gpu[i].shape()) << ": relative error " << err);
    CHECK(err <= c.tol);
  }
}

struct Fixture {
  Workspace ws;
  WorkspaceScope scope{ws};
  uint64_t seed = fresh_seed();
  std::mt19937_64 rng{seed};
};

}  // namespace

TEST_CASE("cuda: without a GPU the device says so, and the CPU build says CUDA built: no", "[cuda]") {
  const std::string msg = device_missing_message(dut());
  CHECK(msg == std::string("no CUDA device found (CUDA built: ") + (device_built(dut()) ? "yes" : "no") + ")");
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session session(ws);
  std::ostringstream out, err;
  const bool ok = session.run(":device cuda", "<test>", out, err);
  if (device_available(dut())) {
    CHECK(ok);
    CHECK(out.str().find("new tensors on cuda") != std::string::npos);
  } else {
    CHECK_FALSE(ok);
    CHECK(err.str().find(msg) != std::string::npos);
    std::ostringstream out2, err2;
    CHECK_FALSE(session.run("x = ones(3).to(\"cuda\")", "<test>", out2, err2));
    CHECK(err2.str().find(msg) != std::string::npos);
  }
}

// Registered ops without a CUDA kernel (a clear "no kernel ... on cuda" error when called there).
// A new op must get a CUDA kernel or join this list, so the list stays true.
TEST_CASE("cuda: every op has a CUDA kernel or is on the known list", "[cuda]") {
  if (!device_built(dut())) {
    SUCCEED("CUDA not built");
    return;
  }
  // (Empty since the 3-D convolutions got their CUDA kernels: every op has one.)
  const std::vector<std::string> known_missing = {};
  for (const OpDef* op : OpRegistry::instance().all()) {
    bool any = false;
    for (auto& [key, _] : op->kernels) any = any || key.first == dut();
    const bool listed = std::find(known_missing.begin(), known_missing.end(), op->name) != known_missing.end();
    INFO(op->name);
    CHECK(any != listed);
  }
}

// The simulated GPU registers the same kernels (ops/cuda compiled for it): where nvcc built the
// CUDA backend too, the same algorithms of the same ops on both; elsewhere, ops/cuda's many.
TEST_CASE("sim: every op has the same algorithms on sim as on cuda", "[sim]") {
  if (skip_without_sim()) return;
  size_t sim_kernels = 0;
  for (const OpDef* op : OpRegistry::instance().all()) {
    if (!op->builtin()) continue;
    for (const std::string& algo : op->algorithms) {
      INFO(op->name << " algo=" << algo);
      const bool on_sim = op->find_kernel(Device::sim, algo) != nullptr;
      sim_kernels += on_sim;
      if (device_built(Device::cuda)) CHECK(on_sim == (op->find_kernel(Device::cuda, algo) != nullptr));
    }
  }
  CHECK(sim_kernels > 150);
}

// One case list per op: every case of every op runs in every CUDA algorithm of the op, against
// the CPU in float64. The hand-written tests below add odd and large sizes (vector tails,
// two-stage reductions, block-per-row kernels) and what a case cannot say (running statistics).
// Each case list below runs twice: on the GPU ("cuda: ..." [cuda], skipped without one) and on
// the simulated GPU ("sim: ..." [sim], everywhere): the same kernels, lane by lane on the CPU.
#define DEVICE_TEST_CASE(title, fn)     \
  void fn();                            \
  TEST_CASE("cuda: " title, "[cuda]") { \
    if (skip_without_gpu()) return;     \
    g_device_under_test = Device::cuda; \
    fn();                               \
  }                                     \
  TEST_CASE("sim: " title, "[sim]") {   \
    if (skip_without_sim()) return;     \
    g_device_under_test = Device::sim;  \
    fn();                               \
  }                                     \
  void fn()

DEVICE_TEST_CASE("every op's cases match the CPU in every CUDA algorithm", device_case_1) {
  Fixture f;
  size_t checked = 0;
  for (const OpDef* op : OpRegistry::instance().all()) {
    if (!op->builtin()) continue;
    for (size_t i = 0; i < op->gradcheck.size(); ++i) {
      const GradcheckCase& c = op->gradcheck[i];
      const std::vector<Tensor> ins = make_case_inputs(c, f.seed + i, DType::f32);
      for (const std::string& algo : op->algorithms) {
        if (!op->find_kernel(dut(), algo)) continue;
        const double tol = op->float32_rtol(algo, c.float32_rtol);  // as the op states it
        std::vector<bool> own_dtype;
        for (const InputSpec& s : c.inputs) own_dtype.push_back(s.dtype.has_value());
        check_case({op->name, algo, ins, c.attrs, tol, "case " + std::to_string(i) + ": " + c.note,
                    op->find_kernel(Device::cpu, algo) ? algo : std::string(), own_dtype},
                   f.seed);
        ++checked;
      }
    }
  }
  CHECK(checked > 150);
}

DEVICE_TEST_CASE("elementwise and broadcasting match the CPU", device_case_2) {
  Fixture f;
  auto& r = f.rng;
  const Shape full{37, 129}, row{129}, col{37, 1}, big{3, 1001};  // odd sizes: vector tails
  std::vector<Case> cases;
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum"}) {
    cases.push_back({op, "default", {random_input(full, r), random_input(full, r)}, {}, 1e-6, "same shape"});
    cases.push_back({op, "default", {random_input(full, r), random_input(row, r)}, {}, 1e-6, "broadcast row"});
    cases.push_back({op, "default", {random_input(col, r), random_input(row, r)}, {}, 1e-6, "outer broadcast"});
    cases.push_back({op, "default", {random_input(big, r), random_input(big, r)}, {}, 1e-6, "vec4 with a tail"});
  }
  cases.push_back({"div", "default", {random_input(full, r), random_input(full, r, Domain::away_zero)}, {}, 1e-6, ""});
  cases.push_back({"pow", "default", {random_input(full, r, Domain::positive), random_input(row, r)}, {}, 1e-5, ""});
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    Tensor a = random_input(full, r, Domain::distinct);
    cases.push_back({op, "default", {a, random_input(row, r, Domain::distinct)}, {}, 0, "exact 0/1"});
    cases.push_back({op, "default", {a, a}, {}, 0, "ties"});
  }
  cases.push_back({"where",
                   "default",
                   {random_indices(col, 2, r), random_input(full, r), random_input(row, r)},
                   {},
                   0,
                   "broadcast condition"});
  for (const char* op : {"neg", "exp", "tanh", "sigmoid", "relu", "abs", "sign", "erf"})
    cases.push_back({op, "default", {random_input(big, r)}, {}, 1e-6, "odd size"});
  cases.push_back({"clip", "default", {random_input(big, r)}, {{"min", -0.25}, {"max", 0.5}}, 0, "both bounds"});
  cases.push_back({"clip", "default", {random_indices(big, 9, r)}, {{"min", 2.0}}, 0, "int64, lower bound only"});
  for (const char* op : {"log", "sqrt"})
    cases.push_back({op, "default", {random_input(big, r, Domain::positive)}, {}, 1e-6, ""});
  cases.push_back({"leaky_relu", "default", {random_input(big, r)}, {{"negative_slope", 0.2}}, 1e-6, ""});
  cases.push_back({"gelu", "default", {random_input(big, r)}, {}, 1e-6, "erf"});
  cases.push_back({"gelu", "default", {random_input(big, r)}, {{"approximate", std::string("tanh")}}, 1e-6, "tanh"});
  cases.push_back({"gelu_backward", "default", {random_input(big, r), random_input(big, r)}, {}, 1e-6, "erf"});
  cases.push_back({"gelu_backward",
                   "default",
                   {random_input(big, r), random_input(big, r)},
                   {{"approximate", std::string("tanh")}},
                   1e-6,
                   "tanh"});
  for (const char* op : {"tanh_backward", "sigmoid_backward", "relu_backward"})
    cases.push_back({op, "default", {random_input(big, r), random_input(big, r)}, {}, 1e-6, ""});
  for (auto& c : cases) check_case(c, f.seed);
}

DEVICE_TEST_CASE("reductions (rows, columns, two-stage) match the CPU", device_case_3) {
  Fixture f;
  auto& r = f.rng;
  using V = std::vector<int64_t>;
  const Shape x3{5, 37, 19};
  std::vector<Case> cases;
  for (const char* op : {"sum", "mean", "max", "var"}) {
    const Domain fill = std::string(op) == "max" ? Domain::distinct : Domain::normal;
    // (A sum of signed values can cancel to near zero, where float32's order of summation shows
    // as a large relative error: a single output of thousands of terms is kept well conditioned
    // by positive values, as are the long rows below. Seed 10658104304258099740 once gave 1.3e-4.)
    const Domain long_fill = std::string(op) == "max" ? Domain::distinct : Domain::positive;
    cases.push_back({op, "default", {random_input(x3, r, long_fill)}, {}, 1e-5, "all axes"});
    cases.push_back({op, "default", {random_input(x3, r, fill)}, {{"axes", V{-1}}}, 1e-5, "last axis (rows)"});
    cases.push_back({op,
                     "default",
                     {random_input(x3, r, fill)},
                     {{"axes", V{0}}, {"keepdim", true}},
                     1e-5,
                     "first axis (columns), keepdim"});
    cases.push_back({op, "default", {random_input(x3, r, fill)}, {{"axes", V{0, 2}}}, 1e-5, "axes 0 and 2 (permuted)"});
    cases.push_back(
        {op, "default", {random_input({3, 200003}, r, long_fill)}, {{"axes", V{1}}}, 1e-5, "long rows: two-stage"});
  }
  cases.push_back({"sum",
                   "default",
                   {random_input({(1 << 20) + 3}, r, Domain::positive)},
                   {},
                   1e-5,
                   "a million elements: two-stage"});
  cases.push_back({"var", "default", {random_input(x3, r)}, {{"axes", V{1}}, {"unbiased", true}}, 1e-5, "unbiased"});
  cases.push_back({"sum_to", "default", {random_input(x3, r)}, {{"shape", V{37, 1}}}, 1e-5, "broadcast reduction"});
  for (auto& c : cases) check_case(c, f.seed);
}

DEVICE_TEST_CASE("every matmul version matches the CPU", device_case_4) {
  Fixture f;
  auto& r = f.rng;
  struct Dims {
    Shape a, b;
    const char* note;
  };
  const std::vector<Dims> dims = {{{67, 131}, {131, 45}, "odd sizes"},
                                  {{128, 256}, {256, 64}, "multiples of 4: float4 path"},
                                  {{3, 33, 17}, {3, 17, 29}, "batched"},
                                  {{2, 3, 31, 9}, {9, 40}, "b shared by a batch"},
                                  {{1, 1}, {1, 7}, "1x1"}};
  // float32 versions: error grows like √K of rounding steps; the Tensor Core versions are held to
  // the reduced precision matmul declares.
  const OpDef& matmul = *OpRegistry::instance().find("matmul");
  for (const char* algo :
       {"naive", "tiled", "tiled_conflicting", "tiled_padded", "register_blocked", "cublas", "wmma", "wmma_half"}) {
    for (auto& d : dims)
      check_case(
          {"matmul", algo, {random_input(d.a, r), random_input(d.b, r)}, {}, matmul.float32_rtol(algo, 1e-5), d.note},
          f.seed);
  }
}

DEVICE_TEST_CASE("softmax, log_softmax and softmax_backward match the CPU", device_case_5) {
  Fixture f;
  auto& r = f.rng;
  std::vector<Case> cases;
  for (const char* algo : {"stable", "naive"}) {
    cases.push_back({"softmax", algo, {random_input({33, 37}, r)}, {}, 1e-5, "warp per row", algo});
    cases.push_back({"softmax", algo, {random_input({7, 3001}, r)}, {}, 1e-5, "block per row, online", algo});
    cases.push_back(
        {"softmax", algo, {random_input({5, 11, 13}, r)}, {{"axis", int64_t{1}}}, 1e-5, "middle axis", algo});
  }
  cases.push_back({"softmax",
                   "stable",
                   {scaled(random_input({4, 1025}, r, Domain::distinct), 1500)},
                   {},
                   1e-5,
                   "large logits: no overflow"});
  cases.push_back({"log_softmax", "stable", {random_input({33, 37}, r)}, {}, 1e-5, "warp"});
  cases.push_back({"log_softmax", "stable", {random_input({3, 4099}, r)}, {}, 1e-5, "block"});
  for (const Shape& s : {Shape{33, 37}, Shape{3, 2049}})
    cases.push_back(
        {"softmax_backward", "default", {random_input(s, r, Domain::positive), random_input(s, r)}, {}, 1e-5, ""});
  cases.push_back({"softmax_backward",
                   "default",
                   {random_input({5, 7, 3}, r, Domain::positive), random_input({5, 7, 3}, r)},
                   {{"axis", int64_t{1}}},
                   1e-5,
                   "columns"});
  for (auto& c : cases) check_case(c, f.seed);
}

DEVICE_TEST_CASE("layer_norm (three algorithms) and its backward match the CPU", device_case_6) {
  Fixture f;
  auto& r = f.rng;
  std::vector<Case> cases;
  for (const char* algo : {"welford", "two_pass", "naive"}) {
    cases.push_back({"layer_norm",
                     algo,
                     {random_input({9, 37}, r), random_input({37}, r), random_input({37}, r)},
                     {{"normalized_shape", int64_t{37}}},
                     1e-4,
                     "weight and bias",
                     algo});
    cases.push_back({"layer_norm",
                     algo,
                     {random_input({3, 5, 7, 211}, r)},
                     {{"normalized_shape", std::vector<int64_t>{7, 211}}},
                     1e-4,
                     "two axes, no weight",
                     algo});
    cases.push_back({"layer_norm",
                     algo,
                     {random_input({4, 5000}, r)},
                     {{"normalized_shape", int64_t{5000}}},
                     1e-4,
                     "long rows",
                     algo});
  }
  cases.push_back({"layer_norm_backward",
                   "default",
                   {random_input({9, 37}, r), random_input({9, 37}, r), random_input({37}, r)},
                   {{"normalized_shape", int64_t{37}}},
                   1e-4,
                   "with weight"});
  cases.push_back({"layer_norm_backward",
                   "default",
                   {random_input({6, 5, 301}, r), random_input({6, 5, 301}, r)},
                   {{"normalized_shape", std::vector<int64_t>{5, 301}}},
                   1e-4,
                   "no weight, two axes"});
  for (auto& c : cases) check_case(c, f.seed);
}

DEVICE_TEST_CASE("batch_norm (three algorithms, training and eval) and its backward match the CPU", device_case_7) {
  Fixture f;
  auto& r = f.rng;
  const Shape xs{6, 5, 7, 3};
  for (const char* algo : {"welford", "two_pass", "naive"})
    for (bool training : {true, false}) {
      Tensor x = random_input(xs, r), w = random_input({5}, r), b = random_input({5}, r);
      Tensor rm = random_input({5}, r), rv = random_input({5}, r, Domain::positive);
      const OpDef& bn = OpRegistry::instance().get("batch_norm");
      const Attrs attrs = bn.resolve({{"training", training}});
      INFO(algo << (training ? " training" : " eval") << ", seed " << f.seed);
      // The running statistics change in place: each device gets its own copy.
      Tensor rm_gpu = rm.to(dut()), rv_gpu = rv.to(dut());
      std::vector<Tensor> ins = {x.to(dut()), rm_gpu, rv_gpu, w.to(dut()), b.to(dut())};
      std::vector<TensorMeta> meta;
      for (auto& t : ins) meta.push_back({t.shape(), t.dtype(), dut()});
      auto out_meta = f.ws.infer(bn, meta, attrs);
      std::vector<Tensor> outs = {Tensor::empty(xs, DType::f32, MemCategory::activation, dut())};
      outs[0].fill(NAN);
      KernelCtx ctx{bn, ins, attrs, out_meta, outs, f.ws, MemCategory::activation};
      (*bn.find_kernel(dut(), algo))(ctx);
      Tensor rm64 = rm.cast(DType::f64), rv64 = rv.cast(DType::f64);
      NoGradGuard ng;
      Tensor ref =
          f.ws.call_multi(bn, {x.cast(DType::f64), rm64, rv64, w.cast(DType::f64), b.cast(DType::f64)}, attrs, algo)[0];
      CHECK(relative_error(outs[0], ref) < 1e-4);
      CHECK(relative_error(rm_gpu, rm64) < 1e-5);
      CHECK(relative_error(rv_gpu, rv64) < 1e-5);
      check_case({"batch_norm_backward",
                  "default",
                  {x, random_input(xs, r), rm, rv, w},
                  {{"training", training}},
                  1e-4,
                  training ? "training" : "eval"},
                 f.seed);
    }
}

DEVICE_TEST_CASE("embedding lookup and atomic backward match the CPU", device_case_8) {
  Fixture f;
  auto& r = f.rng;
  Tensor idx = random_indices({7, 13}, 11, r);  // 91 lookups into 11 rows: many repeats
  check_case({"embedding", "gather", {idx, random_input({11, 33}, r)}, {}, 0, "exact copy"}, f.seed);
  check_case({"embedding_backward",
              "scatter_add",
              {idx, random_input({7, 13, 33}, r)},
              {{"num_embeddings", int64_t{11}}, {"padding_idx", int64_t{3}}},
              1e-5,
              "repeated indices, padding row"},
             f.seed);
  // gather along a middle axis (negative indices count from the end) and its scatter-add.
  Tensor signed_idx = Tensor::from_vector<int64_t>({0, -1, 3, 3, -5, 2}, {2, 3}, DType::i64);
  check_case({"gather", "default", {random_input({3, 5, 7}, r), signed_idx}, {{"axis", int64_t{1}}}, 0, "middle axis"},
             f.seed);
  check_case({"gather_backward",
              "default",
              {random_input({3, 2, 3, 7}, r), signed_idx},
              {{"axis", int64_t{1}}, {"size", int64_t{5}}},
              1e-5,
              "repeated indices add"},
             f.seed);
  // An index out of range is an error that names it, as on the CPU.
  Tensor bad = Tensor::from_vector<int64_t>({0, 4, 11}, {3}, DType::i64);
  const OpDef& op = OpRegistry::instance().get("embedding");
  REQUIRE_THROWS_WITH(run_poisoned(op, "gather", {bad, random_input({11, 3}, r)}, op.resolve({})),
                      Catch::Contains("index 11 (at flat position 2)"));
}

DEVICE_TEST_CASE("attention naive and flash, forward and backward, match the CPU", device_case_9) {
  Fixture f;
  auto& r = f.rng;
  struct Qkv {
    Shape q, k, v;
    AttrMap attrs;
    const char* note;
    bool mask = false, int_mask = false;
  };
  const std::vector<Qkv> shapes = {
      {{37, 16}, {53, 16}, {53, 24}, {}, "T 37, S 53"},
      {{2, 3, 70, 32}, {2, 3, 70, 32}, {2, 3, 70, 32}, {{"causal", true}}, "batch 2x3, causal"},
      {{2, 9, 8}, {9, 8}, {1, 9, 5}, {{"scale", 0.3}}, "k and v broadcast, scale"},
      {{33, 8}, {40, 8}, {40, 8}, {{"causal", true}}, "float mask + causal", true},
      {{33, 8}, {40, 8}, {40, 8}, {}, "int64 mask", true, true},
  };
  for (auto& s : shapes) {
    std::vector<Tensor> ins = {random_input(s.q, r), random_input(s.k, r), random_input(s.v, r)};
    if (s.mask) ins.push_back(s.int_mask ? random_indices({33, 40}, 2, r) : random_input({40}, r));
    for (const char* algo : {"naive", "flash"})
      check_case({"scaled_dot_product_attention", algo, ins, s.attrs, 1e-4, s.note}, f.seed);
    // Backward inputs: o from the CPU forward, any dO.
    const OpDef& fwd = OpRegistry::instance().get("scaled_dot_product_attention");
    NoGradGuard ng;
    Tensor o = current_workspace().call_multi(fwd, ins, fwd.resolve(s.attrs))[0];
    std::vector<Tensor> bins = {ins[0], ins[1], ins[2], o, random_input(o.shape(), r)};
    if (s.mask) bins.push_back(ins[3]);
    check_case({"attention_backward", "flash", bins, s.attrs, 1e-4, s.note}, f.seed);
  }
}

DEVICE_TEST_CASE("conv2d naive and im2col, both backward ops, match the CPU", device_case_10) {
  Fixture f;
  auto& r = f.rng;
  using V = std::vector<int64_t>;
  struct Conv {
    Shape x, w;
    AttrMap attrs;
    const char* note;
  };
  const std::vector<Conv> convs = {
      {{2, 3, 11, 13}, {5, 3, 3, 3}, {{"padding", int64_t{1}}}, "3x3, padding 1"},
      {{1, 4, 17, 9}, {6, 2, 3, 2}, {{"stride", int64_t{2}}, {"groups", int64_t{2}}}, "stride 2, groups 2, 3x2 kernel"},
      {{2, 2, 12, 12}, {3, 2, 3, 3}, {{"dilation", int64_t{2}}, {"padding", int64_t{2}}}, "dilation 2"},
      {{1, 3, 10, 9},
       {4, 3, 3, 2},
       {{"stride", V{2, 1}}, {"padding", V{1, 0}}, {"dilation", V{1, 2}}},
       "pairs: stride (2, 1), padding (1, 0), dilation (1, 2)"},
  };
  for (auto& c : convs) {
    Tensor x = random_input(c.x, r), w = random_input(c.w, r), b = random_input({c.w[0]}, r);
    const OpDef& conv = OpRegistry::instance().get("conv2d");
    NoGradGuard ng;
    Tensor y = f.ws.call_multi(conv, {x, w}, conv.resolve(c.attrs))[0];
    Tensor dy = random_input(y.shape(), r);
    AttrMap ai = c.attrs, aw = c.attrs;
    ai.emplace_back("input_shape", V(c.x));
    aw.emplace_back("weight_shape", V(c.w));
    for (const char* algo : {"naive", "im2col"}) {
      check_case({"conv2d", algo, {x, w, b}, c.attrs, 1e-5, c.note, algo}, f.seed);
      check_case({"conv2d_backward_input", algo, {dy, w}, ai, 1e-5, c.note, algo}, f.seed);
      check_case({"conv2d_backward_weight", algo, {x, dy}, aw, 1e-5, c.note, algo}, f.seed);
    }
  }
}

DEVICE_TEST_CASE("max and average pooling with their backward ops match the CPU", device_case_11) {
  Fixture f;
  auto& r = f.rng;
  using V = std::vector<int64_t>;
  const std::vector<AttrMap> windows = {{{"kernel_size", int64_t{2}}},
                                        {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}},
                                        {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}},
                                        {{"kernel_size", V{3, 2}}, {"stride", V{1, 2}}, {"padding", V{1, 0}}}};
  const Shape xs{2, 3, 11, 9};
  for (const AttrMap& a : windows) {
    Tensor x = random_input(xs, r, Domain::distinct);  // distinct: one argmax per window
    const OpDef& mp = OpRegistry::instance().get("max_pool2d");
    NoGradGuard ng;
    Tensor y = f.ws.call_multi(mp, {x}, mp.resolve(a))[0];
    Tensor dy = random_input(y.shape(), r);
    AttrMap ab = a;
    ab.emplace_back("shape", V(xs));
    check_case({"max_pool2d", "direct", {x}, a, 0, "exact"}, f.seed);
    check_case({"avg_pool2d", "direct", {x}, a, 1e-5, ""}, f.seed);
    check_case({"max_pool2d_backward", "direct", {x, dy}, a, 1e-6, "overlapping windows add"}, f.seed);
    check_case({"avg_pool2d_backward", "direct", {dy}, ab, 1e-5, ""}, f.seed);
  }
}

DEVICE_TEST_CASE("argmax, argmin and the optimizer steps (written in place) match the CPU", device_case_12) {
  Fixture f;
  auto& r = f.rng;
  using V = std::vector<int64_t>;
  Tensor x = random_input({7, 33}, r, Domain::distinct);
  check_case({"argmax", "default", {x}, {{"axes", V{1}}}, 0, "rows"}, f.seed);
  check_case({"argmin", "default", {x}, {{"axes", V{0}}}, 0, "columns"}, f.seed);
  check_case({"argmax", "default", {x}, {}, 0, "flattened"}, f.seed);
  // The update ops change their inputs: each side gets its own copies (float32, as training runs).
  auto run_both = [&](const std::string& name, const std::vector<Tensor>& start, const AttrMap& a) {
    const OpDef& op = OpRegistry::instance().get(name);
    std::vector<Tensor> cpu, gpu;
    for (auto& t : start) {
      cpu.push_back(t.clone(MemCategory::input));
      gpu.push_back(t.to(dut()));
    }
    NoGradGuard ng;
    for (int step = 0; step < 2; ++step) {
      f.ws.call_multi(op, cpu, op.resolve(a));
      f.ws.call_multi(op, gpu, op.resolve(a));
    }
    device_backend(dut())->synchronize();
    for (size_t i = 0; i < start.size(); ++i) {
      if (i == 1) continue;  // the gradient is only read
      INFO(name << " input " << i << " after two steps");
      CHECK(relative_error(gpu[i].to(Device::cpu), cpu[i]) <= 1e-5);
    }
  };
  const Shape ws{5, 37};
  Tensor w = random_input(ws, r), g = random_input(ws, r), buf = random_input(ws, r);
  run_both("sgd_update", {w, g}, {{"lr", 0.1}});
  run_both("sgd_update", {w, g, buf}, {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", true}});
  Tensor m = random_input(ws, r), v = random_input(ws, r, Domain::positive), t = Tensor::full({}, 3.0, DType::f32);
  run_both("adam_update", {w, g, m, v, t}, {{"lr", 0.01}, {"weight_decay", 0.1}});
  run_both("adamw_update", {w, g, m, v, t}, {{"lr", 0.01}});
}

DEVICE_TEST_CASE("linear and dropout match the CPU", device_case_13) {
  Fixture f;
  auto& r = f.rng;
  check_case({"linear",
              "cublas",
              {random_input({5, 7, 33}, r), random_input({17, 33}, r), random_input({17}, r)},
              {},
              1e-5,
              "batched rows, bias",
              "eigen"},
             f.seed);
  check_case(
      {"linear", "cublas", {random_input({33}, r), random_input({9, 33}, r)}, {}, 1e-5, "a vector, no bias", "eigen"},
      f.seed);
  const int64_t seed = static_cast<int64_t>(f.seed % 1000);
  check_case({"dropout", "default", {random_input({37, 41}, r)}, {{"p", 0.3}, {"seed", seed}}, 1e-6, "the CPU's mask"},
             f.seed);
}

DEVICE_TEST_CASE("cross_entropy, its backward and mse_loss match the CPU", device_case_14) {
  Fixture f;
  auto& r = f.rng;
  for (const char* reduction : {"mean", "sum"}) {
    const AttrMap a{{"reduction", std::string(reduction)}};
    for (int64_t C : {7, 1500}) {  // short rows and long ones
      Tensor logits = random_input({33, C}, r), targets = random_indices({33}, C, r);
      check_case({"cross_entropy", "default", {logits, targets}, a, 1e-5, reduction}, f.seed);
      check_case({"cross_entropy_backward", "default", {logits, targets, random_input({}, r)}, a, 1e-5, reduction},
                 f.seed);
    }
    check_case({"mse_loss", "default", {random_input({37, 11}, r), random_input({37, 11}, r)}, a, 1e-5, reduction},
               f.seed);
  }
  const OpDef& ce = OpRegistry::instance().get("cross_entropy");
  REQUIRE_THROWS_WITH(run_poisoned(ce, "default", {random_input({2, 3}, r), Tensor::from_vector<int64_t>({1, 3}, {2})},
                                   ce.resolve({})),
                      Catch::Contains("target 3 at index 1"));
}

DEVICE_TEST_CASE("pad, pad_backward, upsample_nearest2d and adaptive average pooling match the CPU", device_case_15) {
  Fixture f;
  auto& r = f.rng;
  using V = std::vector<int64_t>;
  const Shape xs{2, 3, 7, 9};
  Tensor x = random_input(xs, r);
  check_case({"pad", "direct", {x}, {{"pads", V{1, 2, 3, 0}}, {"value", 0.5}}, 0, "constant"}, f.seed);
  check_case({"pad", "direct", {x}, {{"pads", V{2, 3, 1, 4}}, {"mode", std::string("reflect")}}, 0, "reflect"}, f.seed);
  check_case({"pad_backward",
              "direct",
              {random_input({2, 3, 12, 14}, r)},
              {{"pads", V{2, 3, 1, 4}}, {"shape", V(xs)}},
              1e-5,
              "reflected borders add"},
             f.seed);
  check_case({"pad",
              "direct",
              {x},
              {{"pads", V{4, 11, 9, 1}}, {"mode", std::string("replicate")}},
              0,
              "replicate, pads beyond the axis"},
             f.seed);
  check_case({"pad_backward",
              "direct",
              {random_input({2, 3, 17, 24}, r)},
              {{"pads", V{4, 11, 9, 1}}, {"shape", V(xs)}, {"mode", std::string("replicate")}},
              1e-5,
              "replicated edges add"},
             f.seed);
  check_case({"upsample_nearest2d", "direct", {x}, {{"scale_factor", int64_t{3}}}, 0, "scale 3"}, f.seed);
  check_case({"adaptive_avg_pool2d", "direct", {x}, {{"output_size", V{3, 4}}}, 1e-5, "overlapping windows"}, f.seed);
  check_case({"adaptive_avg_pool2d_backward", "direct", {random_input({2, 3, 3, 4}, r)}, {{"shape", V(xs)}}, 1e-5, ""},
             f.seed);
}

DEVICE_TEST_CASE("shape ops and casts run on the device through copy_from", device_case_16) {
  Fixture f;
  auto& r = f.rng;
  using V = std::vector<int64_t>;
  Tensor x = random_input({5, 7, 3}, r);
  std::vector<Case> cases = {
      {"transpose", "default", {x}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}, 0, "a view"},
      {"permute", "default", {x}, {{"dims", V{2, 0, 1}}}, 0, ""},
      {"reshape", "default", {x}, {{"shape", V{35, 3}}}, 0, ""},
      {"concat", "default", {x, random_input({5, 2, 3}, r)}, {{"axis", int64_t{1}}}, 0, "strided windows"},
      {"cast", "default", {x}, {{"dtype", std::string("int64")}}, 0, "float to int64"},
  };
  for (auto& c : cases) {
    INFO(c.op);
    const OpDef& op = OpRegistry::instance().get(c.op);
    REQUIRE(op.find_kernel(dut(), c.algo) != nullptr);
    // Views come back strided: compare them element by element as the CPU sees them.
    const auto gpu = run_poisoned(op, c.algo, c.inputs, op.resolve(c.attrs));
    NoGradGuard ng;
    const auto ref = f.ws.call_multi(op, c.inputs, op.resolve(c.attrs));
    CHECK(relative_error(gpu[0], ref[0]) == 0);
  }
}

DEVICE_TEST_CASE("x.to(device), dispatch, autograd and memory accounting through the engine", device_case_17) {
  Fixture f;
  auto& r = f.rng;
  Tensor x = random_input({19, 23}, r), w = random_input({23, 11}, r);
  Tensor xc = x.to(dut()), wc = w.to(dut());
  CHECK(f.ws.tracker().copies(Device::cpu, dut()).copies == 2);
  CHECK(total_bytes(f.ws.tracker().live_on(dut())) == x.nbytes() + w.nbytes());
  CHECK(f.ws.tracker().reserved(dut()) >= x.nbytes() + w.nbytes());
  // Forward and backward on both devices: the same loss and gradients.
  auto loss_and_grads = [&](Tensor a, Tensor b) {
    a.set_requires_grad(true);
    b.set_requires_grad(true);
    Tensor y = f.ws.call("softmax", {f.ws.call("matmul", {a, b})}, {{"axis", int64_t{-1}}});
    Tensor l = f.ws.call("sum", {f.ws.call("mul", {y, f.ws.call("mul", {y, Tensor::scalar(3.0)})})});
    f.ws.backward(l);
    return std::vector<Tensor>{l, a.grad(), b.grad()};
  };
  auto cpu = loss_and_grads(x.clone(), w.clone());
  auto gpu = loss_and_grads(xc.clone(), wc.clone());
  for (int i = 0; i < 3; ++i) {
    INFO("output " << i);
    CHECK(gpu[i].device() == dut());
    CHECK(relative_error(gpu[i], cpu[i]) < 1e-4);
  }
  // matmul without algo= runs cuBLAS on cuda (the CPU default, Eigen, has no CUDA kernel).
  CHECK(default_algorithm_on(OpRegistry::instance().get("matmul"), dut()) == "cublas");
  // Device steps are timed by CUDA events and recorded.
  CHECK(f.ws.graph().node(f.ws.graph().num_nodes() - 1).stats.last_time_ns >= 0);
  // An algorithm without a CUDA kernel says so, and which ones exist there; nothing crashes.
  Tensor img = random_input({1, 2, 5, 5}, r).to(dut()), ker = random_input({3, 2, 3, 3}, r).to(dut());
  try {
    f.ws.call("conv2d", {img, ker}, {}, "winograd");
    FAIL("conv2d winograd ran on cuda");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(std::string("no kernel for algorithm 'winograd' on ") + device_name(dut())) !=
          std::string::npos);
    CHECK(e.hint().find("im2col") != std::string::npos);
  }
  // The REPL: :device cuda (sim) makes new tensors there; printing copies back.
  lang::Session session(f.ws);
  std::ostringstream out, err;
  const std::string dev = device_name(dut());
  REQUIRE(session.run(":device " + dev + "\na = ones(2, 3)\nb = (a * 2).sum()\nprint(b.item(), a.device)", "<t>", out,
                      err));
  CHECK(out.str().find("12.0 " + dev) != std::string::npos);  // 2·6 ones (the GPU-only test said 6.0: never run)
}

}  // namespace opscope
