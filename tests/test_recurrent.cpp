// Recurrent layers unrolled over time (app/layers/recurrent.h) through the language's lstm, gru
// and rnn: against the cells written out here in plain loops (PyTorch's formulas), in every
// layout (time or batch first, two layers, both directions); each step a scope of the graph;
// the backward pass walks time in reverse; errors name the layer and the tensor.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "tests/helpers.h"
#include "tests/lab.h"
#include "tests/workspace_state.h"

using namespace opscope;
using opscope::test::Lab;

namespace {

using Vec = std::vector<double>;

double sig(double v) { return 1 / (1 + std::exp(-v)); }

// y = W·x + b for W [rows, cols] (row-major), b [rows] (or none).
Vec affine(const Tensor& w, const Tensor* b, const Vec& x) {
  const int64_t rows = w.shape()[0], cols = w.shape()[1];
  Vec y(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double s = b ? b->get(r) : 0.0;
    for (int64_t c = 0; c < cols; ++c) s += w.get(r * cols + c) * x[static_cast<size_t>(c)];
    y[static_cast<size_t>(r)] = s;
  }
  return y;
}

// One direction of one layer, PyTorch's formulas: xs[t] the inputs, returns hs[t].
std::vector<Vec> reference_direction(const std::string& cell, const std::vector<Vec>& xs, const std::vector<Tensor>& p,
                                     bool reverse, int64_t H) {
  Vec h(static_cast<size_t>(H), 0.0), c(static_cast<size_t>(H), 0.0);
  std::vector<Vec> hs(xs.size());
  for (size_t s = 0; s < xs.size(); ++s) {
    const size_t t = reverse ? xs.size() - 1 - s : s;
    const Vec gx = affine(p[0], &p[2], xs[t]), gh = affine(p[1], &p[3], h);
    Vec nh(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      auto at = [&](const Vec& v, int64_t gate) { return v[static_cast<size_t>(gate * H + j)]; };
      if (cell == "lstm") {
        const double i = sig(at(gx, 0) + at(gh, 0)), f = sig(at(gx, 1) + at(gh, 1)),
                     g = std::tanh(at(gx, 2) + at(gh, 2)), o = sig(at(gx, 3) + at(gh, 3));
        c[static_cast<size_t>(j)] = f * c[static_cast<size_t>(j)] + i * g;
        nh[static_cast<size_t>(j)] = o * std::tanh(c[static_cast<size_t>(j)]);
      } else if (cell == "gru") {
        const double r = sig(at(gx, 0) + at(gh, 0)), z = sig(at(gx, 1) + at(gh, 1)),
                     n = std::tanh(at(gx, 2) + r * at(gh, 2));
        nh[static_cast<size_t>(j)] = (1 - z) * n + z * h[static_cast<size_t>(j)];
      } else {
        nh[static_cast<size_t>(j)] = std::tanh(at(gx, 0) + at(gh, 0));
      }
    }
    h = nh;
    hs[t] = h;
  }
  return hs;
}

// The whole stack: x [T, B, I] or [B, T, I], weights in PyTorch's flat order; y flattened in
// the layout of x.
Vec reference(const std::string& cell, const Tensor& x, const std::vector<Tensor>& w, int64_t layers, bool bidir,
              bool batch_first) {
  const int64_t T = x.shape()[batch_first ? 1 : 0], B = x.shape()[batch_first ? 0 : 1], I = x.shape()[2];
  const int64_t H = w[1].shape()[1], dirs = bidir ? 2 : 1;
  Vec out;
  std::vector<std::vector<Vec>> seq(static_cast<size_t>(B));  // per batch element, per time step
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      Vec v;
      for (int64_t i = 0; i < I; ++i) v.push_back(x.get(((batch_first ? b * T + t : t * B + b)) * I + i));
      seq[static_cast<size_t>(b)].push_back(v);
    }
  for (int64_t l = 0; l < layers; ++l)
    for (auto& xs : seq) {
      std::vector<std::vector<Vec>> dir_out;
      for (int64_t d = 0; d < dirs; ++d) {
        const size_t k = static_cast<size_t>((l * dirs + d) * 4);
        dir_out.push_back(reference_direction(cell, xs, {w[k], w[k + 1], w[k + 2], w[k + 3]}, d == 1, H));
      }
      for (size_t t = 0; t < xs.size(); ++t) {
        xs[t] = dir_out[0][t];
        if (bidir) xs[t].insert(xs[t].end(), dir_out[1][t].begin(), dir_out[1][t].end());
      }
    }
  for (int64_t i = 0; i < (batch_first ? B : T); ++i)
    for (int64_t j = 0; j < (batch_first ? T : B); ++j) {
      const Vec& v = batch_first ? seq[static_cast<size_t>(i)][static_cast<size_t>(j)]
                                 : seq[static_cast<size_t>(j)][static_cast<size_t>(i)];
      out.insert(out.end(), v.begin(), v.end());
    }
  return out;
}

