// The instruction sets of this CPU and the kernel set chosen for them, once, at start-up (as
// ATen's CPU capability dispatch does): the portable binary keeps its x86-64-v3 baseline
// (AVX2 + FMA) and runs the hot kernels of ops/cpu built for AVX-512 where the CPU and the OS
// support it. OPSCOPE_CPU_ISA=baseline (or avx2) forces the baseline, for tests and comparisons.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace opscope {

enum class CpuIsa : uint8_t { baseline, avx512 };
constexpr int kNumCpuIsas = 2;

// "AVX2+FMA (x86-64-v3)", "AVX-512 (x86-64-v4)"; the short names are those of OPSCOPE_CPU_ISA.
const char* cpu_isa_name(CpuIsa isa);
const char* cpu_isa_short_name(CpuIsa isa);  // "baseline", "avx512"

// The best kernel set this CPU and OS can run (AVX-512 needs F, BW, CD, DQ and VL, and the OS
// saving the zmm registers).
CpuIsa detected_cpu_isa();
// The kernel set in use: detected_cpu_isa(), unless OPSCOPE_CPU_ISA asks for the baseline.
CpuIsa cpu_isa();
// Switches the kernel set (tests run both); throws when the CPU cannot run it.
void set_cpu_isa(CpuIsa isa);
// Parses "baseline", "avx2", "avx512" (else a student error listing them).
CpuIsa parse_cpu_isa(const std::string& name);

// What the CPU runs, for :device and --version: "AVX-512 (x86-64-v4) kernels, 2 threads,
// BLAS: OpenBLAS 0.3.21 (...)". The kernels and the BLAS live in ops/, which registers the
// function describing them (core names no library of ops).
std::string cpu_description();
struct CpuKernelsDescription {
  std::string kernels;  // "AVX-512 (x86-64-v4) kernels"
  std::string blas;  // "OpenBLAS 0.3.21 (SkylakeX kernels, ...)"
};
void set_cpu_kernels_describer(std::function<CpuKernelsDescription()> describe);

// Restores the kernel set on scope exit (tests).
class CpuIsaScope {
 public:
  explicit CpuIsaScope(CpuIsa isa) : prev_(cpu_isa()) { set_cpu_isa(isa); }
  ~CpuIsaScope() { set_cpu_isa(prev_); }
  CpuIsaScope(const CpuIsaScope&) = delete;
  CpuIsaScope& operator=(const CpuIsaScope&) = delete;

 private:
  CpuIsa prev_;
};

}  // namespace opscope
