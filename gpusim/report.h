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

// The costliest request of a site (the first of the most wavefronts or sectors, in the order the
// blocks and warps ran): where it was and which lanes made it cost so much, so that feedback can say
// "lanes 0–31 read 32 words in bank 3". Shared: the lanes whose words fall in the most-loaded bank;
// global: every lane of the request.
struct WorstRequest {
  bool set = false;
  unsigned block[3] = {0, 0, 0};
  int warp = 0;  // within the block
  uint32_t lanes = 0;  // bit l: lane l of the warp
  uint64_t cost = 0;  // shared: wavefronts (the ways of its conflict); global: sectors
  int bank = -1;  // shared: the bank with the most distinct words (bank_words = cost of them)
  uint64_t span_bytes = 0;  // global: from the lowest byte any lane touched to past the highest
  int64_t stride_bytes = 0;  // global: between consecutive lanes' addresses when all are equal (else 0)
  uintptr_t first_addr = 0, last_addr = 0;  // the lowest and the highest of `lanes`' addresses
  uint64_t first_offset = 0, last_offset = 0;  // shared: from the block's shared memory; global: from its allocation
  std::string first_name, last_name;  // what a front end names those addresses ("Bt[0, 3]"), if it does
};

struct SiteRecord {
  std::string file;  // base name, e.g. "matmul.cu"
  int line = 0;
  bool shared = false;
  AccessKind kind = AccessKind::load;
  uint64_t requests = 0, sectors = 0, wavefronts = 0, lanes = 0, bytes = 0;
  uint64_t words = 0;  // shared: distinct 4-byte words summed over requests (words = requests: broadcasts)
  WorstRequest worst;
};

struct LaunchRecord {
  std::string kernel;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  bool library = false;  // cuBLAS: computed on the host, not simulated
  uint64_t flops = 0;  // known FLOPs (mma_sync; a library GEMM's 2·M·N·K)
  uint64_t barriers = 0;  // __syncthreads released, summed over blocks
  uint64_t accesses = 0;  // global and shared accesses of all lanes
  std::vector<std::string> hazards;  // the check that stopped the launch (its message), if one did
  std::vector<SiteRecord> sites;
  uint64_t dram_bytes() const;  // 32 bytes per global sector (no cache modelled)
  uint64_t shared_wavefronts() const;
};

struct GpuPreset {
  const char* name;
  double flops_per_s;  // FP32 peak
  double bytes_per_s;  // DRAM bandwidth
  int sms;
  double clock_hz;
  double launch_us;  // launch overhead
  int arch;  // compute capability as a number: 75 for sm_75
  int memory_gib;  // DRAM size
};
const GpuPreset* find_gpu(const std::string& name);  // "T4", "RTX4090", "H100" (or null)
std::string gpu_names();
// The preset the simulated device stands for (its description, cudaGetDeviceProperties): H100
// until chosen. Every kernel still runs as sm_90 code (cudaDeviceGetAttribute), whatever it is.
void choose_gpu(const std::string& name);  // throws opscope::Error for an unknown name
const GpuPreset& chosen_gpu();
// max(FLOPs / peak, DRAM bytes / bandwidth, shared wavefronts / (SMs × clock)) + launch overhead.
double time_bound_us(const LaunchRecord& r, const GpuPreset& gpu);

// A recording started inside another takes only its own launches; the outer one sees them too.
void start_recording();
std::vector<LaunchRecord> take_records();
void add_record(LaunchRecord r);

// The warp view's trace: block (0,0,0) of one launch, its memory requests in the order its warps
// issue them, each with every lane's address. Lanes run one after another up to each barrier, so
// a request is placed by its first lane's access and the barriers split the block into phases.
// Only when asked (trace_next_launch) and while recording; at most `max_requests` kept.
struct TraceLane {
  uint8_t lane;
  uint8_t bytes;
  uint64_t offset;  // global: bytes from the start of its allocation; shared: from the block's shared memory
};
struct TraceRequest {
  std::string file;  // "matmul.cu"
  int line = 0;
  bool shared = false;
  AccessKind kind = AccessKind::load;
  int site = 0;  // the memory instruction: numbered in the order the trace first meets them
  int warp = 0;
  int phase = 0;  // barriers the block passed before this request
  int allocation = -1;  // global: the allocation's number in the order the trace first touches them
  uint64_t sectors = 0, wavefronts = 0, words = 0;  // as the counters count this one request
  std::vector<TraceLane> lanes;
};
struct BlockTrace {
  std::string kernel;
  unsigned block_dim[3] = {1, 1, 1};
  std::vector<std::string> barrier_sites;  // "matmul.cu:80" of each barrier the block passed, in order
  std::vector<TraceRequest> requests;
  uint64_t total_requests = 0;  // before the bound
};
void trace_next_launch(size_t max_requests);
bool take_trace(BlockTrace& out);  // false: nothing traced since asked

}  // namespace gpusim
