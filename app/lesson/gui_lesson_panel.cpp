// [SECTION] markers: state, blocks, panel, knowledge map, actions. The Markdown drawing is
// gui_markdown.cpp's; an exercise's block is gui_exercise.cpp's.
#include "app/lesson/gui_lesson_panel.h"

#include <imgui.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "app/gui/statement_runner.h"
#include "app/lesson/gui_exercise.h"
#include "app/lesson/gui_markdown.h"
#include "app/lesson/knowledge_map.h"
#include "app/lesson/markdown_doc.h"
#include "app/lesson/player_model.h"
#include "core/error.h"
#include "program_chinese.h"
#include "viz/graph_view.h"

namespace opscope::lesson {

namespace {

// [SECTION] state
// What the panel keeps between frames (owned by the panel's functor, not by statics).
struct PanelState {
  std::string id, lang;
  std::unique_ptr<LessonPlayerModel> model;
  std::string open_error;  // the lesson could not be opened
  std::map<size_t, std::vector<MdBlock>> prose;  // parsed prose by block index (per language)
  std::string prose_lang;
  ExerciseEditors editors;  // each exercise's editor text, by block
  char answer[256] = "";
  bool scroll_to_current = false;
  size_t shown_directives = 0;  // directives applied to the GUI so far
  bool presenting = false;  // View ▸ Present and the scale when last drawn: when either changes,
  float drawn_scale = 0.f;  // the text moves or reflows, and the panel shows where the student is again
  std::string goto_lesson;  // a knowledge-map concept was clicked: open this lesson next frame
  size_t goto_block = 0;  // ... at this block (its section)
  // The knowledge map: the file, where each concept is taught, the progress it is coloured by.
  std::unique_ptr<KnowledgeMap> map;
  std::vector<MapSection> sections;
  std::string map_error;
  Progress progress;
  std::string progress_seen;  // lesson and position the progress was read at
};

const std::vector<MdBlock>& prose_of(PanelState& st, size_t i) {
  if (st.prose_lang != st.model->language()) {
    st.prose.clear();
    st.prose_lang = st.model->language();
  }
  auto it = st.prose.find(i);
  if (it == st.prose.end()) it = st.prose.emplace(i, parse_markdown(st.model->lesson().blocks[i].text)).first;
  return it->second;
}

// [SECTION] blocks
// `show: kernel_lab matmul 64`: the lab on the lesson's operator, measured once the frame is drawn
// (the lesson's parser checked the words). Without an operator, matmul's default.
void open_lab(app::GuiState& s, const std::string& argument) {
  std::istringstream words(argument.substr(std::strlen("kernel_lab")));
  std::string op = "matmul";
  words >> op;
  std::vector<int64_t> sizes;
  for (std::string w; words >> w;) sizes.push_back(std::stoll(w));
  s.lab.opened = true;  // the tab exists ("Measuring...") until the measurements are in
  // In front unless this frame already asked for the graph or the map (a click on the map jumps
  // to a section past the directive: the student asked to see the graph).
  s.lab.bring_forward = !(s.show_graph || s.show_map);
  app::lab_open_after_frame(s, op, sizes);
}

// Brings the GUI in line with a directive: select the node that made a variable.
void apply_directive(app::GuiState& s, const Directive& d) {
  if (d.name == "show") {  // the map and the graph share the area above the console
    if (d.argument == "map" || d.argument == "graph") {
      s.show_map = d.argument == "map";
      s.show_graph = !s.show_map;
      s.lab.bring_forward = false;  // the later directive wins
    }
    if (d.argument.rfind("kernel_lab", 0) == 0) open_lab(s, d.argument);
    return;
  }
  if (d.name != "highlight") return;
  const Graph& g = s.ws->graph();
  for (size_t k = g.value_count(); k-- > 0;) {  // the latest value of that name
    const ValueInfo& vi = g.values()[k];
    if (vi.name == d.argument && vi.producer >= 0) {
      s.graph.selected = "n" + std::to_string(vi.producer);
      return;
    }
  }
}

// Keeps the GUI's step log and selection valid after the session ran something (as the
// console does): a failed statement rolls nodes back.
void after_run(app::GuiState& s) {
  s.log->forget_missing_nodes(&s.ws->graph());
  const std::string& sel = s.graph.selected;
  if (sel.size() > 1 && sel[0] == 'n' && !s.ws->graph().has_node(std::stoi(sel.substr(1)))) s.graph.selected.clear();
}

// Passes prose, directives (except pause) and checks without a click: the student clicks to
// run cells, to answer quizzes and to go on after a pause.
void advance(app::GuiState& s, PanelState& st) {
  LessonPlayerModel& m = *st.model;
  while (!m.done()) {
    const Block& b = *m.current();
    if (b.kind == Block::Kind::cell || b.kind == Block::Kind::quiz || b.kind == Block::Kind::exercise) return;
    if (b.kind == Block::Kind::directive && b.directive.name == "pause" && !m.paused()) {
      m.step();  // now paused: wait for "Continue"
      return;
    }
    if (m.paused()) return;
    const size_t at = m.position();
    m.step();
    after_run(s);
    if (m.position() == at) return;  // a failed check: shown, the student decides
  }
}

void step(app::GuiState& s, PanelState& st) {
  LessonPlayerModel& m = *st.model;
  if (m.done()) return;
  if (m.current()->kind == Block::Kind::quiz) m.step();  // skipped unanswered
  else if (m.paused()) m.step();
  else {
    m.step();
    after_run(s);
  }
  st.scroll_to_current = true;
  advance(s, st);
}

void restart(app::GuiState& s, PanelState& st) {
  st.model->restart();
  after_run(s);
  advance(s, st);
}

// Runs the cells up to the next question: a quiz or an exercise waits for the student (Run all
// never answers or skips one for them, so a lesson is finished only by going through them).
// (`to_end`, the scripted "lesson all": past them too, unanswered, as a test runs a lesson through.)
void run_blocks(app::GuiState& s, PanelState& st, bool to_end) {
  LessonPlayerModel& m = *st.model;
  while (!m.done()) {
    const Block::Kind k = m.current()->kind;
    if ((k == Block::Kind::quiz || k == Block::Kind::exercise) && !m.paused() && !to_end) break;
    const size_t at = m.position();
    step(s, st);
    if (m.position() == at) break;  // a failure
  }
}
void run_all(app::GuiState& s, PanelState& st) { run_blocks(s, st, false); }

void draw_cell(const Block& b, const std::optional<BlockResult>& r, size_t i, const viz::Fonts& fonts, float scale) {
  draw_code_box("cell" + std::to_string(i), b.text, fonts, scale);
  if (fonts.mono) ImGui::PushFont(fonts.mono);
  if (r) {
    if (!r->output.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, b.expect_error ? kRed : kDim);
      ImGui::TextUnformatted(r->output.c_str());
      ImGui::PopStyleColor();
    }
    if (!r->ok) {
      ImGui::PushStyleColor(ImGuiCol_Text, kRed);
      ImGui::TextUnformatted(r->error.c_str());
      ImGui::PopStyleColor();
    }
  }
  if (fonts.mono) ImGui::PopFont();
}

void draw_check(const Block& b, const std::optional<BlockResult>& r, const char* label) {
  std::istringstream lines(b.text);
  ImGui::PushStyleColor(ImGuiCol_Text, !r ? kDim : r->ok ? kGreen : kRed);
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) {
      ImGui::Bullet();  // a drawn dot in the check's colour: no glyph the fonts might lack
      ImGui::Text("%s%s: %s", label, r && !r->ok ? " (failed)" : "", l.c_str());
    }
  if (r && !r->ok) ImGui::TextWrapped("%s", r->error.c_str());
  ImGui::PopStyleColor();
}

