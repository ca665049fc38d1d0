// The counters: a block's logged accesses grouped per warp into requests, the i-th execution of
// a memory instruction (its site) by each lane forming one request, as a warp issues it; per
// request the 32-byte sectors it touches (global) or the shared-memory wavefronts it needs (32
// banks of 4 bytes: distinct words in one bank serialise, lanes reading one word share it).
// Sites are named file:line from the program's own debug line tables (libbacktrace).
#include <backtrace.h>

#include <cstring>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "gpusim/state.h"

namespace gpusim {

namespace {

struct SiteKey {
  const void* site;
  AccessKind kind;
  Space space;
  bool operator==(const SiteKey&) const = default;
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const { return std::hash<const void*>()(k.site) * 4 + size_t(k.kind); }
};

struct Request {
  Space space;
  AccessKind kind;
  const void* site;
  std::vector<std::pair<uintptr_t, uint8_t>> lanes;  // address, bytes
};

uint64_t sectors_of(const Request& r) {
  std::vector<uintptr_t> s;
  for (auto [a, n] : r.lanes)
    for (uintptr_t x = a / 32; x <= (a + n - 1) / 32; ++x) s.push_back(x);
  std::sort(s.begin(), s.end());
  return uint64_t(std::unique(s.begin(), s.end()) - s.begin());
}

// Wavefronts of a shared-memory request; `words` gets the distinct 4-byte words it reads (1: a broadcast).
uint64_t wavefronts_of(const Request& r, uint64_t& words_out) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(shared_base());
  std::vector<uintptr_t> words;
  for (auto [a, n] : r.lanes)
    for (uintptr_t w = (a - base) / 4; w <= (a - base + n - 1) / 4; ++w) words.push_back(w);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  words_out = words.size();
  int per_bank[32] = {};
  int most = 0;
  for (uintptr_t w : words) most = std::max(most, ++per_bank[w % 32]);
  return uint64_t(std::max(most, 1));
}

struct Totals {
  uint64_t requests = 0, sectors = 0, wavefronts = 0, lanes = 0, bytes = 0, words = 0;
};

// The running launch's totals per site, summed over its blocks.
thread_local std::unordered_map<SiteKey, Totals, SiteKeyHash> t_totals;

}  // namespace

void analyse_block(const std::vector<Access>& log, int threads, LaunchRecord& rec) {
  auto& totals = t_totals;
  rec.accesses += log.size();
  const int warps = (threads + 31) / 32;
  // Per warp: the occurrence of each (lane, site), then requests keyed by (site, occurrence).
  std::vector<std::vector<const Access*>> by_warp(static_cast<size_t>(warps));
  for (const Access& a : log) by_warp[a.lane / 32].push_back(&a);
  for (auto& accesses : by_warp) {
    std::unordered_map<uint64_t, uint32_t> occurrence;  // (site hash, lane) -> count
    std::unordered_map<uint64_t, size_t> request_of;
    std::vector<Request> requests;
    for (const Access* a : accesses) {
      const uint64_t site_id = reinterpret_cast<uintptr_t>(a->site) * 4 + uint64_t(a->kind);
      const uint32_t occ = occurrence[site_id * 64 + a->lane % 32]++;
      const uint64_t key = site_id * 0x9E3779B97F4A7C15ull ^ occ;
      auto [it, fresh] = request_of.try_emplace(key, requests.size());
      if (fresh) requests.push_back(Request{a->space, a->kind, a->site, {}});
      requests[it->second].lanes.emplace_back(a->addr, a->bytes);
    }
    for (const Request& r : requests) {
      Totals& t = totals[SiteKey{r.site, r.kind, r.space}];
      ++t.requests;
      t.lanes += r.lanes.size();
      for (auto& l : r.lanes) t.bytes += l.second;
      if (r.space == Space::global) t.sectors += sectors_of(r);
      else {
        uint64_t words = 0;
        t.wavefronts += wavefronts_of(r, words);
        t.words += words;
      }
    }
  }
}

