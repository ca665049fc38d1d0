// `@kernel` on the simulated GPU (app/lang/kernel.h): the kernel value, its launch
// `k[blocks, threads](args...)` and `last_launch()`. A launch copies each tensor argument into
// the simulator's global memory (its own 256-byte-aligned allocation, as cudaMalloc gives),
// compiles the body for those arrays (kernel_compile.h), runs it through the simulator's launch
// (lanes as fibers, barriers, the checks and counters of ops/cuda's kernels) and, only when no
// check fired, copies the written arrays back into the tensors: a failed launch leaves the
// workspace as it was.
#include <algorithm>
#include <cstring>
#include <deque>
#include <nlohmann/json.hpp>

#include "app/lang/interpreter.h"
#include "app/lang/kernel.h"
#include "app/lang/kernel_compile.h"
#include "core/device.h"
#include "core/interrupt.h"
#include "gpusim/lang_entry.h"

namespace opscope::lang {

namespace {

constexpr const char* kTimeBoundGpu = "H100";  // the preset `opscope bench --device sim` uses by default

constexpr size_t kTraceRequests = 8192;  // the warp view's bound (app/gui/kernel_lab_state.h)

nlohmann::ordered_json g_last_launch;  // the last simulated launch's report (null: none yet)
nlohmann::ordered_json g_last_launches;  // every launch of the last op or kernel launch, in order
LanguageKernelTrace g_last_trace;  // the last language kernel's first block, for the warp view

// The launches a recording produced (the simulator's own JSON, as `opscope bench --json`
// prints it): the last one is last_launch()'s. A language kernel's trace is kept apart (the
// Kernel Lab's warp view reads it; last_launch() stays small).
void keep_last_launch(LaunchReporter& reporter, const Function* kernel = nullptr) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(reporter.take_json(kTimeBoundGpu));
  const auto& launches = j.at("launches");
  if (launches.empty()) return;
  // An op may launch several kernels (im2col's unfold then its GEMM, naive attention's three):
  // last_launches() keeps them all, so a lesson can add up an algorithm's whole traffic.
  g_last_launches = nlohmann::ordered_json::array();
  for (auto l : launches) {
    l["simulated"] = true;
    l["gpu"] = j.at("gpu");
    g_last_launches.push_back(std::move(l));
  }
  g_last_launch = g_last_launches.back();
  if (kernel && j.contains("trace")) g_last_trace = {kernel->name, j.at("trace").dump(), kernel->source};
}

Value from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_float: return Value::Real(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::Str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& x : j) items.push_back(from_json(x));
      return Value::List(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (auto it = j.begin(); it != j.end(); ++it)
        d->entries.emplace_back(Value::Str(it.key()), from_json(it.value()));
      Value v = Value::Of(d);
      return v;
    }
    default: return Value::None();
  }
}

std::string dims_text(const unsigned d[3], int n) {
  std::string s = "(";
  for (int k = 0; k < n; ++k) s += (k ? ", " : "") + std::to_string(d[k]);
  return s + (n == 1 ? ",)" : ")");
}

// blocks or threads of a launch: an int or a tuple of 1 to 3 positive ints.
void launch_dims(Interpreter& in, const Value& v, Pos p, const char* what, unsigned out[3]) {
  std::vector<Value> parts;
  if (v.kind() == Value::integer) parts.push_back(v);
  else if (v.kind() == Value::tuple || v.kind() == Value::list) parts = *v.items();
  else
    in.fail(p, std::string("a launch's ") + what + " is an int or a tuple of up to 3 ints, not " + kind_name(v),
            "k[4, 32](...) or k[(2, 2), (16, 16)](...)");
  if (parts.empty() || parts.size() > 3)
    in.fail(p, std::string("a launch's ") + what + " has 1 to 3 sizes (x, y, z), not " + std::to_string(parts.size()),
            "k[(gx, gy), (tx, ty)](...)");
  for (size_t k = 0; k < 3; ++k) {
    out[k] = 1;
    if (k >= parts.size()) continue;
    if (parts[k].kind() != Value::integer)
      in.fail(p, std::string("a launch's ") + what + " sizes are ints, not " + kind_name(parts[k]));
    if (parts[k].as_int() <= 0)
      in.fail(p, std::string("a launch's ") + what + " sizes are at least 1, not " + std::to_string(parts[k].as_int()));
    if (parts[k].as_int() > (int64_t(1) << 31) - 1)
      in.fail(p, std::string("a launch's ") + what + " size " + std::to_string(parts[k].as_int()) + " is too large");
    out[k] = unsigned(parts[k].as_int());
  }
}

