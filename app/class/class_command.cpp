#include "app/class/class_command.h"

#include <memory>

#include "app/class/class_module.h"
#include "core/error.h"
#include "core/module_file.h"
#include "opscope_abi.h"

namespace opscope::classroom {

namespace {

constexpr const char* kModuleName = "libopscope_class.so";
constexpr const char* kEnvVar = "OPSCOPE_CLASS_MODULE";  // names another copy of it

const ClassModule& class_module() {
  std::string why;
  const ClassModule* module =
      open_module_table<ClassModule>(kModuleName, kEnvVar, OPSCOPE_CLASS_BUILT_MODULE, OPSCOPE_CLASS_MODULE_ENTRY,
                                     kClassModuleInterface, OPSCOPE_ABI_ID, why);
  if (!module) throw Error("cannot start the class server: " + why, module_hint(kModuleName, kEnvVar));
  return *module;
}

}  // namespace

std::pair<CLI::App*, std::function<int()>> add_class_command(CLI::App& app) {
  auto init = std::make_shared<InitArgs>();
  auto serve = std::make_shared<ServeArgs>();
  auto* sub =
      app.add_subcommand("class", "a class: the site, every attempt graded on this machine, the teacher's page");
  sub->require_subcommand(1);
  auto* i = sub->add_subcommand("init", "make a class in a folder: prints the teacher's key and the class code");
  i->add_option("DIR", init->dir, "the class's folder (made if missing)")->required();
  i->add_option("--name", init->name, "the class's name")->required();
  i->add_option("--roster", init->roster, "a CSV of the students' names (one per line): only they may join");
  auto* s = sub->add_subcommand("serve", "serve a class: the HTTP API, the teacher's page at /teacher?key=KEY");
  s->add_option("DIR", serve->dir, "the class's folder")->required();
  s->add_option("--port", serve->port, "the port (default 8000)")->check(CLI::Range(1, 65535));
  s->add_option("--host", serve->host, "the address to listen on (default 127.0.0.1; 0.0.0.0: the room's network)");
  s->add_option("--workers", serve->workers, "attempts graded at once (default: the machine's cores)")
      ->check(CLI::Range(1, 256));
  s->add_option("--grade-seconds", serve->grade_seconds,
                "kill a grader after this many seconds (default: the exercise's limit + 5)");
  s->add_option("--grade-memory-mb", serve->grade_memory_mb, "a grader's memory cap in MiB (default 2048)")
      ->check(CLI::Range(64, 1 << 20));
  s->add_option("--rate", serve->rate_per_second, "a student's requests per second, sustained (default 2)");
  s->add_option("--burst", serve->rate_burst, "a student's requests at once above that (default 30)");
  s->add_option("--grader", serve->grader, "the grader program (default: this opscope)");
  s->add_option("--site", serve->site, "serve the browser site from this folder at / (build-web/site)")
      ->check(CLI::ExistingDirectory);
  s->add_option("--lang", serve->lang, "the feedback's language: en or zh")->check(CLI::IsMember({"en", "zh"}));
  return {sub, [init, serve, i, s]() -> int {
            const ClassModule& m = class_module();
            return *i ? m.init(*init) : m.serve(*serve);
          }};
}

}  // namespace opscope::classroom
