// Random inputs, reproducible from a seed: the one helper the gradcheck, the generated CUDA
// tests, the other tests, the benchmarks and the kernel lab draw their values from.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "core/op.h"

namespace opscope {

// A tensor of `shape` with values of `domain` (float_dtype unless index/mask: int64), drawn
// from `rng`. `position` is the input's place in its case: two distinct inputs never tie.
Tensor random_tensor(const InputSpec& spec, std::mt19937_64& rng, DType float_dtype = DType::f64, size_t position = 0);
// The same from a seed of its own.
Tensor random_tensor(const Shape& shape, uint64_t seed, DType dtype = DType::f32, Domain domain = Domain::normal);
// Every input of a case, one stream from `seed` (float inputs in float_dtype).
std::vector<Tensor> make_case_inputs(const GradcheckCase& c, uint64_t seed, DType float_dtype = DType::f64);

}  // namespace opscope