// The tensors of a list variable.
std::vector<Tensor> tensors(Lab& lab, const std::string& name) {
  const lang::Value* v = lab.session.interpreter().lookup(name);
  REQUIRE(v);
  REQUIRE(v->kind() == lang::Value::list);
  std::vector<Tensor> ts;
  for (const lang::Value& e : *v->items()) ts.push_back(e.as_tensor());
  return ts;
}

}  // namespace

TEST_CASE("lstm, gru and rnn match the cells written out, in every layout", "[repl][op]") {
  for (const char* cell : {"lstm", "gru", "rnn"}) {
    for (bool bidir : {false, true})
      for (bool batch_first : {false, true}) {
        INFO(cell << " bidirectional=" << bidir << " batch_first=" << batch_first);
        Lab lab;
        const std::string opts = std::string("num_layers=2, bidirectional=") + (bidir ? "True" : "False") +
                                 ", batch_first=" + (batch_first ? "True" : "False");
        lab.ok("seed(4)\nx = randn(" + std::string(batch_first ? "2, 5, 3" : "5, 2, 3") +
               ", dtype=\"float64\")\nw = " + cell + "_weights(3, 4, dtype=\"float64\", " +
               opts.substr(0, opts.find(", batch")) + ")\nout = " + cell + "(x, w, " + opts + ")\ny = out[0]");
        const std::vector<Tensor> w = tensors(lab, "w");
        REQUIRE(w.size() == (bidir ? 16u : 8u));
        const Tensor y = test::var(lab, "y");
        CHECK(y.shape() == (batch_first ? Shape{2, 5, bidir ? 8 : 4} : Shape{5, 2, bidir ? 8 : 4}));
        CHECK(test::max_diff(y, reference(cell, test::var(lab, "x"), w, 2, bidir, batch_first)) < 1e-12);
      }
  }
}

TEST_CASE("lstm returns PyTorch's h_n and c_n, takes h0 and c0, and names its parameters as PyTorch", "[repl]") {
  Lab lab;
  lab.ok(
      "seed(2)\nw = lstm_weights(3, 4, num_layers=2, bidirectional=True)\nx = randn(6, 2, 3)\n"
      "h0 = randn(4, 2, 4)\nc0 = randn(4, 2, 4)\ny, h, c = lstm(x, w, h0, c0, num_layers=2, bidirectional=True)");
  CHECK(lab.echo("len(w)") == "16");
  CHECK(lab.echo("[w[0].shape, w[1].shape, w[8].shape]") == "[[16, 3], [16, 4], [16, 8]]");
  CHECK(lab.echo("y.shape") == "[6, 2, 8]");
  CHECK(lab.echo("h.shape") == "[4, 2, 4]");
  // The last layer's forward h_n is y's last step, its reverse one y's first step.
  CHECK(lab.echo("(h[2] - y[5, :, 0:4]).abs().max().item() < 1e-7") == "True");
  CHECK(lab.echo("(h[3] - y[0, :, 4:8]).abs().max().item() < 1e-7") == "True");
  CHECK(lab.echo("(c[0] - c0[0]).abs().max().item() > 0.01") == "True");
  lab.ok("backward((y * y).sum())");
  CHECK(lab.echo("w[0].grad.shape") == "[16, 3]");
  CHECK_FALSE(test::var(lab, "h0").grad().defined());  // h0 was not a parameter
  // Every parameter gets a gradient; the list goes into an optimizer as it is.
  lab.ok("opt = SGD(w, lr=0.1)\nopt.step()");
  CHECK(lab.echo("w[15].grad.shape") == "[16]");  // bias_hh_l1_reverse: 4 gates × 4
  CHECK(tensors(lab, "w")[4].name() == "weight_ih_l0_reverse");
}

