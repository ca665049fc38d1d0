// Scripted UI actions (what a user would click, for tests and screenshots) and the JSON dump
// of what the last frame showed.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/gui/gui_state.h"
#include "app/gui/statement_runner.h"
#include "app/lang/interpreter.h"
#include "core/body.h"
#include "core/error.h"
#include "platform/platform.h"
#include "viz/figure_export.h"
#include "viz/graphviz.h"
#include "viz/metrics.h"

namespace opscope::app {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n"), b = s.find_last_not_of(" \t\n");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// "n3", "v5", "s:fn", or a variable name (the box whose subtitle or title is that name).
// A node inside a folded box is revealed: its folded calls unfold (outermost first) until it
// has a box of its own, as a user would click them open.
std::string resolve_box(GuiState& s, const std::string& what) {
  for (int depth = 0; depth < 16; ++depth) {
    const auto& boxes = s.graph.layout.boxes;
    for (const auto& b : boxes)
      if (b.key == what) return b.key;
    const Graph& g = shown_graph(s);
    for (const auto& b : boxes)  // (by the node's own name: a compact figure's subtitle is its end)
      if (b.subtitle == what || b.title == what ||
          (b.node >= 0 && g.has_node(b.node) && g.node_var_name(b.node) == what))
        return b.key;
    const viz::LayoutBox* folded = nullptr;
    for (const auto& b : boxes)
      for (int id : b.nodes)
        if (!b.scope_key.empty() && g.has_node(id) && g.node_var_name(id) == what) folded = &b;
    if (!folded) break;
    viz::unfold_call(s.graph, folded->scope_key);
    viz::update_layout(s.graph, g, &s.fonts, graph_font_scale(s), s.stats.time);
  }
  throw Error("select: no box '" + what + "' in the graph view", "use a key like n3 or v5, or a variable name");
}

}  // namespace

void export_figure(GuiState& s, const std::string& path) {
  const size_t dot = path.rfind('.');
  const std::string format = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (format != "svg" && format != "png") throw Error("export: '" + path + "' should end in .svg or .png");
  viz::update_layout(s.graph, shown_graph(s), &s.fonts, graph_font_scale(s), s.stats.time);
  viz::FigureStyle style;
  style.dark = s.dark;
  for (const auto& d : s.graph.drawn)
    if (d.selected || d.current) style.emphasised.push_back(d.key);
  if (format == "png" && !viz::can_render_png()) {  // the browser draws the SVG as a PNG itself
    const std::string svg = path + ".svg";
    viz::render_figure(shown_graph(s), s.graph.layout, "svg", svg, style);
    platform::svg_to_png(svg, path);
    std::remove(svg.c_str());
  } else {
    viz::render_figure(shown_graph(s), s.graph.layout, format, path, style);
  }
}

void save_figure(GuiState& s, const std::string& format) {
  const std::string path = "opscope-graph." + format;
  try {
    export_figure(s, path);
  } catch (const Error& e) {
    s.console.lines.push_back({ConsoleLine::error, std::string("export: ") + e.what()});
    return;
  }
  s.console.lines.push_back({ConsoleLine::output, "# wrote " + path});
  platform::offer_download(path);
}

void save_metrics(GuiState& s) {
  const std::string path = "opscope-metrics.csv";
  std::ofstream f(path, std::ios::binary);
  if (!(f << viz::metrics_csv(s.session->interpreter().metrics()))) {
    s.console.lines.push_back({ConsoleLine::error, "cannot write '" + path + "'"});
    return;
  }
  f.close();
  s.console.lines.push_back({ConsoleLine::output, "# wrote " + path});
  platform::offer_download(path);
}

std::vector<std::string> split_actions(const std::string& actions) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= actions.size()) {
    size_t end = actions.find(';', start);
    if (end == std::string::npos) end = actions.size();
    std::string a = trim(actions.substr(start, end - start));
    if (!a.empty()) out.push_back(a);
    start = end + 1;
  }
  return out;
}

