// Included by the per-instruction-set sources of ops/cpu/ only (see kernels.h): the namespace
// of this build and the functions that fill its table, one per kernel file.
#pragma once
#include "ops/cpu/kernels.h"

#ifndef OPSCOPE_CPU_NS
#error "ops/cpu kernels are compiled once per instruction set: CMake defines OPSCOPE_CPU_NS"
#endif

namespace opscope::cpu::OPSCOPE_CPU_NS {

constexpr CpuIsa kIsa =
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
    CpuIsa::avx512;
#else
    CpuIsa::baseline;
#endif

void add_gemm_kernels(KernelTable& t);
void add_softmax_kernels(KernelTable& t);
void add_norm_kernels(KernelTable& t);
void add_pool_kernels(KernelTable& t);
void add_im2col_kernels(KernelTable& t);
void add_attention_kernels(KernelTable& t);
void add_gelu_kernels(KernelTable& t);

}  // namespace opscope::cpu::OPSCOPE_CPU_NS
