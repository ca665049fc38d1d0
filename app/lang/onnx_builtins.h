// The language's ONNX group: load_onnx, save_onnx and the :import command.
#pragma once

namespace opscope::lang {

class BuiltinTable;
class Interpreter;

void install_onnx_builtins(BuiltinTable& table);
void install_onnx_commands(Interpreter& in);

}  // namespace opscope::lang
