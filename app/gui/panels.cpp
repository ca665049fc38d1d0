// The GUI's panels around the graph: step controls, console, lesson panel, status bar, and
// the split of the window between them. Stepping goes through the same `:commands` the
// terminal REPL uses; everything drawn comes from the Graph and the StepEvents.
#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "app/gui/gui_state.h"
#include "app/gui/shell_words.h"
#include "app/gui/statement_runner.h"
#include "app/lang/interpreter.h"
#include "app/lang/kernel.h"
#include "core/interrupt.h"
#include "viz/memory_panel.h"
#include "viz/words.h"

namespace opscope::app {

namespace {

// The window's words in the lessons' language; `label###id` keeps ImGui's id (and the tests'
// name for the widget) the English one.
const ShellWords& words(const GuiState& s) { return s.chinese && s.fonts.cjk ? kShellZh : kShellEn; }
std::string with_id(const char* shown, const char* id) { return std::string(shown) + "###" + id; }

// [SECTION] menu bar
void draw_menu_bar(GuiState& s) {
  if (!ImGui::BeginMenuBar()) return;
  WidgetRects& w = s.hooks.widgets;
  const ShellWords& t = words(s);
  const bool file_open = ImGui::BeginMenu(with_id(t.file, "File").c_str());
  note_widget(w, "File");
  if (file_open) {
    if (noted(w, ImGui::MenuItem(t.open, "Ctrl+O"), "Open...")) s.open_model.request = true;
    ImGui::Separator();
    const bool has_graph = s.ws->graph().node_count() > 0;
    if (noted(w, ImGui::MenuItem(t.export_svg, nullptr, false, has_graph), "Export figure as SVG"))
      run_after_frame(s, [&s] { save_figure(s, "svg"); });
    if (noted(w, ImGui::MenuItem(t.export_png, nullptr, false, has_graph), "Export figure as PNG"))
      run_after_frame(s, [&s] { save_figure(s, "png"); });
    const bool has_metrics = !s.session->interpreter().metrics().empty();
    if (noted(w, ImGui::MenuItem(t.save_metrics, nullptr, false, has_metrics), "Save metrics as CSV"))
      run_after_frame(s, [&s] { save_metrics(s); });
    ImGui::Separator();
    // After the frame, as every statement: a reset inside the frame would take away nodes that
    // the rest of this frame's panels still draw.
    if (noted(w, ImGui::MenuItem(t.reset, nullptr), "Reset workspace")) console_after_frame(s, ":reset");
    ImGui::EndMenu();
  }
  const bool view_open = ImGui::BeginMenu(
      with_id(t.view, "View").c_str());  // for a room: bigger text, and only what the class should look at
  note_widget(w, "View");
  if (view_open) {
    if (noted(w, ImGui::MenuItem(t.zoom_in, "Ctrl +", false, s.ui_zoom < kMaxUiZoom), "Zoom in"))
      set_ui_zoom(s, s.ui_zoom + kUiZoomStep);
    if (noted(w, ImGui::MenuItem(t.zoom_out, "Ctrl -", false, s.ui_zoom > kMinUiZoom), "Zoom out"))
      set_ui_zoom(s, s.ui_zoom - kUiZoomStep);
    if (noted(w, ImGui::MenuItem(t.actual_size, "Ctrl 0", false, s.ui_zoom != 1.f), "Actual size")) set_ui_zoom(s, 1.f);
    ImGui::Separator();
    ImGui::MenuItem(t.present, "F11", &s.present);
    note_widget(w, "Present");
    ImGui::EndMenu();
  }
  ImGui::TextDisabled("%d %%", static_cast<int>(s.ui_zoom * 100.f + 0.5f));
  ImGui::EndMenuBar();
}

// [SECTION] step controls
void draw_toolbar(GuiState& s) {
  // Always enabled: the commands themselves say when there is nothing to step (and modes that
  // step in other ways, like static runs, answer the same commands).
  const bool has_pending = next_step_node(s) >= 0, enabled = !s.run.running;
  const ShellWords& t = words(s);
  // `label`: the English name, the widget's id; shown in the window's language.
  auto button = [&](const char* label, const char* tip, bool enabled) {
    if (!enabled) ImGui::BeginDisabled();
    const char* shown = label;
    for (const auto& [en, word] : {std::pair{"Interrupt", t.interrupt}, std::pair{"Step", t.step},
                                   std::pair{"Step bwd", t.step_bwd}, std::pair{"Play", t.play},
                                   std::pair{"Pause", t.pause}, std::pair{"Run", t.run}, std::pair{"Rewind", t.rewind}})
      if (std::string(label) == en) shown = word;
    bool pressed = ImGui::Button(with_id(shown, label).c_str());
    note_widget(s.hooks.widgets, label);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", tip);
    if (!enabled) ImGui::EndDisabled();
    ImGui::SameLine();
    return pressed;
  };
  if (s.run.running) {  // the only button that acts while a statement runs
    if (button("Interrupt", "stop the running statement at its next step; it is undone   [Esc or Ctrl-C]", true))
      interrupt::request();
  }
  if (button("Step", "run the next step (:step)   [Space or N]", enabled)) console_after_frame(s, ":step");
  if (button("Step bwd", "the next step of the backward pass (:step bwd)   [B]", enabled))
    console_after_frame(s, ":step bwd");
  if (button(s.playing ? "Pause" : "Play", "step on a timer at the speed set on the right   [P]", enabled))
    s.playing = !s.playing;
  if (button("Run", "finish the stepped pass (:run)   [R]", enabled)) console_after_frame(s, ":run");
  if (button("Rewind", "go back to the first step (:rewind)", enabled)) console_after_frame(s, ":rewind");
  ImGui::SetNextItemWidth(120 * s.scale);
  ImGui::SliderFloat("##speed", &s.steps_per_second, 0.5f, 30.f, viz::tr("%.1f steps/s"), ImGuiSliderFlags_Logarithmic);
  ImGui::SameLine(0, 24 * s.scale);
  // The phase and step number, from the last StepEvent.
  const StepEvent* last = s.log->last();
  if (last) {
    ImGui::Text(viz::tr("step %lld · %s #%d %s"), (long long)last->step, viz::tr(phase_name(last->phase)), last->node,
                last->op ? last->op->name.c_str() : "");
  } else {
    ImGui::TextDisabled("%s", t.no_steps);
  }
  if (has_pending) {
    ImGui::SameLine();
    ImGui::TextDisabled(viz::tr("· %lld left, next #%d"), (long long)steps_left(s), next_step_node(s));
  }
  // View switches on the right.
  ImGui::SameLine(0, 24 * s.scale);
  int f = static_cast<int>(s.graph.filter);
  ImGui::TextUnformatted(t.show);
  ImGui::SameLine();
  for (const auto& [label, filter] :
       {std::pair{"forward", viz::PhaseFilter::forward_only}, std::pair{"backward", viz::PhaseFilter::backward_only},
        std::pair{"both", viz::PhaseFilter::both}}) {
    const char* shown = filter == viz::PhaseFilter::forward_only    ? t.forward
                        : filter == viz::PhaseFilter::backward_only ? t.backward
                                                                    : t.both;
    ImGui::RadioButton(with_id(shown, label).c_str(), &f, static_cast<int>(filter));
    note_widget(s.hooks.widgets, label);
    if (filter != viz::PhaseFilter::both) ImGui::SameLine();
  }
  s.graph.filter = static_cast<viz::PhaseFilter>(f);
  ImGui::SameLine(0, 16 * s.scale);
  if (noted(s.hooks.widgets, ImGui::Button(with_id(t.fit, "Fit").c_str()), "Fit")) s.graph.fit_all = true;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(150 * s.scale);
  ImGui::InputTextWithHint("##search", t.search, s.graph.search, sizeof s.graph.search);
  note_widget(s.hooks.widgets, "search");
  ImGui::SameLine();
  if (noted(s.hooks.widgets, ImGui::Button(with_id(s.dark ? t.light : t.dark, s.dark ? "Light" : "Dark").c_str()),
            s.dark ? "Light" : "Dark")) {
    s.dark = !s.dark;
    viz::apply_style(s.dark, s.scale);
  }
}

// [SECTION] console
int console_callback(ImGuiInputTextCallbackData* data) {
  auto& s = *static_cast<GuiState*>(data->UserData);
  auto& c = s.console;
  const auto& history = s.session->history();
  if (data->EventFlag == ImGuiInputTextFlags_CallbackHistory && !history.empty()) {
    const int n = static_cast<int>(history.size());
    if (data->EventKey == ImGuiKey_UpArrow) c.history_pos = c.history_pos < 0 ? n - 1 : std::max(0, c.history_pos - 1);
    else if (data->EventKey == ImGuiKey_DownArrow)
      c.history_pos = c.history_pos < 0 || c.history_pos + 1 >= n ? -1 : c.history_pos + 1;
    data->DeleteChars(0, data->BufTextLen);
    if (c.history_pos >= 0) data->InsertChars(0, history[static_cast<size_t>(c.history_pos)].c_str());
  } else if (data->EventFlag == ImGuiInputTextFlags_CallbackCompletion) {
    const std::string line(data->Buf, static_cast<size_t>(data->BufTextLen));
    const size_t cursor = static_cast<size_t>(data->CursorPos);
    c.candidates = s.session->completions(line, cursor);
    if (c.candidates.empty()) return 0;
    // The word being completed, and the candidates' common prefix.
    size_t start = cursor;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(line[start - 1])) || line[start - 1] == '_' ||
                         line[start - 1] == ':'))
      --start;
    std::string common = c.candidates[0];
    for (const auto& cand : c.candidates) {
      size_t k = 0;
      while (k < common.size() && k < cand.size() && common[k] == cand[k]) ++k;
      common.resize(k);
    }
    if (common.size() > cursor - start) {
      data->DeleteChars(static_cast<int>(start), static_cast<int>(cursor - start));
      data->InsertChars(static_cast<int>(start), common.c_str());
    }
    if (c.candidates.size() == 1) c.candidates.clear();
  }
  return 0;
}

