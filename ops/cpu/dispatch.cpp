// Chooses the kernel table for cpu_isa() (built for the baseline only: this file is not part
// of the per-instruction-set builds).
#include "core/error.h"
#include "ops/cpu/kernels.h"
#include "ops/gemm.h"
#include "ops/onednn_conv.h"

extern "C" const opscope::cpu::KernelTable* opscope_cpu_kernels_baseline();
#if OPSCOPE_HAVE_AVX512_KERNELS
extern "C" const opscope::cpu::KernelTable* opscope_cpu_kernels_avx512();
#endif

namespace opscope::cpu {

const KernelTable* kernels_for(CpuIsa isa) {
  if (isa == CpuIsa::baseline) return opscope_cpu_kernels_baseline();
#if OPSCOPE_HAVE_AVX512_KERNELS
  if (isa == CpuIsa::avx512) return opscope_cpu_kernels_avx512();
#endif
  return nullptr;
}

const KernelTable& kernels() {
  // Each table is built on first use; the choice is re-read so tests can switch ISAs. The
  // AVX-512 table is built only once AVX-512 is the active set (which needs a CPU that runs
  // it): its builder is compiled for AVX-512 and may use those instructions itself. Built
  // eagerly, it stopped the portable binary with SIGILL on a CPU without them (the test
  // portable_without_avx512 runs opscope on valgrind's CPU, which has none).
  static const KernelTable* baseline = kernels_for(CpuIsa::baseline);
  if (cpu_isa() == CpuIsa::avx512) {
    static const KernelTable* avx512 = kernels_for(CpuIsa::avx512);
    if (avx512) return *avx512;
  }
  return *baseline;
}

namespace {
// :device and --version say which kernels run and which BLAS.
struct Describe {
  Describe() {
    set_cpu_kernels_describer([] {
      CpuKernelsDescription d;
      d.kernels = std::string(cpu_isa_name(kernels().isa)) + " kernels";
      if (kernels().isa != detected_cpu_isa())
        d.kernels += cpu_isa() != kernels().isa
                         ? " (this build has no " + std::string(cpu_isa_name(cpu_isa())) + " kernels)"
                         : " (chosen; this CPU also runs " + std::string(cpu_isa_name(detected_cpu_isa())) + ")";
      // oneDNN is said, never loaded, here: "on first use" until a conv has opened it.
      d.blas =
          blas_description() + "; default GEMM: " + default_gemm_description() + "; oneDNN: " + onednn_description();
      return d;
    });
  }
} describe;
}  // namespace

}  // namespace opscope::cpu