void apply_action(GuiState& s, const std::string& action) {
  if (action.rfind("lesson ", 0) == 0) {  // "lesson next", "lesson all", "lesson answer 3", ...
    if (!s.lesson_action || !s.lesson_action(s, action))
      throw Error("no lesson is open", "start the GUI with --lesson N");
    return;
  }
  const size_t sp = action.find(' ');
  const std::string verb = action.substr(0, sp), arg = sp == std::string::npos ? "" : trim(action.substr(sp + 1));
  auto run = [&](const std::string& cmd) {
    if (!run_in_console(s, cmd))
      s.hooks.action_errors.push_back(action + ": " + (s.console.lines.empty() ? "" : s.console.lines.back().text));
  };
  if (verb == "step") run(arg.empty() ? ":step" : ":step " + arg);
  else if (verb == "run") run(":run");
  else if (verb == "rewind") run(":rewind");
  else if (verb == "exec") run(arg);
  else if (verb == "workspace" && arg == "restore") restore_workspace(s);  // the console's offer
  else if (verb == "workspace" && arg == "fresh") forget_last_workspace(s);
  else if (verb == "open") {
    if (!open_onnx_model(s, arg))
      s.hooks.action_errors.push_back(action + ": " + (s.console.lines.empty() ? "" : s.console.lines.back().text));
  } else if (verb == "select") {
    // The layout must exist to resolve names: lay out now if the graph changed.
    viz::update_layout(s.graph, shown_graph(s), &s.fonts, graph_font_scale(s), s.stats.time);
    s.graph.selected = resolve_box(s, arg);
  } else if (verb == "click") {
    // Where the box was drawn in the last frame, clicked as a user would.
    const std::string key = resolve_box(s, arg);
    for (const auto& d : s.graph.drawn)
      if (d.key == key) {
        s.hooks.click.pos = ImVec2((d.min.x + d.max.x) * 0.5f, (d.min.y + d.max.y) * 0.5f);
        s.hooks.click.frames_left = 3;
        return;
      }
    throw Error("click: box '" + arg + "' is not on screen");
  } else if (verb == "toggle") {
    using viz::PhaseFilter;
    if (arg == "backward")
      s.graph.filter = s.graph.filter == PhaseFilter::both ? PhaseFilter::forward_only : PhaseFilter::both;
    else if (arg == "forward")
      s.graph.filter = s.graph.filter == PhaseFilter::both ? PhaseFilter::backward_only : PhaseFilter::both;
    else if (arg == "theme") s.dark = !s.dark;
    else throw Error("toggle takes backward, forward or theme, got '" + arg + "'");
  } else if (verb == "view" && arg.rfind("zoom ", 0) == 0) {  // View ▸ Zoom: "view zoom in|out|1.5"
    const std::string z = trim(arg.substr(5));
    set_ui_zoom(s, z == "in" ? s.ui_zoom + kUiZoomStep : z == "out" ? s.ui_zoom - kUiZoomStep : std::stof(z));
  } else if (verb == "view" && (arg == "present" || arg == "present off")) {  // View ▸ Present (F11)
    s.present = arg == "present";
  } else if (verb == "view") {
    if (arg == "forward") s.graph.filter = viz::PhaseFilter::forward_only;
    else if (arg == "backward") s.graph.filter = viz::PhaseFilter::backward_only;
    else if (arg == "both") s.graph.filter = viz::PhaseFilter::both;
    else throw Error("view takes forward, backward, both, zoom in|out|Z or present [off], got '" + arg + "'");
  } else if (verb == "expand" || verb == "collapse") {  // a node's body: expand n3, expand y (the node making y)
    viz::update_layout(s.graph, shown_graph(s), &s.fonts, graph_font_scale(s), s.stats.time);
    const std::string key = resolve_box(s, arg);
    const int node = s.graph.layout.boxes[static_cast<size_t>(s.graph.layout.find(key))].node;
    if (node < 0) throw Error(verb + ": '" + arg + "' is not an op node");
    if (verb == "collapse") s.graph.expanded.erase(node);
    else if (!node_body(shown_graph(s), shown_graph(s).node(node)))
      throw Error("expand: node #" + std::to_string(node) + " has no body (only an @op or a fused node has one)");
    else s.graph.expanded.insert(node);
  } else if (verb == "fold") viz::fold_call(s.graph, arg);
  else if (verb == "unfold") viz::unfold_call(s.graph, arg);
  else if (verb == "search") std::snprintf(s.graph.search, sizeof s.graph.search, "%s", arg.c_str());
  else if (verb == "theme") {
    if (arg != "dark" && arg != "light") throw Error("theme takes dark or light");
    s.dark = arg == "dark";
  } else if (verb == "fit") s.graph.fit_all = true;
  else if (verb == "zoom") s.graph.zoom = std::stof(arg);
  else if (verb == "export") export_figure(s, arg);
  else if (verb == "map" || verb == "graph") {  // the tab over the graph
    if (verb == "map" && !s.map_panel) throw Error("no knowledge map here", "start the GUI with --lesson N");
    (verb == "map" ? s.show_map : s.show_graph) = true;
  } else if (verb == "lab") lab_action(s, arg);
  else if (verb == "interrupt")
    s.run.interrupt_on_idle_frame = s.run.idle_frames + (arg.empty() ? 1 : std::max(1, std::stoi(arg)));
  else if (verb == "measure")
    s.stats.max_frame_ms = s.stats.max_frame_work_ms = s.stats.max_frame_between_steps_work_ms =
        0;  // from here (a benchmark's phase)
  else if (verb == "play") s.playing = true;
  else if (verb == "pause") s.playing = false;
  else
    throw Error("unknown GUI action '" + verb + "'",
                "actions: step [N|bwd], run, rewind, exec CODE, interrupt [N], select KEY, click KEY, toggle "
                "backward|forward|theme, view forward|backward|both|zoom in|zoom out|zoom Z|present|present off, "
                "expand KEY, collapse KEY, fold F, unfold F, search TEXT, "
                "theme dark|light, fit, zoom Z, export FILE.svg|.png, map, graph, lab OP SIZE|warp ALGO|kernel|step "
                "[N|back|barrier|to FILE:LINE]|gpu NAME, play, pause, open MODEL.onnx, measure");
}

