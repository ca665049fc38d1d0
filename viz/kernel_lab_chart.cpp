// The Kernel Lab's chart. Times span orders of magnitude (a naive CPU loop against a simulated
// H100), so the bars and the roofline are on log scales, each bar labelled with its numbers.
#include "viz/kernel_lab_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "viz/words.h"

namespace opscope::viz {

namespace {

std::string time_text(double s) {
  char b[32];
  if (s >= 1) std::snprintf(b, sizeof b, "%.2f s", s);
  else if (s >= 1e-3) std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  else std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  return b;
}

// The device column in the window's language (the state JSON keeps the English "H100, simulated").
std::string where_text(const LabChartRow& r) {
  auto ends = [&](const std::string& s) {
    return r.where.size() > s.size() && r.where.compare(r.where.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(", library (not simulated)"))
    return r.where.substr(0, r.where.size() - 25) + tr(", library (not simulated)");
  if (ends(", simulated")) return r.where.substr(0, r.where.size() - 11) + tr(", simulated");
  if (r.where == "CPU, measured") return tr("CPU, measured");
  return r.where;
}

ImU32 row_color(const LabChartRow& r, const Theme& th) {
  if (!r.ok) return th.text_dim;
  return r.simulated ? (th.dark ? IM_COL32(120, 170, 255, 255) : IM_COL32(40, 100, 210, 255))
                     : (th.dark ? IM_COL32(120, 210, 140, 255) : IM_COL32(30, 140, 70, 255));
}

// [SECTION] bars: one row per algorithm, the time as a bar on a log scale
void draw_bars(const LabChart& c, const Theme& th, ImVec2 p0, ImVec2 size, int& clicked) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float row_h = line * 1.05f;  // one line a row: a dozen algorithms fit above the warp view
  double lo = 1e30, hi = 0;
  for (const auto& r : c.rows)
    if (r.ok && r.seconds > 0) lo = std::min(lo, r.seconds), hi = std::max(hi, r.seconds);
  if (hi <= 0) lo = 1e-6, hi = 1;
  const double llo = std::log10(lo) - 0.3, lhi = std::log10(hi) + 0.1;
  const float name_w = ImGui::CalcTextSize("tiled_conflicting  ").x,
              where_w = ImGui::CalcTextSize("RTX4090, library (not simulated)  ").x;
  const float numbers_w = ImGui::CalcTextSize("000.00 ms  00000.0 GFLOP/s  0000.0 GB/s  error 0e+00").x;
  const float bar_x0 = p0.x + name_w + where_w, bar_w = std::max(30.f, size.x - name_w - where_w - numbers_w - 12);
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const LabChartRow& r = c.rows[i];
    const float y = p0.y + float(i) * row_h;
    if (y + row_h > p0.y + size.y) break;
    ImGui::SetCursorScreenPos(ImVec2(p0.x, y));
    ImGui::PushID(int(i));
    if (ImGui::InvisibleButton("row", ImVec2(size.x, row_h - 2))) clicked = int(i);
    const bool hovered = ImGui::IsItemHovered();
    ImGui::PopID();
    if (hovered) dl->AddRectFilled(ImVec2(p0.x, y), ImVec2(p0.x + size.x, y + row_h - 2), th.hovered);
    dl->AddText(ImVec2(p0.x, y), th.text, r.algo.c_str());
    dl->AddText(ImVec2(p0.x + name_w, y), r.simulated ? row_color(r, th) : th.text_dim, where_text(r).c_str());
    if (!r.ok) {
      dl->AddText(ImVec2(bar_x0, y), th.text_dim, (tr("refused: ") + r.error).c_str());
      continue;
    }
    const float frac = float((std::log10(std::max(r.seconds, 1e-12)) - llo) / (lhi - llo));
    const float w = std::clamp(frac, 0.01f, 1.f) * bar_w;
    dl->AddRectFilled(ImVec2(bar_x0, y + 3), ImVec2(bar_x0 + w, y + line - 3), row_color(r, th), 3.f);
    char text[160];
    std::snprintf(text, sizeof text, "%s   %.1f GFLOP/s   %.1f GB/s   %s", time_text(r.seconds).c_str(), r.gflops,
                  r.gbytes,
                  r.reference ? tr("reference")
                              : (tr("error ") +
                                 [&] {
                                   char e[24];
                                   std::snprintf(e, sizeof e, "%.0e", r.max_error);
                                   return std::string(e);
                                 }())
                                    .c_str());
    dl->AddText(ImVec2(bar_x0 + bar_w + 8, y), th.text, text);
  }
}

// [SECTION] roofline: GFLOP/s against FLOPs per byte, the simulated GPU's roof
void draw_roofline(const LabChart& c, const Theme& th, ImVec2 p0, ImVec2 size) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float pad = ImGui::GetTextLineHeight() * 1.4f;
  const ImVec2 a(p0.x + pad * 2.2f, p0.y + pad), b(p0.x + size.x - 6, p0.y + size.y - pad * 1.6f);
  if (b.x - a.x < 60 || b.y - a.y < 40) return;
  dl->AddRect(a, b, th.grid);
  double fmax = std::max(1.0, c.gpu_peak_gflops), imax = 64;
  for (const auto& r : c.rows)
    if (r.ok) fmax = std::max(fmax, r.gflops), imax = std::max(imax, r.intensity);
  const double flo = 0.1, fhi = fmax * 3, ilo = 1.0 / 64, ihi = imax * 4;
  auto X = [&](double i) {
    return a.x +
           float((std::log10(std::max(i, ilo)) - std::log10(ilo)) / (std::log10(ihi) - std::log10(ilo))) * (b.x - a.x);
  };
  auto Y = [&](double f) {
    return b.y -
           float((std::log10(std::max(f, flo)) - std::log10(flo)) / (std::log10(fhi) - std::log10(flo))) * (b.y - a.y);
  };
  dl->AddText(ImVec2(p0.x, p0.y), th.text, tr("roofline: GFLOP/s (log) against FLOP per byte (log)"));
  dl->AddText(ImVec2(a.x, b.y + 2), th.text_dim, "1/64");
  dl->AddText(ImVec2(b.x - ImGui::CalcTextSize("FLOP/byte").x, b.y + 2), th.text_dim, "FLOP/byte");
  if (c.gpu_peak_gflops > 0 && c.gpu_bandwidth_gbs > 0) {  // min(peak, bandwidth × intensity)
    const double knee = c.gpu_peak_gflops / c.gpu_bandwidth_gbs;
    const ImU32 roof = th.dark ? IM_COL32(120, 170, 255, 160) : IM_COL32(40, 100, 210, 160);
    dl->AddLine(ImVec2(X(ilo), Y(c.gpu_bandwidth_gbs * ilo)), ImVec2(X(knee), Y(c.gpu_peak_gflops)), roof, 2.f);
    dl->AddLine(ImVec2(X(knee), Y(c.gpu_peak_gflops)), ImVec2(b.x, Y(c.gpu_peak_gflops)), roof, 2.f);
    char t[64];
    std::snprintf(t, sizeof t, tr("%s roof (simulated): %.0f GFLOP/s"), c.gpu.c_str(), c.gpu_peak_gflops);
    const float tw = ImGui::CalcTextSize(t).x;  // inside the plot, under the roof
    dl->AddText(ImVec2(std::max(a.x + 4, b.x - tw - 4), Y(c.gpu_peak_gflops) + 2), roof, t);
  }
  // Points of equal intensity crowd: a label that would overlap one already drawn is left out
  // (the hovered point names itself).
  std::vector<ImVec4> labels;
  for (const auto& r : c.rows) {
    if (!r.ok || r.gflops <= 0 || r.intensity <= 0) continue;  // a library call: no traffic counted, no place
    const ImVec2 p(X(r.intensity), Y(r.gflops));
    if (r.simulated) dl->AddCircleFilled(p, 4.5f, row_color(r, th));
    else dl->AddRectFilled(ImVec2(p.x - 4, p.y - 4), ImVec2(p.x + 4, p.y + 4), row_color(r, th));
    const ImVec2 ts = ImGui::CalcTextSize(r.algo.c_str());
    const ImVec4 box(p.x + 6, p.y - ts.y * 0.5f, p.x + 6 + ts.x, p.y + ts.y * 0.5f);
    bool overlaps = box.z > b.x + 40;
    for (const ImVec4& o : labels) overlaps = overlaps || (box.x < o.z && o.x < box.z && box.y < o.w && o.y < box.w);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const bool hovered = std::abs(mouse.x - p.x) < 6 && std::abs(mouse.y - p.y) < 6;
    if (hovered)
      ImGui::SetTooltip("%s (%s): %.1f GFLOP/s at %.2f FLOP/byte", r.algo.c_str(), r.where.c_str(), r.gflops,
                        r.intensity);
    if (overlaps && !hovered) continue;
    labels.push_back(box);
    dl->AddText(ImVec2(box.x, box.y), th.text_dim, r.algo.c_str());
  }
}

}  // namespace

