#include "app/gui/open_model.h"

#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "app/gui/gui_state.h"
#include "app/lang/interpreter.h"
#include "app/lang/onnx_builtins.h"
#include "app/onnx/onnx_import.h"

namespace opscope::app {

namespace {

// An ONNX value name as a variable: "input.1" -> "input_1".
std::string identifier(const std::string& name) {
  std::string out;
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) q += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return q + "\"";
}

std::vector<std::string> onnx_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  for (const std::string& dir : {lang::models_dir(), std::string(".")}) {
    if (dir.empty() || !fs::is_directory(dir, ec)) continue;
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file(ec) && e.path().extension() == ".onnx") found.push_back(e.path().lexically_normal().string());
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace

bool open_onnx_model(GuiState& s, const std::string& path) {
  const std::string name = lang::variable_for(path);
  if (!run_in_console(s, ":mode static") || !run_in_console(s, name + " = load_onnx(" + quoted(path) + ")")) return false;
  const lang::Value* v = s.session->interpreter().lookup(name);
  const interop::ImportedModel* m = v ? lang::imported_model(*v) : nullptr;
  if (!m) return false;
  std::string args, outs;
  for (const auto& in : m->inputs()) {
    const std::string var = identifier(in.name);
    std::string shape;
    for (int64_t d : in.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    if (!run_in_console(s, var + " = input(" + quoted(in.name) + ", [" + shape + "], dtype=\"" + dtype_name(in.dtype) + "\")"))
      return false;
    args += (args.empty() ? "" : ", ") + var;
  }
  for (const auto& o : m->outputs()) outs += (outs.empty() ? "" : ", ") + identifier(o.name);
  if (!run_in_console(s, outs + " = " + name + "(" + args + ")")) return false;
  s.graph.fit_all = true;
  return true;
}

void draw_open_model_dialog(GuiState& s) {
  OpenModelState& o = s.open_model;
  if (o.request) {
    o.offered = onnx_files();
    if (!o.path[0] && !o.offered.empty()) std::snprintf(o.path, sizeof o.path, "%s", o.offered.front().c_str());
    ImGui::OpenPopup("Open ONNX model");
    o.request = false;
  }
  ImGui::SetNextWindowSize(ImVec2(640 * s.scale, 0), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open ONNX model", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  ImGui::TextWrapped("An .onnx file (exported by torch.onnx.export, for example). It opens traced in static mode: "
                     "the graph shows it as the file describes it, with PyTorch's shape arithmetic folded away.");
  ImGui::SetNextItemWidth(-1);
  const bool enter = ImGui::InputText("##path", o.path, sizeof o.path, ImGuiInputTextFlags_EnterReturnsTrue);
  if (!o.offered.empty()) {
    ImGui::TextDisabled("models found:");
    for (const auto& f : o.offered)
      if (ImGui::Selectable(f.c_str(), f == o.path)) std::snprintf(o.path, sizeof o.path, "%s", f.c_str());
  }
  if (ImGui::Button("Open") || enter) {
    // Between frames, as every console statement runs (a statement draws frames of its own);
    // an error is in the console, where the student reads it.
    run_after_frame(s, [&s, path = std::string(o.path)] { open_onnx_model(s, path); });
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace opscope::app
