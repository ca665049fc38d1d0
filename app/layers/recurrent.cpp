#include "app/layers/recurrent.h"

#include "core/error.h"
#include "core/interrupt.h"
#include "core/workspace.h"

namespace opscope {

const char* recurrent_cell_name(RecurrentCell c) {
  switch (c) {
    case RecurrentCell::lstm: return "lstm";
    case RecurrentCell::gru: return "gru";
    default: return "rnn";
  }
}

int recurrent_gates(RecurrentCell c) { return c == RecurrentCell::lstm ? 4 : c == RecurrentCell::gru ? 3 : 1; }

namespace {

using Ints = std::vector<int64_t>;

// A scope for the guard's lifetime (exceptions included).
class Scope {
 public:
  Scope(Workspace& ws, const std::string& name) : ws_(ws) { ws.push_scope(name); }
  ~Scope() { ws_.pop_scope(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Workspace& ws_;
};

// The cell's ops, each a registered op called in the workspace (a node of the graph).
class Builder {
 public:
  Builder(Workspace& ws, const RecurrentSpec& spec, int64_t hidden) : ws_(ws), spec_(spec), H_(hidden) {}

  Tensor op(const char* name, const std::vector<Tensor>& ins, const AttrMap& attrs = {}) {
    return ws_.call(name, ins, attrs);
  }
  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
    return b.defined() ? op("linear", {x, w, b}) : op("linear", {x, w});
  }
  // Gate k (in the cell's order) of a [B, G·H] pre-activation: its block of H columns.
  Tensor gate(const Tensor& g, int k) {
    const int64_t blk = spec_.gate_blocks.empty() ? k : spec_.gate_blocks[static_cast<size_t>(k)];
    if (recurrent_gates(spec_.cell) == 1) return g;
    return op("slice", {g}, {{"axis", int64_t{1}}, {"start", blk * H_}, {"stop", (blk + 1) * H_}});
  }
  Tensor part(const Tensor& v, int64_t k) {  // the k-th H elements of a vector (peepholes)
    return op("slice", {v}, {{"axis", int64_t{0}}, {"start", k * H_}, {"stop", (k + 1) * H_}});
  }

  // One LSTM step: (h, c) -> (h', c'). Peepholes (ONNX): i and f read c, o reads c'.
  void lstm_step(const Tensor& x_t, const RecurrentParams& p, const Tensor* peep, Tensor& h, Tensor& c) {
    Tensor g = op("add", {linear(x_t, p.w_ih, p.b_ih), linear(h, p.w_hh, p.b_hh)});
    g.set_name("gates");
    Tensor i_pre = gate(g, 0), f_pre = gate(g, 1), o_pre = gate(g, 3);
    if (peep) {
      i_pre = op("add", {i_pre, op("mul", {peep[0], c})});
      f_pre = op("add", {f_pre, op("mul", {peep[2], c})});
    }
    Tensor i = op("sigmoid", {i_pre}), f = op("sigmoid", {f_pre}), gg = op("tanh", {gate(g, 2)});
    i.set_name("i"), f.set_name("f"), gg.set_name("g");
    c = op("add", {op("mul", {f, c}), op("mul", {i, gg})});
    if (peep) o_pre = op("add", {o_pre, op("mul", {peep[1], c})});
    Tensor o = op("sigmoid", {o_pre});
    o.set_name("o");
    h = op("mul", {o, op("tanh", {c})});
  }

  // One GRU step: h -> h' = (1 − z) ⊙ n + z ⊙ h, with 1 − z taken as sigmoid(−z_pre): where z
  // rounds to 1 in float32, 1 − z would be 0 and sigmoid(−z_pre) keeps its digits. (PyTorch
  // computes n + z ⊙ (h − n): the same up to rounding.)
  void gru_step(const Tensor& x_t, const RecurrentParams& p, const Tensor& w_hn, const Tensor& b_hn, Tensor& h) {
    Tensor gx = linear(x_t, p.w_ih, p.b_ih), gh = linear(h, p.w_hh, p.b_hh);
    Tensor r = op("sigmoid", {op("add", {gate(gx, 0), gate(gh, 0)})});
    Tensor z_pre = op("add", {gate(gx, 1), gate(gh, 1)});
    Tensor z = op("sigmoid", {z_pre}), keep = op("sigmoid", {op("neg", {z_pre})});
    r.set_name("r"), z.set_name("z"), keep.set_name("1 - z");
    Tensor hn = spec_.linear_before_reset ? op("mul", {r, gate(gh, 2)}) : linear(op("mul", {r, h}), w_hn, b_hn);
    Tensor n = op("tanh", {op("add", {gate(gx, 2), hn})});
    n.set_name("n");
    h = op("add", {op("mul", {keep, n}), op("mul", {z, h})});
  }

  void rnn_step(const Tensor& x_t, const RecurrentParams& p, Tensor& h) {
    Tensor pre = op("add", {linear(x_t, p.w_ih, p.b_ih), linear(h, p.w_hh, p.b_hh)});
    h = op(spec_.cell == RecurrentCell::rnn_relu ? "relu" : "tanh", {pre});
  }

  // One layer in one direction over the T steps of `in`: returns the stacked h of every step
  // (in time order) and leaves the last step's state in h, c.
  Tensor direction(const Tensor& in, const RecurrentParams& p, bool reverse, const std::string& label, Tensor& h,
                   Tensor& c) {
    const int64_t time_axis = spec_.batch_first ? 1 : 0, T = in.shape()[static_cast<size_t>(time_axis)];
    Tensor peep[3], w_hn, b_hn;
    if (p.peephole.defined())
      for (int k = 0; k < 3; ++k) peep[k] = part(p.peephole, k);
    if (spec_.cell == RecurrentCell::gru && !spec_.linear_before_reset) {
      const int64_t blk = spec_.gate_blocks.empty() ? 2 : spec_.gate_blocks[2];
      w_hn = op("slice", {p.w_hh}, {{"axis", int64_t{0}}, {"start", blk * H_}, {"stop", (blk + 1) * H_}});
      if (p.b_hh.defined()) b_hn = part(p.b_hh, blk);
    }
    std::vector<Tensor> hs(static_cast<size_t>(T));
    for (int64_t s = 0; s < T; ++s) {
      interrupt::check();  // a step boundary: Ctrl-C stops a long sequence here (and the window draws)
      const int64_t t = reverse ? T - 1 - s : s;
      Scope step(ws_, label + "t=" + std::to_string(t));
      Tensor x_t = op("gather", {in, Tensor::scalar(static_cast<double>(t), DType::i64, MemCategory::input)},
                      {{"axis", time_axis}});
      if (spec_.cell == RecurrentCell::lstm) {
        lstm_step(x_t, p, p.peephole.defined() ? peep : nullptr, h, c);
        c.set_name("c" + std::to_string(t));
      } else if (spec_.cell == RecurrentCell::gru) {
        gru_step(x_t, p, w_hn, b_hn, h);
      } else {
        rnn_step(x_t, p, h);
      }
      h.set_name("h" + std::to_string(t));
      hs[static_cast<size_t>(t)] = h;
    }
    return op("stack", hs, {{"axis", time_axis}});
  }

 private:
  Workspace& ws_;
  const RecurrentSpec& spec_;
  int64_t H_;
};

[[noreturn]] void fail(const RecurrentSpec& spec, const std::string& what, const std::string& hint = {}) {
  throw Error(std::string(recurrent_cell_name(spec.cell)) + ": " + what,
              hint.empty() ? "weights as PyTorch's: w_ih [gates·H, input], w_hh [gates·H, H], b_ih and b_hh [gates·H]"
                           : hint);
}

void check_shape(const RecurrentSpec& spec, const Tensor& t, const Shape& want, const std::string& what) {
  if (t.defined() && t.shape() != want)
    fail(spec, what + " has shape " + shape_str(t.shape()) + ", expected " + shape_str(want));
}

// Checks every tensor against x and the hidden size before anything is built.
int64_t check_inputs(const Tensor& x, const std::vector<RecurrentParams>& params, const Tensor& h0, const Tensor& c0,
                     const RecurrentSpec& spec) {
  if (x.dim() != 3)
    fail(spec, "x must be 3-D, got " + shape_str(x.shape()),
         spec.batch_first ? "batch_first: x is [batch, time, features]"
                          : "x is [time, batch, features] (batch_first=True for [batch, time, features])");
  const int64_t dirs = spec.bidirectional ? 2 : 1, G = recurrent_gates(spec.cell);
  if (spec.layers < 1) fail(spec, "num_layers must be at least 1");
  if (static_cast<int64_t>(params.size()) != spec.layers * dirs)
    fail(spec,
         std::to_string(params.size()) + " sets of weights for " + std::to_string(spec.layers) + " layer(s) × " +
             std::to_string(dirs) + " direction(s)",
         "one (w_ih, w_hh[, b_ih, b_hh]) set per layer and direction, in PyTorch's order: layer 0, layer 0 reverse, "
         "layer 1, ...");
  if (!params[0].w_hh.defined() || params[0].w_hh.dim() != 2) fail(spec, "w_hh must be a matrix [gates·H, H]");
  const int64_t H = params[0].w_hh.shape()[1], B = x.shape()[spec.batch_first ? 0 : 1];
  if (params[0].w_ih.defined() && params[0].w_ih.dim() == 2 && params[0].w_ih.shape()[1] != x.shape()[2])
    fail(spec,
         "x " + shape_str(x.shape()) + " has " + std::to_string(x.shape()[2]) + " features, but layer 0's w_ih " +
             shape_str(params[0].w_ih.shape()) + " takes " + std::to_string(params[0].w_ih.shape()[1]),
         std::string("the weights were made for another input size: ") + recurrent_cell_name(spec.cell) + "_weights(" +
             std::to_string(x.shape()[2]) + ", hidden_size) fits this x" +
             (spec.batch_first ? "" : " (or is x [batch, time, features]? then batch_first=True)"));
  for (int64_t l = 0; l < spec.layers; ++l)
    for (int64_t d = 0; d < dirs; ++d) {
      const RecurrentParams& p = params[static_cast<size_t>(l * dirs + d)];
      const std::string where = "layer " + std::to_string(l) + (d ? " (reverse)" : "") + ": ";
      const int64_t in = l == 0 ? x.shape()[2] : dirs * H;
      if (!p.w_ih.defined()) fail(spec, where + "w_ih is missing");
      check_shape(spec, p.w_ih, {G * H, in}, where + "w_ih");
      check_shape(spec, p.w_hh, {G * H, H}, where + "w_hh");
      check_shape(spec, p.b_ih, {G * H}, where + "b_ih");
      check_shape(spec, p.b_hh, {G * H}, where + "b_hh");
      check_shape(spec, p.peephole, {3 * H}, where + "the peepholes");
    }
  check_shape(spec, h0, {spec.layers * dirs, B, H}, "h0");
  check_shape(spec, c0, {spec.layers * dirs, B, H}, "c0");
  return H;
}

}  // namespace

RecurrentOutputs run_recurrent(Workspace& ws, const Tensor& x, const std::vector<RecurrentParams>& params,
                               const Tensor& h0, const Tensor& c0, const RecurrentSpec& spec) {
  const int64_t H = check_inputs(x, params, h0, c0, spec);
  const int64_t dirs = spec.bidirectional ? 2 : 1, B = x.shape()[spec.batch_first ? 0 : 1];
  Builder b(ws, spec, H);
  Scope layer_scope(ws, spec.scope.empty() ? recurrent_cell_name(spec.cell) : spec.scope);
  const bool lstm = spec.cell == RecurrentCell::lstm;
  auto initial = [&](const Tensor& s, int64_t k) {
    if (!s.defined()) return Tensor::zeros({B, H}, x.dtype(), MemCategory::input);
    return b.op("gather", {s, Tensor::scalar(static_cast<double>(k), DType::i64, MemCategory::input)},
                {{"axis", int64_t{0}}});
  };
  Tensor in = x;
  std::vector<Tensor> h_last, c_last;
  for (int64_t l = 0; l < spec.layers; ++l) {
    std::vector<Tensor> ys;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t k = l * dirs + d;
      Tensor h = initial(h0, k), c = lstm ? initial(c0, k) : Tensor();
      std::string label = spec.layers > 1 ? "layer " + std::to_string(l) + " " : "";
      if (d) label += "reverse ";
      ys.push_back(b.direction(in, params[static_cast<size_t>(k)], d == 1, label, h, c));
      h_last.push_back(h);
      if (lstm) c_last.push_back(c);
    }
    in = dirs == 1 ? ys[0] : b.op("concat", ys, {{"axis", int64_t{2}}});
  }
  RecurrentOutputs out;
  out.y = in;
  out.h_n = b.op("stack", h_last, {{"axis", int64_t{0}}});
  if (lstm) out.c_n = b.op("stack", c_last, {{"axis", int64_t{0}}});
  return out;
}

}  // namespace opscope
