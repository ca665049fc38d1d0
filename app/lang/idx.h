// IDX files, the format of MNIST and Fashion-MNIST: a magic number (0, 0, type, rank), the
// rank's sizes as big-endian 32-bit integers, then the data, big-endian, row-major. A file
// compressed with gzip (.gz, as Debian ships them) is read through zlib.
#pragma once
#include <string>

#include "core/tensor.h"

namespace opscope::lang {

// Reads an IDX file (plain or gzip). uint8 data of rank >= 2 (images) becomes float32 in
// [0, 1] (each byte / 255); rank-1 integer data (labels) and other integer types become
// int64; float32 and float64 stay as they are. `limit` >= 0 reads only the first `limit`
// items along axis 0. Sizes are checked against the file (and, compressed, against the size
// gzip records) before the tensor (category `input`) is allocated. Every failure is an
// opscope::Error naming the file.
Tensor load_idx(const std::string& path, int64_t limit = -1);

}  // namespace opscope::lang
