// `opscope class init|serve`: the command line, in the executable; the server itself is the
// class module (class_module.h), opened here on first use.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace opscope::classroom {

// Adds the subcommand; the function runs it once parsed.
std::pair<CLI::App*, std::function<int()>> add_class_command(CLI::App& app);

}  // namespace opscope::classroom