// Turns the totals into the record's sites (called once per launch, after its last block).
void discard_totals() { t_totals.clear(); }
void finish_record(LaunchRecord& rec) {
  std::vector<std::pair<SiteKey, Totals>> v(t_totals.begin(), t_totals.end());
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first.site < b.first.site; });
  for (auto& [k, t] : v) {
    SiteRecord s;
    const std::string where = site_text(k.site);
    const size_t colon = where.rfind(':');
    s.file = where.substr(0, colon);
    s.line = colon == std::string::npos ? 0 : std::atoi(where.c_str() + colon + 1);
    s.shared = k.space == Space::shared;
    s.kind = k.kind;
    s.requests = t.requests;
    s.sectors = t.sectors;
    s.wavefronts = t.wavefronts;
    s.lanes = t.lanes;
    s.bytes = t.bytes;
    s.words = t.words;
    rec.sites.push_back(std::move(s));
  }
  t_totals.clear();
}

// --- file:line of a site --------------------------------------------------------------------------
namespace {
backtrace_state* line_tables() {
  static backtrace_state* s = backtrace_create_state(nullptr, 0, [](void*, const char*, int) {}, nullptr);
  return s;
}
}  // namespace

std::string site_text(const void* pc) {
  static std::mutex m;
  static std::unordered_map<const void*, std::string> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(pc);
  if (it != cache.end()) return it->second;
  std::string out;
  backtrace_pcinfo(
      line_tables(), reinterpret_cast<uintptr_t>(pc) - 1,
      [](void* data, uintptr_t, const char* file, int line, const char*) -> int {
        if (!file) return 0;
        const char* base = std::strrchr(file, '/');
        *static_cast<std::string*>(data) = std::string(base ? base + 1 : file) + ":" + std::to_string(line);
        return 1;  // the innermost (inlined) frame: the access's own line
      },
      [](void*, const char*, int) {}, &out);
  if (out.empty()) out = "?:0";
  cache.emplace(pc, out);
  return out;
}

// --- records and the GPUs' time bound ------------------------------------------------------------
namespace {
std::mutex g_records_mutex;
std::vector<LaunchRecord> g_records;
}  // namespace

uint64_t LaunchRecord::dram_bytes() const {
  uint64_t b = 0;
  for (const SiteRecord& s : sites)
    if (!s.shared) b += s.sectors * 32;
  return b;
}
uint64_t LaunchRecord::shared_wavefronts() const {
  uint64_t w = 0;
  for (const SiteRecord& s : sites) w += s.wavefronts;
  return w;
}

void start_recording() {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  g_records.clear();
  g_recording = true;
}
std::vector<LaunchRecord> take_records() {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  g_recording = false;
  return std::exchange(g_records, {});
}
void add_record(LaunchRecord r) {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  g_records.push_back(std::move(r));
}

namespace {
// Public datasheet figures: FP32 (non-tensor) peak, DRAM bandwidth, SMs, boost clock.
const GpuPreset kGpus[] = {
    {"T4", 8.1e12, 320e9, 40, 1.59e9, 3.0},
    {"RTX4090", 82.6e12, 1008e9, 128, 2.52e9, 3.0},
    {"H100", 67e12, 3.35e12, 132, 1.98e9, 3.0},
    {"H200", 67e12, 4.8e12, 132, 1.98e9, 3.0},
};
}  // namespace

const GpuPreset* find_gpu(const std::string& name) {
  for (const GpuPreset& g : kGpus)
    if (name == g.name) return &g;
  return nullptr;
}
std::string gpu_names() {
  std::string s;
  for (const GpuPreset& g : kGpus) s += std::string(s.empty() ? "" : ", ") + g.name;
  return s;
}
double time_bound_us(const LaunchRecord& r, const GpuPreset& g) {
  const double compute = double(r.flops) / g.flops_per_s, memory = double(r.dram_bytes()) / g.bytes_per_s,
               shared = double(r.shared_wavefronts()) / (double(g.sms) * g.clock_hz);
  return std::max({compute, memory, shared}) * 1e6 + g.launch_us;
}

}  // namespace gpusim
