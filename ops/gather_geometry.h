// gather's geometry, shared by the CPU kernels (ops/embedding.cpp) and the CUDA ones
// (ops/cuda/nn.cu); Eigen-free so nvcc compiles it: x seen as [outer, n, inner] around the
// gathered axis, and how many indices are taken.
#pragma once
#include <cstdint>

#include "core/shape.h"

namespace opscope {

struct GatherGeom {
  int64_t outer = 1, n = 0, inner = 1, count = 0;
};

inline GatherGeom gather_geom(const Shape& x, int64_t axis, int64_t count) {
  GatherGeom g;
  for (int64_t a = 0; a < axis; ++a) g.outer *= x[static_cast<size_t>(a)];
  g.n = x[static_cast<size_t>(axis)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < x.size(); ++a) g.inner *= x[a];
  g.count = count;
  return g;
}

}  // namespace opscope
