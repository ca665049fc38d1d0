// The language's ONNX functions: load_onnx(path) gives a model object (m(x) applies it, in the
// current mode; m.parameters(), m.param("conv1.weight"), m.inputs, m.outputs), save_onnx(y,
// path) writes a graph as an ONNX file, and the REPL's :import PATH [NAME].
#include "app/lang/onnx_builtins.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "app/lang/call_args.h"
#include "app/lang/interpreter.h"
#include "app/onnx/onnx_export.h"
#include "app/onnx/onnx_import.h"
#include "app/shipped_dir.h"

namespace opscope::lang {

namespace {

using interop::ImportedModel;

Value shape_value(const Shape& s) {
  std::vector<Value> dims;
  for (int64_t d : s) dims.push_back(Value::Int(d));
  return Value::List(std::move(dims));
}

// An imported model as the language sees it.
class ModelObject final : public NativeObject {
 public:
  explicit ModelObject(std::shared_ptr<const ImportedModel> m) : model_(std::move(m)) {}
  const ImportedModel& model() const { return *model_; }

  std::string type_name() const override { return "onnx_model"; }

  std::string repr() const override {
    std::string ins, outs;
    for (auto& i : model_->inputs()) ins += (ins.empty() ? "" : ", ") + i.name + " " + dims(i.dims);
    for (auto& o : model_->outputs()) outs += (outs.empty() ? "" : ", ") + o.name;
    return "<onnx model " + std::filesystem::path(model_->path()).filename().string() + ": " + ins + " -> " + outs +
           ", " + std::to_string(model_->parameters().size()) + " parameters (" +
           std::to_string(model_->parameter_count()) + " values)>";
  }

  std::vector<std::string> members() const override {
    return {"inputs", "outputs", "parameters", "buffers", "param", "name", "path", "opset", "onnx_nodes", "summary"};
  }
  bool has_method(const std::string& name) const override {
    return name == "parameters" || name == "buffers" || name == "param" || name == "summary" || name == "__call__";
  }

  std::optional<Value> attr(Interpreter&, const std::string& name, Pos) override {
    if (name == "inputs") {
      std::vector<Value> items;
      for (auto& i : model_->inputs()) {
        std::vector<Value> d;
        for (auto& dim : i.dims)
          d.push_back(dim.fixed() ? Value::Int(dim.value) : Value::Str(dim.param.empty() ? "?" : dim.param));
        items.push_back(Value::List({Value::Str(i.name), Value::List(std::move(d))}, Value::tuple));
      }
      return Value::List(std::move(items));
    }
    if (name == "outputs") {
      std::vector<Value> items;
      for (auto& o : model_->outputs())
        items.push_back(Value::List({Value::Str(o.name), shape_value(o.shape)}, Value::tuple));
      return Value::List(std::move(items));
    }
    if (name == "name") return Value::Str(model_->name());
    if (name == "path") return Value::Str(model_->path());
    if (name == "opset") return Value::Int(model_->model().opset);
    if (name == "onnx_nodes") return Value::Int(static_cast<int64_t>(model_->model().nodes.size()));
    return std::nullopt;
  }

  Value call(Interpreter& in, const std::string& name, CallArgs& a) override {
    if (name == "__call__") return apply(in, a);
    if (name == "parameters" || name == "buffers") {
      need_args(in, a, name, 0, 0);
      std::vector<Value> items;
      for (auto& p : name == "parameters" ? model_->parameters() : model_->buffers())
        items.push_back(Value::Tensor_(p.tensor));
      return Value::List(std::move(items));
    }
    if (name == "summary") {
      need_args(in, a, name, 0, 0);
      return Value::Str(model_->summary());
    }
    need_args(in, a, "param", 1, 1);  // param(name)
    if (a.positional[0].kind() != Value::string)
      in.fail(a.positions[0], "param() takes the initializer's ONNX name", "m.param(\"conv1.weight\")");
    try {
      return Value::Tensor_(model_->param(a.positional[0].as_str()));
    } catch (const Error& e) {
      in.fail(a.positions[0], e.what(), e.hint());
    }
  }

