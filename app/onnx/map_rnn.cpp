// ONNX LSTM, GRU and RNN as opscope's recurrent layers (app/layers/recurrent.h), unrolled over time in
// the graph. One ONNX node is one layer in one or both directions; its weights stack the gates
// in ONNX's order (LSTM i, o, f, c; GRU z, r, h) where PyTorch's are i, f, g, o and r, z, n, and
// its bias B [directions, 2·G·H] holds PyTorch's b_ih then b_hh. PyTorch's exporter writes
// exactly these nodes (with linear_before_reset=1 for GRU); each direction's weights are taken
// out of them by gather and slice nodes, so gradients reach the model's initializers.
#include "app/layers/recurrent.h"
#include "app/onnx/map_context.h"

namespace opscope::interop {
namespace {

using Ints = std::vector<int64_t>;

Tensor pick(NodeCtx& c, const Tensor& t, int64_t d) {  // t[d] along axis 0
  return c.call("gather", {t, Tensor::scalar(static_cast<double>(d), DType::i64, MemCategory::input)},
                {{"axis", int64_t{0}}});
}

Tensor half(NodeCtx& c, const Tensor& b, bool second) {  // B's first (Wb) or second (Rb) half
  const int64_t n = b.shape()[0] / 2;
  return c.call("slice", {b}, {{"axis", int64_t{0}}, {"start", second ? n : int64_t{0}}, {"stop", second ? 2 * n : n}});
}

// The activations a node asks for must be the cell's own (ONNX lets each be chosen); an RNN may
// take Relu instead of Tanh for all its directions.
void check_activations(NodeCtx& c, RecurrentSpec& spec) {
  const OnnxAttribute* a = c.node().attribute("activations");
  if (!a) return;
  if (a->kind != OnnxAttribute::Kind::strings) c.fail("attribute 'activations' must be a list of strings");
  const std::vector<std::string> expected =
      spec.cell == RecurrentCell::lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : spec.cell == RecurrentCell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                        : std::vector<std::string>{"Tanh"};
  const bool rnn = spec.cell == RecurrentCell::rnn_tanh;
  int relus = 0;
  for (size_t i = 0; i < a->strings.size(); ++i) {
    const std::string& got = a->strings[i];
    if (rnn && got == "Relu") ++relus;
    else if (got != expected[i % expected.size()])
      c.unsupported("activation \"" + got + "\" where the cell uses " + expected[i % expected.size()] +
                    " (opscope's cells have their standard activations)");
  }
  if (relus > 0 && relus != static_cast<int>(a->strings.size()))
    c.unsupported("an RNN with Tanh in one direction and Relu in the other");
  if (relus > 0) spec.cell = RecurrentCell::rnn_relu;
}

std::vector<Slot> map_recurrent(NodeCtx& c, RecurrentCell cell) {
  c.allow_attrs({"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size",
                 "input_forget", "layout", "linear_before_reset"});
  RecurrentSpec spec;
  spec.cell = cell;
  if (c.has_attr("clip")) c.unsupported("clip (opscope's cells do not clip their pre-activations)");
  if (c.attr_int("input_forget", 0) != 0) c.unsupported("input_forget=1 (coupled input and forget gates)");
  if (c.has_attr("activation_alpha") || c.has_attr("activation_beta")) c.unsupported("activation_alpha/beta");
  const std::string direction = c.attr_string("direction", "forward");
  if (direction != "forward" && direction != "bidirectional")
    c.unsupported("direction \"" + direction + "\" (opscope's layers run forward, or both ways)");
  spec.bidirectional = direction == "bidirectional";
  spec.batch_first = c.attr_int("layout", 0) == 1;
  if (cell == RecurrentCell::lstm) spec.gate_blocks = {0, 2, 3, 1};  // i, f, g(c), o in ONNX's i, o, f, c
  if (cell == RecurrentCell::gru) {
    spec.gate_blocks = {1, 0, 2};  // r, z, n(h) in ONNX's z, r, h
    spec.linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  }
  const int64_t dirs = spec.bidirectional ? 2 : 1;
  check_activations(c, spec);
  const std::string& name = c.node().name;  // the steps' scope: the node's own name ("LSTM_1")
  spec.scope = name.empty() ? recurrent_cell_name(cell) : name.substr(name.rfind('/') + 1);
  const Tensor& x = c.in(0);
  if (x.dim() != 3) c.fail("X must be 3-D, got " + shape_str(x.shape()));
  const int64_t T = x.shape()[spec.batch_first ? 1 : 0];
  if (c.has(4)) {
    const Ints lens = c.ints_input(4, "sequence_lens");
    for (int64_t len : lens)
      if (len != T)
        c.unsupported("sequences of different lengths (sequence_lens " + attr_value_str(lens) +
                      ", T = " + std::to_string(T) + ")");
  }
  const int64_t H = c.attr_int("hidden_size", c.in(2).shape().back());
  if (c.in(1).dim() != 3 || c.in(1).shape()[0] != dirs)
    c.fail("W " + shape_str(c.in(1).shape()) + " must be [" + std::to_string(dirs) + ", gates·" + std::to_string(H) +
           ", input]");
  std::vector<RecurrentParams> params;
  for (int64_t d = 0; d < dirs; ++d) {
    RecurrentParams p;
    p.w_ih = pick(c, c.in(1), d);
    p.w_hh = pick(c, c.in(2), d);
    if (c.has(3)) {
      const Tensor b = pick(c, c.in(3), d);
      p.b_ih = half(c, b, false);
      p.b_hh = half(c, b, true);
    }
    if (cell == RecurrentCell::lstm && c.has(7)) p.peephole = pick(c, c.in(7), d);
    params.push_back(p);
  }
  // Initial states: [directions, B, H] (layout 1: [B, directions, H]).
  auto state = [&](size_t i) -> Tensor {
    if (!c.has(i)) return {};
    return spec.batch_first ? c.call("permute", {c.in(i)}, {{"dims", Ints{1, 0, 2}}}) : c.in(i);
  };
  const RecurrentOutputs r =
      run_recurrent(current_workspace(), x, params, state(5), cell == RecurrentCell::lstm ? state(6) : Tensor(), spec);
  // y [T, B, directions·H] → Y [T, directions, B, H]; batch_first: [B, T, directions·H] → [B, T, directions, H].
  const int64_t B = x.shape()[spec.batch_first ? 0 : 1];
  std::vector<Slot> outs;
  if (spec.batch_first) {
    outs.push_back(Slot{c.call("reshape", {r.y}, {{"shape", Ints{B, T, dirs, H}}}), false});
  } else {
    Tensor y = c.call("reshape", {r.y}, {{"shape", Ints{T, B, dirs, H}}});
    outs.push_back(Slot{c.call("permute", {y}, {{"dims", Ints{0, 2, 1, 3}}}), false});
  }
  auto final_state = [&](const Tensor& s) {
    return spec.batch_first ? c.call("permute", {s}, {{"dims", Ints{1, 0, 2}}}) : s;
  };
  outs.push_back(Slot{final_state(r.h_n), false});
  if (cell == RecurrentCell::lstm) outs.push_back(Slot{final_state(r.c_n), false});
  return outs;
}

}  // namespace

void add_rnn_mappers(MapperTable& t) {
  t["LSTM"] = [](NodeCtx& c) { return map_recurrent(c, RecurrentCell::lstm); };
  t["GRU"] = [](NodeCtx& c) { return map_recurrent(c, RecurrentCell::gru); };
  t["RNN"] = [](NodeCtx& c) { return map_recurrent(c, RecurrentCell::rnn_tanh); };
}

}  // namespace opscope::interop
