// NumPy .npy files: save a tensor as NumPy writes one, and load what np.save wrote.
#pragma once
#include <string>

#include "core/tensor.h"

namespace opscope::lang {

// Writes `t` in .npy format 1.0 (2.0 only if the header would not fit in 64 KiB), C order,
// descr '<f4', '<f8' or '<i8', or NumPy's bool '|b1' when `as_bool` (every element must be
// 0 or 1). Non-contiguous tensors are written in row-major element order. The tensor must live
// on the CPU.
void save_npy(const std::string& path, const Tensor& t, bool as_bool = false);

// Reads a .npy file of format 1.0, 2.0 or 3.0 with descr f4, f8, i8 (little-endian), or i4 or
// b1 (NumPy's bool) widened to int64: opscope has no bool dtype, a mask is int64 0/1 as the
// comparisons give and where takes. Fortran-order files are transposed into C order. The
// tensor is allocated (category `input`) only after the file is known to hold all its bytes.
// Every failure is an opscope::Error naming the file.
Tensor load_npy(const std::string& path);

}  // namespace opscope::lang