  // m(x, ...): the graph inputs in order, or by name as keywords.
  Value apply(Interpreter& in, CallArgs& a) {
    const auto& decl = model_->inputs();
    std::vector<Tensor> inputs(decl.size());
    if (a.positional.size() > decl.size())
      in.fail(a.pos,
              model_->name() + "() takes " + std::to_string(decl.size()) + " input" + (decl.size() == 1 ? "" : "s") +
                  ", got " + std::to_string(a.positional.size()),
              "its inputs: " + input_list());
    for (size_t i = 0; i < a.positional.size(); ++i)
      inputs[i] = in.to_tensor(a.positional[i], a.positions[i], decl[i].dtype, true);
    for (auto& [k, v] : a.keyword) {
      size_t i = 0;
      while (i < decl.size() && decl[i].name != k) ++i;
      if (i == decl.size()) {
        std::vector<std::string> names;
        for (auto& d : decl) names.push_back(d.name);
        const std::string near = closest_name(k, names);
        in.fail(a.pos, model_->name() + "() has no input named '" + k + "'",
                near.empty() ? "its inputs: " + input_list() : "did you mean '" + near + "'?");
      }
      if (inputs[i].defined()) in.fail(a.pos, model_->name() + "() got the input '" + k + "' twice");
      inputs[i] = in.to_tensor(v, a.pos, decl[i].dtype, true);
    }
    for (size_t i = 0; i < decl.size(); ++i)
      if (!inputs[i].defined())
        in.fail(a.pos, model_->name() + "() is missing the input '" + decl[i].name + "' " + dims(decl[i].dims),
                "pass it by position or as " + decl[i].name + "=tensor");
    std::vector<Tensor> outs;
    try {
      outs = model_->apply(in.ws(), inputs);
    } catch (const LangError&) {
      throw;
    } catch (const Error& e) {
      in.fail(a.pos, e.what(), e.hint());
    }
    if (outs.size() == 1) return Value::Tensor_(outs[0]);
    std::vector<Value> items;
    for (auto& t : outs) items.push_back(Value::Tensor_(t));
    return Value::List(std::move(items), Value::tuple);
  }

