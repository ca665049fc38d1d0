// The language's ONNX group: load_onnx, save_onnx and the :import command.
#pragma once
#include <string>

namespace opscope::interop {
class ImportedModel;
}

namespace opscope::lang {

class BuiltinTable;
class Interpreter;
class Value;

void install_onnx_builtins(BuiltinTable& table);
void install_onnx_commands(Interpreter& in);
// The imported model a value holds (load_onnx's result), or nullptr.
const interop::ImportedModel* imported_model(const Value& v);
// The folder of the ONNX models opscope ships (assets/models): $OPSCOPE_MODELS, the source
// tree it was built from, or next to the executable. "" when none is found.
std::string models_dir();
// A variable name for a file: "resnet-block.onnx" -> "resnet_block".
std::string variable_for(const std::string& path);

}  // namespace opscope::lang
