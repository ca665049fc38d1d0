// Why some pointwise formulas keep a vectorised Eigen form on the CPU (ops/pointwise_cpu.h):
// each formula's plain loop (ops/pointwise.h, one element at a time, as the compiler vectorises
// it or not) against its Eigen array expression, on the same 4M float32 values, median of
// repeats. A vectorised form stays in ops/pointwise_cpu.h only where it wins here (by 25%, beyond
// the noise of a shared machine); the table also times the arithmetic formulas against Eigen,
// to show that their loops need no second form.
#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <unsupported/Eigen/SpecialFunctions>
#include <vector>

#include "bench/bench_util.h"
#include "ops/pointwise_cpu.h"

using namespace opscope;
using namespace opscope::bench;
using cpu::Formula;
using cpu::Params;
using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;

namespace {

constexpr int64_t kN = int64_t{1} << 22;
constexpr int kRepeats = 15;

struct Data {
  std::vector<float> a, b, y;
};

Data make_data(bool positive) {
  Tensor t = random_tensor({kN}, 1), u = random_tensor({kN}, 2);
  Data d{std::vector<float>(t.data<float>(), t.data<float>() + kN),
         std::vector<float>(u.data<float>(), u.data<float>() + kN), std::vector<float>(kN)};
  if (positive)
    for (auto& v : d.a) v = std::fabs(v) + 0.5f;
  return d;
}

template <Formula F>
void row(const char* label, const Params& p, bool positive, bool has_vectorised,
         const std::function<void(Data&)>& eigen) {
  Data d = make_data(positive);
  const double loop =
      median_time([&] { cpu::pointwise_loop<F, float>(d.a.data(), d.b.data(), d.y.data(), kN, p); }, kRepeats);
  const std::vector<float> by_loop = d.y;
  const double vec = median_time([&] { eigen(d); }, kRepeats);
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < kN; ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(d.y[i] - by_loop[i])));
    ref = std::max(ref, static_cast<double>(std::fabs(by_loop[i])));
  }
  const double speedup = loop / vec;
  const char* verdict = has_vectorised ? (speedup >= 1.25 ? "vectorised form kept" : "MISS: drop the vectorised form")
                                       : (speedup >= 1.25 ? "MISS: a vectorised form would pay" : "loop only");
  std::printf("%-22s %10.2f %12.2f %9.2fx %10.1e  %s\n", label, loop * 1e3, vec * 1e3, speedup,
              diff / std::max(ref, 1e-30), verdict);
}

// The engine's own chunk function (the vectorised form where there is one).
template <Formula F> std::function<void(Data&)> engine(const Params& p) {
  return [p](Data& d) { cpu::pointwise_chunk<F, float>(d.a.data(), d.b.data(), d.y.data(), kN, p); };
}
// An Eigen expression written here, for formulas that have none in the engine.
using In = Eigen::Map<const Arr>;
using Out = Eigen::Map<Arr>;
std::function<void(Data&)> eigen_of(void (*f)(const In&, const In&, Out&)) {
  return [f](Data& d) {
    In x(d.a.data(), kN), z(d.b.data(), kN);
    Out y(d.y.data(), kN);
    f(x, z, y);
  };
}

}  // namespace

int main() {
  print_build_info();
  std::printf("\n== Pointwise formulas on the CPU: the formula's loop vs its vectorised Eigen form, %lld float32 ==\n",
              static_cast<long long>(kN));
  std::printf("%-22s %10s %12s %10s %10s  %s\n", "formula", "loop (ms)", "Eigen (ms)", "speedup", "rel. diff",
              "verdict");
  const Params none, tanh_form{1, 0};
  row<Formula::exp>("exp", none, false, cpu::Vectorised<Formula::exp>::value, engine<Formula::exp>(none));
  row<Formula::log>("log", none, true, cpu::Vectorised<Formula::log>::value, engine<Formula::log>(none));
  row<Formula::sqrt>("sqrt", none, true, cpu::Vectorised<Formula::sqrt>::value, engine<Formula::sqrt>(none));
  row<Formula::tanh>("tanh", none, false, cpu::Vectorised<Formula::tanh>::value, engine<Formula::tanh>(none));
  row<Formula::sigmoid>("sigmoid", none, false, cpu::Vectorised<Formula::sigmoid>::value,
                        engine<Formula::sigmoid>(none));
  row<Formula::gelu>("gelu (erf)", none, false, cpu::Vectorised<Formula::gelu>::value, engine<Formula::gelu>(none));
  row<Formula::gelu>("gelu (tanh)", tanh_form, false, cpu::Vectorised<Formula::gelu>::value,
                     engine<Formula::gelu>(tanh_form));
  row<Formula::gelu_backward>("gelu_backward (erf)", none, false, cpu::Vectorised<Formula::gelu_backward>::value,
                              engine<Formula::gelu_backward>(none));
  row<Formula::gelu_backward>("gelu_backward (tanh)", tanh_form, false, cpu::Vectorised<Formula::gelu_backward>::value,
                              engine<Formula::gelu_backward>(tanh_form));
  row<Formula::softplus>("softplus", Params{1, 20}, false, cpu::Vectorised<Formula::softplus>::value,
                         eigen_of([](const In& x, const In&, Out& y) { y = (x > 20.f).select(x, x.exp().log1p()); }));
  // Arithmetic: the loop against an Eigen expression of the same formula.
  row<Formula::add>("add", none, false, false, eigen_of([](const In& x, const In& z, Out& y) { y = x + z; }));
  row<Formula::mul>("mul", none, false, false, eigen_of([](const In& x, const In& z, Out& y) { y = x * z; }));
  row<Formula::neg>("neg", none, false, false, eigen_of([](const In& x, const In&, Out& y) { y = -x; }));
  row<Formula::abs>("abs", none, false, false, eigen_of([](const In& x, const In&, Out& y) { y = x.abs(); }));
  row<Formula::relu>("relu", none, false, false, eigen_of([](const In& x, const In&, Out& y) { y = x.max(0.f); }));
  // The activations' backward formulas of (y, dy): x is y, z is dy.
  row<Formula::tanh_backward>("tanh_backward", none, false, cpu::Vectorised<Formula::tanh_backward>::value,
                              engine<Formula::tanh_backward>(none));
  row<Formula::sigmoid_backward>("sigmoid_backward", none, false, cpu::Vectorised<Formula::sigmoid_backward>::value,
                                 engine<Formula::sigmoid_backward>(none));
  row<Formula::relu_backward>("relu_backward", none, false, false,
                              eigen_of([](const In& x, const In& z, Out& y) { y = (x > 0.f).select(z, 0.f); }));
  row<Formula::leaky_relu>("leaky_relu", Params{0.01, 0}, false, cpu::Vectorised<Formula::leaky_relu>::value,
                           engine<Formula::leaky_relu>(Params{0.01, 0}));
  row<Formula::maximum>("maximum", none, false, false,
                        eigen_of([](const In& x, const In& z, Out& y) { y = x.max(z); }));
  return 0;
}