 private:
  static std::string dims(const std::vector<interop::OnnxDim>& ds) {
    std::string s = "[";
    for (size_t i = 0; i < ds.size(); ++i)
      s += (i ? ", " : "") + (ds[i].fixed()         ? std::to_string(ds[i].value)
                              : ds[i].param.empty() ? std::string("?")
                                                    : ds[i].param);
    return s + "]";
  }
  std::string input_list() const {
    std::string s;
    for (auto& i : model_->inputs()) s += (s.empty() ? "" : ", ") + i.name + " " + dims(i.dims);
    return s.empty() ? "none" : s;
  }
  std::shared_ptr<const ImportedModel> model_;
};

// shapes="x=8,1,28,28", a list of such strings, or a list of (name, dims) tuples.
void shapes_arg(Interpreter& in, const Value& v, Pos p, interop::ImportOptions& opt) {
  auto one = [&](const Value& x) {
    try {
      if (x.kind() == Value::string) {
        opt.shapes.insert(interop::parse_shape_option(x.as_str()));
        return;
      }
      if ((x.kind() == Value::tuple || x.kind() == Value::list) && x.items()->size() == 2 &&
          (*x.items())[0].kind() == Value::string) {
        opt.shapes[(*x.items())[0].as_str()] = in.to_shape({(*x.items())[1]}, p);
        return;
      }
    } catch (const LangError&) {
      throw;
    } catch (const Error& e) {
      in.fail(p, e.what(), e.hint());
    }
    in.fail(p, "shapes= takes \"name=d0,d1,...\" or (name, [d0, d1, ...]), or a list of them",
            "load_onnx(\"model.onnx\", shapes=\"x=8,1,28,28\")");
  };
  if (v.kind() == Value::list &&
      !(v.items()->size() == 2 && (*v.items())[0].kind() == Value::string && (*v.items())[1].kind() == Value::list)) {
    for (auto& x : *v.items()) one(x);
  } else {
    one(v);
  }
}

// The file to read. The models opscope ships are its own and read from anywhere (a lesson opens
// models_dir() + "/encoder.onnx"); any other path goes through the file policy.
std::string model_file(Interpreter& in, const std::string& path, Pos p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(path, ec), shipped = fs::weakly_canonical(models_dir(), ec);
  if (!ec && !shipped.empty() && fs::is_regular_file(real, ec)) {
    const auto rel = real.lexically_relative(shipped);
    if (!rel.empty() && *rel.begin() != ".." && rel.is_relative()) return real.string();
  }
  return in.resolve_path(path, FileMode::read, p);
}

Value load_model(Interpreter& in, const std::string& path, Pos p, const interop::ImportOptions& opt) {
  try {
    Value v;
    auto model = ImportedModel::load(model_file(in, path, p), opt);
    if (const std::string note = model->ties_note(); !note.empty()) in.out() << "note: " << note << "\n";
    v = Value::Of(std::make_shared<ModelObject>(std::move(model)));
    return v;
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    in.fail(p, e.what(), e.hint());
  }
}

}  // namespace

std::string variable_for(const std::string& path) {
  std::string s = std::filesystem::path(path).stem().string(), out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "m" + out;
  return out;
}

const interop::ImportedModel* imported_model(const Value& v) {
  if (v.kind() != Value::object) return nullptr;
  const auto* m = dynamic_cast<const ModelObject*>(v.as_object().get());
  return m ? &m->model() : nullptr;
}

std::string models_dir() {
#ifdef OPSCOPE_MODELS_DIR
  const char* built_in = OPSCOPE_MODELS_DIR;
#else
  const char* built_in = nullptr;
#endif
  return app::find_shipped_dir("OPSCOPE_MODELS", built_in, "assets/models", "models",
                               [](const std::filesystem::path& d) { return std::filesystem::is_directory(d); });
}

void install_onnx_builtins(BuiltinTable& B) {
  B.add("models_dir", "models_dir()",
        "the folder of the ONNX models opscope ships: load_onnx(models_dir() + \"/encoder.onnx\")",
        [](Interpreter& in, CallArgs& a) {
          need_args(in, a, "models_dir", 0, 0);
          const std::string d = models_dir();
          if (d.empty())
            in.fail(a.pos, "cannot find opscope's models folder",
                    "set OPSCOPE_MODELS to the repository's assets/models");
          return Value::Str(d);
        });
  B.add("load_onnx", "load_onnx(path, shapes=None, untie=False)",
        "an ONNX model: m(x) applies it in the current mode (backward reaches m.parameters()); m.inputs, m.outputs, "
        "m.param(name); "
        "untie=True gives initializers the exporter merged (equal values) a parameter each",
        [](Interpreter& in, CallArgs& a) {
          check_keywords(in, a, "load_onnx", {"shapes", "untie"});
          need_args(in, a, "load_onnx", 1, 1);
          if (a.positional[0].kind() != Value::string)
            in.fail(a.positions[0], "load_onnx() needs a file name", "load_onnx(\"model.onnx\")");
          interop::ImportOptions opt;
          if (const Value* s = keyword(a, "shapes"); s && s->kind() != Value::none) shapes_arg(in, *s, a.pos, opt);
          if (const Value* u = keyword(a, "untie")) opt.untie = in.truthy(*u, a.pos);
          return load_model(in, a.positional[0].as_str(), a.positions[0], opt);
        });
  B.add("save_onnx", "save_onnx(y, path)",
        "writes the graph computing y (a static program or a dynamic graph's forward) as an ONNX model, opset 17",
        [](Interpreter& in, CallArgs& a) {
          need_args(in, a, "save_onnx", 2, 2);
          if (a.positional[1].kind() != Value::string)
            in.fail(a.positions[1], "save_onnx() needs a file name second", "save_onnx(y, \"model.onnx\")");
          std::vector<Tensor> outs;
          const Value& y = a.positional[0];
          for (const Value& v :
               y.kind() == Value::list || y.kind() == Value::tuple ? *y.items() : std::vector<Value>{y}) {
            if (v.kind() != Value::tensor)
              in.fail(a.positions[0], "save_onnx() exports tensors, got " + std::string(kind_name(v)));
            outs.push_back(v.as_tensor());
          }
          try {
            const auto info =
                interop::save_onnx(in.ws(), outs,
                                   in.resolve_path(a.positional[1].as_str(), FileMode::write, a.positions[1]));
            in.out() << "wrote " << a.positional[1].as_str() << ": " << info.nodes << " ONNX nodes, "
                     << info.initializers << " initializers, opset " << info.opset << "\n";
          } catch (const LangError&) {
            throw;
          } catch (const Error& e) {
            in.fail(a.pos, e.what(), e.hint());
          }
          return Value::None();
        });
}

void install_onnx_commands(Interpreter& in) {
  in.add_command({"import", "PATH [NAME]", "load an ONNX model into a variable (named after the file unless NAME)",
                  [](Interpreter& in, const std::string& args, std::ostream& out) {
                    std::istringstream is(args);
                    std::string path, name;
                    is >> path >> name;
                    if (path.empty())
                      throw Error(":import needs an .onnx file", ":import assets/models/encoder.onnx [NAME]");
                    if (name.empty()) name = variable_for(path);
                    Value m = load_model(in, path, Pos{1, 1}, {});
                    in.assign(name, m);
                    const auto& model = static_cast<ModelObject&>(*m.as_native());
                    out << model.repr() << "\n"
                        << name << "(x) applies it (in static mode it traces); " << name << ".parameters(), " << name
                        << ".param(\"NAME\"), " << name << ".inputs, " << name << ".outputs\n";
                  }});
}

}  // namespace opscope::lang
