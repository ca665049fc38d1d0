// A student's own .cu file loaded with load_extension and run on the simulated GPU (no GPU here):
// values against the CPU, per-line counters, the checks at the student's lines, compiler errors
// at the student's line. Built only with the simulator (gpusim/CMakeLists.txt). About 2.5 s: one
// instrumented compile of tests/extensions/student_kernels.cu (1.4 s) and one failing compile.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/extension/compiler.h"
#include "app/extension/loader.h"
#include "app/lang/file_policy.h"
#include "core/device.h"
#include "core/op.h"
#include "extension_temp.h"
#include "gpusim/report.h"
#include "lab.h"

using namespace opscope;
namespace fs = std::filesystem;

namespace {

const std::string kStudentFile = std::string(OPSCOPE_SOURCE_DIR) + "/tests/extensions/student_kernels.cu";

int line_in_student_file(const std::string& text) {
  std::ifstream in(kStudentFile);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) return n;
  FAIL("'" << text << "' not in " << kStudentFile);
  return 0;
}

// The .cu goes to the simulator only where no real GPU takes it.
bool skip_unless_sim_target() {
  if (device_available(Device::sim) && ext::target_of(kStudentFile) == ext::Target::sim) return false;
  WARN("SKIPPED: .cu extensions compile for a real GPU here, or the simulator is not built");
  return true;
}

std::string load_call(const std::string& path) { return "load_extension(\"" + path + "\")"; }

}  // namespace

TEST_CASE("sim extension: a student's .cu runs on sim, matches the CPU, is counted per line and checked at its lines",
          "[sim][gpusim][extension]") {
  if (skip_unless_sim_target()) return;
  test::extension_temp();
  test::Lab lab;
  const std::string out = lab.ok(load_call(kStudentFile));
  INFO(out);
  CHECK(out.find("operators student_axpy, student_shift, student_block_sum") != std::string::npos);
  REQUIRE(OpRegistry::instance().get("student_axpy").find_kernel(Device::sim, "default") != nullptr);

  // Values: the kernel on sim against the same op's CPU kernel.
  lab.ok(
      "x = randn(1000)\n"
      "xs = x.to(\"sim\")");
  gpusim::start_recording();
  lab.ok("ys = student_axpy(xs)");
  const auto records = gpusim::take_records();
  lab.ok(
      "assert allclose(ys.to(\"cpu\"), 2 * x + 1)\n"
      "assert allclose(ys.to(\"cpu\"), student_axpy(x))");

  // Counted at the student's line: 1000 floats in 4 blocks of 256 threads = 32 warps with a lane
  // in range (the last with 1000 - 31·32 = 8 lanes), one load request each; a full warp reads
  // 32·4 B = 128 B = 4 sectors of 32 B (the allocation is 256-byte aligned), the last 8·4 B = 1:
  // 31·4 + 1 = 125 sectors. The store is the same.
  const gpusim::LaunchRecord* launch = nullptr;
  for (const auto& r : records)
    if (r.kernel.find("axpy_kernel") != std::string::npos) launch = &r;
  REQUIRE(launch != nullptr);
  CHECK(launch->grid[0] == 4);
  CHECK(launch->block[0] == 256);
  const int line = line_in_student_file("if (i < n) y[i] = 2.0f * x[i] + 1.0f;");
  int loads = 0, stores = 0;
  for (const auto& s : launch->sites) {
    INFO(s.file << ":" << s.line);
    CHECK(s.file == "student_kernels.cu");
    CHECK(s.line == line);
    CHECK(s.requests == 32);
    CHECK(s.sectors == 125);
    CHECK(s.lanes == 1000);
    (s.kind == gpusim::AccessKind::load ? loads : stores) += 1;
  }
  CHECK(loads == 1);
  CHECK(stores == 1);

  // The off-by-one guard: thread 128 (block 4 of 32 threads) reads x[128] of 128 floats, one
  // past a 512-byte allocation (exactly the caching allocator's block, so no slack hides it).
  lab.ok("x128 = randn(128).to(\"sim\")");
  CHECK_FALSE(lab.run("y2 = student_shift(x128)"));
  INFO(lab.err);
  CHECK(lab.err.find("out-of-bounds global load of 4 bytes") != std::string::npos);
  CHECK(lab.err.find("shift_kernel, block (4,0,0), thread (0,0,0)") != std::string::npos);
  CHECK(lab.err.find("student_kernels.cu:" + std::to_string(line_in_student_file("if (i <= n) y[i % n] = x[i];"))) !=
        std::string::npos);
  CHECK_FALSE(lab.run("y2"));  // the failed statement left nothing behind

  // The forgotten barrier: thread 0 reads s[1] before thread 1 writes it, whatever the sum's value.
  CHECK_FALSE(lab.run("y3 = student_block_sum(xs)"));
  INFO(lab.err);
  CHECK(lab.err.find("hazard") != std::string::npos);
  CHECK(lab.err.find("student_kernels.cu:" + std::to_string(line_in_student_file("s[t] = t < n ? x[t] : 0.0f;"))) !=
        std::string::npos);
  CHECK(lab.err.find("student_kernels.cu:" + std::to_string(line_in_student_file("acc += s[j];"))) !=
        std::string::npos);

  ext::ExtensionLoader::instance().unload(kStudentFile);
  CHECK(OpRegistry::instance().find("student_axpy") == nullptr);
}

TEST_CASE("sim extension: a .cu that does not compile shows the compiler's message at the student's line",
          "[sim][gpusim][extension]") {
  if (skip_unless_sim_target()) return;
  test::Lab lab;
  const fs::path bad = test::extension_temp().path / "bad_kernel.cu";
  std::ofstream(bad) << "#include \"ops/cuda/cuda_util.cuh\"\n"
                        "__global__ void k(float* y) {\n"
                        "  y[threadIdx.x] = 1.0f\n"
                        "}\n";
  CHECK_FALSE(lab.run(load_call(bad.string())));
  INFO(lab.err);
  CHECK(lab.err.find("bad_kernel.cu did not compile (1 error); nothing was loaded") != std::string::npos);
  CHECK(lab.err.find(bad.string() + ":3:24: error: expected ';'") != std::string::npos);
  CHECK(lab.err.find("y[threadIdx.x] = 1.0f") != std::string::npos);  // the student's line, not the rewritten one
}

TEST_CASE("sim extension: a lesson's file policy stops a .cu as it stops a .cpp", "[extension]") {
  test::Lab lab;
  lab.session.interpreter().set_file_policy(std::make_shared<test::RefuseLoadingCode>());
  CHECK_FALSE(lab.run(load_call(kStudentFile)));
  CHECK(lab.err.find("this lesson may load extensions only from its own folder") != std::string::npos);
  CHECK(OpRegistry::instance().find("student_axpy") == nullptr);
}
