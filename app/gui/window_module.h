// The window as a module, libopscope_window.so: the GUI shell (app/gui), its panels (viz's
// ImGui views), the lesson panel, and Dear ImGui + GLFW + OpenGL under them. The opscope
// command opens it with dlopen when it opens a window: linking GLFW, OpenGL and X11 into the
// executable cost every start-up ~1.4 ms (README, Speed), including the REPL's, scripts' and
// tests' that never draw. Its calls into the engine, the language and the lesson player bind
// to the executable, which exports opscope's symbols (cmake/extension_exports.txt); it is
// refused unless built against the same engine (the extension ABI id) and this table.
#pragma once
#include "app/gui/gui_app.h"
#include "core/module_file.h"

namespace opscope::app {

// Bumped whenever the table or GuiOptions changes.
constexpr int kWindowModuleInterface = 2;

struct WindowModule : ModuleTableHead {
  // run_gui with the lesson player's panels plugged in for o.lesson (when it names one).
  int (*run_window)(GuiOptions o) = nullptr;
};

#define OPSCOPE_WINDOW_MODULE_ENTRY "opscope_window_module"

// The executable's side (window_module.cpp): opens the module on first use, then the window.
// Throws an Error naming what is missing (the file, a symbol, another build's module).
int open_window(GuiOptions o);

}  // namespace opscope::app
