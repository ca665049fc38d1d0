// The language's side of extensions: load_extension(path), example_path(name) and :load FILE.
#pragma once
#include "app/extension/loader.h"
#include "app/lang/call_args.h"

namespace opscope::lang {

class Interpreter;

void install_extension_builtins(BuiltinTable& B);
void install_extension_commands(Interpreter& in);
// What an extension may not name its operators: the language's builtin functions.
ext::LoadOptions extension_load_options(const Interpreter& in);

}  // namespace opscope::lang
