// Shapes and strides (in elements), broadcasting and axis helpers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dims.h"

namespace opscope {

using Shape = Dims;
using Strides = Dims;

// Number of elements; throws on overflow or negative sizes.
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3]"
Strides contiguous_strides(const Shape& s);
// NumPy broadcasting of two shapes; `what` names the op in the error.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* what);
// The same without an error: false when some pair differs with neither side 1.
bool try_broadcast_shapes(const Shape& a, const Shape& b, Shape& out);
bool can_broadcast_to(const Shape& from, const Shape& to);
// Maps a possibly negative axis into [0, rank); throws naming `what`.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* what);
// Human size: "1.5 MiB".
std::string bytes_str(int64_t bytes);

}  // namespace opscope
