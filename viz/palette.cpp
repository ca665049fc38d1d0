#include "viz/palette.h"

#include <array>
#include <cstdio>

namespace opscope::viz {

std::string Rgb::hex() const {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

Rgb mix(Rgb a, Rgb b, float t) {
  auto m = [t](uint8_t x, uint8_t y) {
    return static_cast<uint8_t>(static_cast<float>(x) + (static_cast<float>(y) - static_cast<float>(x)) * t + 0.5f);
  };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b)};
}

namespace {

constexpr FigurePalette kLight{{248, 249, 251}, {17, 24, 39},    {85, 95, 110},   {100, 116, 139}, {190, 24, 93},
                               {71, 85, 105},   {253, 230, 138}, {226, 232, 240}, {241, 245, 249}, {254, 202, 202},
                               {221, 214, 254}, {148, 163, 184}, {251, 207, 232}, {124, 58, 237},  {255, 255, 255}};
constexpr FigurePalette kDark{{22, 25, 31},    {229, 231, 235}, {156, 163, 175}, {140, 150, 168}, {244, 114, 182},
                              {148, 163, 184}, {113, 90, 20},   {55, 65, 81},    {40, 44, 52},    {127, 29, 29},
                              {76, 29, 149},   {100, 116, 139}, {131, 24, 67},   {139, 92, 246},  {255, 255, 255}};

struct FamilyColors {
  const char* family;
  Rgb light, dark;
};
// Soft fills in the light theme, deep ones in the dark; none near the highlight orange.
constexpr std::array<FamilyColors, 14> kFamilies{{
    {"elementwise", {191, 219, 254}, {30, 64, 120}},
    {"comparison", {199, 210, 254}, {49, 46, 129}},
    {"activation", {187, 247, 208}, {20, 83, 45}},
    {"reduction", {165, 243, 252}, {22, 78, 99}},
    {"matmul", {196, 181, 253}, {76, 29, 149}},
    {"conv", {233, 213, 255}, {88, 28, 135}},
    {"shape", {226, 232, 240}, {51, 65, 85}},
    {"softmax", {153, 246, 228}, {17, 94, 89}},
    {"loss", {254, 205, 211}, {136, 19, 55}},
    {"nn", {217, 249, 157}, {63, 98, 18}},
    {"norm", {167, 243, 208}, {6, 95, 70}},
    {"pool", {186, 230, 253}, {7, 89, 133}},
    {"embedding", {245, 208, 254}, {112, 26, 117}},
    {"attention", {221, 214, 254}, {91, 33, 182}},
}};

}  // namespace

const FigurePalette& figure_palette(bool dark) { return dark ? kDark : kLight; }

Rgb family_fill(const std::string& family, bool dark, bool backward) {
  Rgb base = dark ? Rgb{55, 65, 81} : Rgb{229, 231, 235};
  for (const auto& f : kFamilies)
    if (family == f.family) base = dark ? f.dark : f.light;
  return backward ? mix(base, figure_palette(dark).backward_tint, 0.7f) : base;
}

}  // namespace opscope::viz
