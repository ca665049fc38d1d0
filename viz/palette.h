// The figure's colours without ImGui: the GUI's theme and the SVG/PNG export take them from here,
// so a slide has the window's colours.
#pragma once
#include <cstdint>
#include <string>

namespace opscope::viz {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  std::string hex() const;  // "#rrggbb"
};

Rgb mix(Rgb a, Rgb b, float t);

struct FigurePalette {
  Rgb canvas, text, text_dim, edge, edge_backward, box_border;
  Rgb param_fill, input_fill, constant_fill, seed_fill, folded_fill, cluster_border, backward_tint;
  Rgb badge_fill, badge_text;
};
const FigurePalette& figure_palette(bool dark);

// Box fill for an op family ("matmul", "activation", ...); backward boxes get a tinted version.
Rgb family_fill(const std::string& family, bool dark, bool backward);

}  // namespace opscope::viz