// The simulator's messages name CUDA's barrier; a language kernel calls it syncthreads().
std::string in_language(std::string text) {
  for (size_t at = text.find("__syncthreads"); at != std::string::npos; at = text.find("__syncthreads", at))
    text.replace(at, 13, "syncthreads()");
  return text;
}

struct Kernel;

// k[blocks, threads]: a launch configuration, called with the kernel's arguments.
class LaunchConfig final : public NativeObject {
 public:
  LaunchConfig(std::shared_ptr<const Kernel> k, unsigned grid[3], unsigned block[3], int grid_n, int block_n)
      : kernel_(std::move(k)), grid_n_(grid_n), block_n_(block_n) {
    std::memcpy(grid_, grid, sizeof grid_);
    std::memcpy(block_, block, sizeof block_);
  }
  std::string type_name() const override { return "kernel launch"; }
  std::string repr() const override;
  std::vector<std::string> members() const override { return {"__call__"}; }
  bool has_method(const std::string& name) const override { return name == "__call__"; }
  Value call(Interpreter& in, const std::string& method, CallArgs& args) override;

 private:
  std::shared_ptr<const Kernel> kernel_;
  unsigned grid_[3], block_[3];
  int grid_n_, block_n_;
};

struct Kernel final : NativeObject {
  std::shared_ptr<Function> fn;
  std::string type_name() const override { return "kernel"; }
  std::string repr() const override { return "<kernel " + fn->name + "(" + params() + ")>"; }
  std::string params() const {
    std::string s;
    for (const std::string& p : fn->params) s += (s.empty() ? "" : ", ") + p;
    return s;
  }
  std::vector<std::string> members() const override { return {}; }
  bool has_method(const std::string& name) const override { return name == "__call__"; }
  Value call(Interpreter& in, const std::string&, CallArgs& args) override {
    in.fail(args.pos, "a kernel is launched with its grid: " + fn->name + "[blocks, threads](" + params() + ")",
            "blocks and threads are ints or tuples: " + fn->name + "[4, 32](...)");
  }
  std::optional<Value> subscript(Interpreter& in, std::vector<Value>& subs, Pos p) override {
    if (subs.size() == 1 && subs[0].kind() == Value::tuple) subs = *subs[0].items();
    if (subs.size() != 2)
      in.fail(p,
              "a launch takes [blocks, threads], not " + std::to_string(subs.size()) + " value" +
                  (subs.size() == 1 ? "" : "s"),
              fn->name + "[4, 32](...) runs 4 blocks of 32 threads");
    unsigned grid[3], block[3];
    launch_dims(in, subs[0], p, "blocks", grid);
    launch_dims(in, subs[1], p, "threads", block);
    const uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
    if (threads > 1024)
      in.fail(p,
              "a block has at most 1024 threads, not " + std::to_string(threads) + " (" + std::to_string(block[0]) +
                  " × " + std::to_string(block[1]) + " × " + std::to_string(block[2]) + ")",
              "launch more blocks of fewer threads");
    if (block[2] > 64) in.fail(p, "a block's z size is at most 64, not " + std::to_string(block[2]));
    if (grid[1] > 65535 || grid[2] > 65535) in.fail(p, "a grid's y and z sizes are at most 65535");
    auto count = [](const Value& v) { return v.kind() == Value::integer ? 1 : int(v.items()->size()); };
    Value out = Value::Of(std::make_shared<LaunchConfig>(std::static_pointer_cast<const Kernel>(shared_from_this()),
                                                         grid, block, count(subs[0]), count(subs[1])));
    return out;
  }
};

