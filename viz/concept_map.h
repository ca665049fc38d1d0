// The knowledge map's view: the concepts laid out by Graphviz, drawn with ImGui draw lists,
// coloured by the student's progress (a legend in the map's language), fitted to the panel,
// pan and zoom; a click on a concept is returned to the caller, which opens its lesson.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "viz/concept_map_layout.h"
#include "viz/theme.h"

namespace opscope::viz {

struct ConceptMapState {
  ConceptLayout layout;
  std::string laid_out_for;  // the figure's lines the layout was made for (language, edits)
  float zoom = 1.f;
  ImVec2 pan{0, 0};
  bool fit = true;
  int hovered = -1;
  struct Drawn {
    int node;
    std::string id;
    ImVec2 min, max;
    ConceptStatus status;
    std::string label;
  };
  std::vector<Drawn> drawn;  // the last frame's boxes (state dump, scripted clicks)
};

// Draws the map filling `size` (0: the remaining space); returns the concept clicked, or -1.
int draw_concept_map(ConceptMapState& s, const ConceptFigure& f, const Theme& th, const Fonts& fonts, float font_scale,
                     ImVec2 size = ImVec2(0, 0));

}  // namespace opscope::viz
