// Launchers of tests/gpusim/defects.cu's kernels (the simulated GPU only): each has one defect
// that a check of the simulator must report.
#pragma once

namespace gpusim_defects {
void launch_missing_barrier(const float* A, const float* B, float* C, int n);  // n×n matmul
void launch_off_by_one(const float* x, float* y, int n);
void launch_unaligned_float4(const float* x, float* y, int n4);
void launch_barrier_after_return(float* y, int n);  // n < 64
void launch_half_warp_shuffle(float* y);  // 32 floats
}  // namespace gpusim_defects