std::string LaunchConfig::repr() const {
  return "<launch " + kernel_->fn->name + "[" + dims_text(grid_, grid_n_) + ", " + dims_text(block_, block_n_) + "]>";
}

// The tensors' device copies, freed when the launch ends (however it ends).
struct DeviceCopies {
  std::vector<void*> blocks;
  ~DeviceCopies() {
    for (void* p : blocks) gpusim::device_free(p);
  }
};

struct LaneContext {
  const kernel::Program* prog;
  std::vector<int64_t> iregs;
  std::vector<double> fregs;
  std::vector<const Pos*> at;  // per lane
};

void run_lane(void* arg) {
  auto& c = *static_cast<LaneContext*>(arg);
  if (interrupt::requested()) throw Interrupted();  // each lane: Ctrl-C stops a launch of any size
  const kernel::Program& p = *c.prog;
  const size_t lane = size_t(gpusim::running_lane());
  kernel::Regs r{c.iregs.data() + lane * size_t(p.int_slots), c.fregs.data() + lane * size_t(p.float_slots),
                 &c.at[lane]};
  c.at[lane] = nullptr;
  std::fill(r.i, r.i + p.int_slots, 0);
  std::fill(r.f, r.f + p.float_slots, 0.0);
  for (auto [s, v] : p.int_init) r.i[s] = v;
  for (auto [s, v] : p.float_init) r.f[s] = v;
  p.body->run(r);
  gpusim::add_flops(kernel::take_flops());
}

// "Bt[0, 3]": the element of one of the launch's arrays at a device address ("" when none holds it).
std::string element_at(uintptr_t addr, bool shared, const std::deque<kernel::Array>& globals,
                       const std::deque<kernel::Array>& shareds) {
  for (const kernel::Array& a : shared ? shareds : globals) {
    const uintptr_t size = uintptr_t(dtype_size(a.dtype));
    if (addr < a.base || addr >= a.base + uintptr_t(a.numel) * size) continue;
    int64_t flat = int64_t((addr - a.base) / size);
    std::string s = a.name + "[";
    for (int d = 0; d < a.ndim; ++d) {
      s += (d ? ", " : "") + std::to_string(flat / a.strides[d]);
      flat %= a.strides[d];
    }
    return s + "]";
  }
  return "";
}

// While a launch runs, its costliest requests name their elements; cleared however it ends.
struct NameElements {
  NameElements(const std::deque<kernel::Array>& globals, const std::deque<kernel::Array>& shareds) {
    gpusim::set_address_namer(
        [&globals, &shareds](uintptr_t addr, bool shared) { return element_at(addr, shared, globals, shareds); });
  }
  ~NameElements() { gpusim::set_address_namer({}); }
  NameElements(const NameElements&) = delete;
  NameElements& operator=(const NameElements&) = delete;
};

