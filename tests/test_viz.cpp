#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/lang/session.h"
#include "core/workspace.h"
#include "viz/export.h"

using namespace opscope;

namespace {
const char* kProgram =
    "def swish(t):\n    return t * sigmoid(t)\n"
    "seed(0); w = param(randn(3, 4)); x = randn(2, 3)\n"
    "y = swish(x @ w); loss = y.sum()\nbackward(loss)\n";

std::string run_and_dot() {
  Workspace ws;
  WorkspaceScope scope(ws);
  lang::Session s(ws);
  std::ostringstream o, e;
  REQUIRE(s.run(kProgram, "<t>", o, e));
  return viz::graph_to_dot(ws.graph());
}
}  // namespace

TEST_CASE("the DOT export is deterministic and shows scopes, phases and shapes", "[viz]") {
  const std::string a = run_and_dot(), b = run_and_dot();
  CHECK(a == b);
  CHECK(a.find("subgraph cluster_0") != std::string::npos);
  CHECK(a.find("label=\"swish\"") != std::string::npos);
  CHECK(a.find("#fbcfe8") != std::string::npos);  // backward nodes in their own colour
  CHECK(a.find("[2, 4] float32") != std::string::npos);
  CHECK(a.find("w\\n[3, 4]") != std::string::npos);
}

TEST_CASE("the Chrome trace parses as JSON with one slice per step and memory counters", "[viz]") {
  Workspace ws;
  WorkspaceScope scope(ws);
  viz::TraceRecorder rec(ws.executor());
  lang::Session s(ws);
  std::ostringstream o, e;
  REQUIRE(s.run(kProgram, "<t>", o, e));
  auto j = nlohmann::json::parse(viz::chrome_trace_json(rec.events(), rec.labels));
  int slices = 0, counters = 0, backward = 0;
  for (auto& ev : j["traceEvents"]) {
    if (ev["ph"] == "X") {
      ++slices;
      CHECK(ev.contains("dur"));
      CHECK(ev["args"].contains("flops"));
      backward += ev["args"]["phase"] == "backward";
    }
    if (ev["ph"] == "C") {
      ++counters;
      CHECK(ev["args"].contains("saved"));
    }
  }
  CHECK(slices == static_cast<int>(ws.executor().step_count()));
  CHECK(counters == slices);
  CHECK(backward > 0);
}