// [SECTION] panel
struct Words {
  const char* run_next;
  const char* run_all;
  const char* restart;
  const char* check;
  const char* answer;
  const char* skip;
  const char* right;
  const char* wrong;
  const char* pause;
  const char* go_on;
  const char* finished;
  const char* look_at;
  const char* goals;
  const char* recap;
  const char* try_again;
  const char* next_lesson;
};
const Words kEn{"Run next",
                "Run all",
                "Restart",
                "engine check",
                "Answer",
                "Skip",
                "Right.",
                "Not quite: the answer is",
                "Your turn: try things in the Console tab.",
                "Continue",
                "Lesson finished.",
                "Look at the %s panel.",
                "You will be able to:",
                "Recap:",
                "Not quite. Think again: one more try before the answer.",
                "Next lesson"};
const Words kZh{"运行下一步",
                "全部运行",
                "重新开始",
                "引擎核对",
                "回答",
                "跳过",
                "答对了。",
                "不对，答案是",
                "轮到你了：在“控制台”标签页里试一试。",
                "继续",
                "本课结束。",
                "看看 %s 面板。",
                "学完这一课，你将能够：",
                "回顾：",
                "不太对。再想想：还有一次机会，之后给出答案。",
                "下一课"};

// A `show:` directive's panel as the window names it (its tab or its title), in the lesson's language.
std::string panel_title(const std::string& argument, bool zh) {
  const std::string panel = argument.substr(0, argument.find(' '));  // "kernel_lab matmul 64": the lab
  const ShowPanel* p = find_show_panel(panel);
  return !p ? panel : zh ? p->title_zh : p->title_en;
}

