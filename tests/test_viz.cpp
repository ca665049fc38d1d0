#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "app/lang/session.h"
#include "core/workspace.h"
#include "viz/export.h"
#include "viz/words.h"

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

// Every text a viz panel shows through tr() has its Chinese: a new label written in English
// only would stay English in a Chinese lesson's window (issue 36).
TEST_CASE("[viz] every tr() text of the panels has its Chinese", "[viz]") {
  namespace fs = std::filesystem;
  // tr("..." "...") with one or more adjacent string literals, escapes kept as written.
  const std::regex call(R"re(\btr\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\))re");
  const std::regex literal(R"re("((?:[^"\\]|\\.)*)")re");
  int found = 0;
  for (const auto& file : fs::directory_iterator(fs::path(OPSCOPE_SOURCE_DIR) / "viz")) {
    if (file.path().extension() != ".cpp" || file.path().filename() == "words.cpp") continue;
    std::ifstream in(file.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
      std::string key;
      const std::string literals = (*it)[1];
      for (std::sregex_iterator l(literals.begin(), literals.end(), literal); l != end; ++l)
        key += std::regex_replace(std::string((*l)[1]), std::regex(R"(\\")"), "\"");
      INFO(file.path().filename().string() << ": tr(\"" << key << "\")");
      CHECK(opscope::viz::has_chinese(key.c_str()));
      ++found;
    }
  }
  CHECK(found >= 30);
  opscope::viz::set_chinese(true);
  CHECK(std::string(opscope::viz::tr("Memory after each step")) == "每一步之后的内存");
  CHECK(std::string(opscope::viz::tr("not a panel's text")) == "not a panel's text");
  opscope::viz::set_chinese(false);
  CHECK(std::string(opscope::viz::tr("Memory after each step")) == "Memory after each step");
}
