// Extensions: C++/CUDA files compiled with opscope's toolchain and loaded into the running
// process. Every compile goes into one fresh temporary cache per test process; each test case
// compiles at most a few small files (a compile takes seconds on two cores).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/extension/compiler.h"
#include "app/extension/diagnostics.h"
#include "app/extension/loader.h"
#include "app/kernel_lab.h"
#include "app/lang/file_policy.h"
#include "app/ops_listing.h"
#include "core/describe.h"
#include "core/device.h"
#include "core/gradcheck.h"
#include "extension_temp.h"
#include "lab.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

std::string example(const std::string& name) {
  return std::string(OPSCOPE_SOURCE_DIR) + "/assets/examples/extensions/" + name;
}

std::string write_source(const std::string& name, const std::string& text) {
  const fs::path p = test::extension_temp().path / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string load_call(const std::string& path) { return "load_extension(\"" + path + "\")"; }

bool has_algorithm(const std::string& op, const std::string& algo) {
  const auto& a = OpRegistry::instance().get(op).algorithms;
  return std::find(a.begin(), a.end(), algo) != a.end();
}

// A small extension without Eigen (fast to compile): ext_scale multiplies by `factor`; with
// `refuses`, ext_refuses throws opscope::Error from its kernel.
std::string scale_extension(int factor, bool refuses, const std::string& extra_op = "") {
  std::string s = R"(#include "core/error.h"
#include "core/op.h"
namespace {
using namespace opscope;
OpDef unary(const std::string& name, const std::string& doc, KernelFn fn) {
  OpDef d = OpDef::declare(name, "test", doc, {"x"});
  d.infer = [](const InferCtx& c) { c.expect_float(0); return std::vector<TensorMeta>{c.inputs[0]}; };
  d.kernel(Device::cpu, "default", std::move(fn));
  d.differentiable = false;
  d.cost = [](auto&, auto&, auto&, auto) { return Cost{}; };
  return d;
}
OPSCOPE_REGISTER_OPS(register_test_ops) {
  registry.add(unary("ext_scale", "y = FACTOR·x", [](KernelCtx& k) {
    Tensor x = k.in(0).cast(DType::f64);
    for (int64_t i = 0; i < x.numel(); ++i) k.out().data<float>()[i] = float(FACTOR * x.data<double>()[i]);
  }));
)";
  if (refuses)
    s += R"(  registry.add(unary("ext_refuses", "refuses more than 3 elements", [](KernelCtx& k) {
    if (k.in(0).numel() > 3) throw Error("ext_refuses: too many elements", "give it at most 3");
    k.out().copy_from(k.in(0));
  }));
)";
  if (!extra_op.empty())
    s += "  registry.add(unary(\"" + extra_op + "\", \"a copy\", [](KernelCtx& k) { k.out().copy_from(k.in(0)); }));\n";
  s += "}\n}  // namespace\n";
  const std::string f = std::to_string(factor);
  for (size_t at; (at = s.find("FACTOR")) != std::string::npos;) s.replace(at, 6, f);
  return s;
}

// An op made here in the test (no compile), for the loader's checks.
std::unique_ptr<OpDef> test_op(const std::string& name) {
  auto d = std::make_unique<OpDef>(OpDef::declare(name, "test", "y = x", {"x"}));
  d->infer = [](const InferCtx& c) { return std::vector<TensorMeta>{c.inputs[0]}; };
  d->kernel(Device::cpu, "default", [](KernelCtx& k) { k.out().copy_from(k.in(0)); });
  d->differentiable = false;
  d->cost = [](auto&, auto&, auto&, auto) { return Cost{}; };
  return d;
}

ext::LoadedFile fake_file(const std::string& origin, std::vector<std::string> ops,
                          std::vector<KernelAddition> kernels = {}) {
  auto cap = std::make_shared<RegistryCapture>();
  for (auto& n : ops) cap->ops.push_back(test_op(n));
  cap->kernels = std::move(kernels);
  return {origin, origin, "hash-" + std::to_string(cap->ops.size() + cap->kernels.size()), cap};
}