// Whether the progress file records this lesson as finished (what the knowledge map colours).
bool recorded_finished(const LessonPlayerModel& m) {
  const Progress p = load_progress(default_progress_path());
  const auto it = p.lessons.find(m.lesson().slug.substr(0, m.lesson().slug.find('-')));
  return it != p.lessons.end() && it->second.finished;
}

// The lesson after this one in the course (its number + 1), or "" after the last.
std::string next_lesson_id(const LessonPlayerModel& m) {
  const std::string next = std::to_string(m.lesson().number + 1);
  try {
    find_lesson_file(lessons_dir(), m.language(), next);
    return next;
  } catch (const Error&) {
    return {};
  }
}

struct LessonPanel {
  std::shared_ptr<PanelState> st;

  void open(app::GuiState& s) {
    PanelState& p = *st;
    try {
      const std::string progress = default_progress_path();
      const std::string lang = p.lang.empty() ? load_progress(progress).lang : p.lang;
      p.model = std::make_unique<LessonPlayerModel>(lessons_dir(), lang, p.id, progress, *s.ws, *s.session);
      after_run(s);
      advance(s, p);
    } catch (const Error& e) {
      p.open_error = std::string(e.what()) + (e.hint().empty() ? "" : "\n" + e.hint());
    }
  }