// The last session's statements, offered until the student chooses.
void draw_journal_offer(GuiState& s) {
  const size_t n = s.journal_offered;
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("Your last session ran %zu statement%s here:", n, n == 1 ? "" : "s");
  ImGui::SameLine();
  const ShellWords& t = words(s);
  if (noted(s.hooks.widgets, ImGui::SmallButton(with_id(t.restore, "Restore").c_str()), "Restore"))
    run_after_frame(s, [&s] { restore_workspace(s); });
  ImGui::SameLine();
  if (noted(s.hooks.widgets, ImGui::SmallButton(with_id(t.start_fresh, "Start fresh").c_str()), "Start fresh"))
    forget_last_workspace(s);
}

// One row of the console as drawn: bytes [begin, end) of line `line`.
struct ConsoleRow {
  size_t line, begin, end;
};
using ConsoleRows = std::vector<ConsoleRow>;

// The console's lines cut into rows of at most `columns` columns (a CJK character takes two).
ConsoleRows console_rows(const std::vector<ConsoleLine>& lines, size_t columns) {
  ConsoleRows rows;
  rows.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& t = lines[i].text;
    size_t begin = 0, used = 0;
    for (size_t k = 0; k < t.size();) {
      const unsigned char b = static_cast<unsigned char>(t[k]);
      const size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
      const size_t width = (len == 3 && b >= 0xE3) || len == 4 ? 2 : 1;  // U+3000 and up (CJK) are wide
      if (used + width > columns && k > begin) {
        rows.push_back({i, begin, k});
        begin = k;
        used = 0;
      }
      used += width;
      k = std::min(t.size(), k + len);
    }
    rows.push_back({i, begin, t.size()});
  }
  return rows;
}

