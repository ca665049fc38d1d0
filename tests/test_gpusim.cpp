// The simulated GPU (gpusim/): its counters on the matmul family against what the kernels'
// comments say, and its checks on kernels with one defect each (tests/gpusim/defects.cu).
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "core/device.h"
#include "core/error.h"
#include "core/workspace.h"
#include "gpusim/report.h"
#include "tests/gpusim/defects.h"
#include "tests/helpers.h"

namespace opscope {
namespace {

// The 1-based line of the first line of `file` (under the source tree) containing `text`.
int line_of(const std::string& file, const std::string& text) {
  std::ifstream in(std::string(OPSCOPE_SOURCE_DIR) + "/" + file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos) return n;
  FAIL("'" << text << "' not in " << file);
  return 0;
}

// Runs matmul `algo` on two n×n float32 matrices on sim, recording its launches.
std::vector<gpusim::LaunchRecord> record_matmul(const std::string& algo, int64_t n) {
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = test::uniform({n, n}, DType::f32, 1).to(Device::sim),
         b = test::uniform({n, n}, DType::f32, 2).to(Device::sim);
  NoGradGuard ng;
  gpusim::start_recording();
  ws.call("matmul", {a, b}, {}, algo);
  return gpusim::take_records();
}

const gpusim::LaunchRecord& only_launch(const std::vector<gpusim::LaunchRecord>& v, const std::string& kernel) {
  const gpusim::LaunchRecord* found = nullptr;
  for (const auto& r : v)
    if (r.kernel.find(kernel) != std::string::npos) found = &r;
  REQUIRE(found != nullptr);
  return *found;
}

std::vector<gpusim::SiteRecord> sites_at(const gpusim::LaunchRecord& r, int line, bool shared, gpusim::AccessKind k) {
  std::vector<gpusim::SiteRecord> out;
  for (const auto& s : r.sites)
    if (s.file == "matmul.cu" && s.line == line && s.shared == shared && s.kind == k) out.push_back(s);
  return out;
}

double per_request(uint64_t total, const gpusim::SiteRecord& s) { return double(total) / double(s.requests); }

bool skip_without_sim() {
  if (device_available(Device::sim)) return false;
  std::cout << "SKIPPED: no CUDA device (" << device_missing_message(Device::sim) << ")\n";
  return true;
}

}  // namespace

TEST_CASE("sim: a recording inside another takes its own launches and leaves them to the outer one", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = test::uniform({8, 8}, DType::f32, 1).to(Device::sim);
  NoGradGuard ng;
  gpusim::start_recording();
  ws.call("matmul", {a, a}, {}, "naive");
  gpusim::start_recording();  // the interpreter's, around a statement (last_launch())
  ws.call("matmul", {a, a}, {}, "tiled");
  const auto inner = gpusim::take_records();
  const auto outer = gpusim::take_records();
  REQUIRE(inner.size() == 1);
  CHECK(inner[0].kernel.find("tiled") != std::string::npos);
  REQUIRE(outer.size() == 2);
  CHECK(outer[0].kernel.find("naive") != std::string::npos);
  CHECK(outer[1].kernel.find("tiled") != std::string::npos);
  CHECK(gpusim::take_records().empty());  // none open: nothing kept
}

TEST_CASE("sim: tiled_conflicting's Bt reads 32 wavefronts per request, tiled_padded's 1, As[ty][k] a broadcast",
          "[sim][gpusim]") {
  if (skip_without_sim()) return;
  const int line = line_of("ops/cuda/matmul.cu", "acc += As[ty][k] * Bt[tx][k]");
  for (const char* algo : {"tiled_conflicting", "tiled_padded"}) {
    INFO(algo);
    const auto launch = only_launch(record_matmul(algo, 64), "mm_tiled_transposed_b");
    const auto reads = sites_at(launch, line, true, gpusim::AccessKind::load);
    REQUIRE(reads.size() == 2);  // As[ty][k] and Bt[tx][k], in code order
    const auto& as = reads[0];
    const auto& bt = reads[1];
    CHECK(as.requests == 4 /*blocks*/ * 32 /*warps*/ * 2 /*tiles*/ * 32 /*k*/);
    CHECK(per_request(as.wavefronts, as) == 1);
    CHECK(per_request(as.words, as) == 1);  // every lane reads one word: a broadcast
    CHECK(per_request(as.lanes, as) == 32);
    CHECK(per_request(bt.wavefronts, bt) == (std::string(algo) == "tiled_conflicting" ? 32 : 1));
    CHECK(per_request(bt.words, bt) == 32);
  }
}

TEST_CASE("sim: a site's worst request: tiled_conflicting's Bt column is bank 0, lanes 0-31, 32 ways",
          "[sim][gpusim]") {
  if (skip_without_sim()) return;
  const int line = line_of("ops/cuda/matmul.cu", "acc += As[ty][k] * Bt[tx][k]");
  for (const char* algo : {"tiled_conflicting", "tiled_padded"}) {
    INFO(algo);
    const bool conflicting = std::string(algo) == "tiled_conflicting";
    const auto launch = only_launch(record_matmul(algo, 64), "mm_tiled_transposed_b");
    const auto reads = sites_at(launch, line, true, gpusim::AccessKind::load);
    REQUIRE(reads.size() == 2);
    // Block (0,0), warp 0, k = 0: lane tx reads Bt[tx][0], word W·tx, bank (W·tx) % 32.
    const gpusim::WorstRequest& bt = reads[1].worst;
    REQUIRE(bt.set);
    CHECK(bt.block[0] == 0);
    CHECK(bt.block[1] == 0);
    CHECK(bt.warp == 0);
    CHECK(bt.bank == 0);
    // W = 32: all 32 lanes in bank 0; W = 33: bank tx % 32, lane 0's alone.
    CHECK(bt.cost == (conflicting ? 32u : 1u));
    CHECK(bt.lanes == (conflicting ? 0xffffffffu : 1u));
    CHECK(bt.last_offset - bt.first_offset == (conflicting ? 31u * 32 * 4 : 0u));
    CHECK(bt.first_name.empty());  // a .cu kernel's arrays have no names the simulator knows
    // As[ty][k]: one word for the whole warp, a broadcast: 1 way, every lane.
    CHECK(reads[0].worst.cost == 1);
    CHECK(reads[0].worst.lanes == 0xffffffffu);
  }
}

TEST_CASE("sim: a global site's worst request: naive matmul's B row, 16 lanes per row, 2 sectors", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  const int line = line_of("ops/cuda/matmul.cu", "acc += A[int64_t(i) * g.K + k] * B[int64_t(k) * g.N + j]");
  const auto launch = only_launch(record_matmul("naive", 64), "mm_naive");
  const auto reads = sites_at(launch, line, false, gpusim::AccessKind::load);
  REQUIRE(reads.size() == 2);
  // B[k·N + j]: a warp of 16×16 blocks is two rows ty of 16 lanes tx, all at the same k: lanes
  // 0–15 read B[k][0..15], lanes 16–31 the same 64 bytes again: 2 sectors, 64 bytes, no single stride.
  const gpusim::WorstRequest& b = reads[1].worst;
  REQUIRE(b.set);
  CHECK(b.cost == 2);
  CHECK(b.lanes == 0xffffffffu);
  CHECK(b.span_bytes == 64);
  CHECK(b.stride_bytes == 0);
  CHECK(b.bank == -1);
}

TEST_CASE("sim: naive matmul with 16x16 blocks reads 2 sectors per request of A and of B", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  const int line = line_of("ops/cuda/matmul.cu", "acc += A[int64_t(i) * g.K + k] * B[int64_t(k) * g.N + j]");
  const auto launch = only_launch(record_matmul("naive", 64), "mm_naive");
  CHECK(launch.block[0] == 16);
  CHECK(launch.block[1] == 16);
  const auto reads = sites_at(launch, line, false, gpusim::AccessKind::load);
  REQUIRE(reads.size() == 2);
  for (const auto& s : reads) {
    CHECK(per_request(s.sectors, s) == 2);
    CHECK(per_request(s.lanes, s) == 32);
  }
  CHECK(launch.barriers == 0);
  CHECK(launch.dram_bytes() > 0);
}

TEST_CASE("sim: wmma's load_matrix_sync splits the tile among the warp's lanes", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  // 32×32×32 in TF32: one block of 4 warps, 4 k-steps of KT = 8; each warp loads per step a
  // 16×8 A fragment (128 elements) and an 8×16 B fragment (128), so 128 / 32 = 4 requests of 32
  // lanes each (lane l reads elements l, l+32, ...): 4 warps × 4 steps × 2 loads × 4 = 128
  // requests, 4,096 lane reads (every lane reading the whole tile made that 32× more).
  // Wavefronts, by hand: A from As (row stride KT + 8 = 16 words): request j covers rows 4j..4j+3,
  // 8 columns each; words 16·r + c fall in banks c (rows 4j, 4j+2) and 16 + c (rows 4j+1, 4j+3):
  // two words per bank, 2 wavefronts. B from Bs[0][wj] (row stride 40 words): request j covers
  // rows 2j, 2j+1, 16 columns each; banks (8·r + c + wj) mod 32: the two rows' 16 banks overlap
  // in 8, 2 wavefronts. So 256 wavefronts, 2 per request, 32 distinct words per request.
  const auto launch = only_launch(record_matmul("wmma", 32), "mm_wmma");
  uint64_t requests = 0, wavefronts = 0, lanes = 0, words = 0;
  for (const auto& s : launch.sites)
    if (s.file == "mma.h" && s.shared && s.kind == gpusim::AccessKind::load) {
      requests += s.requests;
      wavefronts += s.wavefronts;
      lanes += s.lanes;
      words += s.words;
    }
  CHECK(requests == 128);
  CHECK(lanes == 4096);
  CHECK(wavefronts == 256);
  CHECK(words == 4096);
  CHECK(launch.flops == uint64_t(2) * 32 * 32 * 32);  // mma_sync: 4 warps × 4 steps × 2·16·16·8
}

TEST_CASE("sim: the checked kernels of tiled matmul report barriers and no hazard", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  const auto launch = only_launch(record_matmul("tiled", 64), "mm_tiled");
  CHECK(launch.barriers == 4 /*blocks*/ * 2 /*tiles*/ * 2);
  const gpusim::GpuPreset* t4 = gpusim::find_gpu("T4");
  REQUIRE(t4 != nullptr);
  CHECK(gpusim::time_bound_us(launch, *t4) > t4->launch_us);
}

namespace {
// Two float buffers on sim with n elements each; the test's workspace owns them.
struct SimBuffers {
  Workspace ws;
  WorkspaceScope scope{ws};
  Tensor x, y, z;
  explicit SimBuffers(int64_t n) {
    x = test::uniform({n}, DType::f32, 3).to(Device::sim);
    y = Tensor::zeros({n}, DType::f32).to(Device::sim);
    z = Tensor::zeros({n}, DType::f32).to(Device::sim);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("sim: a removed __syncthreads is a write-after-read hazard naming both lines", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  SimBuffers b(64 * 64);
  const std::string msg = error_of(
      [&] { gpusim_defects::launch_missing_barrier(b.x.data<float>(), b.x.data<float>(), b.y.data<float>(), 64); });
  INFO(msg);
  CHECK(msg.find("write-after-read hazard in shared memory") != std::string::npos);
  CHECK(msg.find("mm_tiled_missing_barrier") != std::string::npos);
  CHECK(msg.find("block (0,0,0)") != std::string::npos);
  const std::string f = "tests/gpusim/defects.cu";
  CHECK(msg.find("defects.cu:" + std::to_string(line_of(f, "As[ty][tx] = i < M"))) != std::string::npos);
  CHECK(msg.find("defects.cu:" + std::to_string(line_of(f, "acc += As[ty][k] * Bs[k][tx]"))) != std::string::npos);
  // The simulator carries on: the next launch runs and counts.
  CHECK_FALSE(record_matmul("tiled", 32).empty());
}

TEST_CASE("sim: a launch stopped by a hazard is reported with the hazard in its \"hazards\"", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  SimBuffers b(64 * 64);
  LaunchReporter* reporter = launch_reporter(Device::sim);
  REQUIRE(reporter != nullptr);
  reporter->start();
  const std::string msg = error_of(
      [&] { gpusim_defects::launch_missing_barrier(b.x.data<float>(), b.x.data<float>(), b.y.data<float>(), 64); });
  const std::string json = reporter->take_json("T4");
  INFO(json);
  CHECK(msg.find("write-after-read hazard") != std::string::npos);
  CHECK(json.find("\"kernel\": \"mm_tiled_missing_barrier\"") != std::string::npos);
  CHECK(json.find("\"hazards\": [\"simulated GPU: write-after-read hazard in shared memory") != std::string::npos);
  // A launch without a defect reports none.
  reporter->start();
  {
    Workspace ws;
    WorkspaceScope scope(ws);
    Tensor x = test::uniform({32, 32}, DType::f32, 1).to(Device::sim);
    NoGradGuard ng;
    ws.call("matmul", {x, x}, {}, "tiled");
  }
  const std::string clean = reporter->take_json("T4");
  CHECK(clean.find("\"hazards\": []") != std::string::npos);
  CHECK(clean.find("\"hazards\": [\"") == std::string::npos);
}

TEST_CASE("sim: an off-by-one bound is an out-of-bounds load with thread and line", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  // 128 floats: 512 bytes, exactly the caching allocator's block (it rounds to 512 bytes: a
  // read past a tensor but inside its block is not seen, as on a GPU under a caching allocator).
  SimBuffers b(128);
  const std::string msg =
      error_of([&] { gpusim_defects::launch_off_by_one(b.x.data<float>(), b.y.data<float>(), 128); });
  INFO(msg);
  CHECK(msg.find("out-of-bounds global load of 4 bytes") != std::string::npos);
  CHECK(msg.find("copy_off_by_one, block (2,0,0), thread (0,0,0)") != std::string::npos);  // thread 128
  CHECK(msg.find("4 bytes past the end of the 512-byte allocation") != std::string::npos);
  CHECK(msg.find("defects.cu:" + std::to_string(line_of("tests/gpusim/defects.cu", "if (i <= n) y[i % n] = x[i]"))) !=
        std::string::npos);
}

TEST_CASE("sim: an unaligned float4 view is a misaligned load", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  SimBuffers b(64);
  const std::string msg =
      error_of([&] { gpusim_defects::launch_unaligned_float4(b.x.data<float>(), b.y.data<float>(), 8); });
  INFO(msg);
  CHECK(msg.find("misaligned global load of 16 bytes") != std::string::npos);
  CHECK(msg.find("thread (0,0,0)") != std::string::npos);
}

TEST_CASE("sim: a __syncthreads after some threads returned is reported, never a hang", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  SimBuffers b(64);
  const std::string msg = error_of([&] { gpusim_defects::launch_barrier_after_return(b.y.data<float>(), 40); });
  INFO(msg);
  CHECK(msg.find("__syncthreads reached by part of the block") != std::string::npos);
  CHECK(msg.find("thread (40,0,0) has exited") != std::string::npos);
  CHECK(msg.find("waits at defects.cu:") != std::string::npos);  // the kernel's line, not the stand-in header's
}

TEST_CASE("sim: a full-mask shuffle called by half a warp never completes: reported", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  SimBuffers b(64);
  const std::string msg = error_of([&] { gpusim_defects::launch_half_warp_shuffle(b.y.data<float>()); });
  INFO(msg);
  CHECK(msg.find("never completes") != std::string::npos);
  CHECK(msg.find("has exited") != std::string::npos);
}

}  // namespace opscope

namespace opscope {

// The one kernel of ops/cuda no case list reaches through an op: the backend's add_into
// (gradients accumulated on the device).
TEST_CASE("sim: the backend's add_into adds on the device", "[sim][gpusim]") {
  if (skip_without_sim()) return;
  Workspace ws;
  WorkspaceScope scope(ws);
  Tensor a = test::uniform({1000}, DType::f32, 5), b = test::uniform({1000}, DType::f32, 6);
  Tensor acc = a.to(Device::sim);
  device_backend(Device::sim)->add_into(acc, b.to(Device::sim));
  const std::vector<double> got = acc.to_vector(), x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == static_cast<double>(static_cast<float>(x[i]) + static_cast<float>(y[i])));
}

}  // namespace opscope
