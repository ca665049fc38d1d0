// Included first (-include) into a student's .cu extension compiled for the simulator
// (app/extension/compiler.cpp). gpusim/rewrite.cmake renames opscope::cuda, the namespace of
// ops/cuda/cuda_util.cuh's helpers, to opscope::gpusim_cuda (the same helpers, registering for
// Device::sim); an extension names them `cuda::stream()`, `cuda::visit_float` ... after
// `using namespace opscope`, which this alias keeps meaning the simulator's.
#pragma once

namespace opscope::gpusim_cuda {}
namespace opscope {
namespace cuda = gpusim_cuda;
}