void draw_console(GuiState& s) {
  auto& c = s.console;
  const float input_h = ImGui::GetFrameHeightWithSpacing() *
                        (1.f + (c.candidates.empty() ? 0.f : 1.f) + (s.journal_offered > 0 ? 1.f : 0.f));
  ImGui::BeginChild("console_log", ImVec2(0, -input_h), false);
  if (s.fonts.mono) ImGui::PushFont(s.fonts.mono);
  const auto& th = viz::theme(s.dark);
  // Long lines wrap at the panel's width (an error's caret line wraps at the same column as its
  // code line, both in the monospaced font), so nothing is cut off at the right.
  const float column_px = std::max(1.f, ImGui::CalcTextSize("m").x);
  const size_t columns = static_cast<size_t>(std::max(20.f, ImGui::GetContentRegionAvail().x / column_px));
  const ConsoleRows rows = console_rows(c.lines, columns);
  c.log_width_px = ImGui::GetContentRegionAvail().x;
  c.widest_row_px = 0;
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(rows.size()));
  while (clip.Step())
    for (int r = clip.DisplayStart; r < clip.DisplayEnd; ++r) {
      const ConsoleRow& row = rows[static_cast<size_t>(r)];
      const auto& l = c.lines[row.line];
      if (l.kind == ConsoleLine::error) ImGui::PushStyleColor(ImGuiCol_Text, th.edge_backward);
      else if (l.kind == ConsoleLine::input) ImGui::PushStyleColor(ImGuiCol_Text, th.selected);
      else ImGui::PushStyleColor(ImGuiCol_Text, th.text);
      ImGui::TextUnformatted(l.text.data() + row.begin, l.text.data() + row.end);
      c.widest_row_px = std::max(c.widest_row_px, ImGui::GetItemRectSize().x);
      ImGui::PopStyleColor();
    }
  if (s.fonts.mono) ImGui::PopFont();
  if (c.scroll_to_bottom) ImGui::SetScrollHereY(1.f);
  c.scroll_to_bottom = false;
  note_panel(s.hooks.widgets, "console log");
  ImGui::EndChild();
  // Tab's candidates as buttons: a click completes the word being typed.
  if (!c.candidates.empty()) {
    std::string chosen;
    const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
    for (size_t i = 0; i < c.candidates.size() && i < 16; ++i) {
      const float w = ImGui::CalcTextSize(c.candidates[i].c_str()).x + ImGui::GetStyle().FramePadding.x * 2;
      if (i > 0) {
        ImGui::SameLine();
        if (ImGui::GetCursorScreenPos().x + w > right) break;
      }
      if (ImGui::SmallButton(c.candidates[i].c_str())) chosen = c.candidates[i];
    }
    if (!chosen.empty()) {
      std::string line = c.input;
      size_t start = line.size();
      while (start > 0 && (std::isalnum(static_cast<unsigned char>(line[start - 1])) || line[start - 1] == '_' ||
                           line[start - 1] == ':'))
        --start;
      line = line.substr(0, start) + chosen;
      std::snprintf(c.input, sizeof c.input, "%s", line.c_str());
      c.candidates.clear();
      c.focus_input = true;
    }
  }
  if (s.run.running) {  // no input while a statement runs: the way out is Interrupt
    ImGui::TextDisabled("%s", words(s).running);
    ImGui::SameLine();
    if (noted(s.hooks.widgets, ImGui::SmallButton(with_id(words(s).interrupt, "Interrupt").c_str()), "Interrupt"))
      interrupt::request();
    return;
  }
  if (s.journal_offered > 0) draw_journal_offer(s);
  const char* prompt = c.pending_block.empty() ? ">>>" : "...";
  ImGui::TextUnformatted(prompt);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  const ImGuiInputTextFlags flags = ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CallbackHistory |
                                    ImGuiInputTextFlags_CallbackCompletion;
  if (s.fonts.mono) ImGui::PushFont(s.fonts.mono);
  const bool entered = ImGui::InputText("##console_input", c.input, sizeof c.input, flags, console_callback, &s);
  note_widget(s.hooks.widgets, "console input");
  if (entered) {
    std::string line = c.input;
    c.input[0] = 0;
    c.history_pos = -1;
    c.candidates.clear();
    c.focus_input = true;
    std::string buffer = c.pending_block.empty() ? line : c.pending_block + "\n" + line;
    if (s.session->needs_more_input(buffer) && !(line.empty() && !c.pending_block.empty())) {
      console_print(c, ConsoleLine::input, std::string(prompt) + " " + line);
      c.pending_block = buffer;
    } else {
      c.pending_block.clear();
      if (!c.pending_block.empty() || buffer.find('\n') != std::string::npos)
        console_print(c, ConsoleLine::input, std::string(prompt) + " " + line);
      console_after_frame(s, buffer, buffer.find('\n') == std::string::npos);
    }
  }
  // The line (still the last item drawn) takes the keyboard back after Enter, which ImGui lets
  // go of, or a click on a completion: asked now, given a frame later by ImGui's navigation, and
  // asked again if a statement drew frames without the line meanwhile. Characters typed until
  // then wait (KeyHold): ImGui drops those of the frame that activates a field.
  if (ImGui::IsItemActive()) c.focus_input = false;
  else if (c.focus_input && (entered || s.stats.frame >= c.focus_asked_frame + 3)) {
    ImGui::SetKeyboardFocusHere(-1);
    c.focus_asked_frame = s.stats.frame;
  }
  if (s.fonts.mono) ImGui::PopFont();
}

