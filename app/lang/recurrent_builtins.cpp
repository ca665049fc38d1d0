// The language's recurrent layers: lstm, gru and rnn unrolled over time (ops/recurrent.h), with
// PyTorch's weights as a flat list (nn.LSTM's _flat_weights order: per layer and direction
// w_ih, w_hh, b_ih, b_hh), and lstm_weights/gru_weights/rnn_weights that make such a list of
// parameters, named and initialised as PyTorch's modules do.
#include "app/lang/recurrent_builtins.h"

#include <cmath>
#include <random>

#include "app/lang/interpreter.h"
#include "app/layers/recurrent.h"

namespace opscope::lang {

namespace {

bool flag(Interpreter& in, CallArgs& a, const char* name, bool def) {
  const Value* v = keyword(a, name);
  return v ? in.truthy(*v, a.pos) : def;
}

int64_t int_kw(Interpreter& in, CallArgs& a, const char* name, int64_t def) {
  const Value* v = keyword(a, name);
  if (!v) return def;
  if (v->kind() != Value::integer) in.fail(a.pos, std::string(name) + " must be an integer");
  return v->as_int();
}

// The tensors of a list argument.
std::vector<Tensor> tensor_list(Interpreter& in, CallArgs& a, size_t i, const std::string& fn) {
  if (i >= a.positional.size() || (a.positional[i].kind() != Value::list && a.positional[i].kind() != Value::tuple))
    in.fail(i < a.positions.size() ? a.positions[i] : a.pos,
            fn + "() takes its weights as a list: [w_ih, w_hh, b_ih, b_hh, ...]",
            "make one with " + fn + "_weights(input_size, hidden_size, num_layers=..., bidirectional=...)");
  std::vector<Tensor> ts;
  for (const Value& v : *a.positional[i].items()) {
    if (v.kind() != Value::tensor)
      in.fail(a.positions[i], fn + "(): the weights list holds a " + kind_name(v) + ", not a tensor");
    ts.push_back(v.as_tensor());
  }
  return ts;
}

const Value* tensor_kw(Interpreter& in, CallArgs& a, const char* name, size_t position) {
  if (position < a.positional.size()) return &a.positional[position];
  const Value* v = keyword(a, name);
  if (v && v->kind() != Value::tensor && v->kind() != Value::none)
    in.fail(a.pos, std::string(name) + " must be a tensor or None");
  return v;
}

Value run(Interpreter& in, CallArgs& a, RecurrentCell cell) {
  const std::string fn = recurrent_cell_name(cell);
  const bool lstm = cell == RecurrentCell::lstm;
  if (lstm) check_keywords(in, a, fn, {"h0", "c0", "num_layers", "bidirectional", "batch_first", "bias"});
  else if (cell == RecurrentCell::gru)
    check_keywords(in, a, fn, {"h0", "num_layers", "bidirectional", "batch_first", "bias"});
  else check_keywords(in, a, fn, {"h0", "num_layers", "bidirectional", "batch_first", "bias", "nonlinearity"});
  need_args(in, a, fn, 2, lstm ? 4 : 3);
  RecurrentSpec spec;
  spec.cell = cell;
  if (const Value* nl = keyword(a, "nonlinearity")) {
    if (nl->kind() != Value::string || (nl->as_str() != "tanh" && nl->as_str() != "relu"))
      in.fail(a.pos, "nonlinearity must be \"tanh\" or \"relu\"");
    if (nl->as_str() == "relu") spec.cell = RecurrentCell::rnn_relu;
  }
  spec.layers = int_kw(in, a, "num_layers", 1);
  spec.bidirectional = flag(in, a, "bidirectional", false);
  spec.batch_first = flag(in, a, "batch_first", false);
  const Tensor& x = tensor_arg(in, a, 0, fn);
  const std::vector<Tensor> w = tensor_list(in, a, 1, fn);
  const int64_t dirs = spec.bidirectional ? 2 : 1, sets = spec.layers * dirs;
  const size_t per = flag(in, a, "bias", true) ? 4 : 2;
  if (spec.layers < 1) in.fail(a.pos, "num_layers must be at least 1");
  if (w.size() != per * static_cast<size_t>(sets))
    in.fail(a.positions[1],
            fn + "(): " + std::to_string(w.size()) + " weights for " + std::to_string(spec.layers) + " layer(s) × " +
                std::to_string(dirs) + " direction(s), which take " + std::to_string(per * static_cast<size_t>(sets)),
            per == 4 ? "per layer and direction: w_ih, w_hh, b_ih, b_hh in PyTorch's order (bias=False: w_ih, w_hh)"
                     : "bias=False: per layer and direction w_ih, w_hh");
  std::vector<RecurrentParams> params;
  for (size_t k = 0; k < static_cast<size_t>(sets); ++k) {
    RecurrentParams p;
    p.w_ih = w[k * per];
    p.w_hh = w[k * per + 1];
    if (per == 4) p.b_ih = w[k * per + 2], p.b_hh = w[k * per + 3];
    params.push_back(p);
  }
  const Value* h0 = tensor_kw(in, a, "h0", 2);
  const Value* c0 = lstm ? tensor_kw(in, a, "c0", 3) : nullptr;
  auto defined = [](const Value* v) { return v && v->kind() == Value::tensor ? v->as_tensor() : Tensor(); };
  RecurrentOutputs r;
  try {
    r = run_recurrent(in.ws(), x, params, defined(h0), defined(c0), spec);
  } catch (const LangError&) {
    throw;
  } catch (const Error& e) {
    in.fail(a.pos, e.what(), e.hint());
  }
  std::vector<Value> outs = {Value::Tensor_(r.y), Value::Tensor_(r.h_n)};
  if (lstm) outs.push_back(Value::Tensor_(r.c_n));
  return Value::List(std::move(outs), Value::tuple);
}

// PyTorch's initialisation of nn.LSTM/GRU/RNN: every weight and bias U(−1/√H, 1/√H), named
// weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0 (…_reverse for the second direction).
Value make_weights(Interpreter& in, CallArgs& a, RecurrentCell cell) {
  const std::string fn = std::string(recurrent_cell_name(cell)) + "_weights";
  check_keywords(in, a, fn, {"num_layers", "bidirectional", "bias", "dtype"});
  need_args(in, a, fn, 2, 2);
  for (size_t i = 0; i < 2; ++i)
    if (a.positional[i].kind() != Value::integer || a.positional[i].as_int() < 1)
      in.fail(a.positions[i], fn + "() takes input_size and hidden_size as positive integers");
  const int64_t I = a.positional[0].as_int(), H = a.positional[1].as_int(), G = recurrent_gates(cell);
  const int64_t layers = int_kw(in, a, "num_layers", 1), dirs = flag(in, a, "bidirectional", false) ? 2 : 1;
  if (layers < 1) in.fail(a.pos, "num_layers must be at least 1");
  const bool bias = flag(in, a, "bias", true);
  const DType dt = dtype_arg(in, a, DType::f32);
  std::uniform_real_distribution<double> u(-1.0 / std::sqrt(static_cast<double>(H)),
                                           1.0 / std::sqrt(static_cast<double>(H)));
  std::vector<Value> out;
  auto make = [&](const Shape& s, const std::string& name) {
    Tensor t = Tensor::empty(s, DType::f64, MemCategory::input);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(in.rng());
    t = t.cast(dt, MemCategory::input);
    try {
      if (t.device() != in.ws().default_device()) t = t.to(in.ws().default_device(), MemCategory::input);
      t.set_requires_grad(true);
    } catch (const Error& e) {
      in.fail(a.pos, e.what(), e.hint());
    }
    t.set_name(name);
    out.push_back(Value::Tensor_(t));
  };
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const int64_t in_size = l == 0 ? I : dirs * H;
      make({G * H, in_size}, "weight_ih" + sfx);
      make({G * H, H}, "weight_hh" + sfx);
      if (bias) {
        make({G * H}, "bias_ih" + sfx);
        make({G * H}, "bias_hh" + sfx);
      }
    }
  return Value::List(std::move(out));
}

}  // namespace

