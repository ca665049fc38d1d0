// The entry point of one build of the kernels: its table, filled by each kernel file.
#include "ops/cpu/isa_build.h"

#define OPSCOPE_CPU_ENTRY_NAME2(ns) opscope_cpu_kernels_##ns
#define OPSCOPE_CPU_ENTRY_NAME(ns) OPSCOPE_CPU_ENTRY_NAME2(ns)

extern "C" const opscope::cpu::KernelTable* OPSCOPE_CPU_ENTRY_NAME(OPSCOPE_CPU_NS)() {
  namespace here = opscope::cpu::OPSCOPE_CPU_NS;
  static const opscope::cpu::KernelTable table = [] {
    opscope::cpu::KernelTable t;
    t.isa = here::kIsa;
    here::add_gemm_kernels(t);
    here::add_softmax_kernels(t);
    here::add_norm_kernels(t);
    here::add_pool_kernels(t);
    here::add_im2col_kernels(t);
    here::add_attention_kernels(t);
    here::add_gelu_kernels(t);
    return t;
  }();
  return &table;
}
