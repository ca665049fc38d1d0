#include "app/gui/open_model.h"

#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/gui/gui_state.h"
#include "app/gui/statement_runner.h"
#include "app/gui/widget_rects.h"
#include "app/lang/interpreter.h"
#include "app/lang/onnx_builtins.h"
#include "app/onnx/onnx_import.h"
#include "core/shape.h"
#include "platform/platform.h"

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

std::vector<std::string> openable_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  const std::string models = lang::models_dir();
  const std::string examples = models.empty() ? "" : (fs::path(models).parent_path() / "examples").string();
  for (const std::string& dir : {models, examples, std::string(".")}) {
    if (dir.empty() || !fs::is_directory(dir, ec)) continue;
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file(ec) && (e.path().extension() == ".onnx" || e.path().extension() == ".ops"))
        found.push_back(e.path().lexically_normal().string());
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

}  // namespace

bool open_onnx_model(GuiState& s, const std::string& path) {
  const std::string name = lang::variable_for(path);
  if (!run_in_console(s, ":mode static") || !run_in_console(s, name + " = load_onnx(" + quoted(path) + ")"))
    return false;
  const lang::Value* v = s.session->interpreter().lookup(name);
  const interop::ImportedModel* m = v ? lang::imported_model(*v) : nullptr;
  if (!m) return false;
  std::string args, outs;
  for (const auto& in : m->inputs()) {
    const std::string var = identifier(in.name);
    std::string shape;
    for (int64_t d : in.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    if (!run_in_console(s, var + " = input(" + quoted(in.name) + ", [" + shape + "], dtype=\"" + dtype_name(in.dtype) +
                               "\")"))
      return false;
    args += (args.empty() ? "" : ", ") + var;
  }
  for (const auto& o : m->outputs()) outs += (outs.empty() ? "" : ", ") + identifier(o.name);
  if (!run_in_console(s, outs + " = " + name + "(" + args + ")")) return false;
  s.graph.fit_all = true;
  return true;
}

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Fashion-MNIST's own file names: opened, they become what fashion_mnist() reads.
bool is_fashion_mnist_file(const std::string& name) {
  for (const char* f :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    if (name == f || name == std::string(f) + ".gz") return true;
  return false;
}

// Puts a Fashion-MNIST file where fashion_mnist() looks first ($OPSCOPE_DATA/fashion-mnist).
bool adopt_fashion_mnist_file(GuiState& s, const std::string& path) {
  namespace fs = std::filesystem;
  const char* data = std::getenv("OPSCOPE_DATA");
  if (!data || !*data) return false;
  const fs::path dir = fs::path(data) / "fashion-mnist";
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::copy_file(path, dir / fs::path(path).filename(), fs::copy_options::overwrite_existing, ec);
  if (ec) return false;
  platform::persist_files();
  const std::string split = fs::path(path).filename().string().rfind("train", 0) == 0 ? "train" : "test";
  s.console.lines.push_back({ConsoleLine::output, "# " + fs::path(path).filename().string() +
                                                      " is now what fashion_mnist(\"" + split +
                                                      "\") reads (open its images and labels files both)"});
  return true;
}

// A file opened becomes a variable named after it, never silently in place of one the student
// has: x.npy is x, or x_2 when x is taken (the console's echo of the statement says which).
std::string fresh_variable(GuiState& s, const std::string& wanted) {
  const auto& vars = s.session->interpreter().globals();
  std::string name = wanted;
  for (int n = 2; vars.count(name); ++n) name = wanted + "_" + std::to_string(n);
  return name;
}

}  // namespace

bool open_file(GuiState& s, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(path).filename().string();
  if (ends_with(name, ".onnx")) return open_onnx_model(s, path);
  if (ends_with(name, ".ops")) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    if (!f) {
      s.console.lines.push_back({ConsoleLine::error, "cannot read '" + path + "'"});
      return false;
    }
    s.console.lines.push_back({ConsoleLine::input, "# ran " + name});
    return run_in_console(s, text.str(), false);
  }
  const std::string var = fresh_variable(s, identifier(fs::path(path).stem().stem().string()));
  if (ends_with(name, ".npy")) return run_in_console(s, var + " = load(" + quoted(path) + ")");
  if (is_fashion_mnist_file(name) && adopt_fashion_mnist_file(s, path)) return true;
  if (ends_with(name, "-ubyte") || ends_with(name, "-ubyte.gz") || ends_with(name, ".idx") ||
      ends_with(name, ".idx.gz"))
    return run_in_console(s, var + " = load_idx(" + quoted(path) + ")");
  s.console.lines.push_back({ConsoleLine::error, "cannot open '" + name +
                                                     "': opscope opens .onnx models, .ops scripts, "
                                                     ".npy arrays and IDX files (.gz too)"});
  return false;
}

