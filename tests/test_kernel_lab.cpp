#include <catch2/catch.hpp>

#include "app/kernel_lab.h"
#include "core/device.h"
#include "core/error.h"

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
}
