// The GUI's lesson panel: the lesson's text (Markdown drawn with ImGui), its cells run on
// click or all in order in the GUI's own workspace (so the graph, inspector and memory panels
// show them), quiz answers with feedback, directives selecting nodes, a language switch, and
// the progress file. Plugs into GuiState::lesson_panel. Built only with the GUI.
#pragma once
#include <string>

#include "app/gui/gui_state.h"

namespace opscope::lesson {

// The Chinese the lesson player can show (every Chinese lesson, the knowledge map, the panel's
// own words): the font atlas bakes its characters before the first frame (viz::GlyphSet).
std::string gui_chinese_text();

// What the lesson panel shows, as a JSON object for the GUI's --state-json ("lesson": id, lang,
// position, cells_run, checks_passed, checks_failed, done); "" before the lesson is open.
std::function<std::string(app::GuiState&)> make_gui_lesson_state(const app::LessonPanelFn& lesson_panel);

// The panel for lesson `id` (a number or part of a slug) in `lang` ("" = the language last
// used). The lesson opens on the panel's first frame, in the GUI's workspace and session.
app::LessonPanelFn make_gui_lesson_panel(const std::string& id, const std::string& lang = {});

// The knowledge map (assets/knowledge_map.txt) drawn as a figure coloured by the student's
// progress; a click opens the concept's lesson at its section in `lesson_panel` (one made by
// make_gui_lesson_panel). Plugs into GuiState::map_panel.
app::LessonPanelFn make_gui_map_panel(const app::LessonPanelFn& lesson_panel);

// Scripted actions for headless runs and tests, applied to the open lesson: "lesson next"
// (run the next block), "lesson all" (run to the end), "lesson answer TEXT", "lesson open N",
// "lesson lang zh", "lesson map CONCEPT" (a click on the concept in the map); for exercises,
// "lesson exercise ID" (read on to it), "lesson code FILE" (its editor's text from a file),
// "lesson check", "lesson hint", "lesson giveup".
// Returns false when `action` is not a lesson action; throws opscope::Error when it fails.
bool apply_lesson_action(app::GuiState& s, const std::string& action);

}  // namespace opscope::lesson