// [SECTION] lesson panel (the lesson player plugs in through GuiState::lesson_panel)
void draw_lesson(GuiState& s) {
  if (s.lesson_panel) {
    if (s.run.running) ImGui::BeginDisabled();  // its buttons run cells: not while a statement runs
    s.lesson_panel(s);
    if (s.run.running) ImGui::EndDisabled();
    return;
  }
  ImGui::TextWrapped("Lessons open here: each lesson's text next to cells that run in this workspace.");
  if (!s.lesson_id.empty())
    ImGui::TextDisabled("Lesson %s was asked for, but this build has no lesson player yet.", s.lesson_id.c_str());
}

// [SECTION] status bar
void draw_status(GuiState& s) {
  const auto& tr = s.ws->tracker();
  const bool program = &shown_graph(s) != &s.ws->graph();
  ImGui::Text(viz::tr(
                  "mode: %s   device: cpu   live %s   peak %s   nodes %zu   layout %.1f ms   frame %.2f ms   %.0f FPS"),
              s.ws->static_mode() ? (program ? viz::tr("static (compiled program)") : viz::tr("static (tracing)"))
                                  : viz::tr("dynamic"),
              bytes_str(tr.live_total()).c_str(), bytes_str(tr.peak_total()).c_str(),
              program ? s.graph.only_nodes.size() : s.ws->graph().node_count(), s.graph.layout.layout_ms,
              s.stats.frame_ms_avg, static_cast<double>(ImGui::GetIO().Framerate));
  // A long loop's tape: what is left is its last iteration; say how much went.
  if (const Graph& g = s.ws->graph(); !program && g.drops().nodes > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("  %s", lang::tape_drops_line(g, s.session->interpreter().last_loop()).c_str());
  }
  if (s.fonts.cjk) {
    ImGui::SameLine();
    ImGui::TextDisabled("  中文");
  }
}