// A CPU algorithm `algo` for `op`, as an extension's registry.add_kernel gives it.
KernelAddition cpu_algorithm(const std::string& op, const std::string& algo) {
  KernelAddition k;
  k.op = op;
  k.algo = algo;
  k.fn = [](KernelCtx& c) { c.out().copy_from(c.in(0)); };
  return k;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("extension: compiler output is read as file:line:col diagnostics", "[repl]") {
  const std::string gcc =
      "my_ops.cpp: In lambda function:\n"
      "my_ops.cpp:14:3: error: expected ';' before 'd'\n"
      "   14 |   d.infer = f\n"
      "      |   ^\n"
      "my_ops.cpp:9:7: warning: unused variable 'n' [-Wunused-variable]\n"
      "In file included from my_ops.cpp:1:\n"
      "core/tensor.h: In instantiation of 'T* opscope::Tensor::data() const [with T = Foo]':\n"
      "my_ops.cpp:20:5:   required from here\n"
      "core/tensor.h:71:12: error: invalid static_cast\n"
      "   71 |     return static_cast<T*>(raw_data());\n";
  const auto ds = ext::parse_diagnostics(gcc);
  REQUIRE(ds.size() == 4);
  CHECK(ds[0].file == "my_ops.cpp");
  CHECK(ds[0].line == 14);
  CHECK(ds[0].col == 3);
  CHECK(ds[0].severity == "error");
  CHECK(ds[0].snippet.find("d.infer") != std::string::npos);
  CHECK(ext::count(ds, true) == 2);
  CHECK(ext::count(ds, false) == 1);
  const std::string shown = ext::format_errors(ds, "my_ops.cpp", gcc);
  CHECK(shown.find("my_ops.cpp:14:3: error: expected ';' before 'd'\n   14 |   d.infer = f\n") == 0);
  // The header's error points back at the student's line that caused it.
  CHECK(shown.find("core/tensor.h:71:12: error: invalid static_cast") != std::string::npos);
  CHECK(shown.find("my_ops.cpp:20:5: required from here") != std::string::npos);
  CHECK(ext::format_warnings(ds, "my_ops.cpp") == "my_ops.cpp:9:7: warning: unused variable 'n' [-Wunused-variable]\n");
  CHECK(ext::format_errors(ds, "my_ops.cpp", gcc, 1).find("... and 1 more error\n") != std::string::npos);

  // nvcc's own front end: file(line), the column from its caret.
  const auto nv =
      ext::parse_diagnostics("k.cu(12): error: identifier \"foo\" is undefined\n    y = foo(x);\n        ^\n");
  REQUIRE(nv.size() == 1);
  CHECK(nv[0].line == 12);
  CHECK(nv[0].col == 5);
  // No positioned error (a linker failure): the last lines as printed.
  CHECK(ext::format_errors({}, "x.cpp", "/usr/bin/ld: cannot find -lfoo\ncollect2: error: ld returned 1 exit status\n")
            .find("cannot find -lfoo") != std::string::npos);
}

TEST_CASE("extension: what a file registers is checked before any of it is", "[op]") {
  auto& loader = ext::ExtensionLoader::instance();
  auto& reg = OpRegistry::instance();
  // A collision with a built-in names both, and registers nothing of the file.
  std::string e = error_of([&] { loader.adopt(fake_file("/t/clash.cpp", {"ext_t_fine", "relu"})); });
  CHECK(e.find("/t/clash.cpp declares operator 'relu', which is already the built-in operator relu (activation)") == 0);
  CHECK(reg.find("ext_t_fine") == nullptr);
  // The language's builtin functions are not op names either.
  ext::LoadOptions names;
  names.reserved_names = {"print"};
  CHECK(error_of([&] { loader.adopt(fake_file("/t/p.cpp", {"print"}), names); }).find("builtin function") !=
        std::string::npos);
  // A new algorithm must not take a built-in one's name, on any device; its op must exist.
  e = error_of([&] { loader.adopt(fake_file("/t/k.cpp", {}, {cpu_algorithm("matmul", "eigen")})); });
  CHECK(e.find("already has a cpu kernel 'eigen' (built in)") != std::string::npos);
  e = error_of([&] { loader.adopt(fake_file("/t/k.cpp", {}, {cpu_algorithm("matmull", "mine")})); });
  CHECK(e.find("'matmull', which is not an operator") != std::string::npos);
  CHECK(error_of([&] { loader.adopt(fake_file("/t/empty.cpp", {})); }).find("declares no operators") !=
        std::string::npos);

  // Two files: b.cpp adds an algorithm to a.cpp's op; reloading a.cpp keeps b's algorithm on it.
  loader.adopt(fake_file("/t/a.cpp", {"ext_t_a"}));
  loader.adopt(fake_file("/t/b.cpp", {}, {cpu_algorithm("ext_t_a", "fast")}));
  CHECK(has_algorithm("ext_t_a", "fast"));
  REQUIRE(reg.get("ext_t_a").added_by(Device::cpu, "fast") != nullptr);
  CHECK(*reg.get("ext_t_a").added_by(Device::cpu, "fast") == "/t/b.cpp");
  // The same algorithm name on another device is that algorithm's kernel there (as swish_cuda.cu
  // adds them); unloading the file takes only that kernel away.
  KernelAddition on_cuda = cpu_algorithm("ext_t_a", "default");
  on_cuda.device = Device::cuda;
  loader.adopt(fake_file("/t/d.cu", {}, {on_cuda}));
  CHECK(reg.get("ext_t_a").find_kernel(Device::cuda, "default") != nullptr);
  CHECK(reg.get("ext_t_a").algorithms == std::vector<std::string>{"default", "fast"});
  loader.unload("/t/d.cu");
  CHECK(reg.get("ext_t_a").find_kernel(Device::cuda, "default") == nullptr);
  CHECK(reg.get("ext_t_a").find_kernel(Device::cpu, "default") != nullptr);
  const OpDef* first = reg.find("ext_t_a");
  ext::LoadedFile a2 = fake_file("/t/a.cpp", {"ext_t_a", "ext_t_a2"});
  const ext::LoadReport r = loader.adopt(a2);
  CHECK(r.status == ext::LoadReport::Status::reloaded);
  CHECK(r.ops_replaced == std::vector<std::string>{"ext_t_a"});
  CHECK(r.ops_added == std::vector<std::string>{"ext_t_a2"});
  CHECK(reg.find("ext_t_a") != first);  // a new definition; the old one stays alive for its nodes
  CHECK(first->name == "ext_t_a");
  CHECK(has_algorithm("ext_t_a", "fast"));
  // Another file may not take a.cpp's op.
  CHECK(error_of([&] { loader.adopt(fake_file("/t/c.cpp", {"ext_t_a"})); }).find("the operator ext_t_a of /t/a.cpp") !=
        std::string::npos);
  for (const auto& f : loader.loaded())
    if (f.origin.rfind("/t/", 0) == 0) loader.restore(f.origin, std::nullopt);
}

TEST_CASE("extension: the fused swish example loads, runs, gradchecks and works in static mode", "[op][grad]") {
  test::extension_temp();
  test::Lab lab;
  const std::string swish = example("swish.cpp");
  // A statement that fails after the load takes the load back with it.
  lab.ok("keep = 1");
  CHECK_FALSE(lab.run("if True:\n    " + load_call(swish) + "\n    y = no_such_name\n"));
  CHECK(OpRegistry::instance().find("swish") == nullptr);
  CHECK(lab.echo("keep") == "1");

  const std::string out = lab.ok(load_call(swish));
  CHECK(out.find("operators swish, swish_backward") != std::string::npos);
  CHECK(lab.ok(load_call(swish)).find("already loaded and unchanged") != std::string::npos);
  lab.ok(
      "x = param(randn(3, 4))\n"
      "y = swish(x)\n"
      "assert allclose(y, x * sigmoid(x))\n"
      "backward(y.sum())\n"
      "s = sigmoid(x)\n"
      "assert allclose(x.grad, s * (1 + x * (1 - s)), atol=1e-6)");
  const OpDef& op = OpRegistry::instance().get("swish");
  CHECK(op.origin == fs::canonical(swish).string());
  for (const GradcheckResult& r : gradcheck_op(op)) {
    INFO(r.algo << " case " << r.case_index << ": " << r.message);
    CHECK(r.passed);
  }
  CHECK(describe_op(op).find("from: " + op.origin) != std::string::npos);
  CHECK(app::ops_table().find("swish_backward") != std::string::npos);
  // Static mode: the op's shape inference and kernel serve a compiled program as any built-in's.
  lab.ok(
      ":mode static\n"
      "xs = input(\"xs\", [2, 3])\n"
      "loss = swish(xs).sum()\n"
      "compile(loss)\n"
      "r = run(loss, xs=ones(2, 3))\n"
      ":mode dynamic");
  CHECK(lab.echo("r.item()").substr(0, 6) == "4.3863");  // 6·swish(1) = 6·0.7310586

  // The CUDA kernels: compiled by nvcc where a GPU runs them, else for the simulated GPU (sim).
  if (device_built(Device::cuda) || device_built(Device::sim)) {
    const std::string cu = example("swish_cuda.cu");
    const Device gpu = ext::target_of(cu) == ext::Target::sim ? Device::sim : Device::cuda;
    lab.ok(load_call(cu));
    CHECK(OpRegistry::instance().get("swish").find_kernel(gpu, "fused") != nullptr);
    CHECK(OpRegistry::instance().get("swish_backward").find_kernel(gpu, "default") != nullptr);
    CHECK(describe_op(OpRegistry::instance().get("swish"))
              .find(std::string("algorithm fused [") + device_name(gpu) + "] from: ") != std::string::npos);
    if (device_available(gpu)) {
      const std::string to = std::string("to(\"") + device_name(gpu) + "\")";
      lab.ok(
          "xc = randn(257, 33)\n"
          "assert allclose(swish(xc." +
          to +
          ").to(\"cpu\"), swish(xc), atol=1e-6)\n"
          "xg = param(xc." +
          to +
          ")\n"
          "backward(swish(xg).sum())\n"
          "sc = sigmoid(xc)\n"
          "assert allclose(xg.grad.to(\"cpu\"), sc * (1 + xc * (1 - sc)), atol=1e-6)");
    }
    ext::ExtensionLoader::instance().unload(cu);
  }
  ext::ExtensionLoader::instance().unload(swish);
  CHECK(OpRegistry::instance().find("swish") == nullptr);
}

TEST_CASE("extension: a student's matmul algorithm is checked by gradcheck and the kernel lab", "[op][grad]") {
  test::extension_temp();
  test::Lab lab;
  const std::string file = example("register_blocked_matmul.cpp");
  CHECK(lab.ok(load_call(file)).find("algorithm matmul: mine [cpu]") != std::string::npos);
  REQUIRE(has_algorithm("matmul", "mine"));
  // Edge tiles, a transposed (strided) operand and a broadcast batch, against naive.
  lab.ok(
      "a = randn(37, 29); b = randn(45, 29)\n"
      "assert allclose(matmul(a, b.T, algo=\"mine\"), matmul(a, b.T, algo=\"naive\"), atol=1e-4)\n"
      "p = randn(3, 2, 9, 40); q = randn(40, 33)\n"
      "assert allclose(matmul(p, q, algo=\"mine\"), matmul(p, q, algo=\"naive\"), atol=1e-4)");
  int checked = 0;
  for (const GradcheckResult& r : gradcheck_op(OpRegistry::instance().get("matmul"))) {
    if (r.algo != "mine") continue;
    INFO("case " << r.case_index << " (" << r.note << "): " << r.message);
    CHECK(r.passed);
    ++checked;
  }
  CHECK(checked >= 5);
  // The lab checks it against naive and times it beside eigen and blocked.
  const app::LabResult lab_result = app::run_lab("matmul", {67, 45, 33}, 1);
  CHECK(lab_result.reference_algo == "naive");
  bool seen_mine = false, seen_eigen = false;
  for (const app::LabRow& row : lab_result.rows) {
    seen_eigen = seen_eigen || row.algo == "eigen";
    if (row.algo != "mine") continue;
    seen_mine = true;
    CHECK(row.ok);
    CHECK(row.max_error < 1e-5);
    CHECK(row.seconds > 0);
    CHECK(row.origin == fs::canonical(file).string());
  }
  CHECK(seen_mine);
  CHECK(seen_eigen);
  CHECK(app::lab_table(lab_result).find("mine: from " + fs::canonical(file).string()) != std::string::npos);
  ext::ExtensionLoader::instance().unload(file);
  CHECK_FALSE(has_algorithm("matmul", "mine"));
}

TEST_CASE("extension: compiler errors, collisions, kernel errors and reloading an edited file", "[repl]") {
  test::extension_temp();
  test::Lab lab;
  lab.ok("keep = tensor([1.0, 2.0])");

  SECTION("a syntax error shows the file's own line and column, and the session carries on") {
    const std::string bad = write_source("bad_ops.cpp", "#include \"core/op.h\"\nint broken() {\n  return 1\n}\n");
    CHECK_FALSE(lab.run(load_call(bad)));
    INFO(lab.err);
    CHECK(lab.err.find("bad_ops.cpp did not compile (1 error); nothing was loaded") != std::string::npos);
    CHECK(lab.err.find(bad + ":3:11: error: expected ';'") != std::string::npos);
    CHECK(lab.err.find("    " + load_call(bad) + "\n    ^") != std::string::npos);  // the statement's own caret
    CHECK(lab.echo("keep.sum().item()") == "3.0");
  }
  SECTION("a file of the wrong kind, or a .cu without CUDA") {
    CHECK_FALSE(lab.run(load_call(write_source("notes.txt", "hello"))));
    CHECK(lab.err.find("a C++ file (.cpp, .cc, .cxx), a CUDA file (.cu) or a shared object (.so)") !=
          std::string::npos);
    if (!device_built(Device::cuda) && !device_built(Device::sim)) {
      CHECK_FALSE(lab.run(load_call(write_source("k.cu", "__global__ void k() {}\n"))));
      CHECK(lab.err.find("built without CUDA and without the simulated GPU") != std::string::npos);
    }
    CHECK_FALSE(lab.run(":load " + (test::extension_temp().path / "missing.cpp").string()));
    CHECK(lab.err.find("cannot open") != std::string::npos);
  }
  SECTION("an op that collides with a built-in is refused, naming both, and nothing of the file loads") {
    const std::string clash = write_source("clash.cpp", scale_extension(2, false, "relu"));
    CHECK_FALSE(lab.run(load_call(clash)));
    CHECK(lab.err.find("clash.cpp declares operator 'relu', which is already the built-in operator relu") !=
          std::string::npos);
    CHECK(OpRegistry::instance().find("ext_scale") == nullptr);
  }
  SECTION("a kernel's opscope::Error fails its statement; an edited file replaces its ops") {
    const std::string file = write_source("scale_ops.cpp", scale_extension(2, true));
    CHECK(lab.ok(load_call(file)).find("operators ext_scale, ext_refuses") != std::string::npos);
    lab.ok("y = ext_scale(keep)");
    CHECK(lab.echo("y.tolist()") == "[2.0, 4.0]");
    CHECK_FALSE(lab.run("if True:\n    z = keep + 1\n    w = ext_refuses(ones(5))\n"));
    CHECK(lab.err.find("ext_refuses: too many elements") != std::string::npos);
    CHECK(lab.err.find("hint: give it at most 3") != std::string::npos);
    CHECK_FALSE(lab.run("z"));  // the failed statement left nothing behind
    CHECK(lab.ok(":load " + file).find("already loaded and unchanged") != std::string::npos);

    const OpDef* v1 = OpRegistry::instance().find("ext_scale");
    std::ofstream(file) << scale_extension(3, false, "ext_copy");
    const std::string out = lab.ok(load_call(file));
    CHECK(out.find("reloaded " + file + " (edited): replaced ext_scale; new ext_copy; removed ext_refuses") !=
          std::string::npos);
    CHECK(lab.echo("ext_scale(keep).tolist()") == "[3.0, 6.0]");
    CHECK(OpRegistry::instance().find("ext_refuses") == nullptr);
    // The node made before the reload keeps the first version, whose code stays loaded.
    CHECK(v1->doc == "y = 2·x");
    Tensor again = lab.ws.call_multi(*v1, {test::var(lab, "keep")}, v1->resolve({}), "default")[0];
    CHECK(again.to_vector() == std::vector<double>{2.0, 4.0});
    ext::ExtensionLoader::instance().unload(file);
  }
}

TEST_CASE("extension: lessons load only what their file policy allows, and opscope's own examples", "[lesson]") {
  test::extension_temp();
  test::Lab lab;
  lab.session.interpreter().set_file_policy(std::make_shared<test::RefuseLoadingCode>());
  CHECK_FALSE(lab.run(load_call((test::extension_temp().path / "elsewhere.cpp").string())));
  CHECK(lab.err.find("<test>:1:16: error: this lesson may load extensions only from its own folder") !=
        std::string::npos);
  // example_path names a shipped example, which the policy does not stop (it is opscope's own code).
  CHECK(lab.echo("example_path(\"extensions/swish.cpp\")") == "'" + fs::canonical(example("swish.cpp")).string() + "'");
  CHECK_FALSE(lab.run("example_path(\"extensions/nope.cpp\")"));
  CHECK(lab.err.find("extensions/register_blocked_matmul.cpp") != std::string::npos);
}
