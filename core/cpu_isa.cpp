#include "core/cpu_isa.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/heap.h"
#include "core/parallel.h"

namespace opscope {

namespace {

bool cpu_has_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // libgcc's cpuid reading also checks XGETBV: the OS must save the opmask and zmm state.
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

CpuIsa initial_isa() {
  const CpuIsa best = detected_cpu_isa();
  const char* env = std::getenv("OPSCOPE_CPU_ISA");
  if (!env || !*env) return best;
  try {
    const CpuIsa asked = parse_cpu_isa(env);
    if (asked == CpuIsa::avx512 && best != CpuIsa::avx512) {
      std::fprintf(stderr, "opscope: OPSCOPE_CPU_ISA=%s, but this CPU has no AVX-512: using the baseline\n", env);
      return CpuIsa::baseline;
    }
    return asked;
  } catch (const Error& e) {
    std::fprintf(stderr, "opscope: ignoring OPSCOPE_CPU_ISA: %s (%s)\n", e.what(), e.hint().c_str());
    return best;
  }
}

std::atomic<CpuIsa>& active() {
  static std::atomic<CpuIsa> isa{initial_isa()};
  return isa;
}

std::function<CpuKernelsDescription()>& describer() {
  static std::function<CpuKernelsDescription()> f;
  return f;
}

}  // namespace

void set_cpu_kernels_describer(std::function<CpuKernelsDescription()> describe) { describer() = std::move(describe); }

std::string cpu_description() {
  const int n = num_threads();
  CpuKernelsDescription d;
  if (describer()) d = describer()();
  else d.kernels = std::string(cpu_isa_name(cpu_isa())) + " kernels";
  std::string s = d.kernels + ", " + std::to_string(n) + " thread" + (n == 1 ? "" : "s") + " (" +
                  std::to_string(hardware_threads()) + " cores)";
  if (!d.blas.empty()) s += "; BLAS: " + d.blas;
  return s + "; heap: " + heap_allocator_name();
}

const char* cpu_isa_name(CpuIsa isa) { return isa == CpuIsa::avx512 ? "AVX-512 (x86-64-v4)" : "AVX2+FMA (x86-64-v3)"; }

const char* cpu_isa_short_name(CpuIsa isa) { return isa == CpuIsa::avx512 ? "avx512" : "baseline"; }

CpuIsa detected_cpu_isa() {
  static const CpuIsa best = cpu_has_avx512() ? CpuIsa::avx512 : CpuIsa::baseline;
  return best;
}

CpuIsa cpu_isa() { return active().load(std::memory_order_relaxed); }

void set_cpu_isa(CpuIsa isa) {
  if (isa == CpuIsa::avx512 && detected_cpu_isa() != CpuIsa::avx512)
    throw Error("this CPU cannot run the AVX-512 kernels", "the baseline (AVX2+FMA) kernels run everywhere");
  active().store(isa, std::memory_order_relaxed);
}

CpuIsa parse_cpu_isa(const std::string& name) {
  if (name == "baseline" || name == "avx2" || name == "default") return CpuIsa::baseline;
  if (name == "avx512") return CpuIsa::avx512;
  throw Error("unknown CPU kernel set '" + name + "'", "choose baseline (AVX2+FMA, also 'avx2') or avx512");
}

}  // namespace opscope
