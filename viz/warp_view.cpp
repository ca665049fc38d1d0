// The warp view. Global requests: the 32 lanes in a row over the 32-byte sectors they fall in
// (one colour per sector: a coalesced warp shows few colours). Shared requests: the 32 banks as
// columns, each distinct word a bank must serve stacked as a row, so a conflict is a tall column
// (marked) and a broadcast is many lanes in one cell.
#include "viz/warp_view.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "viz/words.h"

namespace opscope::viz {

namespace {

// Saturated enough to read white lane numbers on, in both themes.
ImU32 sector_color(int i) {
  static const ImU32 kColors[] = {IM_COL32(66, 133, 244, 255), IM_COL32(219, 68, 55, 255),  IM_COL32(244, 160, 0, 255),
                                  IM_COL32(15, 157, 88, 255),  IM_COL32(171, 71, 188, 255), IM_COL32(0, 172, 193, 255),
                                  IM_COL32(255, 112, 67, 255), IM_COL32(124, 179, 66, 255)};
  return kColors[i % 8];
}

const ImU32 kConflict = IM_COL32(220, 40, 40, 255);

template <typename... Args> std::string text_of(const char* fmt, Args... args) {
  char t[256];
  std::snprintf(t, sizeof t, fmt, args...);
  return t;
}

// A conflict named as feedback names it: "32-way bank conflict: lanes 0–31, 32 words in bank 3"
// (the lowest bank holding the most distinct words, and the lanes whose words are in it).
std::string conflict_text(const WarpRequest& r) {
  std::map<int, std::set<uint64_t>> words_of_bank;
  for (const WarpLane& l : r.lanes)
    for (uint64_t w = l.offset / 4; w <= (l.offset + uint64_t(std::max(l.bytes, 1)) - 1) / 4; ++w)
      words_of_bank[int(w % 32)].insert(w);
  int bank = 0;
  size_t most = 0;
  for (const auto& [b, words] : words_of_bank)
    if (words.size() > most) bank = b, most = words.size();
  std::set<int> lanes;
  for (const WarpLane& l : r.lanes)
    for (uint64_t w = l.offset / 4; w <= (l.offset + uint64_t(std::max(l.bytes, 1)) - 1) / 4; ++w)
      if (int(w % 32) == bank) lanes.insert(l.lane);
  std::string ranges;
  for (auto it = lanes.begin(); it != lanes.end();) {
    int first = *it, last = first;
    for (++it; it != lanes.end() && *it == last + 1; ++it) last = *it;
    ranges += (ranges.empty() ? "" : ", ") + std::to_string(first);
    if (last > first) ranges += (last == first + 1 ? ", " : "\xe2\x80\x93") + std::to_string(last);
  }
  return text_of(tr("%llu-way bank conflict: lanes %s, %llu words in bank %d"), (unsigned long long)r.wavefronts,
                 ranges.c_str(), (unsigned long long)most, bank);
}

const char* access_word(const std::string& access) {
  if (access == "load") return tr("load");
  if (access == "store") return tr("store");
  if (access == "atomic") return tr("atomic");
  return access.c_str();
}

// [SECTION] global: lanes over sectors
float draw_sectors(const WarpRequest& r, const Theme& th, ImVec2 p, float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float cell = std::min(width / 32.f, line * 1.6f);
  std::map<uint64_t, int> sector_index;  // sector -> colour, in address order
  for (const WarpLane& l : r.lanes)
    for (uint64_t s = l.offset / 32; s <= (l.offset + uint64_t(l.bytes) - 1) / 32; ++s) sector_index.emplace(s, 0);
  int n = 0;
  for (auto& [s, i] : sector_index) i = n++;
  dl->AddText(p, th.text_dim, tr("lanes 0-31 (colour: the 32-byte sector each reads)"));
  const float y = p.y + line + 2;
  for (const WarpLane& l : r.lanes) {
    const float x = p.x + float(l.lane) * cell;
    dl->AddRectFilled(ImVec2(x + 1, y), ImVec2(x + cell - 1, y + cell), sector_color(sector_index[l.offset / 32]), 2.f);
    if (cell > ImGui::CalcTextSize("00").x + 2)
      dl->AddText(ImVec2(x + 2, y + (cell - line) * 0.5f), IM_COL32(255, 255, 255, 255),
                  std::to_string(l.lane).c_str());
  }
  // The sectors in address order, each a box labelled with its byte offset in the buffer.
  const float sy = y + cell + line * 1.2f;
  const float sw = std::min(width / float(std::max(n, 1)), ImGui::CalcTextSize("+000000 B").x + 8);
  int shown = 0;
  for (auto& [s, i] : sector_index) {
    const float x = p.x + float(i) * sw;
    if (x + sw > p.x + width) break;
    dl->AddRectFilled(ImVec2(x + 1, sy), ImVec2(x + sw - 1, sy + line * 1.4f), sector_color(i), 2.f);
    dl->AddText(ImVec2(x + 4, sy + line * 0.2f), IM_COL32(255, 255, 255, 255),
                ("+" + std::to_string(s * 32) + " B").c_str());
    ++shown;
  }
  for (const WarpLane& l : r.lanes) {  // lane -> its sector
    const int i = sector_index[l.offset / 32];
    if (i >= shown) continue;
    dl->AddLine(ImVec2(p.x + (float(l.lane) + 0.5f) * cell, y + cell), ImVec2(p.x + (float(i) + 0.5f) * sw, sy),
                th.text_dim);
  }
  return sy + line * 1.4f - p.y;
}

// [SECTION] shared: 32 banks, the words each must serve
float draw_banks(const WarpRequest& r, const Theme& th, ImVec2 p, float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float cell = std::min(width / 32.f, line * 1.6f);
  std::map<int, std::vector<uint64_t>> words_of_bank;  // bank -> distinct words, in order
  for (const WarpLane& l : r.lanes) {
    auto& v = words_of_bank[bank_of(l.offset)];
    if (std::find(v.begin(), v.end(), l.offset / 4) == v.end()) v.push_back(l.offset / 4);
  }
  dl->AddText(p, th.text_dim, tr("banks 0-31 (a row per distinct word a bank serves; red: conflict)"));
  const float y0 = p.y + line + 2;
  for (int b = 0; b < 32; ++b) {
    const float x = p.x + float(b) * cell;
    dl->AddText(ImVec2(x + 2, y0), th.text_dim, b % 4 == 0 ? std::to_string(b).c_str() : "");
  }
  const float y = y0 + line + 2;
  size_t depth = 1;
  for (auto& [b, v] : words_of_bank) depth = std::max(depth, v.size());
  const size_t rows_shown = std::min<size_t>(depth, 32);
  // A 32-way conflict is 32 rows: they shrink to fit the height left, never below 3 pixels.
  const float row = std::max(3.f, std::min({cell, line * 1.3f, (height - (y - p.y)) / float(rows_shown)}));
  for (int b = 0; b < 32; ++b)
    for (size_t k = 0; k < rows_shown; ++k) {
      const float x = p.x + float(b) * cell, yy = y + float(k) * row;
      dl->AddRect(ImVec2(x, yy), ImVec2(x + cell, yy + row), th.grid);
    }
  for (const WarpLane& l : r.lanes) {
    const int b = bank_of(l.offset);
    const auto& v = words_of_bank[b];
    const size_t k = size_t(std::find(v.begin(), v.end(), l.offset / 4) - v.begin());
    if (k >= rows_shown) continue;
    const float x = p.x + float(b) * cell, yy = y + float(k) * row;
    const bool conflict = v.size() > 1;
    dl->AddRectFilled(ImVec2(x + 1, yy + 1), ImVec2(x + cell - 1, yy + row - 1),
                      conflict ? kConflict : sector_color(0));
  }
  // Lanes sharing a word: how many (a broadcast); a word read by one lane: that lane's number.
  std::map<uint64_t, int> lanes_per_word;
  for (const WarpLane& l : r.lanes) ++lanes_per_word[l.offset / 4];
  for (const WarpLane& l : r.lanes) {
    const int b = bank_of(l.offset);
    const auto& v = words_of_bank[b];
    const size_t k = size_t(std::find(v.begin(), v.end(), l.offset / 4) - v.begin());
    if (lanes_per_word[l.offset / 4] == 1 && k < rows_shown && row >= line * 0.9f &&
        cell > ImGui::CalcTextSize("00").x + 2)
      dl->AddText(ImVec2(p.x + float(b) * cell + 2, y + float(k) * row), IM_COL32(255, 255, 255, 255),
                  std::to_string(l.lane).c_str());
  }
  for (auto& [w, count] : lanes_per_word) {
    if (count < 2) continue;
    const int b = int(w % 32);
    const auto& v = words_of_bank[b];
    const size_t k = size_t(std::find(v.begin(), v.end(), w) - v.begin());
    if (k < rows_shown && cell > ImGui::CalcTextSize("32").x)
      dl->AddText(ImVec2(p.x + float(b) * cell + 2, y + float(k) * row), IM_COL32(255, 255, 255, 255),
                  std::to_string(count).c_str());
  }
  return y + float(rows_shown) * row - p.y;
}

// [SECTION] heatmap: the block's shared memory, 32 words (one per bank) a row, by stores so far
float draw_heatmap(const WarpView& v, const Theme& th, ImVec2 p, float width, float height) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  dl->AddText(p, th.text_dim, tr("shared memory stored so far (a row: 32 banks)"));
  if (v.shared_stores.empty()) {
    dl->AddText(ImVec2(p.x, p.y + line + 2), th.text_dim, tr("(no shared store yet)"));
    return line * 2.4f;
  }
  int most = 1;
  for (int c : v.shared_stores) most = std::max(most, c);
  const size_t rows = (v.shared_stores.size() + 31) / 32;
  const float cell = std::max(2.f, std::min(width / 32.f, (height - line - 4) / float(rows)));
  const float y = p.y + line + 2;
  for (size_t i = 0; i < v.shared_stores.size(); ++i) {
    const float x = p.x + float(i % 32) * cell, yy = y + float(i / 32) * cell;
    const int c = v.shared_stores[i];
    const int shade = c == 0 ? 0 : 60 + 195 * c / most;
    dl->AddRectFilled(ImVec2(x, yy), ImVec2(x + cell - 1, yy + cell - 1),
                      c == 0 ? th.grid : IM_COL32(255 - shade / 2, 140 - shade / 3, 0, 255));
  }
  return line + 2 + float(rows) * cell;
}

}  // namespace