Value LaunchConfig::call(Interpreter& in, const std::string&, CallArgs& args) {
  const Function& f = *kernel_->fn;
  if (!args.keyword.empty())
    in.fail(args.pos, "a launch takes its arguments by position: " + f.name + "[...](" + kernel_->params() + ")");
  if (args.positional.size() != f.params.size())
    in.fail(args.pos, f.name + " takes " + std::to_string(f.params.size()) + " argument" +
                          (f.params.size() == 1 ? "" : "s") + " (" + kernel_->params() + "), not " +
                          std::to_string(args.positional.size()));
  LaunchReporter* reporter = launch_reporter(Device::sim);
  if (!reporter) in.fail(args.pos, "the simulated GPU is not built in this configuration");

  // Each tensor argument in device memory (one copy per distinct tensor: a tensor passed twice is one array).
  DeviceCopies copies;
  std::deque<kernel::Array> arrays;
  std::vector<kernel::LaunchArg> largs(f.params.size());
  std::vector<Tensor> tensors(f.params.size());
  for (size_t k = 0; k < f.params.size(); ++k) {
    const Value& v = args.positional[k];
    const Pos p = k < args.positions.size() ? args.positions[k] : args.pos;
    kernel::LaunchArg& a = largs[k];
    if (v.kind() == Value::integer || v.kind() == Value::boolean) {
      a.kind = kernel::LaunchArg::integer;
      a.i = v.kind() == Value::boolean ? v.as_bool() : v.as_int();
      continue;
    }
    if (v.kind() == Value::real) {
      a.kind = kernel::LaunchArg::real;
      a.f = v.as_real();
      continue;
    }
    if (v.kind() != Value::tensor)
      in.fail(p, "argument '" + f.params[k] + "' of " + f.name + " is " + kind_name(v) +
                     ": a kernel takes tensors and numbers");
    const Tensor& t = v.as_tensor();
    if (t.is_symbolic())
      in.fail(p, "argument '" + f.params[k] + "' is symbolic (static mode): a kernel needs its values",
              "run it in :mode dynamic");
    if (t.device() == Device::cuda)
      in.fail(p, "a language kernel runs on the simulated GPU: move '" + f.params[k] +
                     "' with .to(\"cpu\") or .to(\"sim\")");
    if (!t.is_contiguous())
      in.fail(p, "argument '" + f.params[k] + "' is a strided view: a kernel indexes row-major memory",
              "pass x.contiguous()");
    if (t.dim() > 3 || t.dim() == 0)
      in.fail(p,
              "argument '" + f.params[k] + "' has " + std::to_string(t.dim()) +
                  " axes: a kernel takes tensors of 1 to 3",
              "reshape it");
    tensors[k] = t;
    a.kind = kernel::LaunchArg::array;
    for (size_t j = 0; j < k; ++j)
      if (largs[j].kind == kernel::LaunchArg::array && tensors[j].raw_data() == t.raw_data() &&
          tensors[j].nbytes() == t.nbytes() && tensors[j].shape() == t.shape())
        a.arr = largs[j].arr;
    if (a.arr) continue;
    void* dev = gpusim::device_alloc(size_t(std::max<int64_t>(t.nbytes(), 1)));
    if (!dev) in.fail(p, "the simulated GPU's memory is full");
    copies.blocks.push_back(dev);
    std::memcpy(dev, t.raw_data(), size_t(t.nbytes()));
    kernel::Array& arr = arrays.emplace_back();
    arr.name = f.params[k];
    arr.base = reinterpret_cast<uintptr_t>(dev);
    arr.dtype = t.dtype();
    arr.ndim = int(t.dim());
    arr.numel = t.numel();
    int64_t stride = 1;
    for (int d = arr.ndim - 1; d >= 0; --d) {
      arr.dims[d] = t.shape()[size_t(d)];
      arr.strides[d] = stride;
      stride *= arr.dims[d];
    }
    arr.arg = int(k);
    a.arr = &arr;
  }

  kernel::Program prog = kernel::compile_kernel(f, largs, in);
  LaneContext ctx{&prog, {}, {}, {}};
  const size_t threads = size_t(block_[0]) * block_[1] * block_[2];
  ctx.iregs.assign(threads * size_t(prog.int_slots), 0);
  ctx.fregs.assign(threads * size_t(prog.float_slots), 0.0);
  ctx.at.assign(threads, nullptr);

  static std::string kernel_name;
  kernel_name = f.name;
  const std::string file = f.source ? f.source->filename : "<kernel>";
  gpusim::LaunchInfo info{gpusim::dim3(grid_[0], grid_[1], grid_[2]),
                          gpusim::dim3(block_[0], block_[1], block_[2]),
                          0,
                          kernel_name.c_str(),
                          file.c_str(),
                          f.body && !f.body->empty() ? (*f.body)[0]->pos.line : 0};
  (void)kernel::take_flops();
  reporter->start();
  reporter->trace_next_launch(kTraceRequests);
  try {
    const NameElements names(arrays, prog.shared);
    gpusim::run_launch(info, run_lane, &ctx);
  } catch (const Interrupted&) {
    keep_last_launch(*reporter, &f);
    in.fail_interrupted(args.pos);
  } catch (const LangError&) {
    keep_last_launch(*reporter, &f);
    throw;
  } catch (const Error& e) {
    keep_last_launch(*reporter, &f);
    // A check fired: the error points at the kernel's line the failing lane reached.
    const int lane = gpusim::last_resumed_lane();
    const Pos* at = lane >= 0 && size_t(lane) < ctx.at.size() ? ctx.at[size_t(lane)] : nullptr;
    const Pos p = at ? *at : args.pos;
    LangError err(in_language(e.what()), p.line, p.col, in_language(e.hint()));
    err.set_source(at ? f.source : in.source());
    throw err;
  }
  keep_last_launch(*reporter, &f);

  // Success: the arrays the kernel wrote go back into their tensors (undone if the statement fails later).
  for (const kernel::Array& arr : arrays) {
    if (!arr.written) continue;
    const Tensor& t = tensors[size_t(arr.arg)];
    const size_t n = size_t(t.nbytes());
    std::vector<unsigned char> before(n);
    std::memcpy(before.data(), t.raw_data(), n);
    in.on_undo([t, before = std::move(before)] { std::memcpy(t.raw_data(), before.data(), before.size()); });
    std::memcpy(t.raw_data(), reinterpret_cast<const void*>(arr.base), n);
  }
  return Value::None();
}

}  // namespace

