// File ▸ Open: an ONNX model opened in the GUI's session, traced in static mode against
// input() placeholders so the graph view shows it as the file describes it; scripts, .npy
// and IDX files through the console.
#pragma once
#include <string>
#include <vector>

namespace opscope::app {

struct GuiState;

struct OpenModelState {
  bool request = false;  // File ▸ Open (or Ctrl+O) asks for the dialog in this frame
  char path[1024] = "";
  std::vector<std::string> offered;  // .onnx files in the shipped models folder and the current one
};

// Loads `path` into a variable named after the file and traces it, all through the console
// (:mode static, NAME = load_onnx(...), x = input(...), y = NAME(x)) so the student sees how.
// False, with the error in the console, when the file cannot be opened.
bool open_onnx_model(GuiState& s, const std::string& path);
// File > Open for any file opscope reads, by its kind, through the console so the student sees
// the statement: an ONNX model (open_onnx_model), a script (run), a .npy (NAME = load(...)), an
// IDX file (NAME = load_idx(...); Fashion-MNIST's own files become what fashion_mnist() reads).
bool open_file(GuiState& s, const std::string& path);
// The File menu's dialog: a path field, the models and examples shipped, and (in the browser)
// the computer's own file chooser.
void draw_open_model_dialog(GuiState& s);
// Files the user chose in the browser's chooser or dropped on the page: opened between frames.
void open_picked_files(GuiState& s);

}  // namespace opscope::app