TEST_CASE("an unrolled lstm: each step a scope, the backward pass walks time in reverse", "[repl][grad]") {
  Lab lab;
  lab.ok("seed(1)\nw = lstm_weights(2, 3)\nx = randn(4, 1, 2)\ny, h, c = lstm(x, w)\nloss = (y * y).sum()");
  std::map<int, std::string> scope_of;
  std::map<std::string, int> per_scope;
  for (const Node& n : lab.ws.graph().nodes()) {
    scope_of[n.id] = n.scope;
    ++per_scope[n.scope];
  }
  for (int t = 0; t < 4; ++t) {
    INFO("t=" << t);
    CHECK(per_scope["lstm/t=" + std::to_string(t)] >= 14);  // the cell's formula, once per step
  }
  auto run = lab.ws.build_backward(test::var(lab, "loss"));
  std::map<int, size_t> first_position;  // step -> where its first backward node runs
  for (size_t i = 0; i < run->nodes().size(); ++i) {
    const Node& b = lab.ws.graph().node(run->nodes()[i]);
    if (b.forward_of < 0) continue;
    const std::string& s = scope_of[b.forward_of];
    if (s.rfind("lstm/t=", 0) != 0) continue;
    first_position.emplace(std::stoi(s.substr(7)), i);
  }
  REQUIRE(first_position.size() == 4);
  CHECK(first_position[3] < first_position[2]);
  CHECK(first_position[2] < first_position[1]);
  CHECK(first_position[1] < first_position[0]);
  run->run_all();
  CHECK(tensors(lab, "w")[1].grad().defined());
}

TEST_CASE("recurrent layers: shape errors name the layer and the tensor, and leave the workspace as it was", "[repl]") {
  Lab lab;
  lab.ok("w = gru_weights(3, 4)\nx = randn(5, 2, 3)");
  const std::string before = test::workspace_state(lab.session);
  CHECK_FALSE(lab.run("y, h = gru(randn(5, 2, 7), w)"));
  CHECK(lab.err.find("gru: x [5, 2, 7] has 7 features, but layer 0's w_ih [12, 3] takes 3") != std::string::npos);
  CHECK(lab.err.find("gru_weights(7, hidden_size) fits this x") != std::string::npos);
  CHECK_FALSE(lab.run("y, h = gru(x, [w[0], w[1], w[0], w[3]])"));
  CHECK(lab.err.find("gru: layer 0: b_ih has shape [12, 3], expected [12]") != std::string::npos);
  CHECK_FALSE(lab.run("y, h = gru(x, w, num_layers=2)"));
  CHECK(lab.err.find("4 weights for 2 layer(s) × 1 direction(s), which take 8") != std::string::npos);
  CHECK_FALSE(lab.run("y, h = gru(x, w, randn(1, 2, 5))"));
  CHECK(lab.err.find("h0 has shape [1, 2, 5], expected [1, 2, 4]") != std::string::npos);
  CHECK_FALSE(lab.run("y, h = gru(randn(5, 3), w)"));
  CHECK(lab.err.find("x must be 3-D") != std::string::npos);
  CHECK(test::workspace_state(lab.session) == before);
  lab.ok("v = gru_weights(3, 4, bias=False)\nyv, hv = gru(x, v, bias=False)");  // bias=False: w_ih, w_hh only
  CHECK(lab.echo("len(v)") == "2");
}