void install_recurrent_builtins(BuiltinTable& B) {
  B.add("lstm", "lstm(x, weights, h0=None, c0=None, num_layers=1, bidirectional=False, batch_first=False, bias=True)",
        "an LSTM unrolled over time, each step a scope of the graph: returns (y, h_n, c_n) as torch.nn.LSTM",
        [](Interpreter& in, CallArgs& a) { return run(in, a, RecurrentCell::lstm); });
  B.add("gru", "gru(x, weights, h0=None, num_layers=1, bidirectional=False, batch_first=False, bias=True)",
        "a GRU unrolled over time, each step a scope of the graph: returns (y, h_n) as torch.nn.GRU",
        [](Interpreter& in, CallArgs& a) { return run(in, a, RecurrentCell::gru); });
  B.add("rnn",
        "rnn(x, weights, h0=None, nonlinearity=\"tanh\", num_layers=1, bidirectional=False, batch_first=False, "
        "bias=True)",
        "an Elman RNN h' = tanh(x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh) unrolled over time: returns (y, h_n)",
        [](Interpreter& in, CallArgs& a) { return run(in, a, RecurrentCell::rnn_tanh); });
  for (RecurrentCell cell : {RecurrentCell::lstm, RecurrentCell::gru, RecurrentCell::rnn_tanh}) {
    const std::string name = std::string(recurrent_cell_name(cell)) + "_weights";
    B.add(name, name + "(input_size, hidden_size, num_layers=1, bidirectional=False, bias=True)",
          "the parameters of a " + std::string(recurrent_cell_name(cell)) +
              " as PyTorch makes them (U(±1/√hidden), named weight_ih_l0, ...), a list in the order the layer takes",
          [cell](Interpreter& in, CallArgs& a) { return make_weights(in, a, cell); });
  }
}

}  // namespace opscope::lang