  void operator()(app::GuiState& s) {
    PanelState& p = *st;
    if (!p.goto_lesson.empty() && !s.run.running) {  // same language, fresh workspace
      if (p.model) p.lang = p.model->language();
      p.id = p.goto_lesson;
      p.goto_lesson.clear();
      p.model.reset();
      p.prose.clear();
      p.editors = {};
      p.shown_directives = 0;
      p.open_error.clear();
    }
    if (!p.model && p.open_error.empty() && !s.run.running) {  // opening runs code: not while a cell runs
      open(s);
      if (p.model && p.goto_block > 0) {  // a concept of the map: its section, the cells before it run
        p.model->fast_forward(p.goto_block);
        after_run(s);
        advance(s, p);  // on to the first block that waits for the student: Run next works from here
        p.scroll_to_current = true;
      }
      p.goto_block = 0;
    }
    if (!p.model) {
      if (p.open_error.empty()) return;
      ImGui::PushStyleColor(ImGuiCol_Text, kRed);
      ImGui::TextWrapped("%s", p.open_error.c_str());
      ImGui::PopStyleColor();
      return;
    }
    LessonPlayerModel& m = *p.model;
    const Words& w = m.language() == "zh" ? kZh : kEn;
    s.chinese = m.language() == "zh";  // the window speaks the lesson's language
    s.map_tab = s.chinese && s.fonts.cjk ? "知识体系总览" : "Knowledge map";
    if (p.presenting != s.present || p.drawn_scale != s.scale) {
      p.presenting = s.present;
      p.drawn_scale = s.scale;
      p.scroll_to_current = true;
      if (!m.done() && m.current()->kind == Block::Kind::exercise) p.editors.scroll_to = m.position();
    }
    const Lesson& L = m.lesson();
    // Header: title, time, the buttons and the language switch.
    ImFont* title_font = s.fonts.title && !has_wide(L.title) ? s.fonts.title : nullptr;
    if (title_font) ImGui::PushFont(title_font);
    ImGui::Text("%d · %s", L.number, L.title.c_str());
    if (title_font) ImGui::PopFont();
    ImGui::SameLine();
    ImGui::TextDisabled("~%d %s", L.minutes, m.language() == "zh" ? "分钟" : "min");
    // Cells run after the frame (the window keeps drawing while they run, Esc stops them).
    auto later = [&s, st = st](void (*fn)(app::GuiState&, PanelState&)) {
      app::run_after_frame(s, [&s, st, fn] { app::run_busy(s, [&] { fn(s, *st); }); });
    };
    const bool can_step = !s.run.running && !m.done() &&
                          (m.paused() || m.current()->kind == Block::Kind::cell ||
                           m.current()->kind == Block::Kind::check || m.current()->kind == Block::Kind::exercise);
    if (!can_step) ImGui::BeginDisabled();
    app::WidgetRects& noted = s.hooks.widgets;
    if (app::noted(noted, ImGui::Button(m.paused() ? w.go_on : w.run_next), m.paused() ? kEn.go_on : kEn.run_next))
      later(step);
    ImGui::SameLine();
    if (app::noted(noted, ImGui::Button(w.run_all), kEn.run_all)) later(run_all);
    if (!can_step) ImGui::EndDisabled();
    ImGui::SameLine();
    if (s.run.running) ImGui::BeginDisabled();
    if (app::noted(noted, ImGui::Button(w.restart), kEn.restart)) later(restart);
    if (s.run.running) ImGui::EndDisabled();
    ImGui::SameLine();
    const bool zh = m.language() == "zh";
    if (app::noted(noted, ImGui::RadioButton("EN", !zh), "EN") && zh) m.set_language("en");
    ImGui::SameLine();
    if (app::noted(noted, ImGui::RadioButton(s.fonts.cjk ? "中文" : "ZH", zh), "ZH") && !zh) m.set_language("zh");
    if (!m.panel().empty()) {
      ImGui::SameLine();
      ImGui::TextDisabled(w.look_at, panel_title(m.panel(), zh).c_str());
    }
    ImGui::Separator();

    // The lesson so far, and the block waiting for the student.
    ImGui::BeginChild("lesson_text", ImVec2(0, 0), false);
    const size_t last = std::min(m.position(), L.blocks.size() - 1);
    for (size_t i = 0; i <= last && i < L.blocks.size(); ++i) {
      const Block& b = L.blocks[i];
      const bool current = i == m.position();
      ImGui::PushID(static_cast<int>(i));
      switch (b.kind) {
        case Block::Kind::prose: draw_markdown(prose_of(p, i), s.fonts, s.scale); break;
        case Block::Kind::cell:
          draw_cell(b, m.result(i), i, s.fonts, s.scale);
          if (current && !s.run.running &&
              app::noted(noted, ImGui::Button(m.language() == "zh" ? "▶ 运行" : "▶ Run"), "Run cell"))
            later(step);
          ImGui::Spacing();
          break;
        case Block::Kind::check:
          draw_check(b, m.result(i), w.check);
          ImGui::Spacing();
          break;
        case Block::Kind::quiz: {
          ImGui::PushStyleColor(ImGuiCol_Text, kAccent);
          ImGui::TextUnformatted("?");
          ImGui::PopStyleColor();
          ImGui::SameLine();
          draw_spans(parse_markdown(b.quiz.question).empty() ? MdSpans{} : parse_markdown(b.quiz.question)[0].spans,
                     s.fonts);
          for (auto& c : b.quiz.choices) ImGui::BulletText("%s", c.c_str());
          const auto& f = m.feedback(i);
          if (f && !f->final) {  // wrong, with another try
            ImGui::PushStyleColor(ImGuiCol_Text, kRed);
            ImGui::TextWrapped("%s", w.try_again);
            ImGui::PopStyleColor();
          }
          if (f && f->final) {
            ImGui::PushStyleColor(ImGuiCol_Text, f->right ? kGreen : kRed);
            if (f->right) ImGui::TextUnformatted(w.right);
            else ImGui::Text("%s %s", w.wrong, f->expected.c_str());
            ImGui::PopStyleColor();
            if (!f->explain.empty()) ImGui::TextWrapped("%s", f->explain.c_str());
          } else if (current) {
            ImGui::SetNextItemWidth(220.f * s.scale);
            const bool enter =
                ImGui::InputText("##answer", p.answer, sizeof p.answer, ImGuiInputTextFlags_EnterReturnsTrue);
            app::note_widget(noted, "quiz answer");
            ImGui::SameLine();
            if ((app::noted(noted, ImGui::Button(w.answer), kEn.answer) || enter) && !s.run.running) {
              m.answer(p.answer);
              p.answer[0] = '\0';
              p.scroll_to_current = true;
              later(advance);
            }
            ImGui::SameLine();
            if (app::noted(noted, ImGui::Button(w.skip), kEn.skip) && !s.run.running) later(step);
          }
          ImGui::Spacing();
          break;
        }
        case Block::Kind::goals:
        case Block::Kind::recap:
          ImGui::PushStyleColor(ImGuiCol_Text, kAccent);
          ImGui::TextUnformatted(b.kind == Block::Kind::goals ? w.goals : w.recap);
          ImGui::PopStyleColor();
          draw_markdown(prose_of(p, i), s.fonts, s.scale);
          break;
        case Block::Kind::exercise:
          switch (draw_exercise(s, m, i, p.editors, current)) {
            case ExerciseClick::check:
              app::run_after_frame(s, [&s, st = st, i] { check_exercise_now(s, *st->model, i, st->editors); });
              break;
            case ExerciseClick::go_on: later(step); break;
            case ExerciseClick::none: break;
          }
          ImGui::Spacing();
          break;
        case Block::Kind::directive:
          if (b.directive.name == "pause" && current) {
            ImGui::PushStyleColor(ImGuiCol_Text, kAccent);
            ImGui::TextWrapped("%s", w.pause);
            ImGui::PopStyleColor();
          }
          break;
      }
      ImGui::PopID();
      if (current && p.scroll_to_current) {
        ImGui::SetScrollHereY(0.8f);
        p.scroll_to_current = false;
      }
    }
    if (m.done()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kGreen);
      ImGui::TextUnformatted(w.finished);
      ImGui::PopStyleColor();
      if (const std::string next = next_lesson_id(m); !next.empty()) {  // the course goes on from here
        const std::string label = std::string(w.next_lesson) + " (" + next + ") \u25b6";
        if (app::noted(noted, ImGui::Button(label.c_str()), kEn.next_lesson) && !s.run.running) {
          p.goto_lesson = next;
          p.goto_block = 0;
        }
      }
      if (p.scroll_to_current) {
        ImGui::SetScrollHereY(1.f);
        p.scroll_to_current = false;
      }
    }
    // Directives passed since the last frame act on the GUI once.
    for (size_t i = p.shown_directives; i < m.position() && i < L.blocks.size(); ++i)
      if (L.blocks[i].kind == Block::Kind::directive) apply_directive(s, L.blocks[i].directive);
    p.shown_directives = m.position();
    ImGui::EndChild();
  }
};

