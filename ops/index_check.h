// An index outside its range is one error for both devices, naming the op, the value and where
// it was (the CPU finds it in its loop, the CUDA kernels on the device, ops/cuda/cuda_util.cuh).
#pragma once
#include <cstdint>
#include <string>

#include "core/error.h"

namespace opscope {

// embedding's indices into a table of V rows.
inline Error index_out_of_range(const std::string& op, int64_t value, int64_t position, int64_t V) {
  return Error(op + ": index " + std::to_string(value) + " (at flat position " + std::to_string(position) +
                   ") of indices is out of range for num_embeddings V=" + std::to_string(V),
               "every index must be in [0, " + std::to_string(V) + ")");
}

// gather's indices along an axis of n positions (negative ones count from the end).
inline Error gather_index_out_of_range(const std::string& op, int64_t value, int64_t position, int64_t n) {
  return Error(op + ": index " + std::to_string(value) + " (at flat position " + std::to_string(position) +
                   " of indices) is out of range for an axis of size " + std::to_string(n),
               "indices must be in [-" + std::to_string(n) + ", " + std::to_string(n) + ")");
}

// The index as a position in [0, n): negative counts from the end; else an error naming it.
inline int64_t gather_index(int64_t v, int64_t flat, int64_t n, const std::string& op) {
  const int64_t i = v < 0 ? v + n : v;
  if (i < 0 || i >= n) throw gather_index_out_of_range(op, v, flat, n);
  return i;
}

// A loss's class targets for logits of C classes.
inline Error target_out_of_range(const std::string& op, int64_t value, int64_t position, int64_t C) {
  return Error(op + ": target " + std::to_string(value) + " at index " + std::to_string(position) +
                   " is out of range [0, " + std::to_string(C) + ") for logits with C = " + std::to_string(C) +
                   " classes",
               "targets are class indices 0 .. C-1; check the number of classes in the last layer");
}

}  // namespace opscope
