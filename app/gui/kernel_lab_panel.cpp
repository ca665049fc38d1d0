// The Kernel Lab tab: the chart of an operator's algorithms (viz/kernel_lab_chart.h) over the
// warp view of one simulated kernel (viz/warp_view.h), with the controls a person uses: the GPU
// preset, the algorithm to trace, the step buttons. Work a click asks for (measuring, tracing)
// runs after the frame (run_after_frame), never inside it.
#include <imgui.h>

#include "app/gui/gui_state.h"
#include "app/gui/kernel_lab_state.h"
#include "app/gui/statement_runner.h"
#include "app/gui/widget_rects.h"
#include "app/lang/kernel.h"
#include "viz/words.h"

namespace opscope::app {

namespace {

const char* const kGpus[] = {"T4", "RTX4090", "H100", "H200"};

// [SECTION] controls: GPU preset and the algorithm the warp view traces
void draw_controls(GuiState& s) {
  KernelLabState& lab = s.lab;
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("RTX4090").x + ImGui::GetFrameHeight() * 2);
  if (ImGui::BeginCombo((std::string(viz::tr("GPU (simulated)")) + "###lab_gpu").c_str(), lab.gpu.c_str())) {
    for (const char* g : kGpus)
      if (ImGui::Selectable(g, lab.gpu == g)) {
        lab.gpu = g;
        const std::string op = lab.op;
        const auto sizes = lab.sizes;
        lab_open_after_frame(s, op, sizes);
      }
    ImGui::EndCombo();
  }
  note_widget(s.hooks.widgets, "GPU (simulated)");
  // The last kernel written in the language (a @kernel launched from the console or a script).
  if (const lang::LanguageKernelTrace& t = lang::last_language_kernel_trace(); !t.trace_json.empty()) {
    ImGui::SameLine();
    if (noted(s.hooks.widgets, ImGui::Button(("@kernel " + t.kernel + "##lang_kernel").c_str()), "warps: @kernel"))
      run_after_frame(s, [&s] { lab_open_language_kernel(s); });
  }
  if (!lab.sim_available || lab.chart.rows.empty()) return;
  ImGui::SameLine();
  ImGui::TextUnformatted(viz::tr("  warp view of:"));
  for (const auto& r : lab.chart.rows) {  // one button per simulated kernel, wrapped to the width
    if (!r.simulated || !r.ok || r.where.find("library") != std::string::npos) continue;
    const bool shown = lab.warp.algo == r.algo && !lab.warp.requests.empty();
    const std::string label = "warps: " + r.algo;
    const float w = ImGui::CalcTextSize(r.algo.c_str()).x + ImGui::GetStyle().FramePadding.x * 2;
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w < right) ImGui::SameLine();
    if (shown) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
    // Shown as the algorithm's name; noted as "warps: NAME" for the human-input tests.
    if (noted(s.hooks.widgets, ImGui::Button((r.algo + "##warps").c_str()), label.c_str())) {
      const std::string algo = r.algo;
      run_after_frame(s, [&s, algo] { lab_open_warp(s, algo); });
    }
    if (shown) ImGui::PopStyleColor();
  }
}

// [SECTION] warp view: step buttons over the view
void draw_warp(GuiState& s, const viz::Theme& th) {
  KernelLabState& lab = s.lab;
  if (!lab.warp.error.empty()) {
    ImGui::TextWrapped(viz::tr("Warp view: %s"), lab.warp.error.c_str());
    return;
  }
  if (lab.warp.requests.empty()) {
    ImGui::TextDisabled(
        "%s",
        viz::tr("Warp view: press a kernel's button above to step one block of it request by request (simulated)."));
    return;
  }
  ImGui::BeginDisabled(lab.warp.step <= 0);
  if (noted(s.hooks.widgets, ImGui::Button((std::string(viz::tr("< previous")) + "###lab_previous").c_str()),
            "previous request"))
    lab_step(lab, -1);
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(lab.warp.step + 1 >= int(lab.warp.requests.size()));
  if (noted(s.hooks.widgets, ImGui::Button((std::string(viz::tr("next request >")) + "###lab_next").c_str()),
            "next request"))
    lab_step(lab, 1);
  ImGui::SameLine();
  if (noted(s.hooks.widgets, ImGui::Button((std::string(viz::tr("next barrier >>")) + "###lab_barrier").c_str()),
            "next barrier"))
    lab_step_to_next_barrier(lab);
  ImGui::EndDisabled();
  viz::draw_warp_view(lab.view, th, ImVec2(0, 0));
}

}  // namespace

void draw_kernel_lab(GuiState& s) {
  KernelLabState& lab = s.lab;
  ++lab.frames_drawn;
  const viz::Theme& th = viz::theme(s.dark);
  if (!lab.error.empty()) {
    ImGui::TextWrapped(viz::tr("Kernel Lab: %s"), lab.error.c_str());
    return;
  }
  const bool warp_open = !lab.warp.requests.empty() || !lab.warp.error.empty();
  const bool language_kernel = !lang::last_language_kernel_trace().trace_json.empty();
  if (lab.chart.rows.empty() && !warp_open && !language_kernel) {
    ImGui::TextDisabled("%s", s.run.running ? viz::tr("Measuring...") : viz::tr("Nothing measured yet."));
    return;
  }
  draw_controls(s);
  if (!lab.chart.rows.empty()) {  // none for a kernel written in the language: its warp view alone
    const float avail_h = ImGui::GetContentRegionAvail().y;
    ImGui::BeginChild("lab_chart", ImVec2(0, warp_open ? avail_h * 0.36f : 0), false);
    viz::LabChart shown = lab.chart;  // a dozen rows: copied to be titled in the window's language
    lab_title_and_note(lab, shown);
    const int clicked = viz::draw_lab_chart(shown, th, ImVec2(0, 0));
    note_panel(s.hooks.widgets, "lab chart");
    ImGui::EndChild();
    if (clicked >= 0 && lab.chart.rows[size_t(clicked)].simulated && lab.chart.rows[size_t(clicked)].ok) {
      const std::string algo = lab.chart.rows[size_t(clicked)].algo;
      run_after_frame(s, [&s, algo] { lab_open_warp(s, algo); });
    }
    ImGui::Separator();
  }
  ImGui::BeginChild("lab_warp", ImVec2(0, 0), false);
  draw_warp(s, th);
  note_panel(s.hooks.widgets, "warp view");
  ImGui::EndChild();
}

}  // namespace opscope::app