// [SECTION] knowledge map
const char* const kLegendEn[3] = {"not yet", "in progress", "learned"};
const char* const kLegendZh[3] = {"还没学", "正在学", "学过"};

// The map's file and sections, read once; an error is shown in the map's place.
bool load_map(PanelState& p) {
  if (p.map || !p.map_error.empty()) return p.map != nullptr;
  try {
    auto map = std::make_unique<KnowledgeMap>(load_knowledge_map(knowledge_map_path()));
    const std::string dir = lessons_dir();
    for (const auto& c : map->concepts) p.sections.push_back(find_section(c, *map, dir));
    p.map = std::move(map);
  } catch (const Error& e) {
    p.map_error = std::string(e.what()) + (e.hint().empty() ? "" : "\n" + e.hint());
  }
  return p.map != nullptr;
}

viz::ConceptFigure map_figure(const PanelState& p, bool zh) {
  viz::ConceptFigure f;
  f.title = zh ? "知识体系总览：点一个概念，打开讲它的那一节"
               : "The map of the course: click a concept to open the lesson that teaches it";
  for (int i = 0; i < 3; ++i) f.legend[i] = zh ? kLegendZh[i] : kLegendEn[i];
  for (size_t g = 0; g < p.map->groups.size(); ++g) {
    f.groups.push_back(zh ? p.map->groups[g].zh : p.map->groups[g].en);
    for (const auto& a : p.map->groups[g].after) f.group_edges.emplace_back(p.map->find(a), static_cast<int>(g));
  }
  for (size_t i = 0; i < p.map->concepts.size(); ++i) {
    const MapConcept& c = p.map->concepts[i];
    const MapSection& sec = p.sections[i];
    viz::ConceptNode n;
    n.id = c.id;
    n.lines = zh ? c.zh : c.en;
    n.status = static_cast<viz::ConceptStatus>(concept_status(sec, p.progress));
    for (size_t g = 0; g < p.map->groups.size(); ++g)
      if (p.map->groups[g].id == c.group) n.group = static_cast<int>(g);
    n.badge = std::to_string(c.lesson);
    n.tooltip = zh ? "第 " + std::to_string(c.lesson) + " 课 · " + sec.heading_zh + "：点击打开"
                   : "Lesson " + std::to_string(c.lesson) + " · " + sec.heading_en + ": click to open it";
    f.nodes.push_back(std::move(n));
    for (const auto& a : c.after) f.edges.emplace_back(p.map->find(a), static_cast<int>(i));
  }
  return f;
}

