// A workspace that ran a script (the figure and layout tests start from one); a script error
// fails the test with the interpreter's message.
#pragma once
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "app/lang/session.h"
#include "core/workspace.h"

namespace opscope {

struct Ran {
  Workspace ws;
  explicit Ran(const std::string& code) {
    WorkspaceScope scope(ws);
    lang::Session s(ws);
    std::ostringstream o, e;
    const bool ok = s.run(code, "<t>", o, e);
    INFO(e.str());
    REQUIRE(ok);
  }
};

}  // namespace opscope
