// Models and what a training loop reports: parameters(model), log(name, value) and
// accuracy(logits, labels). Also install_training_builtins, which installs every training
// group (optimizers, data, these).
#include <set>

#include "app/lang/call_args.h"
#include "app/lang/interpreter.h"
#include "app/lang/training.h"

namespace opscope::lang {

namespace {

// Every parameter reachable from v: tensors that require a gradient, in attribute order,
// through instances, lists, tuples and dicts; each once.
void collect_parameters(const Value& v, std::vector<Tensor>& out, std::set<const void*>& seen) {
  switch (v.kind()) {
    case Value::tensor:
      if (v.as_tensor().requires_grad() && !v.as_tensor().impl()->from_op && seen.insert(v.as_tensor().impl()).second)
        out.push_back(v.as_tensor());
      return;
    case Value::list:
    case Value::tuple:
      if (!seen.insert(v.items().get()).second) return;
      for (auto& x : *v.items()) collect_parameters(x, out, seen);
      return;
    case Value::dict:
      if (!seen.insert(v.as_object().get()).second) return;
      for (auto& [_, x] : v.as_dict()->entries) collect_parameters(x, out, seen);
      return;
    case Value::instance:
      if (!seen.insert(v.as_object().get()).second) return;  // a model that points back at itself
      for (auto& [_, x] : v.as_instance()->attrs) collect_parameters(x, out, seen);
      return;
    default: return;
  }
}

double scalar_of(Interpreter& in, const Value& v, Pos p, const char* fn) {
  if (v.is_number()) return v.number();
  if (v.kind() == Value::tensor) {
    if (v.as_tensor().is_symbolic())
      in.fail(p, std::string(fn) + "(): this tensor is symbolic (static mode) and has no value yet",
              "log what run(...) returns: l = run(loss, x=xb, y=yb); log(\"loss\", l)");
    if (v.as_tensor().numel() != 1)
      in.fail(p, std::string(fn) + "() takes one number, got a tensor of shape " + shape_str(v.as_tensor().shape()),
              "reduce it first, e.g. loss.mean()");
    return v.as_tensor().item();
  }
  in.fail(p, std::string(fn) + "() takes a number or a one-element tensor, got " + kind_name(v));
}

}  // namespace

void install_model_builtins(std::map<std::string, Builtin>& table) {
  BuiltinTable B(table);
  B.add("parameters", "parameters(model)",
        "every parameter reachable from the model's attributes (lists and dicts included), each once, in order",
        [](Interpreter& in, CallArgs& a) {
          need_args(in, a, "parameters", 1, 1);
          std::vector<Tensor> found;
          std::set<const void*> seen;
          collect_parameters(a.positional[0], found, seen);
          std::vector<Value> out;
          for (auto& t : found) out.push_back(Value::Tensor_(t));
          return Value::List(std::move(out));
        });
  // log(name, value) records a metric; log(x) of a tensor is still the natural logarithm.
  const OpDef* log_op = OpRegistry::instance().find("log");
  B.add("log", "log(name, value, step=None) or log(x)",
        "records a metric per step (plotted by the GUI's metrics panel, written by run --metrics); log(x) is ln(x)",
        [log_op](Interpreter& in, CallArgs& a) {
          if (a.positional.empty() || a.positional[0].kind() != Value::string) {
            if (!log_op) in.fail(a.pos, "log() takes a metric name first: log(\"loss\", value)");
            return in.call_op(*log_op, a);
          }
          check_keywords(in, a, "log", {"step"});
          need_args(in, a, "log", 2, 2);
          const double value = scalar_of(in, a.positional[1], a.positions[1], "log");
          std::optional<int64_t> step;
          if (const Value* s = keyword(a, "step"); s && s->kind() != Value::none) {
            if (s->kind() != Value::integer || s->as_int() < 0) in.fail(a.pos, "log(): step must be an integer >= 0");
            step = s->as_int();
          }
          try {
            in.metrics().log(a.positional[0].as_str(), value, step);
          } catch (const Error& e) {
            in.fail(a.pos, e.what(), e.hint());
          }
          return Value::None();
        });
  B.add("accuracy", "accuracy(logits, labels)",
        "the fraction of rows whose largest logit is the label's (or of predictions equal to the labels), as a float",
        [](Interpreter& in, CallArgs& a) {
          need_args(in, a, "accuracy", 2, 2);
          const Tensor &pred = tensor_arg(in, a, 0, "accuracy"), &labels = tensor_arg(in, a, 1, "accuracy");
          if (pred.is_symbolic() || labels.is_symbolic())
            in.fail(a.pos, "accuracy() needs values: these tensors are symbolic (static mode)",
                    "compute it on what run(...) returns");
          if (is_floating(labels.dtype()))
            in.fail(a.positions[1],
                    "accuracy(): labels must be class indices (int64), got " + std::string(dtype_name(labels.dtype())),
                    "labels.long()");
          const bool logits = pred.dim() == labels.dim() + 1;
          if (!(logits && pred.dim() == 2) && pred.shape() != labels.shape())
            in.fail(a.pos,
                    "accuracy(): logits " + shape_str(pred.shape()) + " and labels " + shape_str(labels.shape()) +
                        " do not match",
                    "logits [N, classes] with labels [N], or predicted classes [N] with labels [N]");
          if (logits && pred.size(0) != labels.size(0))
            in.fail(a.pos, "accuracy(): " + std::to_string(pred.size(0)) + " rows of logits but " +
                               std::to_string(labels.size(0)) + " labels");
          const Tensor p = pred.to(Device::cpu).contiguous(), y = labels.to(Device::cpu).contiguous();
          const int64_t n = y.numel();
          if (n == 0) return Value::Real(0);
          int64_t right = 0;
          if (logits) {
            const int64_t classes = p.size(1);
            for (int64_t i = 0; i < n; ++i) {  // the first largest, as argmax
              int64_t best = 0;
              for (int64_t c = 1; c < classes; ++c)
                if (p.get(i * classes + c) > p.get(i * classes + best)) best = c;
              right += best == static_cast<int64_t>(y.get(i)) ? 1 : 0;
            }
          } else {
            for (int64_t i = 0; i < n; ++i) right += p.get(i) == y.get(i) ? 1 : 0;
          }
          return Value::Real(static_cast<double>(right) / static_cast<double>(n));
        });
}

void install_training_builtins(std::map<std::string, Builtin>& table) {
  install_optimizer_builtins(table);
  install_data_builtins(table);
  install_model_builtins(table);
}

}  // namespace opscope::lang