void draw_map(app::GuiState& s, PanelState& p) {
  if (!load_map(p)) {
    ImGui::PushStyleColor(ImGuiCol_Text, kRed);
    ImGui::TextWrapped("%s", p.map_error.c_str());
    ImGui::PopStyleColor();
    return;
  }
  // The progress file changes as the student moves on: read it again then.
  const std::string seen = p.id + ":" + (p.model ? std::to_string(p.model->position()) : "-");
  if (seen != p.progress_seen) {
    p.progress = load_progress(default_progress_path());
    p.progress_seen = seen;
  }
  const std::string lang = p.model ? p.model->language() : p.lang.empty() ? p.progress.lang : p.lang;
  const bool zh = lang == "zh";
  s.map_tab = zh && s.fonts.cjk ? "知识体系总览" : "Knowledge map";
  const int clicked = viz::draw_concept_map(s.map_view, map_figure(p, zh), viz::theme(s.dark), s.fonts, s.scale);
  if (clicked < 0) return;
  const MapConcept& c = p.map->concepts[static_cast<size_t>(clicked)];
  p.goto_lesson = std::to_string(c.lesson);
  p.goto_block = p.sections[static_cast<size_t>(clicked)].first_block;
  if (p.model) p.lang = p.model->language();
  s.show_graph = true;  // the lesson's cells draw into the graph as they run
}

}  // namespace

app::LessonPanelFn make_gui_lesson_panel(const std::string& id, const std::string& lang) {
  auto st = std::make_shared<PanelState>();
  st->id = id.empty() ? "1" : id;
  st->lang = lang;
  return LessonPanel{st};
}

