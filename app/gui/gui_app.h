// `opscope gui`: the window (GLFW + OpenGL 3 + Dear ImGui), its main loop, and the headless
// use the tests drive (scripted actions, N frames, a PNG and a JSON dump of what is shown).
#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace opscope::app {

struct GuiState;

struct GuiOptions {
  std::string script;  // run before the first frame
  std::string open;  // an ONNX model opened (as File ▸ Open) after the script
  std::string lesson;  // lesson id for the lesson panel
  std::string lesson_lang;  // "en", "zh", or "" (the language used last)
  int frames = 0;  // > 0: render this many frames, then exit (headless use)
  std::string screenshot;  // PNG of the last frame
  std::string live_screenshot;  // PNG of the last frame drawn from inside the script's loop
  std::string state_json;  // what is on screen after the last frame
  std::string actions;  // "step;step;select n3;toggle backward"
  int width = 0, height = 0;  // --size; 0: the platform's (the browser's page), else 1600x1000
  bool dark = false;
  float zoom = 0.f;  // View ▸ Zoom at start, 1 to 2.5; 0: the saved one (100 % in headless runs)
  std::function<void(float)> save_zoom;  // remembers View ▸ Zoom (the progress file)
  // Where the graph's layouts are made: "thread", "slices" or "sync" (layout_driver.h); "": the
  // default ($OPSCOPE_LAYOUT, else thread, sync when headless).
  std::string layout_mode;
  // Where the console's statements are kept for the next session (workspace_journal.h); "":
  // nowhere. --journal / --no-journal; by default kept in a window a person uses (no --frames).
  bool journal_on = false, journal_off = false;
  std::string journal;
  // When the process started (open_ms in the state dump counts from it); unset: when run_gui began.
  std::chrono::steady_clock::time_point process_start{};
  // The lesson player's panel and its scripted actions ("lesson next", ...): app/lesson/ plugs
  // them in, so the GUI shell never includes the lesson player. Empty: a placeholder is shown.
  std::function<void(GuiState&)> lesson_panel;
  std::function<bool(GuiState&, const std::string&)> lesson_action;
  // The knowledge map's tab over the graph (the lesson player plugs it in); empty: no tab.
  std::function<void(GuiState&)> map_panel;
  // The text the window may show beyond what the user types (the lessons, the knowledge map):
  // the font atlas bakes its Chinese characters before the first frame (viz::GlyphSet).
  std::function<std::string()> shipped_text;
  // The open lesson as a JSON object for --state-json (the lesson player plugs it in).
  std::function<std::string(GuiState&)> lesson_state;
};

// Opens the window and runs until closed (or `frames` frames). Returns the exit code: 0, or 1
// when the script, an action, the window or the screenshot failed.
int run_gui(const GuiOptions& o);

}  // namespace opscope::app
