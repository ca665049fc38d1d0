// Recurrent layers (LSTM, GRU, the plain RNN), unrolled over time into the graph: they are not
// one op but the cell's formula repeated for each time step, each step a scope of its own ("t=3")
// that the graph view folds into one box. So a student sees backpropagation through time: the
// backward pass is the steps' backward nodes in reverse, the saved activations of every step are
// the memory training costs, and the last step's gradient flows back through every earlier one.
// The language's lstm()/gru() and ONNX's LSTM/GRU/RNN nodes both build them here, from
// registered ops only (linear, slice, sigmoid, tanh, mul, add, gather, stack, concat), called by
// name through the workspace as a front end calls them (app/layers knows no op's code).
//
// PyTorch's conventions: weights w_ih [G·H, I], w_hh [G·H, H], biases b_ih, b_hh [G·H] (G gates
// in the order LSTM i, f, g, o; GRU r, z, n), x [T, B, I] (batch_first: [B, T, I]),
// h0/c0 [layers·directions, B, H]; y [T, B, directions·H], h_n, c_n [layers·directions, B, H].
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"

namespace opscope {

class Workspace;

enum class RecurrentCell { rnn_tanh, rnn_relu, lstm, gru };
const char* recurrent_cell_name(RecurrentCell c);  // "lstm", "gru", "rnn"
int recurrent_gates(RecurrentCell c);  // 4, 3, 1

// One layer in one direction. Biases may be undefined (bias=False); peephole (ONNX's LSTM P, of
// [3H]: i, o, f) usually is.
struct RecurrentParams {
  Tensor w_ih, w_hh, b_ih, b_hh, peephole;
};

struct RecurrentSpec {
  RecurrentCell cell = RecurrentCell::lstm;
  int64_t layers = 1;
  bool bidirectional = false, batch_first = false;
  // The block of the stacked weights that holds each gate, in the cell's order above: PyTorch's
  // is {0, 1, 2, 3}; ONNX's LSTM stacks i, o, f, c ({0, 2, 3, 1}) and its GRU z, r, h ({1, 0, 2}).
  std::vector<int> gate_blocks;
  // GRU: n = tanh(x·W_inᵀ + b_in + r ⊙ (h·W_hnᵀ + b_hn)) (PyTorch's, the default), else
  // tanh(x·W_inᵀ + b_in + (r ⊙ h)·W_hnᵀ + b_hn) (ONNX's default).
  bool linear_before_reset = true;
  std::string scope;  // the scope all steps are in ("lstm"); empty: the cell's name
};

struct RecurrentOutputs {
  Tensor y, h_n, c_n;  // c_n: LSTM only
};

// Builds the unrolled layers in `ws` (its current mode: run now, or traced in static mode).
// `params` holds layers × directions entries (layer 0, layer 0 reverse, layer 1, ...); h0 and c0
// may be undefined (zeros). Shapes are checked first, with errors naming the layer and tensor.
RecurrentOutputs run_recurrent(Workspace& ws, const Tensor& x, const std::vector<RecurrentParams>& params,
                               const Tensor& h0, const Tensor& c0, const RecurrentSpec& spec);

}  // namespace opscope
