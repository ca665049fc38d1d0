#include "app/gui/gui_app.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "app/gui/frame_clock.h"
#include "app/gui/gui_state.h"
#include "app/gui/key_hold.h"
#include "app/gui/statement_runner.h"
#include "app/lang/interpreter.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/workspace.h"
#include "platform/platform.h"
#include "platform/window.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>

namespace opscope::app {

namespace {

// Reads the back buffer (call before swapping: after a swap its contents are undefined) and
// writes it as a PNG, top row first.
bool write_screenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> px(static_cast<size_t>(w) * static_cast<size_t>(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  std::vector<unsigned char> flipped(px.size());
  const size_t row = static_cast<size_t>(w) * 4;
  for (int y = 0; y < h; ++y)
    std::copy_n(&px[static_cast<size_t>(h - 1 - y) * row], row, &flipped[static_cast<size_t>(y) * row]);
  for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // an opaque image
  return stbi_write_png(path.c_str(), w, h, 4, flipped.data(), static_cast<int>(row)) != 0;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'", "check the path given to --script");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void glfw_error(int code, const char* text) { std::fprintf(stderr, "GLFW error %d: %s\n", code, text); }

// An error that reached the window is a bug in opscope, never a reason to close it: the
// student's workspace is still there. It is said in the console (and on stderr, for a report),
// and the window goes on.
void report_internal_error(GuiState& s, const std::string& what) {
  std::fprintf(stderr, "opscope: internal error (the window goes on): %s\n", what.c_str());
  s.hooks.internal_errors.push_back(what);
  s.console.lines.push_back({ConsoleLine::error, "internal error: " + what});
  s.console.lines.push_back(
      {ConsoleLine::error, "  this is a bug in opscope; your workspace is kept. Please report it with what you did."});
  s.console.scroll_to_bottom = true;
}

void ignore_imgui_log(void*, const char*, ...) {}

// One frame's panels; an exception half-way closes the windows and groups ImGui has open, so the
// frame still ends well.
void draw_ui_or_report(GuiState& s) {
  try {
    draw_ui(s);
  } catch (const std::exception& e) {
    ImGui::ErrorCheckEndFrameRecover(ignore_imgui_log);
    report_internal_error(s, e.what());
  }
}

void run_or_report(GuiState& s, const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& e) {
    report_internal_error(s, e.what());
  }
}

// What the person can have changed while the window waited: where the pointer is, the buttons,
// the window's size, the keys typed.
struct InputSnapshot {
  double x = 0, y = 0;
  int w = 0, h = 0, buttons = 0;
  long long keys = 0;
  bool operator==(const InputSnapshot&) const = default;
};
InputSnapshot input_snapshot(GLFWwindow* window, const KeyHold& keys) {
  InputSnapshot i;
  glfwGetCursorPos(window, &i.x, &i.y);
  glfwGetWindowSize(window, &i.w, &i.h);
  for (int b = 0; b < 3; ++b) i.buttons |= glfwGetMouseButton(window, b) == GLFW_PRESS ? 1 << b : 0;
  i.keys = keys.events();
  return i;
}

// Waits for the person's next input. `idle_tick` (the human-input tests' live state) is called
// ten times a second meanwhile, without drawing: nothing changed (a test waiting for two idle
// states after its input waits 0.2 s, not the half second of a slower tick).
void wait_for_input(GLFWwindow* window, const KeyHold& keys, const std::function<void()>& idle_tick) {
  if (!idle_tick) {
    platform::wait_for_input(-1);
    return;
  }
  for (;;) {
    const InputSnapshot before = input_snapshot(window, keys);
    // (A file picked in the browser's chooser moves no key or mouse: the platform says it came.)
    const bool came = platform::wait_for_input(0.1);
    if (came || glfwWindowShouldClose(window) || !(input_snapshot(window, keys) == before)) return;
    idle_tick();
  }
}

// The graph view needs frames while its layout is being made or it moves; not while the knowledge
// map's tab hides it (the layout is polled when the graph is drawn again: a layout asked for
// before the map was shown kept a lesson's window drawing ten frames a second for ever).
bool graph_animating(const GuiState& s) { return !s.map_visible && viz::view_animating(s.graph, s.stats.time); }

// The state JSON for the human-input tests; `idle`: said while the window waits for input (the
// last frame's state again, no frame drawn).
void publish_state_now(GuiState& s, int fb_w, int fb_h, bool idle) {
  s.hooks.idle = idle;
  ++s.hooks.live_states;
  platform::publish_live_state(state_json(s, fb_w, fb_h));
}

// ... from the frames (platform::publish_live_state), ten times a second,
// and at once when a statement has just ended (a test waits for that).
void publish_live_state(GuiState& s, int fb_w, int fb_h) {
  if (!platform::live_state_wanted()) return;
  const auto now = std::chrono::steady_clock::now();
  const bool ended = s.hooks.was_running && !s.run.running;
  s.hooks.was_running = s.run.running;
  if (!ended && now - s.hooks.live_state_at < std::chrono::milliseconds(100)) return;
  s.hooks.live_state_at = now;
  publish_state_now(s, fb_w, fb_h, false);
}

}  // namespace

int run_gui(const GuiOptions& o) {
  const bool headless = o.frames > 0;
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit())
    throw Error("cannot open a window: no display could be reached",
                "run `opscope repl` in a terminal, or `xvfb-run -a opscope gui ...` without a screen");
  const platform::GlContext gl = platform::gl_context();
  platform::set_window_hints();
  // --size, else the platform's (the browser's page), else 1600x1000.
  int width = o.width, height = o.height;
  const bool platform_sizes = width <= 0 && platform::preferred_window_size(width, height);
  if (width <= 0 || height <= 0) width = 1600, height = 1000;
  GLFWwindow* window = glfwCreateWindow(width, height, "opscope", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    throw Error("cannot create an OpenGL " + std::to_string(gl.major) + "." + std::to_string(gl.minor) + " window",
                "is Mesa (libgl1-mesa-dri) installed?");
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed each frame; no imgui.ini next to the user's files
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  io.ConfigInputTextCursorBlink = false;  // a blinking cursor would need frames while nothing changes

  Workspace& ws = current_workspace();
  lang::Session session(ws);
  GuiState s;
  s.ws = &ws;
  s.session = &session;
  s.log = std::make_unique<viz::StepLog>(ws.executor());
  s.dark = o.dark;
  s.screen_scale = platform::content_scale(window);
  s.ui_zoom = std::clamp(o.zoom, kMinUiZoom, kMaxUiZoom);
  s.save_zoom = o.save_zoom;
  s.scale = s.screen_scale * s.ui_zoom;
  s.lesson_id = o.lesson;
  s.lesson_panel = o.lesson_panel;
  s.lesson_action = o.lesson_action;
  s.map_panel = o.map_panel;
  s.lesson_state = o.lesson_state;
  viz::GlyphSet glyphs;
  glyphs.add("中文");  // the status bar's
  if (o.shipped_text) glyphs.add(o.shipped_text());
  s.fonts = viz::load_fonts(s.scale, std::move(glyphs));
  s.console.glyphs = &s.fonts.glyphs;
  s.layouts = std::make_unique<LayoutDriver>(layout_mode_for(o, headless));
  s.graph.queue = s.layouts->queue();
  viz::apply_style(s.dark, s.scale);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  KeyHold key_hold(window);
  key_hold.text_field_coming = [&s] { return s.console.focus_input; };
  platform::install_input(window);  // the browser's wheel, clipboard and input methods (nothing on the desktop)
  ImGui_ImplOpenGL3_Init(gl.glsl_version);

  s.console.lines.push_back(
      {ConsoleLine::output,
       "opscope: type statements like  " + std::string(viz::kEmptyGraphStatement) +
           "  or :help. Tab completes, Up/Down browse history. Esc or Ctrl-C stops a running statement."});
  int rc = 0;
  const std::vector<std::string> actions = split_actions(o.actions);
  // Headless: one action per frame after the first, then frames for animations to settle.
  const int total_frames = headless ? std::max(o.frames, static_cast<int>(actions.size()) + 4) : 0;
  bool dark_applied = s.dark;
  float zoom_applied = s.ui_zoom;
  const auto start = std::chrono::steady_clock::now();
  FrameClock clock(o.process_start == std::chrono::steady_clock::time_point{} ? start : o.process_start);
  int fb_w = 0, fb_h = 0;
  // One frame: events, the next scripted action, the UI, the picture. `idle`: drawn between the
  // steps of a running statement (the window stays alive; headless, it counts no frame and takes
  // no action, so scripted runs stay deterministic).
  auto draw_frame = [&](bool idle) {
    clock.frame_begins(s, idle);
    glfwPollEvents();
    s.hooks.input_waiting = key_hold.waiting();
    if (key_hold.events() != s.hooks.input_events) {  // the person did something since the last frame
      s.hooks.input_events = key_hold.events();
      s.hooks.input_frame = s.stats.frame;
    }
    int want_w = 0, want_h = 0;  // the browser's page was resized
    if (platform_sizes && platform::preferred_window_size(want_w, want_h)) {
      int w = 0, h = 0;
      glfwGetWindowSize(window, &w, &h);
      if (w != want_w || h != want_h) glfwSetWindowSize(window, want_w, want_h);
    }
    if (idle) {
      ++s.run.idle_frames;
      if (s.run.interrupt_on_idle_frame >= 0 && s.run.idle_frames >= s.run.interrupt_on_idle_frame) {
        s.run.interrupt_on_idle_frame = -1;
        interrupt::request();  // as if Interrupt was clicked in this frame
      }
    }
    s.stats.time = headless ? s.stats.frame / 30.0
                            : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!idle && headless && s.stats.frame >= 1 && s.stats.frame - 1 < static_cast<int>(actions.size())) {
      try {
        apply_action(s, actions[static_cast<size_t>(s.stats.frame - 1)]);
      } catch (const Error& e) {
        std::fprintf(stderr, "error: action '%s': %s\n", actions[static_cast<size_t>(s.stats.frame - 1)].c_str(),
                     e.what());
        if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
        s.hooks.action_errors.push_back(e.what());
        rc = 1;
      }
    }
    if (zoom_applied != s.ui_zoom) {  // View ▸ Zoom: the fonts again at the new size, between frames
      s.scale = s.screen_scale * s.ui_zoom;
      viz::reload_fonts(s.fonts, s.scale);
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
      zoom_applied = s.ui_zoom;
      dark_applied = !s.dark;  // the style's sizes follow the scale
    }
    if (dark_applied != s.dark) {
      viz::apply_style(s.dark, s.scale);
      dark_applied = s.dark;
    }
    s.fonts.glyphs.add(s.console.input);  // what is being typed
    if (viz::rebuild_fonts_if_changed(s.fonts, s.scale)) {  // new characters: bake and upload the atlas again
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
    }
    ImGui_ImplOpenGL3_NewFrame();  // the first call uploads the font atlas: not counted
    ImGui_ImplGlfw_NewFrame();
    // Two frames within the clock's resolution (a browser's clamped timer, a paused virtual
    // clock) would give ImGui a zero time step, which it refuses.
    if (ImGui::GetIO().DeltaTime <= 0) ImGui::GetIO().DeltaTime = 1e-4f;
    inject_mouse(s);
    s.layouts->drive();  // slices mode: layout steps for a few ms
    const auto t0 = std::chrono::steady_clock::now();  // the CPU time of building the UI
    ImGui::NewFrame();
    draw_ui_or_report(s);
    ImGui::Render();
    s.stats.frame_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.stats.frame_ms_avg = s.stats.frame <= 1 ? s.stats.frame_ms : s.stats.frame_ms_avg * 0.9 + s.stats.frame_ms * 0.1;
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glViewport(0, 0, fb_w, fb_h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    clock.render_begins();
    glClearColor(bg.x, bg.y, bg.z, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    const std::string& png = idle                                            ? o.live_screenshot
                             : headless && s.stats.frame + 1 == total_frames ? o.screenshot
                                                                             : std::string();
    if (!png.empty() && !write_screenshot(png, fb_w, fb_h)) {
      std::fprintf(stderr, "error: cannot write '%s'\n", png.c_str());
      rc = 1;
    }
    glfwSwapBuffers(window);
    publish_live_state(s, fb_w, fb_h);
    clock.frame_ends(s);
    // The next frame's input begins now: the browser delivers events while end_frame waits (the
    // desktop in the next glfwPollEvents), and a key held back must reach ImGui before NewFrame.
    key_hold.new_frame();
    platform::end_frame();  // the browser shows the frame and handles its events
  };
  s.run.idle_frame = [&] {
    if (glfwWindowShouldClose(window)) {  // closing the window stops the statement first
      interrupt::request();
      return;
    }
    if (clock.idle_frame_due(s)) draw_frame(true);
  };
  // Headless, the script's frames come from its loops' back-edges, one every 25 iterations
  // (not from the clock), so that tests see the same frames on every machine.
  auto run_headless = [&](const std::function<void()>& work) {
    int64_t iterations = 0;
    session.interpreter().set_iteration_hook([&] {
      if (++iterations % 25 != 0) return;
      if (s.run.idle_frames == 0 && s.stats.frame == 0) draw_frame(true);  // ImGui lays out tab bars in a first frame
      draw_frame(true);
    });
    s.run.running = true;
    work();
    s.run.running = false;
    session.interpreter().set_iteration_hook(nullptr);
  };
  if (!o.script.empty()) {
    std::ostringstream out, err;
    bool ok = true;
    auto run_script = [&] { ok = session.run(read_file(o.script), o.script, out, err); };
    if (headless) run_headless(run_script);
    else run_busy(s, run_script);
    s.log->forget_missing_nodes(&ws.graph());  // steps of a rolled-back statement
    s.console.lines.push_back({ConsoleLine::input, "# ran " + o.script});
    std::istringstream os(out.str()), es(err.str());
    for (std::string line; std::getline(os, line);) s.console.lines.push_back({ConsoleLine::output, line});
    for (std::string line; std::getline(es, line);) s.console.lines.push_back({ConsoleLine::error, line});
    if (!ok) {
      std::fprintf(stderr, "%s", err.str().c_str());
      if (headless) rc = 1;
    }
  }
  // From here on statements are typed (the console, a lesson's cells): a bare expression shows
  // its value, as in the terminal REPL. (The script above ran as `opscope run` runs it.)
  session.set_echo_expressions(true);
  if (!o.journal.empty()) {  // after the script: what it ran is not the console's
    s.journal = WorkspaceJournal(o.journal);
    s.journal_offered = s.journal.statements().size();
    if (!s.journal.problem().empty()) s.console.lines.push_back({ConsoleLine::error, s.journal.problem()});
  }
  if (!o.open.empty() && !open_onnx_model(s, o.open)) {
    std::fprintf(stderr, "error: cannot open '%s': %s\n", o.open.c_str(),
                 s.console.lines.empty() ? "" : s.console.lines.back().text.c_str());
    if (headless) rc = 1;
  }
  // A window with nothing changing draws nothing (a laptop's battery, a browser tab): after the
  // person's input a few frames let ImGui settle (hover, a menu opening), then it waits for the
  // next input, unless a statement, an animation or typed keys still need frames. (Tests reading
  // the live state get a state ten times a second, drawn or not.)
  int settle_frames = 3;
  const bool live = platform::live_state_wanted();
  for (s.stats.frame = 0; !glfwWindowShouldClose(window); ++s.stats.frame) {
    if (headless && s.stats.frame >= total_frames) break;
    // (ImGui takes a click in the second frame after its button event: three frames after input.)
    const bool busy = s.stats.frame - s.hooks.input_frame < 3 || !s.run.queued.empty() || key_hold.waiting() ||
                      s.playing || s.console.focus_input ||
                      !ImGui::GetIO().InputQueueCharacters.empty() ||  // an input method's text came between frames
                      graph_animating(s) || session.quit_requested();
    if (!headless && !busy && settle_frames <= 0) {
      wait_for_input(window, key_hold,
                     live ? [&] { publish_state_now(s, fb_w, fb_h, true); } : std::function<void()>{});
      settle_frames = 3;
    }
    --settle_frames;
    draw_frame(false);
    // What a click asked for runs now, between frames (it may run long: frames go on inside).
    while (!s.run.queued.empty() && !glfwWindowShouldClose(window)) {
      auto work = std::move(s.run.queued.front());
      s.run.queued.erase(s.run.queued.begin());
      run_or_report(s, work);
      settle_frames = 3;  // what it changed is drawn
    }
    if (session.quit_requested()) break;
  }
  s.run.idle_frame = nullptr;
  s.layouts.reset();  // the worker stops before the state it lays out for goes
  if (!o.state_json.empty()) {
    std::ofstream f(o.state_json, std::ios::binary);
    if (!(f << state_json(s, fb_w, fb_h) << "\n")) {
      std::fprintf(stderr, "error: cannot write '%s'\n", o.state_json.c_str());
      rc = 1;
    }
  }
  s.log.reset();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}

}  // namespace opscope::app