app::LessonPanelFn make_gui_map_panel(const app::LessonPanelFn& lesson_panel) {
  const auto* panel = lesson_panel ? lesson_panel.target<LessonPanel>() : nullptr;
  if (!panel) return {};
  std::shared_ptr<PanelState> st = panel->st;
  return [st](app::GuiState& s) { draw_map(s, *st); };
}

std::string gui_chinese_text() {
  std::string text;
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& dir : {lessons_dir() + "/zh"}) {
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".md") {
        std::ifstream f(e.path(), std::ios::binary);
        text.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      }
  }
  try {
    std::ifstream f(knowledge_map_path(), std::ios::binary);
    text.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } catch (const Error&) {}
  text += kProgramChinese;  // the Chinese of the window's own strings (generated at build time)
  return text;
}

std::function<std::string(app::GuiState&)> make_gui_lesson_state(const app::LessonPanelFn& lesson_panel) {
  const auto* panel = lesson_panel ? lesson_panel.target<LessonPanel>() : nullptr;
  if (!panel) return {};
  std::shared_ptr<PanelState> st = panel->st;
  return [st](app::GuiState&) -> std::string {
    if (!st->model) return "";
    const LessonPlayerModel& m = *st->model;
    int cells = 0, passed = 0, failed = 0;
    for (size_t i = 0; i < m.position() && i < m.lesson().blocks.size(); ++i) {
      const auto& r = m.result(i);
      if (!r || !r->ran) continue;
      const Block::Kind k = m.lesson().blocks[i].kind;
      if (k == Block::Kind::cell) ++cells;
      if (k == Block::Kind::check) ++(r->ok ? passed : failed);
    }
    nlohmann::json state{{"id", m.lesson().number},
                         {"lang", m.language()},
                         {"position", m.position()},
                         {"blocks", m.lesson().blocks.size()},
                         {"done", m.done()},
                         {"cells_run", cells},
                         {"checks_passed", passed},
                         {"checks_failed", failed},
                         {"current", m.done() ? "" : kind_name(m.current()->kind)},
                         {"paused", m.paused()},
                         {"quiz_tries", !m.done() && m.feedback(m.position()) ? m.feedback(m.position())->tries : 0},
                         {"recorded_finished", recorded_finished(m)}};
    if (!m.done() && m.current()->kind == Block::Kind::exercise) {
      // What a person sees of the exercise: the editor's text (typed, not yet checked) and its result.
      const auto edited = st->editors.text.find(m.position());
      const ExerciseState& ex = st->model->exercise(m.position());  // (reads the progress file once)
      state["exercise"] = {{"id", m.current()->exercise.id},
                           {"code", edited != st->editors.text.end() ? edited->second : ex.saved.code},
                           {"attempts", ex.saved.attempts},
                           {"passed", ex.saved.passed}};
    }
    return state.dump();
  };
}