// Keyboard shortcuts, when no text field has the keyboard. ImGui 1.86 indexes keys by the
// backend's codes; GLFW's letter codes are their upper-case ASCII.
bool key(char upper) { return ImGui::IsKeyPressed(upper); }
bool key(ImGuiKey_ k) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(k)); }

// GLFW's codes for the keys that have no ASCII letter (ImGui 1.86 indexes keys by them).
constexpr int kKeyMinus = 45, kKeyEqual = 61, kKey0 = 48, kKeyF11 = 300, kKeypadSubtract = 333, kKeypadAdd = 334;
bool key_code(int code) { return ImGui::IsKeyPressed(code); }

void shortcuts(GuiState& s) {
  ImGuiIO& io = ImGui::GetIO();
  if (key_code(kKeyF11)) s.present = !s.present;  // also while a statement runs: the view only
  if (io.KeyCtrl && (key_code(kKeyEqual) || key_code(kKeypadAdd))) set_ui_zoom(s, s.ui_zoom + kUiZoomStep);
  if (io.KeyCtrl && (key_code(kKeyMinus) || key_code(kKeypadSubtract))) set_ui_zoom(s, s.ui_zoom - kUiZoomStep);
  if (io.KeyCtrl && key_code(kKey0)) set_ui_zoom(s, 1.f);
  if (s.run.running) {  // Esc or Ctrl-C: interrupt (as Ctrl-C does in the terminal)
    if (key(ImGuiKey_Escape) || (io.KeyCtrl && key('C'))) interrupt::request();
    return;
  }
  // The console gives the keyboard back to its line after Enter (focus_input): a space typed
  // right then is text of the next line, not the Space shortcut.
  if (io.WantTextInput || s.console.focus_input) return;
  if (io.KeyCtrl && key('O')) {
    s.open_model.request = true;
    return;
  }
  if (key(ImGuiKey_Space) || key('N')) console_after_frame(s, ":step");
  if (key('B')) console_after_frame(s, ":step bwd");
  if (key('R')) console_after_frame(s, ":run");
  if (key('P')) s.playing = !s.playing;
  if (key('F')) s.graph.fit_all = true;
  if (key(ImGuiKey_Escape)) s.graph.selected.clear();
}