int draw_lab_chart(const LabChart& c, const Theme& th, ImVec2 size) {
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  dl->AddText(p0, th.text, c.title.c_str());
  float top = p0.y + line;
  if (!c.note.empty()) {
    dl->AddText(nullptr, 0.f, ImVec2(p0.x, top), th.text_dim, c.note.c_str(), nullptr, size.x);
    top += ImGui::CalcTextSize(c.note.c_str(), nullptr, false, size.x).y + 4;
  }
  int clicked = -1;
  const float rows_h = float(c.rows.size()) * ImGui::GetTextLineHeightWithSpacing() * 1.05f;
  // The roofline goes beside the rows only where the rows keep their full width (name, device,
  // a bar, the numbers) and the plot still gets 320 pixels; else below them.
  const float rows_w =
      ImGui::CalcTextSize(
          "tiled_conflicting  RTX4090, library (not simulated)  000.00 ms  00000.0 GFLOP/s  0000.0 GB/s  error 0e+00")
          .x +
      140;
  const bool side_by_side = size.x - rows_w > 320;
  const float bars_w = side_by_side ? rows_w : size.x;
  const float roof_h = std::max(220.f, p0.y + size.y - top - (side_by_side ? 0 : rows_h));
  const float body_h = side_by_side ? std::max(rows_h, roof_h) : rows_h + roof_h;
  draw_bars(c, th, ImVec2(p0.x, top), ImVec2(bars_w, rows_h), clicked);
  if (side_by_side) draw_roofline(c, th, ImVec2(p0.x + bars_w + 12, top), ImVec2(size.x - bars_w - 12, roof_h));
  else draw_roofline(c, th, ImVec2(p0.x, top + rows_h + 6), ImVec2(size.x, roof_h - 6));
  ImGui::SetCursorScreenPos(p0);
  ImGui::Dummy(ImVec2(size.x, top - p0.y + body_h));  // the child scrolls when the rows need more
  return clicked;
}

}  // namespace opscope::viz