void draw_warp_view(const WarpView& v, const Theme& th, ImVec2 size) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  if (size.x <= 0) size.x = avail.x;
  if (size.y <= 0) size.y = avail.y;
  const float top = ImGui::GetCursorScreenPos().y;
  ImGui::Text(tr("%s: %s, block (0,0,0) of %ux%ux%u threads, request %d of %d%s  (simulated)"), v.algo.c_str(),
              v.kernel.c_str(), v.block[0], v.block[1], v.block[2], v.step + 1, v.steps,
              uint64_t(v.steps) < v.total_requests ? tr(" (trace bounded)") : "");
  const WarpRequest& r = v.request;
  const std::string after_barrier =
      v.barrier.empty() ? "" : text_of(tr(" (after the barrier at %s)"), v.barrier.c_str());
  const std::string buffer =
      r.shared ? "" : text_of(tr("of buffer %d (in the order the kernel first touches them)"), r.allocation);
  ImGui::Text(tr("warp %d, phase %d%s, %s %s %s"), r.warp, r.phase, after_barrier.c_str(),
              r.shared ? tr("shared") : tr("global"), access_word(r.access), buffer.c_str());
  ImGui::TextUnformatted(
      (r.where + "   " + (r.source.empty() ? std::string(tr("(source not shipped)")) : r.source)).c_str());
  if (r.shared)
    ImGui::Text(r.wavefronts == 1 ? tr("this request: %d lanes, %llu distinct words, %llu wavefront (%s)")
                                  : tr("this request: %d lanes, %llu distinct words, %llu wavefronts (%s)"),
                int(r.lanes.size()), (unsigned long long)r.words, (unsigned long long)r.wavefronts,
                r.wavefronts > 1 ? conflict_text(r).c_str()
                : r.words == 1   ? tr("a broadcast")
                                 : tr("no conflict"));
  else {
    std::set<uint64_t>
        bytes_read;  // distinct bytes the lanes asked for (a broadcast counts once; float64 lanes 8 each)
    for (const WarpLane& l : r.lanes)
      for (int b = 0; b < l.bytes; ++b) bytes_read.insert(l.offset + uint64_t(b));
    const double used = double(bytes_read.size());
    ImGui::Text(r.sectors == 1 ? tr("this request: %d lanes, %llu sector of 32 bytes (%s)")
                               : tr("this request: %d lanes, %llu sectors of 32 bytes (%s)"),
                int(r.lanes.size()), (unsigned long long)r.sectors,
                text_of(tr("%.0f%% of the bytes moved are used"), r.sectors ? 100.0 * used / double(r.sectors * 32) : 0)
                    .c_str());
  }
  const WarpTotals& t = v.totals;
  ImGui::Text(tr("so far: global %llu requests, %s sectors/request; shared %llu requests, %s wavefronts/request"),
              (unsigned long long)t.global_requests,
              text_of("%.2f", t.global_requests ? double(t.sectors) / double(t.global_requests) : 0).c_str(),
              (unsigned long long)t.shared_requests,
              text_of("%.2f", t.shared_requests ? double(t.wavefronts) / double(t.shared_requests) : 0).c_str());
  ImGui::Text(r.shared ? tr("this instruction so far: %llu requests, %s wavefronts/request")
                       : tr("this instruction so far: %llu requests, %s sectors/request"),
              (unsigned long long)t.site_requests,
              text_of("%.2f", t.site_requests ? double(t.site_cost) / double(t.site_requests) : 0).c_str());
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float left_w = size.x * 0.55f;
  const float rest = std::max(60.f, size.y - (p.y - top) - 4);
  const float used = r.shared ? draw_banks(r, th, p, left_w, rest) : draw_sectors(r, th, p, left_w);
  const float heat = draw_heatmap(v, th, ImVec2(p.x + left_w + 16, p.y), size.x - left_w - 20, rest);
  ImGui::Dummy(ImVec2(size.x, std::max(used, heat) + 4));
}

}  // namespace opscope::viz
