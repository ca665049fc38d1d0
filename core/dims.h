// Dims: the type of shapes and strides, six extents in place (core/inline_vector.h). Every op
// copies a few shapes (its inputs' metadata, its outputs', the graph's record of each value);
// attributes hold shapes as std::vector<int64_t>, which converts both ways.
#pragma once
#include "core/inline_vector.h"

namespace opscope {

using Dims = InlineVector<int64_t, 6>;

}  // namespace opscope
