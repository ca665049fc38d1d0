#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "app/kernel_lab.h"
#include "core/device.h"
#include "core/error.h"
#include "lab.h"

using namespace opscope;

TEST_CASE("the kernel lab runs every algorithm and checks it against the simplest", "[op]") {
  auto r = app::run_lab("matmul", {33, 17, 9}, 1);
  CHECK(r.reference_algo == "naive");
  REQUIRE(r.rows.size() == 4);  // naive, blocked, eigen, blas
  for (auto& row : r.rows) {
    INFO(row.algo << ": " << row.error);
    CHECK(row.ok);
    CHECK(row.seconds > 0);
    CHECK(row.max_error < 1e-5);
    CHECK(row.workspace_bytes == 0);
  }
  std::string table = app::lab_table(r);
  CHECK(table.find("algorithm") != std::string::npos);
  CHECK(table.find("blocked") != std::string::npos);
  CHECK(app::lab_json(r).find("\"reference\": \"naive\"") != std::string::npos);
  REQUIRE_THROWS_WITH(app::run_lab("exp", {}), Catch::Contains("cannot feed 'exp'"));
  REQUIRE_THROWS_AS(app::run_lab("matmul", {0}), Error);
}

TEST_CASE("the kernel lab on the simulated GPU names the GPU its time bounds are for", "[op][sim]") {
  if (!device_available(Device::sim)) return;
  for (const char* gpu : {"T4", "RTX4090"}) {
    auto r = app::run_lab("matmul", {32, 32, 32}, 1, Device::sim, gpu);
    CHECK(r.device_description.find(std::string("time bounds for a ") + gpu) != std::string::npos);
    CHECK(app::lab_table(r).find(std::string("time bounds for a ") + gpu) != std::string::npos);
    CHECK(app::lab_json(r).find(std::string("\"gpu\": \"") + gpu + "\"") != std::string::npos);
  }
  // The device line gives the chosen preset's own figures (datasheets: a T4 is sm_75 with 40 SMs
  // at 1.59 GHz and 16 GB; an H200 sm_90, 132 SMs, 141 GB), not one GPU's whatever was chosen.
  const auto t4 = app::run_lab("matmul", {32, 32, 32}, 1, Device::sim, "T4");
  CHECK(t4.device_description == "simulated T4 at 1.59 GHz (sm_75, 16 GiB, 40 SMs), time bounds for a T4");
  CHECK(app::lab_table(t4).find("simulated T4 at 1.59 GHz (sm_75, 16 GiB, 40 SMs)") != std::string::npos);
  app::run_lab("matmul", {32, 32, 32}, 1, Device::sim, "H200");
  test::Lab lab;  // :device names the preset the simulator stands for now
  CHECK(lab.ok(":device").find("\nsim: simulated H200 at 1.98 GHz (sm_90, 141 GiB, 132 SMs)\n") != std::string::npos);
  // FLOPs on sim: mma_sync's are counted as they run, the scalar kernels' are the cost model's
  // estimate (2·M·N·K for a matmul), said apart.
  const auto rows = nlohmann::json::parse(app::lab_json(t4))["rows"];
  int seen = 0;
  for (const auto& row : rows) {
    if (row["algorithm"] != "naive" && row["algorithm"] != "wmma") continue;
    ++seen;
    const double counted = row["algorithm"] == "wmma" ? 2.0 * 32 * 32 * 32 : 0.0;
    CHECK(row["flops"]["cost_model"] == 2.0 * 32 * 32 * 32);
    CHECK(row["flops"]["counted"] == counted);
    CHECK(row["flops"]["scalar_estimated"] == 2.0 * 32 * 32 * 32 - counted);
  }
  CHECK(seen == 2);
  CHECK(app::lab_table(t4).find(
            "naive: 6.554e+04 FLOPs by the cost model; 0 counted (mma_sync, library), 6.554e+04 estimated (scalar)") !=
        std::string::npos);
  REQUIRE_THROWS_WITH(app::run_lab("matmul", {32, 32, 32}, 1, Device::sim, "A100"),
                      Catch::Contains("unknown GPU 'A100' for the simulated device"));
}
