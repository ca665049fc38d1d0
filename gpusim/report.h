// What the simulator reports about the launches it ran: per launch the counters a student reads
// (grid, block, FLOPs, DRAM bytes, a time bound on a named GPU) and per memory instruction of the
// source (file:line) requests, sectors or bank wavefronts per request and active lanes. Recorded
// only between start_recording() and take_records(); the checks run always.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpusim {

enum class AccessKind : uint8_t { load, store, atomic };

struct SiteRecord {
  std::string file;  // base name, e.g. "matmul.cu"
  int line = 0;
  bool shared = false;
  AccessKind kind = AccessKind::load;
  uint64_t requests = 0, sectors = 0, wavefronts = 0, lanes = 0, bytes = 0;
  uint64_t words = 0;  // shared: distinct 4-byte words summed over requests (words = requests: broadcasts)
};

struct LaunchRecord {
  std::string kernel;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  bool library = false;  // cuBLAS: computed on the host, not simulated
  uint64_t flops = 0;    // known FLOPs (mma_sync; a library GEMM's 2·M·N·K)
  uint64_t barriers = 0;  // __syncthreads released, summed over blocks
  uint64_t accesses = 0;  // global and shared accesses of all lanes
  std::vector<std::string> hazards;  // the check that stopped the launch (its message), if one did
  std::vector<SiteRecord> sites;
  uint64_t dram_bytes() const;  // 32 bytes per global sector (no cache modelled)
  uint64_t shared_wavefronts() const;
};

struct GpuPreset {
  const char* name;
  double flops_per_s;   // FP32 peak
  double bytes_per_s;   // DRAM bandwidth
  int sms;
  double clock_hz;
  double launch_us;     // launch overhead
};
const GpuPreset* find_gpu(const std::string& name);  // "T4", "RTX4090", "H100" (or null)
std::string gpu_names();
// max(FLOPs / peak, DRAM bytes / bandwidth, shared wavefronts / (SMs × clock)) + launch overhead.
double time_bound_us(const LaunchRecord& r, const GpuPreset& gpu);

void start_recording();
std::vector<LaunchRecord> take_records();
void add_record(LaunchRecord r);

}  // namespace gpusim