// [SECTION] actions
namespace {

// The exercise scripted actions act on: the one the lesson waits at, else the last one passed.
size_t target_exercise(const LessonPlayerModel& m) {
  const auto& blocks = m.lesson().blocks;
  for (size_t i = std::min(m.position() + 1, blocks.size()); i-- > 0;)
    if (blocks[i].kind == Block::Kind::exercise) return i;
  throw Error("lesson " + std::to_string(m.lesson().number) + " has no exercise at or before block " +
                  std::to_string(m.position()),
              "go to one first: lesson exercise ID");
}

// Brings the lesson to exercise `id` (running the cells before it), as reading on to it does.
void go_to_exercise(app::GuiState& s, PanelState& p, const std::string& id) {
  LessonPlayerModel& m = *p.model;
  const auto& blocks = m.lesson().blocks;
  size_t block = blocks.size();
  for (size_t i = 0; i < blocks.size() && block == blocks.size(); ++i)
    if (blocks[i].kind == Block::Kind::exercise && blocks[i].exercise.id == id) block = i;
  if (block == blocks.size()) {
    std::string ids;
    for (const Exercise* e : exercises_of(m.lesson())) ids += (ids.empty() ? "" : ", ") + e->id;
    throw Error("lesson " + std::to_string(m.lesson().number) + " has no exercise '" + id + "'",
                ids.empty() ? "this lesson has no exercises" : "its exercises: " + ids);
  }
  app::run_busy(s, [&] {
    if (m.position() > block) m.restart();
    m.fast_forward(block);
    after_run(s);
  });
  if (m.position() != block)
    throw Error("lesson " + std::to_string(m.lesson().number) + " stopped at block " + std::to_string(m.position()));
  p.scroll_to_current = true;
  s.graph.fit_requested = true;  // the cells before it drew a new graph: show it whole
}

std::string read_code_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("lesson code: cannot open '" + path + "'", "give a file of the language: lesson code answer.ops");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

bool apply_lesson_action(app::GuiState& s, const std::string& action) {
  if (action.rfind("lesson ", 0) != 0) return false;
  auto* panel = s.lesson_panel ? s.lesson_panel.target<LessonPanel>() : nullptr;
  if (!panel) throw Error("no lesson is open", "start the GUI with --lesson N");
  PanelState& p = *panel->st;
  if (!p.model && p.open_error.empty()) panel->open(s);
  if (!p.model) throw Error("the lesson could not be opened: " + p.open_error);
  const std::string arg = action.substr(7);
  LessonPlayerModel& m = *p.model;
  if (arg == "next") {
    app::run_busy(s, [&] { step(s, p); });
  } else if (arg == "all") {
    app::run_busy(s, [&] { run_blocks(s, p, true); });
    if (!m.done())
      throw Error("lesson " + std::to_string(m.lesson().number) + " stopped at block " + std::to_string(m.position()));
  } else if (arg.rfind("answer ", 0) == 0) {
    if (m.done() || m.current()->kind != Block::Kind::quiz) throw Error("the lesson is not at a quiz");
    m.answer(arg.substr(7));
    app::run_busy(s, [&] { advance(s, p); });
  } else if (arg.rfind("map ", 0) == 0) {  // a real click on the concept, where the map drew it
    const std::string id = arg.substr(4);
    for (const auto& d : s.map_view.drawn)
      if (d.id == id) {
        s.hooks.click.pos = ImVec2((d.min.x + d.max.x) * 0.5f, (d.min.y + d.max.y) * 0.5f);
        s.hooks.click.frames_left = 3;
        return true;
      }
    throw Error("lesson map: no concept '" + id + "' on screen", "show the map first (the action `map`), then click");
  } else if (arg.rfind("open ", 0) == 0) {
    p.goto_lesson = arg.substr(5);  // takes effect on the panel's next frame, as a click does
  } else if (arg == "lang en" || arg == "lang zh") {
    m.set_language(arg.substr(5));
  } else if (arg.rfind("exercise ", 0) == 0) {
    go_to_exercise(s, p, arg.substr(9));
  } else if (arg.rfind("code ", 0) == 0) {  // the editor's text, as if typed
    const size_t block = target_exercise(m);
    std::string& text = editor_text(m, block, p.editors);
    text = read_code_file(arg.substr(5));
    m.set_exercise_code(block, text);
  } else if (arg == "check") {
    check_exercise_now(s, m, target_exercise(m), p.editors);
  } else if (arg == "hint") {
    p.editors.scroll_to = target_exercise(m);
    m.reveal_hint(p.editors.scroll_to);
  } else if (arg == "giveup") {
    m.give_up(target_exercise(m));
  } else {
    throw Error("unknown lesson action '" + arg + "'",
                "lesson next, lesson all, lesson answer TEXT, lesson open N, lesson lang en|zh, lesson map CONCEPT (a "
                "click on it), "
                "lesson exercise ID, lesson code FILE, lesson check, lesson hint, lesson giveup");
  }
  return true;
}

}  // namespace opscope::lesson
