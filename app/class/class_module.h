// The class server's module, libopscope_class.so: `opscope class` opens it on first use, so the
// opscope executable maps neither cpp-httplib (with OpenSSL, zlib and brotli under it) nor SQLite.
#pragma once
#include <string>

#include "core/module_file.h"

namespace opscope::classroom {

constexpr int kClassModuleInterface = 1;
#define OPSCOPE_CLASS_MODULE_ENTRY "opscope_class_module"

// `opscope class init DIR --name NAME [--roster CSV]`.
struct InitArgs {
  std::string dir, name, roster;
};

// `opscope class serve DIR [--port P] [--host H]`.
struct ServeArgs {
  std::string dir, host = "127.0.0.1";
  int port = 8000;
  int workers = 0;  // grading processes at once; 0: the machine's cores
  double grade_seconds = 0;  // a grader child's wall-clock kill; 0: the exercise's limit + 5 s
  int grade_memory_mb = 2048;  // its address-space cap (RLIMIT_AS)
  double rate_per_second = 2;  // a student's sustained requests per second ...
  int rate_burst = 30;  // ... and the burst allowed above it
  std::string grader;  // the program run as `GRADER exercise check ID FILE --json`
  std::string lang = "en";  // the feedback's language
  std::string site;  // the browser site's folder, served at / (empty: none)
};

struct ClassModule : ModuleTableHead {
  int (*init)(const InitArgs&);
  int (*serve)(const ServeArgs&);
};

}  // namespace opscope::classroom