// Play: one step every 1/speed seconds while a stepped pass is pending.
void play(GuiState& s) {
  if (!s.playing || s.run.running) return;
  if (s.stats.time >= s.next_play_step) {
    // Stops when the stepped backward pass is done, or when :step fails (nothing to step).
    run_after_frame(s, [&s] {
      const bool backward_pending = next_step_node(s) >= 0;
      if (!run_in_console(s, ":step") || (backward_pending && next_step_node(s) < 0)) s.playing = false;
    });
    s.next_play_step = s.stats.time + 1.0 / s.steps_per_second;
  }
}

// [SECTION] graph area: the graph view, and the knowledge map's tab when the lesson player has one
void draw_graph_panel(GuiState& s, const viz::Theme& th) {
  viz::GraphViewFrame gf;
  gf.graph = &shown_graph(s);
  gf.theme = &th;
  gf.fonts = &s.fonts;
  // The last step is highlighted only in the graph it ran in.
  gf.current_node =
      s.log->last() && (s.log->last()->graph == gf.graph || !s.log->last()->graph) ? s.log->last()->node : -1;
  gf.next_node = next_step_node(s);
  gf.time = s.stats.time;
  gf.font_scale = graph_font_scale(s);
  gf.min_text_px = s.present ? viz::kPresentTextPx : viz::kReadableTextPx;  // a projector's figure is read from afar
  if (s.present != s.graph_fitted_present) {  // Present on or off: another canvas and text size, fit again
    s.graph_fitted_present = s.present;
    s.graph.fit_requested = true;
  }
  viz::draw_graph_view(s.graph, gf);
}

void draw_graph_area(GuiState& s, const viz::Theme& th) {
  s.map_visible = false;
  s.lab_visible = false;
  const bool lab_tab_shown = s.lab.opened || !lang::last_language_kernel_trace().trace_json.empty();
  if (!s.map_panel && !lab_tab_shown) {
    draw_graph_panel(s, th);
    return;
  }
  // Requests made while drawing (a click on the map shows the graph) apply in the next frame.
  const bool show_graph = s.show_graph, show_map = s.show_map;
  s.show_map = s.show_graph = false;
  if (ImGui::BeginTabBar("graph_tabs")) {
    const bool graph_tab = ImGui::BeginTabItem(with_id(words(s).graph, "Graph").c_str(), nullptr,
                                               show_graph ? ImGuiTabItemFlags_SetSelected : 0);
    note_widget(s.hooks.widgets, "Graph");
    if (graph_tab) {
      draw_graph_panel(s, th);
      ImGui::EndTabItem();
    }
    if (s.map_panel) {
      const std::string label = s.map_tab + "###knowledge_map";
      const bool map_tab = ImGui::BeginTabItem(label.c_str(), nullptr, show_map ? ImGuiTabItemFlags_SetSelected : 0);
      note_widget(s.hooks.widgets, s.map_tab.c_str());
      if (map_tab) {
        s.map_visible = true;
        s.map_panel(s);
        ImGui::EndTabItem();
      }
    }
    // The Kernel Lab: opened by a lesson's `show: kernel_lab` or the `lab` action, or there once a
    // @kernel was launched (its button opens that kernel's warp view).
    if (lab_tab_shown) {
      const bool bring = s.lab.bring_forward;
      s.lab.bring_forward = false;
      const bool lab_tab = ImGui::BeginTabItem((std::string(viz::tr("Kernel Lab")) + "###kernel_lab").c_str(), nullptr,
                                               bring ? ImGuiTabItemFlags_SetSelected : 0);
      note_widget(s.hooks.widgets, "Kernel Lab");
      if (lab_tab) {
        s.lab_visible = true;
        draw_kernel_lab(s);
        ImGui::EndTabItem();
      }
    }
    ImGui::EndTabBar();
  }
}

