// Small helpers shared by the tests.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/gradcheck.h"
#include "core/op.h"
#include "core/tensor.h"
#include "core/workspace.h"

namespace opscope::test {

inline Tensor randn(const Shape& shape, uint64_t seed, DType dtype = DType::f64, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd(0.0, scale);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = nd(rng);
  return Tensor::from_vector<double>(v, shape, dtype);
}

// Uniform in [-1, 1).
inline Tensor uniform(const Shape& shape, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& e : v) e = u(rng);
  return Tensor::from_vector<double>(v, shape, dtype);
}

inline Tensor param(Tensor t) {
  t.set_requires_grad(true);
  return t;
}

// Max |a - b| over all elements (shapes must match).
inline double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get(i) - b.get(i)));
  return m;
}

inline double max_diff(const Tensor& a, const std::vector<double>& b) {
  REQUIRE(a.numel() == static_cast<int64_t>(b.size()));
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get(i) - b[i]));
  return m;
}

// Every gradcheck case of `op`, in every algorithm, passes.
inline void require_gradcheck(const std::string& op) {
  auto results = gradcheck_op(OpRegistry::instance().get(op));
  REQUIRE(!results.empty());
  for (auto& r : results) {
    INFO(r.op << " [" << r.algo << "] case " << r.case_index << " (" << r.note << "): " << r.message);
    CHECK(r.passed);
  }
}

}  // namespace opscope::test
