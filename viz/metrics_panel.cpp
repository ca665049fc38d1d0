#include "viz/metrics_panel.h"
#include "viz/words.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace opscope::viz {

namespace {

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// Line colours for the series, in order; none is the highlight orange (the current step's).
ImU32 series_color(size_t i, bool dark) {
  static const ImU32 light[] = {IM_COL32(37, 99, 235, 255), IM_COL32(22, 163, 74, 255), IM_COL32(147, 51, 234, 255),
                                IM_COL32(190, 24, 93, 255), IM_COL32(13, 148, 136, 255)};
  static const ImU32 dark_[] = {IM_COL32(96, 165, 250, 255), IM_COL32(74, 222, 128, 255), IM_COL32(192, 132, 252, 255),
                                IM_COL32(244, 114, 182, 255), IM_COL32(45, 212, 191, 255)};
  return (dark ? dark_ : light)[i % 5];
}

// One series in [p0, p1]: a line through its points, or, when there are more points than
// pixels, each pixel column's min–max (an envelope), so a long run draws as fast as a short one.
void draw_chart(MetricsPanelState& state, const MetricSeries& s, size_t index, int64_t current, const Theme& th,
                ImVec2 p0, ImVec2 p1) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p0, p1, th.canvas, 4.f);
  const float lh = ImGui::GetTextLineHeight();
  const ImU32 col = series_color(index, th.dark);
  const size_t n = s.values.size();
  double lo = INFINITY, hi = -INFINITY;
  for (double v : s.values)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  const double last = n ? s.values.back() : 0;
  std::string title =
      s.name + "   " + (n ? number(last) + " at step " + std::to_string(s.steps.back()) : "no points yet");
  if (n > 1 && std::isfinite(lo)) title += "   min " + number(lo) + " · max " + number(hi);
  dl->AddText(ImVec2(p0.x + 6, p0.y + 3), th.text, title.c_str());
  if (n == 0) return;
  if (!std::isfinite(lo)) lo = hi = 0;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) lo -= 0.5, hi += 0.5;
  const float left = 54.f, pad = 6.f;
  const float x0 = p0.x + left, x1 = p1.x - pad, y0 = p0.y + lh + 8, y1 = p1.y - lh - 4;
  if (y1 - y0 < 8 || x1 - x0 < 8) return;
  const int64_t s0 = s.steps.front(), s1 = std::max(s.steps.back(), s0 + 1);
  auto X = [&](double step) { return x0 + (x1 - x0) * static_cast<float>((step - s0) / static_cast<double>(s1 - s0)); };
  auto Y = [&](double v) { return y1 - (y1 - y0) * static_cast<float>((v - lo) / (hi - lo)); };
  dl->AddLine(ImVec2(x0, y1), ImVec2(x1, y1), th.grid);
  dl->AddLine(ImVec2(x0, y0), ImVec2(x0, y1), th.grid);
  dl->AddText(ImVec2(p0.x + 4, y0 - lh * 0.5f), th.text_dim, number(hi).c_str());
  dl->AddText(ImVec2(p0.x + 4, y1 - lh * 0.5f), th.text_dim, number(lo).c_str());
  dl->AddText(ImVec2(x0, y1 + 2), th.text_dim, ("step " + std::to_string(s0)).c_str());
  const std::string end = std::to_string(s.steps.back());
  dl->AddText(ImVec2(x1 - ImGui::CalcTextSize(end.c_str()).x, y1 + 2), th.text_dim, end.c_str());
  const int columns = std::max(1, static_cast<int>(x1 - x0));
  if (n == 1) {
    dl->AddCircleFilled(ImVec2(X(static_cast<double>(s.steps[0])), Y(s.values[0])), 3.f, col);
  } else if (static_cast<int>(n) <= 2 * columns) {
    for (size_t i = 0; i + 1 < n; ++i) {
      if (!std::isfinite(s.values[i]) || !std::isfinite(s.values[i + 1])) continue;
      dl->AddLine(ImVec2(X(static_cast<double>(s.steps[i])), Y(s.values[i])),
                  ImVec2(X(static_cast<double>(s.steps[i + 1])), Y(s.values[i + 1])), col, 1.5f);
    }
  } else {
    std::vector<float> cmin(static_cast<size_t>(columns), INFINITY), cmax(static_cast<size_t>(columns), -INFINITY);
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(s.values[i])) continue;
      const int c = std::clamp(static_cast<int>(X(static_cast<double>(s.steps[i])) - x0), 0, columns - 1);
      cmin[static_cast<size_t>(c)] = std::min(cmin[static_cast<size_t>(c)], static_cast<float>(s.values[i]));
      cmax[static_cast<size_t>(c)] = std::max(cmax[static_cast<size_t>(c)], static_cast<float>(s.values[i]));
    }
    for (int c = 0; c < columns; ++c)
      if (std::isfinite(cmin[static_cast<size_t>(c)]))
        dl->AddLine(ImVec2(x0 + c + 0.5f, Y(cmax[static_cast<size_t>(c)]) - 0.5f),
                    ImVec2(x0 + c + 0.5f, Y(cmin[static_cast<size_t>(c)]) + 0.5f), col, 1.f);
  }
  // The current step: the latest any series logged, a line in the highlight colour.
  if (current >= s0 && current <= s.steps.back()) {
    const float cx = X(static_cast<double>(current));
    dl->AddLine(ImVec2(cx, y0), ImVec2(cx, y1), th.highlight, 2.f);
    if (index == 0) state.marker_x = cx;
  }
  // Hover: the nearest point's step and value.
  ImGui::SetCursorScreenPos(p0);
  ImGui::InvisibleButton(("metric_" + s.name).c_str(), ImVec2(p1.x - p0.x, p1.y - p0.y));
  if (ImGui::IsItemHovered()) {
    const float mx = ImGui::GetIO().MousePos.x;
    const double step = s0 + (std::clamp(mx, x0, x1) - x0) / (x1 - x0) * static_cast<double>(s1 - s0);
    const size_t i = static_cast<size_t>(std::lower_bound(s.steps.begin(), s.steps.end(), static_cast<int64_t>(step)) -
                                         s.steps.begin());
    const size_t k = std::min(i, n - 1);
    dl->AddLine(ImVec2(X(static_cast<double>(s.steps[k])), y0), ImVec2(X(static_cast<double>(s.steps[k])), y1),
                th.text_dim);
    ImGui::SetTooltip("%s at step %lld: %s", s.name.c_str(), static_cast<long long>(s.steps[k]),
                      number(s.values[k]).c_str());
  }
}

}  // namespace