// Presentation: the graph and the lesson text side by side, the whole window (no toolbar,
// inspector, memory, console or status bar); F11 or View ▸ Present toggles it.
void draw_presentation(GuiState& s, const viz::Theme& th) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float lesson_w = s.lesson_panel ? avail.x * 0.42f : 0.f;
  const float graph_w = avail.x - lesson_w - (s.lesson_panel ? ImGui::GetStyle().ItemSpacing.x : 0.f);
  ImGui::BeginChild("graph", ImVec2(graph_w, avail.y), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  draw_graph_area(s, th);
  ImGui::EndChild();
  note_widget(s.hooks.widgets, "graph panel");
  if (!s.lesson_panel) return;
  ImGui::SameLine();
  ImGui::BeginChild("lesson_present", ImVec2(lesson_w, avail.y), true);
  draw_lesson(s);
  note_panel(s.hooks.widgets, "lesson panel");
  ImGui::EndChild();
}

}  // namespace

void set_ui_zoom(GuiState& s, float zoom) {
  zoom = std::clamp(std::round(zoom / kUiZoomStep) * kUiZoomStep, kMinUiZoom, kMaxUiZoom);
  if (zoom == s.ui_zoom) return;
  s.ui_zoom = zoom;
  s.graph.has_layout = false;  // the boxes are measured with the fonts: lay them out again,
  s.graph.fit_requested = true;  // and fit them to the canvas
  if (s.save_zoom) s.save_zoom(zoom);
}

const Graph& shown_graph(GuiState& s) {
  const lang::StaticState& st = s.session->interpreter().statics();
  const Program* program = st.run ? &st.run->program() : s.ws->static_mode() && st.last ? st.last.get() : nullptr;
  if (!program) {
    s.graph.only_nodes.clear();
    return s.ws->graph();
  }
  s.graph.only_nodes = program->schedule;
  return program->graph;
}

int next_step_node(GuiState& s) {
  if (const auto& run = s.session->interpreter().statics().run; run && !run->done()) return run->next_node();
  const auto& p = s.session->interpreter().pending_pass();
  if (!p || p->done()) return -1;
  return p->nodes()[p->position()];
}

int64_t steps_left(GuiState& s) {
  if (const auto& run = s.session->interpreter().statics().run)
    return static_cast<int64_t>(run->size() - run->position());
  const auto& p = s.session->interpreter().pending_pass();
  return p ? static_cast<int64_t>(p->size() - p->position()) : 0;
}

