// gelu and gelu_backward in float32 at this build's vector width (built per instruction set):
// the same Eigen array expressions as ops/pointwise_cpu.h's vectorised forms, whose erf, exp
// and tanh are polynomial approximations evaluated a packet at a time. The baseline build has
// 8 lanes; the AVX-512 build 16, which the op's generic path (compiled for the baseline only)
// cannot reach. float64 keeps the formula's loop (std::erf, exact to the last bit or so), so
// gradcheck sees no approximation.
#include "ops/cpu/isa_build.h"
#include "ops/pointwise_cpu.h"

namespace opscope::cpu::OPSCOPE_CPU_NS {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;

// y = gelu(x), or y = gelu_backward(x, dy) when dy is not null; n contiguous elements.
void gelu_f32(const float* x, const float* dy, float* y, int64_t n, bool tanh_form) {
  pointwise::Params p;
  p.p0 = tanh_form ? 1 : 0;
  Eigen::Map<const Arr> xs(x, n), dys(dy ? dy : x, n);
  Eigen::Map<Arr> out(y, n);
  if (dy) Vectorised<Formula::gelu_backward>::run<float>(xs, dys, out, p);
  else Vectorised<Formula::gelu>::run<float>(xs, xs, out, p);
}

}  // namespace

void add_gelu_kernels(KernelTable& t) { t.f32.gelu = gelu_f32; }

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
