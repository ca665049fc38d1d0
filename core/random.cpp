#include "core/random.h"

#include <algorithm>
#include <numeric>

namespace opscope {

Tensor random_tensor(const InputSpec& s, std::mt19937_64& rng, DType float_dtype, size_t position) {
  const bool integer = s.domain == Domain::index || s.domain == Domain::mask;
  const int64_t n = shape_numel(s.shape);
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if (s.domain == Domain::normal) {
    std::normal_distribution<double> nd(0.0, 1.0);
    for (auto& x : v) x = nd(rng);
  } else {
    std::vector<int64_t> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t i = 0; i < n; ++i) {
      double& x = v[static_cast<size_t>(i)];
      switch (s.domain) {
        case Domain::any: x = u(rng); break;
        case Domain::positive: x = 1.25 + 0.75 * u(rng); break;
        case Domain::away_zero: {
          const double m = 0.6 + 0.4 * u(rng);
          x = u(rng) < 0 ? -m : m;
          break;
        }
        case Domain::distinct: {  // offset per input, so two inputs never tie either
          const double step = 2.0 / static_cast<double>(std::max<int64_t>(1, n));
          x = -1.0 + step * (static_cast<double>(perm[static_cast<size_t>(i)]) +
                             0.3 * static_cast<double>(position + 1) / 4.0);
          break;
        }
        case Domain::index:
          x = static_cast<double>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, s.index_max)));
          break;
        case Domain::mask: x = static_cast<double>(rng() % 2); break;
        case Domain::normal: break;
      }
    }
  }
  return Tensor::from_vector<double>(v, s.shape, integer ? DType::i64 : s.dtype.value_or(float_dtype),
                                     MemCategory::input);
}

Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype, Domain domain) {
  std::mt19937_64 rng(seed);
  return random_tensor(InputSpec{shape, domain}, rng, dtype);
}

std::vector<Tensor> make_case_inputs(const GradcheckCase& c, uint64_t seed, DType float_dtype) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> ins;
  for (size_t k = 0; k < c.inputs.size(); ++k) ins.push_back(random_tensor(c.inputs[k], rng, float_dtype, k));
  return ins;
}

}  // namespace opscope
