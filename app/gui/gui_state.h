// The GUI shell's state, passed to each panel (no static locals).
#pragma once
#include <imgui.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app/gui/kernel_lab_state.h"
#include "app/gui/layout_driver.h"
#include "app/gui/open_model.h"
#include "app/gui/recompute_compare.h"
#include "app/gui/widget_rects.h"
#include "app/gui/workspace_journal.h"
#include "app/lang/session.h"
#include "core/workspace.h"
#include "viz/concept_map.h"
#include "viz/graph_view.h"
#include "viz/inspector.h"
#include "viz/metrics_panel.h"
#include "viz/step_log.h"
#include "viz/theme.h"

namespace opscope::app {

struct ConsoleLine {
  enum Kind { input, output, error } kind;
  std::string text;
};

struct ConsoleState {
  std::vector<ConsoleLine> lines;
  char input[2048] = "";
  std::string pending_block;  // lines of an unfinished block (def/for/if)
  int history_pos = -1;  // -1: not browsing history
  std::vector<std::string> candidates;  // the last Tab completion's candidates
  bool scroll_to_bottom = true;
  float log_width_px = 0, widest_row_px = 0;  // the log's width and its widest row drawn (a test: nothing cut)
  bool focus_input = false;  // the input line should take the keyboard back
  int focus_asked_frame = -100;  // ... asked in this frame
  viz::GlyphSet* glyphs = nullptr;  // the atlas learns the characters of what is printed
};

struct GuiState;
// The lesson player draws into the lesson panel through this hook (app/lesson/ plugs it in).
// Given the shell's state, it may run cells through state.session and select nodes.
using LessonPanelFn = std::function<void(GuiState& state)>;
// ... and applies the scripted lesson actions ("lesson next"); false: not a lesson action.
using LessonActionFn = std::function<bool(GuiState& state, const std::string& action)>;

// A statement running (typed, a button, a lesson cell): the window keeps drawing frames
// between its steps (core/interrupt.h's idle hook calls idle_frame) and the Interrupt button,
// Esc and Ctrl-C stop it; nothing else may run code meanwhile. Work asked for inside a frame (a
// click) waits in `queued` until the frame is done (statement_runner.h).
struct RunState {
  bool running = false;
  std::function<void()> idle_frame;
  std::vector<std::function<void()>> queued;
  int idle_frames = 0;  // frames drawn while statements ran: the window did not freeze
  int interrupt_on_idle_frame = -1;  // scripted ("interrupt N"): press Interrupt on that idle frame
  bool statement_ran = false;  // a statement ran since the last frame
};

// How long frames take, for the status bar, --state-json and bench_gui.
struct FrameStats {
  double time = 0;  // seconds since start (simulated in headless runs: deterministic)
  double frame_ms = 0;  // CPU time of the last frame's UI building
  double frame_ms_avg = 0;
  double frame_total_ms_avg = 0;  // the whole frame, the OpenGL drawing and swap included
  int frame = 0;
  double max_frame_ms = 0;  // the longest wall time between two frames' starts (the window's start-up frame aside)
  double max_frame_work_ms = 0;  // ... less the OpenGL drawing and swap in it: opscope's own work (Mesa's software
      // renderer takes 50-100 ms a frame at 1600x1000 on a 2-core VM, whatever is drawn)
  double max_frame_between_steps_work_ms = 0;  // ... of the frames with no statement (a step) run before them
  double open_ms = -1;  // process start to the first frame showing the graph laid out (-1: none yet)
  int open_frame = -1;  // ... and which frame that was
};

// What scripted actions and the human-input tests drive and watch (--actions, --state-json, the
// live state): a person using the window never needs these.
struct TestHooks {
  std::vector<std::string> action_errors;
  // A scripted mouse click ("click n3"): moved there, pressed, released over three frames.
  struct InjectedClick {
    ImVec2 pos;
    int frames_left = 0;  // 3: move, 2: press, 1: release
  } click;
  // What a person can act on, where the last frame drew it (the human-input tests click these),
  // and the internal errors the window caught and showed instead of closing.
  WidgetRects widgets;
  std::vector<std::string> internal_errors;
  std::chrono::steady_clock::time_point live_state_at;  // when the live state was last published
  bool was_running = false;  // ... and whether a statement ran then
  bool input_waiting = false;  // typed keys the window has not given to the UI yet (KeyHold)
  bool idle = false;  // the window waits for input: no frame is being drawn
  long long input_events = 0;  // the person's key, button and wheel events so far ...
  int input_frame = 0;  // ... and the frame that saw the last of them
  long long live_states = 0;  // live states published so far
};

// Everything the GUI shell shows and remembers, passed to each panel (no static locals): what
// the window shows at the top level, with the run state, the frame statistics and the test
// hooks in their own parts.
struct GuiState {
  Workspace* ws = nullptr;
  lang::Session* session = nullptr;
  std::unique_ptr<viz::StepLog> log;
  viz::GraphViewState graph;
  viz::InspectorState inspector;
  ConsoleState console;
  bool dark = false;
  viz::Fonts fonts;
  float scale = 1.f;  // the size of everything: the screen's scale times ui_zoom
  // View ▸ Zoom (Ctrl + / Ctrl −, 100 % to 250 %) and View ▸ Present (F11): a teacher projecting
  // a lesson to the back row. The main loop rebuilds the fonts when ui_zoom changes;
  // save_zoom (the composition root wires it to the progress file) remembers it.
  float screen_scale = 1.f;
  float ui_zoom = 1.f;
  bool present = false;  // only the graph and the lesson text, side by side
  bool graph_fitted_present = false;  // the graph was last fitted with Present on (its text size: viz::kPresentTextPx)
  bool chinese = false;  // the window's own words in Chinese (the lesson open is Chinese)
  std::function<void(float)> save_zoom;
  // Stepping
  bool playing = false;
  float steps_per_second = 4.f;
  double next_play_step = 0;
  // Static mode: the stepped program measured with recomputation off and on (memory overlay)
  RecomputeComparison recompute;
  // The console's statements kept for the next session, and how many of the last session's
  // the console offers to run again (Restore / Start fresh).
  WorkspaceJournal journal;
  size_t journal_offered = 0;
  // File ▸ Open
  OpenModelState open_model;
  // The lesson panel
  std::string lesson_id;
  LessonPanelFn lesson_panel;
  LessonActionFn lesson_action;
  // The knowledge map, a tab over the graph (drawn by the lesson player: its clicks open lessons)
  LessonPanelFn map_panel;
  std::function<std::string(GuiState&)> lesson_state;  // the lesson for --state-json
  viz::ConceptMapState map_view;
  std::string map_tab = "Knowledge map";  // the tab's title in the lesson's language
  bool show_map = false, show_graph = false;  // bring that tab to the front (once)
  bool map_visible = false;  // the map's tab was drawn in the last frame
  // The metrics panel (a tab beside the console), brought to the front when a script first logs.
  viz::MetricsPanelState metrics;
  bool metrics_shown = false;  // the tab came forward for the metrics logged so far
  // The Kernel Lab, a tab over the graph once a lesson or a scripted action opened it.
  KernelLabState lab;
  bool lab_visible = false;  // its tab was drawn in the last frame
  std::unique_ptr<LayoutDriver> layouts;  // where the graph view's layouts are made
  RunState run;
  FrameStats stats;
  TestHooks hooks;
};

// [panels.cpp] the whole window's UI for one frame.
void draw_ui(GuiState& s);
constexpr float kMinUiZoom = 1.f, kMaxUiZoom = 2.5f, kUiZoomStep = 0.25f;
// The scale the graph view measures its layout in: the screen's alone, so that View ▸ Zoom's
// bigger fonts make the graph's boxes and text bigger as well (at the same view zoom).
inline float graph_font_scale(const GuiState& s) { return s.screen_scale; }
// Sets View ▸ Zoom (clamped to 100–250 %) and remembers it through save_zoom.
void set_ui_zoom(GuiState& s, float zoom);
// The node the next step of a pending stepped pass runs (-1: none).
int next_step_node(GuiState& s);
// What the graph view and inspector show: in static mode the compiled program (being stepped,
// or the last compiled) as it runs, else the workspace's graph. Sets s.graph.only_nodes.
const Graph& shown_graph(GuiState& s);
int64_t steps_left(GuiState& s);

// [actions.cpp] scripted UI actions: "step", "step bwd", "run", "rewind", "select n3",
// "interrupt N" (press Interrupt on the N-th frame drawn while the next statement runs),
// "click n3" (a real mouse click at the box's centre), "expand n3" / "collapse n3" (a node's
// body), "toggle backward",
// "view forward|backward|both", "view zoom in|out|Z" (View ▸ Zoom), "view present [off]" (F11),
// "fold F", "unfold F", "search TEXT",
// "theme dark|light", "fit", "zoom F", "exec CODE", "open MODEL.onnx", "export FILE.svg|.png",
// "map", "graph", "lab OP SIZE" / "lab warp ALGO" / "lab step [N|back|barrier|to FILE:LINE]" / "lab gpu NAME"
// (the Kernel Lab, kernel_lab_state.h), "measure" (max_frame_ms and max_frame_work_ms count from here). Throws opscope::Error on a bad action.
void apply_action(GuiState& s, const std::string& action);
std::vector<std::string> split_actions(const std::string& actions);
// The graph as the view draws it (layout, folding, lanes) to FILE.svg or FILE.png: a slide.
void export_figure(GuiState& s, const std::string& path);
// File > Export figure: opscope-graph.svg|png in the current folder, said in the console (the
// browser downloads it); File > Save metrics: what the script log()ged, as CSV.
void save_figure(GuiState& s, const std::string& format);
void save_metrics(GuiState& s);
// What is on screen, as JSON text.
std::string state_json(const GuiState& s, int window_w, int window_h);
// Feeds a scripted click to ImGui: call between the backend's NewFrame and ImGui::NewFrame.
void inject_mouse(GuiState& s);

}  // namespace opscope::app
