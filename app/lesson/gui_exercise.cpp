// [SECTION] markers: words, feedback, the exercise block.
#include "app/lesson/gui_exercise.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <sstream>

#include "app/gui/statement_runner.h"
#include "app/lesson/gui_markdown.h"

namespace opscope::lesson {

namespace {

// [SECTION] words
struct Words {
  const char* exercise;
  const char* check;
  const char* hint;
  const char* hints_done;
  const char* give_up;
  const char* starter;
  const char* go_on;
  const char* passed;
  const char* not_yet;
  const char* error;
  const char* timeout;
  const char* your_code;
  const char* solution;
  const char* attempts;
};
const Words kEn{"Exercise",
                "Check",
                "Hint",
                "No more hints",
                "Give up: show the solution",
                "Back to the starter",
                "Continue",
                "Passed: %d/%d checks.",
                "Not yet: %d/%d checks pass.",
                "Your code stopped with an error:",
                "Too slow:",
                "your code:",
                "The reference solution:",
                "attempts: %d"};
const Words kZh{"练习",
                "检查",
                "提示",
                "没有更多提示了",
                "放弃：查看答案",
                "恢复起始代码",
                "继续",
                "通过：%d/%d 项检查全部通过。",
                "未通过：%d/%d 项检查通过。",
                "你的代码出错了：",
                "太慢：",
                "你的代码：",
                "参考答案：",
                "尝试次数：%d"};

void colored_wrapped(const ImVec4& c, const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, c);
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

void mono_wrapped(const ImVec4& c, const std::string& text, const viz::Fonts& fonts) {
  if (fonts.mono) ImGui::PushFont(fonts.mono);
  colored_wrapped(c, text);
  if (fonts.mono) ImGui::PopFont();
}

// [SECTION] feedback
// The last attempt: its status, each check (a coloured dot: no glyph the fonts might lack), the
// first failure's message and the student's lines it concerns.
void draw_feedback(const Exercise& ex, const Attempt& a, const Words& w, const viz::Fonts& fonts) {
  const int n = static_cast<int>(ex.checks.size());
  char line[160];
  switch (a.status) {
    case AttemptStatus::passed:
      std::snprintf(line, sizeof line, w.passed, n, n);
      colored_wrapped(kGreen, line);
      break;
    case AttemptStatus::failed:
      std::snprintf(line, sizeof line, w.not_yet, a.checks_passed(), n);
      colored_wrapped(kRed, line);
      break;
    case AttemptStatus::error:
    case AttemptStatus::out_of_memory:
    case AttemptStatus::timeout:
      colored_wrapped(kRed, a.status == AttemptStatus::error ? w.error : w.timeout);
      mono_wrapped(kRed, a.error, fonts);
      return;
  }
  bool first_failure = true;
  for (const CheckOutcome& c : a.checks) {
    ImGui::PushStyleColor(ImGuiCol_Text, c.passed ? kGreen : kRed);
    ImGui::Bullet();
    ImGui::TextWrapped("%s", c.description.c_str());
    ImGui::PopStyleColor();
    if (c.passed || !first_failure) continue;
    first_failure = false;  // one thing to fix at a time, as in the terminal
    ImGui::Indent();
    mono_wrapped(kRed, c.message, fonts);
    if (!c.your_lines.empty()) {
      ImGui::TextDisabled("%s", w.your_code);
      for (const std::string& l : c.your_lines) mono_wrapped(kCode, l, fonts);
    }
    ImGui::Unindent();
  }
}

}  // namespace

std::string& editor_text(LessonPlayerModel& m, size_t block, ExerciseEditors& editors) {
  auto it = editors.text.find(block);
  if (it == editors.text.end()) it = editors.text.emplace(block, m.exercise(block).saved.code).first;
  return it->second;
}

void check_exercise_now(app::GuiState& s, LessonPlayerModel& m, size_t block, ExerciseEditors& editors) {
  m.set_exercise_code(block, editor_text(m, block, editors));
  AttemptOptions o;
  o.idle = s.run.idle_frame;  // frames keep coming while the checks run; Interrupt stops them
  app::run_busy(s, [&] { m.check_exercise(block, o); });
  editors.scroll_to = block;
}

// [SECTION] the exercise block
ExerciseClick draw_exercise(app::GuiState& s, LessonPlayerModel& m, size_t block, ExerciseEditors& editors,
                            bool current) {
  ExerciseClick click = ExerciseClick::none;
  const Exercise& ex = m.lesson().blocks[block].exercise;
  const Words& w = m.language() == "zh" ? kZh : kEn;
  const ExerciseState& st = m.exercise(block);
  ImGui::Separator();
  ImGui::PushStyleColor(ImGuiCol_Text, kAccent);
  ImGui::TextWrapped("%s %s · %s", w.exercise, ex.id.c_str(), ex.title.c_str());
  ImGui::PopStyleColor();
  ImGui::PushStyleColor(ImGuiCol_Text, kDim);
  ImGui::TextWrapped("%s", ex.story.c_str());
  ImGui::PopStyleColor();
  draw_markdown(parse_markdown(ex.prompt), s.fonts, s.scale);

  // The editor, as tall as the code (and a few lines to grow into).
  std::string& code = editor_text(m, block, editors);
  if (s.fonts.mono) ImGui::PushFont(s.fonts.mono);
  const int lines = static_cast<int>(std::count(code.begin(), code.end(), '\n')) + 3;
  const ImVec2 size(-1, static_cast<float>(std::clamp(lines, 6, 40)) * ImGui::GetTextLineHeight() + 8.f * s.scale);
  ImGui::InputTextMultiline("##code", &code, size, ImGuiInputTextFlags_AllowTabInput);
  app::WidgetRects& noted = s.hooks.widgets;
  app::note_widget(noted, "exercise editor");
  if (ImGui::IsItemDeactivatedAfterEdit()) m.set_exercise_code(block, code);
  if (s.fonts.mono) ImGui::PopFont();

  // The buttons: check, a hint more, give up, the starter again, and on to the next block.
  if (app::noted(noted, ImGui::Button(w.check), kEn.check)) click = ExerciseClick::check;
  ImGui::SameLine();
  const int shown = st.saved.hints, total = static_cast<int>(ex.hints.size());
  if (shown >= total) ImGui::BeginDisabled();
  const std::string hint_label = std::string(shown >= total ? w.hints_done : w.hint) + " (" + std::to_string(shown) +
                                 "/" + std::to_string(total) + ")###hint";
  if (app::noted(noted, ImGui::Button(hint_label.c_str()), kEn.hint)) {
    m.reveal_hint(block);
    editors.scroll_to = block;
  }
  if (shown >= total) ImGui::EndDisabled();
  ImGui::SameLine();
  if (!st.solution_visible() && app::noted(noted, ImGui::Button(w.give_up), kEn.give_up)) m.give_up(block);
  if (!st.solution_visible()) ImGui::SameLine();
  if (app::noted(noted, ImGui::Button(w.starter), kEn.starter)) {
    m.reset_exercise(block);
    code = m.exercise(block).saved.code;
  }
  if (current) {
    ImGui::SameLine();
    if (app::noted(noted, ImGui::Button(w.go_on), kEn.go_on)) click = ExerciseClick::go_on;
  }
  if (st.saved.attempts > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled(w.attempts, st.saved.attempts);
  }

  if (st.last) draw_feedback(ex, *st.last, w, s.fonts);
  for (int i = 0; i < shown && i < total; ++i) {
    ImGui::PushStyleColor(ImGuiCol_Text, kAccent);
    ImGui::Text("%s %d/%d", w.hint, i + 1, total);
    ImGui::PopStyleColor();
    draw_markdown(parse_markdown(ex.hints[static_cast<size_t>(i)]), s.fonts, s.scale);
  }
  if (st.solution_visible()) {
    colored_wrapped(kGreen, w.solution);
    draw_code_box("solution" + std::to_string(block), ex.solution, s.fonts, s.scale);
  }
  if (editors.scroll_to == block) {
    ImGui::SetScrollHereY(1.f);
    editors.scroll_to = SIZE_MAX;
  }
  ImGui::Separator();
  return click;
}

}  // namespace opscope::lesson
