// A workspace with a language session, for tests that drive opscope as a student types.
#pragma once
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "app/lang/interpreter.h"
#include "app/lang/session.h"
#include "core/workspace.h"

namespace opscope::test {

struct Lab {
  Workspace ws;
  WorkspaceScope scope{ws};
  lang::Session session{ws};
  std::string out, err;
  bool run(const std::string& code) {
    std::ostringstream o, e;
    bool ok = session.run(code, "<test>", o, e);
    out = o.str();
    err = e.str();
    return ok;
  }
  // Runs code that must succeed and returns what it printed.
  std::string ok(const std::string& code) {
    bool good = run(code);
    INFO(code << "\n" << err);
    REQUIRE(good);
    return out;
  }
  // The value of an expression, as the REPL would echo it.
  std::string echo(const std::string& expr) {
    session.set_echo_expressions(true);
    std::string s = ok(expr);
    session.set_echo_expressions(false);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
};

// A tensor variable of the session.
inline Tensor var(Lab& lab, const std::string& name) {
  const lang::Value* v = lab.session.interpreter().lookup(name);
  INFO("variable " << name);
  REQUIRE(v);
  REQUIRE(v->kind() == lang::Value::tensor);
  return v->as_tensor();
}

}  // namespace opscope::test