void inject_mouse(GuiState& s) {
  if (s.hooks.click.frames_left <= 0) return;
  ImGuiIO& io = ImGui::GetIO();
  io.MousePos = s.hooks.click.pos;
  io.MouseDown[0] = s.hooks.click.frames_left == 2;
  --s.hooks.click.frames_left;
}

namespace {
lang::Interpreter& ms_interp(const GuiState& s) { return s.session->interpreter(); }
// What the last loop left of its tape (the loop badge's numbers).
nlohmann::json loop_json(const lang::LoopTape& l) {
  return {{"line", l.line},
          {"iterations", l.iterations},
          {"dropped_iterations", l.dropped_iterations},
          {"dropped_nodes", l.dropped_nodes},
          {"first_kept_node", l.first_kept_node}};
}
}  // namespace

std::string state_json(const GuiState& s, int window_w, int window_h) {
  using nlohmann::json;
  json nodes = json::array();
  for (const auto& d : s.graph.drawn) {
    nodes.push_back({{"key", d.key},
                     {"node", d.node},
                     {"title", d.title},
                     {"subtitle", d.subtitle},
                     {"kind", viz::box_kind_name(d.kind)},
                     {"lane", d.lane == viz::Lane::backward ? "backward" : "forward"},
                     {"phase", phase_name(d.phase)},
                     {"anchor", d.anchor},
                     {"folded_nodes", d.folded_nodes},
                     {"rect", {d.min.x, d.min.y, d.max.x, d.max.y}},
                     {"label_px", d.label_px},
                     {"current", d.current},
                     {"next", d.next},
                     {"selected", d.selected},
                     {"matched", d.matched}});
    if (d.badge_max.x > d.badge_min.x)
      nodes.back()["badge_rect"] = {d.badge_min.x, d.badge_min.y, d.badge_max.x, d.badge_max.y};
  }
  // Every edge drawn in the last frame, with its two boxes and its curve's control points, so
  // crossings can be counted from outside.
  json edges = json::array();
  for (const auto& e : s.graph.drawn_edges) {
    json points = json::array();
    for (const auto& p : e.points) points.push_back({p.x, p.y});
    edges.push_back({{"from", e.from}, {"to", e.to}, {"kind", viz::edge_kind_name(e.kind)}, {"points", points}});
    if (!e.label.empty())  // the shape label drawn on it, where it is on screen
      edges.back()["label"] = {{"text", e.label},
                               {"rect", {e.label_min.x, e.label_min.y, e.label_max.x, e.label_max.y}}};
  }
  json map = json::array();
  for (const auto& d : s.map_view.drawn)
    map.push_back({{"id", d.id},
                   {"label", d.label},
                   {"status", d.status == viz::ConceptStatus::learned       ? "learned"
                              : d.status == viz::ConceptStatus::in_progress ? "in progress"
                                                                            : "not yet"},
                   {"rect", {d.min.x, d.min.y, d.max.x, d.max.y}}});
  json clusters = json::array();
  for (const auto& c : s.graph.layout.clusters)
    clusters.push_back({{"key", c.key}, {"label", c.label}, {"loop", c.loop}, {"iterations", c.iterations}});
  // The frames as drawn (a frame the rows cut is drawn in parts): where, and where their titles
  // and loop badges are (what an edge label must not cover).
  json frames = json::array();
  for (const auto& c : s.graph.drawn_clusters) {
    frames.push_back({{"key", c.key}, {"label", c.label}, {"rect", {c.min.x, c.min.y, c.max.x, c.max.y}}});
    if (c.title_max.x > c.title_min.x)
      frames.back()["title_rect"] = {c.title_min.x, c.title_min.y, c.title_max.x, c.title_max.y};
    if (c.badge_max.x > c.badge_min.x)
      frames.back()["badge_rect"] = {c.badge_min.x, c.badge_min.y, c.badge_max.x, c.badge_max.y};
  }
  json memory = json::array();
  for (const auto& e : s.log->events()) {
    json cats = json::object();
    for (int c = 0; c < kNumCategories; ++c)
      cats[category_name(static_cast<MemCategory>(c))] = e.mem_after[static_cast<size_t>(c)];
    memory.push_back({{"step", e.step},
                      {"node", e.node},
                      {"phase", phase_name(e.phase)},
                      {"total", total_bytes(e.mem_after)},
                      {"bytes", cats}});
  }
  json metrics = json::object();  // each logged series: its points and last value
  for (const auto& m : ms_interp(s).metrics().series())
    metrics[m.name] = {{"points", m.steps.size()},
                       {"last_step", m.steps.empty() ? -1 : m.steps.back()},
                       {"last", m.values.empty() ? 0.0 : m.values.back()}};
  const StepEvent* last = s.log->last();
  json console = json::array();
  const size_t from = s.console.lines.size() > 40 ? s.console.lines.size() - 40 : 0;
  for (size_t i = from; i < s.console.lines.size(); ++i) console.push_back(s.console.lines[i].text);
  int highlighted = -1;
  for (const auto& d : s.graph.drawn)
    if (d.current) highlighted = d.node;
  json widgets = json::array();
  for (const auto& w : s.hooks.widgets) {
    widgets.push_back({{"label", w.label}, {"rect", {w.x0, w.y0, w.x1, w.y1}}, {"enabled", w.enabled}});
    if (w.scroll_y >= 0) widgets.back()["scroll"] = {w.scroll_y, w.scroll_max_y};
  }
  GuiState& ms = const_cast<GuiState&>(s);
  json state{{"platform", platform::name()},
             {"frame", s.stats.frame},
             {"window", {window_w, window_h}},
             {"canvas", {s.graph.canvas_min.x, s.graph.canvas_min.y, s.graph.canvas_max.x, s.graph.canvas_max.y}},
             {"step", last ? last->step : -1},
             {"phase", last ? phase_name(last->phase) : ""},
             {"current_node", last ? last->node : -1},
             {"highlighted_node", highlighted},
             {"next_node", next_step_node(ms)},
             {"steps_left", steps_left(ms)},
             {"selected", s.graph.selected},
             {"view", viz::phase_filter_name(s.graph.filter)},
             {"theme", s.dark ? "dark" : "light"},
             {"zoom", s.graph.zoom},
             {"ui_zoom", s.ui_zoom},
             {"ui_scale", s.scale},
             {"present", s.present},
             {"journal", {{"kept", s.journal.statements().size()}, {"offered", s.journal_offered}}},
             {"graph_nodes", s.ws->graph().node_count()},
             {"graph_dropped_nodes", s.ws->graph().drops().nodes},
             {"loop", loop_json(s.session->interpreter().last_loop())},
             {"idle_frames", s.run.idle_frames},
             {"running", s.run.running},
             {"input_waiting", s.hooks.input_waiting},
             {"idle", s.hooks.idle},
             {"frames_since_input", s.stats.frame - s.hooks.input_frame},
             {"input_events", s.hooks.input_events},
             {"live_states", s.hooks.live_states},
             {"queued_work", s.run.queued.size()},
             {"mode", s.ws->static_mode() ? "static" : "dynamic"},
             {"program_nodes",
              &shown_graph(ms) != &s.ws->graph() ? static_cast<int64_t>(s.graph.only_nodes.size()) : -1},
             {"nodes", nodes},
             {"edges", edges},
             {"clusters", clusters},
             {"frames", frames},
             {"folded", s.graph.folded},
             {"auto_folded", s.graph.auto_folded},
             {"text_px", s.graph.text_px},
             {"map_shown", s.map_visible},
             {"map", map},
             {"readable_text_px", viz::kReadableTextPx},
             {"min_text_px", s.graph.min_text_px},
             {"figure_rows", s.graph.layout.row_lane_tops.size() + 1},
             {"figure_scrolls", s.graph.scrolls},
             {"layouts", s.graph.layouts_done},
             {"layout_ms", s.graph.layout.layout_ms},
             {"layout_ms_total", s.graph.layout_ms_total},
             {"plan_ms_max", s.graph.plan_ms_max},
             {"layout_step_ms_max", s.graph.queue ? s.graph.queue->step_ms_max() : 0.0},
             {"layout_mode", s.graph.queue ? viz::layout_mode_name(s.graph.queue->mode()) : "sync"},
             {"layout_current", viz::layout_current(s.graph)},
             {"layout_error", s.graph.layout_error},
             {"open_ms", s.stats.open_ms},
             {"open_frame", s.stats.open_frame},
             {"max_frame_ms", s.stats.max_frame_ms},
             {"max_frame_work_ms", s.stats.max_frame_work_ms},
             {"max_frame_between_steps_work_ms", s.stats.max_frame_between_steps_work_ms},
             {"frame_ms", s.stats.frame_ms_avg},
             {"memory", memory},
             {"live_bytes", s.ws->tracker().live_total()},
             {"peak_bytes", s.ws->tracker().peak_total()},
             {"cjk_font", s.fonts.cjk},
             {"metrics", metrics},
             {"metrics_charts", s.metrics.charts_drawn},
             {"metrics_marker_x", s.metrics.marker_x},
             {"console", console},
             {"action_errors", s.hooks.action_errors},
             {"internal_errors", s.hooks.internal_errors},
             {"empty_graph_statement", viz::kEmptyGraphStatement},
             {"widgets", widgets},
             {"want_text_input", ImGui::GetCurrentContext() && ImGui::GetIO().WantTextInput},
             {"console_input", s.console.input},
             {"console_width_px", s.console.log_width_px},
             {"console_widest_row_px", s.console.widest_row_px},
             {"pending_block", s.console.pending_block}};
  if (s.lab.opened) {
    state["kernel_lab"] = json::parse(lab_state_json(s.lab));
    state["kernel_lab"]["shown"] = s.lab_visible;
  }
  if (s.lesson_state)
    if (const std::string lesson = ms.lesson_state(ms); !lesson.empty()) state["lesson"] = json::parse(lesson);
  return state.dump(2);
}

}  // namespace opscope::app