void draw_ui(GuiState& s) {
  s.hooks.widgets.clear();
  viz::set_chinese(s.chinese && s.fonts.cjk);  // the panels speak the window's language
  open_picked_files(s);
  shortcuts(s);
  play(s);
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(8 * s.scale, 6 * s.scale));
  ImGui::Begin("opscope", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_MenuBar);
  ImGui::PopStyleVar();
  draw_menu_bar(s);
  draw_open_model_dialog(s);
  const auto& th = viz::theme(s.dark);
  if (s.present) {
    draw_presentation(s, th);
    ImGui::End();
    return;
  }
  draw_toolbar(s);
  const float status_h = ImGui::GetFrameHeightWithSpacing();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float body_h = avail.y - status_h;
  // At a large View ▸ Zoom the right column's minimum would take half the window: cap it.
  const float right_w = std::clamp(avail.x * 0.34f, std::min(320.f * s.scale, avail.x * 0.4f), 620.f * s.scale);
  const float left_w = avail.x - right_w - ImGui::GetStyle().ItemSpacing.x;
  const float graph_h = body_h * 0.70f;

  // Left: the graph over the console and lesson tabs.
  ImGui::BeginChild("left", ImVec2(left_w, body_h), false,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  ImGui::BeginChild("graph", ImVec2(0, graph_h), true,
                    ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  draw_graph_area(s, th);
  ImGui::EndChild();
  note_widget(s.hooks.widgets, "graph panel");
  ImGui::BeginChild("bottom", ImVec2(0, 0), true);
  if (ImGui::BeginTabBar("bottom_tabs")) {
    const ShellWords& t = words(s);
    const bool console_tab = ImGui::BeginTabItem(with_id(t.console, "Console").c_str());
    note_widget(s.hooks.widgets, "Console");
    if (console_tab) {
      draw_console(s);
      ImGui::EndTabItem();
    } else {
      s.console.focus_input = false;  // another tab is in front: nothing is waiting for the keyboard
    }
    // An open lesson shows its tab first.
    const bool lesson_tab =
        ImGui::BeginTabItem(with_id(t.lesson, "Lesson").c_str(), nullptr,
                            s.stats.frame == 0 && s.lesson_panel ? ImGuiTabItemFlags_SetSelected : 0);
    note_widget(s.hooks.widgets, "Lesson");
    if (lesson_tab) {
      draw_lesson(s);
      ImGui::EndTabItem();
    }
    // The first metric a script logs brings the Metrics tab forward (again after a :reset).
    const viz::MetricLog& metrics = s.session->interpreter().metrics();
    const bool bring = !metrics.empty() && !s.metrics_shown;
    s.metrics_shown = !metrics.empty();
    const bool metrics_tab =
        ImGui::BeginTabItem(with_id(t.metrics, "Metrics").c_str(), nullptr, bring ? ImGuiTabItemFlags_SetSelected : 0);
    note_widget(s.hooks.widgets, "Metrics");
    if (metrics_tab) {
      viz::MetricsPanelFrame mf;
      mf.log = &metrics;
      mf.theme = &th;
      mf.running = s.run.running;
      viz::draw_metrics_panel(s.metrics, mf, ImVec2(0, 0));
      ImGui::EndTabItem();
    } else {
      s.metrics.charts_drawn = 0;
    }
    ImGui::EndTabBar();
  }
  note_panel(s.hooks.widgets, "bottom panel");
  ImGui::EndChild();
  ImGui::EndChild();
  ImGui::SameLine();

  // Right: the inspector over the memory panel.
  ImGui::BeginChild("right", ImVec2(right_w, body_h), false);
  ImGui::BeginChild("inspector", ImVec2(0, body_h * 0.62f), true);
  viz::InspectorFrame inf;
  inf.graph = &shown_graph(s);
  if (const auto& run = s.session->interpreter().statics().run; run && inf.graph == &run->program().graph) {
    const ProgramRun* r = run.get();
    inf.live_value = [r](int v) { return r->value(v); };
  }
  inf.selected = s.graph.selected;
  inf.layout = &s.graph.layout;
  inf.theme = &th;
  inf.fonts = &s.fonts;
  viz::draw_inspector(s.inspector, inf);
  note_panel(s.hooks.widgets, "inspector panel");
  ImGui::EndChild();
  ImGui::BeginChild("memory", ImVec2(0, 0), true);
  ImGui::TextUnformatted(viz::tr("Memory after each step"));
  viz::MemoryPanelFrame mf;
  mf.events = &s.log->events();
  // A static program being stepped: its own steps, over lines measuring it with recompute off and on.
  std::vector<StepEvent> run_events;
  if (const auto& run = s.session->interpreter().statics().run) {
    // The steps of this pass (after a :rewind the earlier pass's steps are history).
    const auto& all = s.log->events();
    for (auto it = all.rbegin(); it != all.rend() && run_events.size() < run->position(); ++it)
      if (it->graph == &run->program().graph) run_events.push_back(*it);
    std::reverse(run_events.begin(), run_events.end());
    if (!s.run.running)
      update_recompute_comparison(s.recompute, *s.ws, s.session->interpreter(), *run);  // it runs programs
    mf.events = &run_events;
    mf.overlays = &s.recompute.overlays;
    mf.total_steps = run->size();
  }
  mf.live_now = &s.ws->tracker().live();
  mf.theme = &th;
  mf.current_step = s.log->last() ? s.log->last()->step : -1;
  viz::draw_memory_panel(mf, ImVec2(0, 0));
  note_panel(s.hooks.widgets, "memory panel");
  ImGui::EndChild();
  ImGui::EndChild();

  draw_status(s);
  ImGui::End();
}

}  // namespace opscope::app
