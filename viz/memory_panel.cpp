#include "viz/memory_panel.h"
#include "viz/words.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace opscope::viz {

std::vector<MemoryPoint> memory_series(const std::vector<StepEvent>& events) {
  std::vector<MemoryPoint> s;
  s.reserve(events.size());
  for (const auto& e : events) s.push_back({e.step, e.node, e.mem_after});
  return s;
}

void draw_memory_panel(const MemoryPanelFrame& f, ImVec2 size) {
  const Theme& th = *f.theme;
  const auto series = memory_series(*f.events);
  // Legend first: the categories with their live bytes now, wrapping to the panel's width.
  const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  bool first = true;
  for (int c = 0; c < kNumCategories; ++c) {
    const auto cat = static_cast<MemCategory>(c);
    if (cat == MemCategory::temporary) continue;
    const int64_t now = f.live_now ? (*f.live_now)[static_cast<size_t>(c)] : 0;
    const std::string name = tr(cat == MemCategory::saved ? "saved for bwd" : category_name(cat));
    const std::string text = name + " " + bytes_str(now);
    const float h = ImGui::GetTextLineHeight();
    const float item_w = h * 0.7f + 2 + ImGui::CalcTextSize(text.c_str()).x;
    if (!first) {
      ImGui::SameLine(0, 14);
      if (ImGui::GetCursorScreenPos().x + item_w > right) ImGui::NewLine();
    }
    first = false;
    ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + h * 0.2f), ImVec2(p.x + h * 0.6f, p.y + h * 0.8f),
                                              category_color(cat, th.dark), 2.f);
    ImGui::Dummy(ImVec2(h * 0.7f, h));
    ImGui::SameLine(0, 2);
    ImGui::TextUnformatted(text.c_str());
  }
  ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  size.y = std::max(size.y, 40.f);
  const ImVec2 p0 = ImGui::GetCursorScreenPos(), p1(p0.x + size.x, p0.y + size.y);
  ImGui::InvisibleButton("memory_plot", size);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p0, p1, th.canvas, 4.f);
  if (series.empty()) {
    dl->AddText(ImVec2(p0.x + 10, p0.y + 10), th.text_dim, tr("No steps yet: memory after each step appears here."));
    return;
  }
  int64_t peak = 1;
  size_t peak_at = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    const int64_t t = total_bytes(series[i].bytes);
    if (t > peak) {
      peak = t;
      peak_at = i;
    }
  }
  int64_t scale_top = peak;  // overlays may reach higher than this run
  if (f.overlays)
    for (const auto& o : *f.overlays)
      for (int64_t t : o.totals) scale_top = std::max(scale_top, t);
  const float left = 62.f, pad = 6.f;
  const float x0 = p0.x + left, x1 = p1.x - pad, y0 = p0.y + pad + 12.f, y1 = p1.y - 16.f;
  const size_t n = series.size();
  const size_t span = std::max(n, f.total_steps);  // steps the x axis covers
  auto X = [&](size_t i) {
    return span == 1 ? (x0 + x1) * 0.5f : x0 + (x1 - x0) * static_cast<float>(i) / static_cast<float>(span - 1);
  };
  auto Y = [&](int64_t b) {
    return y1 - (y1 - y0) * static_cast<float>(static_cast<double>(b) / static_cast<double>(scale_top));
  };
  // Axis labels: 0 and the peak.
  dl->AddText(ImVec2(p0.x + 4, y0 - 7), th.text_dim, bytes_str(peak).c_str());
  dl->AddText(ImVec2(p0.x + 4, y1 - 7), th.text_dim, "0 B");
  dl->AddLine(ImVec2(x0, y1), ImVec2(x1, y1), th.grid);
  char first_step[32];
  std::snprintf(first_step, sizeof first_step, tr("step %lld"), (long long)series.front().step);
  dl->AddText(ImVec2(x0, y1 + 1), th.text_dim, first_step);
  // A long loop has more steps than the plot has pixels: each pixel column then shows the step
  // of its range with the most memory (the envelope), and the backward bands are left out (they
  // would be thinner than a pixel). Drawing every step would alias into stripes, and thousands
  // of shapes a frame.
  const size_t columns = static_cast<size_t>(std::max(2.f, x1 - x0));
  const bool every_step = n <= columns;
  std::vector<size_t> shown;
  if (every_step) {
    for (size_t i = 0; i < n; ++i) shown.push_back(i);
  } else {
    for (size_t c = 0; c < columns; ++c) {
      const size_t from = c * n / columns, to = std::max(from + 1, (c + 1) * n / columns);
      size_t best = from;
      for (size_t i = from; i < to && i < n; ++i)
        if (total_bytes(series[i].bytes) > total_bytes(series[best].bytes)) best = i;
      shown.push_back(best);
    }
  }
  // The backward pass's steps on a tinted background: where saved tensors get freed. A training
  // loop has many: a band is labelled only where its label does not run into the one before.
  if (every_step) {
    const std::vector<StepEvent>& ev = *f.events;
    const float label_w = ImGui::CalcTextSize(tr("backward pass")).x;
    float free_from = x0 + ImGui::CalcTextSize(first_step).x + 6;
    size_t i = 0;
    while (i < n) {
      if (ev[i].phase != Phase::backward) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j + 1 < n && ev[j + 1].phase == Phase::backward) ++j;
      const float xa = i == 0 ? x0 : (X(i - 1) + X(i)) * 0.5f, xb = j + 1 >= n ? x1 : (X(j) + X(j + 1)) * 0.5f;
      dl->AddRectFilled(ImVec2(xa, y0), ImVec2(xb, y1), (th.backward_tint & ~IM_COL32_A_MASK) | IM_COL32(0, 0, 0, 90));
      if (xa + 3 >= free_from && xa + 3 + label_w <= x1) {
        dl->AddText(ImVec2(xa + 3, y1 + 1), th.edge_backward, tr("backward pass"));
        free_from = xa + 3 + label_w + 6;
      }
      i = j + 1;
    }
  }
  // Stacked areas: each category a band of trapezoids between consecutive steps shown (convex).
  for (size_t k = 0; k < shown.size(); ++k) {
    int64_t below_a = 0, below_b = 0;
    const size_t i = shown[k], j = shown[std::min(k + 1, shown.size() - 1)];
    const float xa = n == 1 ? X(0) - 3 : X(i), xb = n == 1 ? X(0) + 3 : X(j);
    if (shown.size() > 1 && k + 1 == shown.size()) break;
    for (int c = 0; c < kNumCategories; ++c) {
      const int64_t a = series[i].bytes[static_cast<size_t>(c)], b = series[j].bytes[static_cast<size_t>(c)];
      if (a == 0 && b == 0) continue;
      const ImU32 col = category_color(static_cast<MemCategory>(c), th.dark);
      dl->AddQuadFilled(ImVec2(xa, Y(below_a)), ImVec2(xb, Y(below_b)), ImVec2(xb, Y(below_b + b)),
                        ImVec2(xa, Y(below_a + a)), col);
      below_a += a;
      below_b += b;
    }
  }
  // Overlays: each run's totals stretched over the same width (its own number of steps).
  if (f.overlays) {
    float label_y = y0 + 2;
    for (const auto& o : *f.overlays) {
      if (o.totals.size() < 2) continue;
      const ImU32 col = o.dashed ? th.text_dim : th.text;
      const size_t m = o.totals.size();
      for (size_t i = 0; i + 1 < m; ++i) {
        const float xa = x0 + (x1 - x0) * static_cast<float>(i) / static_cast<float>(m - 1);
        const float xb = x0 + (x1 - x0) * static_cast<float>(i + 1) / static_cast<float>(m - 1);
        if (!o.dashed || i % 2 == 0) dl->AddLine(ImVec2(xa, Y(o.totals[i])), ImVec2(xb, Y(o.totals[i + 1])), col, 2.f);
      }
      const int64_t top = *std::max_element(o.totals.begin(), o.totals.end());
      const std::string text = o.label + ": peak " + bytes_str(top);
      dl->AddText(ImVec2(x0 + 4, label_y), col, text.c_str());
      label_y += ImGui::GetTextLineHeight();
    }
  }
  // Peak: a dashed line across and a dot where it happened.
  for (float x = x0; x < x1; x += 10)
    dl->AddLine(ImVec2(x, Y(peak)), ImVec2(std::min(x + 5, x1), Y(peak)), th.text_dim);
  dl->AddCircleFilled(ImVec2(X(peak_at), Y(peak)), 4.f, th.edge_backward);
  char label[96];
  std::snprintf(label, sizeof label, tr("peak %s after step %lld"), bytes_str(peak).c_str(),
                (long long)series[peak_at].step);
  const float lw = ImGui::CalcTextSize(label).x;
  dl->AddText(ImVec2(std::clamp(X(peak_at) - lw * 0.5f, x0, x1 - lw), p0.y + 1), th.text, label);
  // The current step.
  for (size_t i = 0; i < n; ++i)
    if (series[i].step == f.current_step) {
      dl->AddLine(ImVec2(X(i), y0), ImVec2(X(i), y1), th.highlight, 2.f);
      std::snprintf(label, sizeof label, tr("step %lld"), (long long)f.current_step);
      dl->AddText(ImVec2(std::min(X(i) + 4, x1 - ImGui::CalcTextSize(label).x), y1 + 1), th.highlight, label);
    }
  if (ImGui::IsItemHovered()) {
    const float mx = ImGui::GetIO().MousePos.x;
    const size_t i =
        std::min(n - 1, span == 1
                            ? size_t{0}
                            : static_cast<size_t>(
                                  std::clamp((mx - x0) / (x1 - x0), 0.f, 1.f) * static_cast<float>(span - 1) + 0.5f));
    dl->AddLine(ImVec2(X(i), y0), ImVec2(X(i), y1), th.text_dim);
    ImGui::BeginTooltip();
    ImGui::Text(tr("step %lld (node #%d): %s"), (long long)series[i].step, series[i].node,
                bytes_str(total_bytes(series[i].bytes)).c_str());
    for (int c = 0; c < kNumCategories; ++c)
      if (series[i].bytes[static_cast<size_t>(c)])
        ImGui::Text("  %s %s", category_name(static_cast<MemCategory>(c)),
                    bytes_str(series[i].bytes[static_cast<size_t>(c)]).c_str());
    ImGui::EndTooltip();
  }
}

}  // namespace opscope::viz