void draw_metrics_panel(MetricsPanelState& state, const MetricsPanelFrame& f, ImVec2 size) {
  const Theme& th = *f.theme;
  state.charts_drawn = 0;
  state.marker_x = -1;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  const auto& series = f.log->series();
  if (series.empty()) {
    ImGui::TextWrapped(
        "%s",
        tr("No metrics yet. In a training loop, log(\"loss\", loss) records one point per step; every series logged is "
           "plotted here while the loop runs."));
    return;
  }
  if (f.running)
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(th.highlight), "running · step %lld",
                       static_cast<long long>(f.log->current_step()));
  else
    ImGui::TextDisabled("step %lld · %zu series (opscope run --metrics out.csv writes them)",
                        static_cast<long long>(f.log->current_step()), series.size());
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float gap = 6.f,
              h = std::max(60.f, (ImGui::GetContentRegionAvail().y - gap * static_cast<float>(series.size() - 1)) /
                                     static_cast<float>(series.size()));
  for (size_t i = 0; i < series.size(); ++i) {
    const ImVec2 p0(origin.x, origin.y + static_cast<float>(i) * (h + gap)), p1(origin.x + size.x, p0.y + h);
    draw_chart(state, series[i], i, f.log->current_step(), th, p0, p1);
    ++state.charts_drawn;
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + static_cast<float>(series.size()) * (h + gap)));
  ImGui::Dummy(ImVec2(0, 0));
}

}  // namespace opscope::viz