void open_picked_files(GuiState& s) {
  for (const std::string& path : platform::picked_files()) run_after_frame(s, [&s, path] { open_file(s, path); });
}

namespace {

// Files the browser keeps from earlier visits (platform::kept_file_dirs), each with Open and
// Delete: the student takes back what they opened, and the storage it holds. Empty on the desktop.
std::vector<std::filesystem::path> kept_files() {
  namespace fs = std::filesystem;
  std::vector<fs::path> kept;
  std::error_code ec;
  for (const std::string& dir : platform::kept_file_dirs())
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) kept.push_back(it->path());
  std::sort(kept.begin(), kept.end());
  return kept;
}

void delete_kept_file(GuiState& s, const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::remove(path, ec) || ec) {
    s.console.lines.push_back(
        {ConsoleLine::error, "cannot delete '" + path.filename().string() + "': " + ec.message()});
    return;
  }
  platform::persist_files();
  s.console.lines.push_back(
      {ConsoleLine::output, "# deleted " + path.filename().string() + " from this browser's storage"});
}

void draw_kept_files(GuiState& s) {
  const auto kept = kept_files();
  if (kept.empty()) return;
  ImGui::Separator();
  ImGui::TextDisabled("kept in this browser from earlier visits:");
  for (const auto& path : kept) {
    const std::string name = path.filename().string();
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    ImGui::PushID(path.c_str());
    if (noted(s.hooks.widgets, ImGui::SmallButton("Open"), ("Open " + name).c_str())) {
      run_after_frame(s, [&s, p = path.string()] { open_file(s, p); });
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (noted(s.hooks.widgets, ImGui::SmallButton("Delete"), ("Delete " + name).c_str())) delete_kept_file(s, path);
    ImGui::SameLine();
    ImGui::Text("%s  %s", name.c_str(), ec ? "" : bytes_str(static_cast<int64_t>(size)).c_str());
    ImGui::PopID();
  }
}

}  // namespace

void draw_open_model_dialog(GuiState& s) {
  OpenModelState& o = s.open_model;
  if (o.request) {
    o.offered = openable_files();
    if (!o.path[0] && !o.offered.empty()) std::snprintf(o.path, sizeof o.path, "%s", o.offered.front().c_str());
    ImGui::OpenPopup("Open");
    o.request = false;
  }
  ImGui::SetNextWindowSize(ImVec2(640 * s.scale, 0), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  ImGui::TextWrapped(
      "An .onnx model (exported by torch.onnx.export, for example) opens traced in static mode: the "
      "graph shows it as the file describes it, with PyTorch's shape arithmetic folded away. A .ops "
      "script runs in the console; a .npy array or an IDX file (MNIST's format) becomes a variable.");
  if (platform::has_file_chooser()) {
    if (noted(s.hooks.widgets, ImGui::Button("From this computer..."), "From this computer...")) {
      platform::pick_file(".onnx,.ops,.npy,.gz,.idx,.idx1-ubyte,.idx3-ubyte");
      ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    ImGui::TextDisabled("or drop a file on the page; or one shipped with opscope:");
  }
  ImGui::SetNextItemWidth(-1);
  const bool enter = ImGui::InputText("##path", o.path, sizeof o.path, ImGuiInputTextFlags_EnterReturnsTrue);
  if (!o.offered.empty()) {
    ImGui::TextDisabled("models and examples found:");
    for (const auto& f : o.offered)
      if (ImGui::Selectable(f.c_str(), f == o.path)) std::snprintf(o.path, sizeof o.path, "%s", f.c_str());
  }
  draw_kept_files(s);
  if (noted(s.hooks.widgets, ImGui::Button("Open"), "Open") || enter) {
    // Between frames, as every console statement runs (a statement draws frames of its own);
    // an error is in the console, where the student reads it.
    run_after_frame(s, [&s, path = std::string(o.path)] { open_file(s, path); });
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (noted(s.hooks.widgets, ImGui::Button("Cancel"), "Cancel") ||
      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape)))
    ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

}  // namespace opscope::app