bool define_kernel(Interpreter& in, const Stmt& def, const std::shared_ptr<Function>& f) {
  if (std::find(def.decorators.begin(), def.decorators.end(), "kernel") == def.decorators.end()) return false;
  if (def.decorators.size() != 1) in.fail(def.pos, "@kernel takes no other decorator");
  for (size_t k = 0; k < f->defaults.size(); ++k)
    if (f->defaults[k])
      in.fail(def.params[k].pos, "a kernel's parameters have no defaults", "pass every argument at the launch");
  auto k = std::make_shared<Kernel>();
  k->fn = f;
  Value v = Value::Of(k);
  in.assign(def.text, v);
  return true;
}

void install_kernel_builtins(std::map<std::string, Builtin>& table) {
  table["last_launch"] =
      Builtin{"last_launch", "last_launch()",
              "the last launch on the simulated GPU (a @kernel's or a built-in op's on sim tensors) as a dict: kernel, "
              "grid, block, "
              "flops, dram_bytes, hazards and per memory instruction of the source (sites: file, line, space, access, "
              "requests, "
              "sectors_per_request, wavefronts_per_request, active_lanes); simulated numbers",
              [](Interpreter& in, CallArgs& args) -> Value {
                if (!args.positional.empty() || !args.keyword.empty())
                  in.fail(args.pos, "last_launch() takes no arguments");
                if (g_last_launch.is_null())
                  in.fail(args.pos, "nothing has been launched on the simulated GPU yet",
                          "launch a @kernel (k[blocks, threads](...)) or run an op on sim tensors (x.to(\"sim\"))");
                return from_json(g_last_launch);
              }};
  table["last_launches"] = Builtin{
      "last_launches", "last_launches()",
      "every launch of the last built-in op on sim tensors (or the last @kernel launch), in order, as a list of "
      "last_launch()'s dicts: conv2d's im2col then its GEMM, naive attention's scores, softmax and P·V; simulated "
      "numbers",
      [](Interpreter& in, CallArgs& args) -> Value {
        if (!args.positional.empty() || !args.keyword.empty()) in.fail(args.pos, "last_launches() takes no arguments");
        if (g_last_launches.is_null())
          in.fail(args.pos, "nothing has been launched on the simulated GPU yet",
                  "launch a @kernel (k[blocks, threads](...)) or run an op on sim tensors (x.to(\"sim\"))");
        return from_json(g_last_launches);
      }};
}

const LanguageKernelTrace& last_language_kernel_trace() { return g_last_trace; }

SimLaunchCapture::SimLaunchCapture(bool active) : active_(active && launch_reporter(Device::sim)) {
  if (active_) launch_reporter(Device::sim)->start();
}

SimLaunchCapture::~SimLaunchCapture() {
  if (!active_) return;
  try {
    keep_last_launch(*launch_reporter(Device::sim));
  } catch (...) {  // a report that cannot be read leaves the last one as it was
  }
}

}  // namespace opscope::lang
