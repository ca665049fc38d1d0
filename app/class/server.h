// `opscope class init` and `opscope class serve`: the class's folder, and its HTTP server (the
// API, the teacher's page) with the grading pool behind it.
#pragma once
#include <string>

#include "app/class/class_module.h"

namespace opscope::classroom {

inline std::string class_db_path(const std::string& dir) { return dir + "/class.db"; }

int init_class(const InitArgs& a);  // prints "teacher key: KEY" and "class code: CODE"
int serve_class(const ServeArgs& a);  // prints "serving on http://HOST:P" once it accepts

}  // namespace opscope::classroom
