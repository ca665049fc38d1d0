// The counters: a block's logged accesses grouped per warp into requests, the i-th execution of
// a memory instruction (its site) by each lane forming one request, as a warp issues it; per
// request the 32-byte sectors it touches (global) or the shared-memory wavefronts it needs (32
// banks of 4 bytes: distinct words in one bank serialise, lanes reading one word share it).
// Sites are named file:line by site_text (gpusim/sites.cpp).
#include <cstdint>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/error.h"
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

}  // namespace

uint64_t sectors_of(const Request& r) {
  uintptr_t s[64];
  size_t n = 0;
  for (uint32_t i = 0; i < r.n; ++i)
    for (uintptr_t x = r.addr[i] / 32; x <= (r.addr[i] + r.bytes[i] - 1) / 32 && n < 64; ++x) s[n++] = x;
  std::sort(s, s + n);
  return uint64_t(std::unique(s, s + n) - s);
}

// Wavefronts of a shared-memory request; `words` gets the distinct 4-byte words it reads (1: a
// broadcast), `bank_out` (if asked) the lowest bank holding the most of them.
uint64_t wavefronts_of(const Request& r, uint64_t& words_out, int* bank_out) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(shared_base());
  uintptr_t words[128];
  size_t n = 0;
  for (uint32_t i = 0; i < r.n; ++i)
    for (uintptr_t w = (r.addr[i] - base) / 4; w <= (r.addr[i] - base + r.bytes[i] - 1) / 4 && n < 128; ++w)
      words[n++] = w;
  std::sort(words, words + n);
  n = size_t(std::unique(words, words + n) - words);
  words_out = n;
  int per_bank[32] = {};
  int most = 0;
  for (size_t i = 0; i < n; ++i) most = std::max(most, ++per_bank[words[i] % 32]);
  if (bank_out) {
    *bank_out = 0;
    for (int b = 0; b < 32; ++b)
      if (per_bank[b] == most) {
        *bank_out = b;
        break;
      }
  }
  return uint64_t(std::max(most, 1));
}

WorstRequest describe_request(const Request& r, uint64_t cost, int bank, uint3 block, int warp) {
  WorstRequest w;
  w.set = true;
  w.block[0] = block.x, w.block[1] = block.y, w.block[2] = block.z;
  w.warp = warp;
  w.cost = cost;
  const uintptr_t base = reinterpret_cast<uintptr_t>(shared_base());
  // A lane counts when one of its words lies in the bank (shared) or always (global).
  auto in_bank = [&](uint32_t i) {
    for (uintptr_t x = (r.addr[i] - base) / 4; x <= (r.addr[i] - base + r.bytes[i] - 1) / 4; ++x)
      if (int(x % 32) == bank) return true;
    return false;
  };
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  int first_lane = 99, last_lane = -1;
  for (uint32_t i = 0; i < r.n; ++i) {
    if (r.space == Space::shared && !in_bank(i)) continue;
    w.lanes |= uint32_t(1) << r.lane[i];
    lo = std::min(lo, r.addr[i]);
    hi = std::max(hi, r.addr[i] + r.bytes[i]);
    if (r.lane[i] < first_lane) first_lane = r.lane[i], w.first_addr = r.addr[i];
    if (r.lane[i] > last_lane) last_lane = r.lane[i], w.last_addr = r.addr[i];
  }
  if (r.space == Space::shared) {
    w.bank = bank;
    w.first_offset = w.first_addr - base, w.last_offset = w.last_addr - base;
    return w;
  }
  w.span_bytes = hi > lo ? hi - lo : 0;
  const Allocation* a = find_allocation(w.first_addr);
  w.first_offset = a ? w.first_addr - a->begin : 0;
  w.last_offset = a ? w.last_addr - a->begin : 0;
  // The stride between lanes in lane order, when every step is the same.
  uintptr_t by_lane[32];
  bool has[32] = {};
  for (uint32_t i = 0; i < r.n; ++i) by_lane[r.lane[i]] = r.addr[i], has[r.lane[i]] = true;
  int64_t stride = 0;
  int prev = -1;
  bool uniform = true;
  for (int l = 0; l < 32 && uniform; ++l) {
    if (!has[l]) continue;
    if (prev >= 0) {
      const int64_t step = (int64_t(by_lane[l]) - int64_t(by_lane[prev])) / (l - prev);
      if (step * (l - prev) != int64_t(by_lane[l]) - int64_t(by_lane[prev]) || (stride && step != stride))
        uniform = false;
      stride = step;
    }
    prev = l;
  }
  w.stride_bytes = uniform ? stride : 0;
  return w;
}

namespace {

struct Totals {
  uint64_t requests = 0, sectors = 0, wavefronts = 0, lanes = 0, bytes = 0, words = 0;
  WorstRequest worst;
};

// The running launch's totals per site, summed over its blocks.
thread_local std::unordered_map<SiteKey, Totals, SiteKeyHash> t_totals;

}  // namespace

namespace {

// A reusable open-addressing table uint64 -> uint32 (keys never 0), cleared by a generation
// stamp: the per-warp grouping runs once per warp and block, so it must not allocate.
class FlatMap {
 public:
  void reset(size_t expected) {
    size_t cap = 64;
    while (cap < expected * 2) cap *= 2;
    if (cap > keys_.size()) {
      keys_.assign(cap, 0);
      values_.assign(cap, 0);
      stamps_.assign(cap, 0);
      stamp_ = 0;
    }
    mask_ = keys_.size() - 1;
    ++stamp_;
  }
  // The value slot for key (inserted as `fresh` when new).
  uint32_t& at(uint64_t key, uint32_t fresh, bool& inserted) {
    size_t i = size_t((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
    for (;; i = (i + 1) & mask_) {
      if (stamps_[i] != stamp_) {
        stamps_[i] = stamp_;
        keys_[i] = key;
        values_[i] = fresh;
        inserted = true;
        return values_[i];
      }
      if (keys_[i] == key) {
        inserted = false;
        return values_[i];
      }
    }
  }

 private:
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_, stamps_;
  uint32_t stamp_ = 0;
  size_t mask_ = 0;
};

struct Scratch {
  std::vector<uint32_t> warp_count, warp_order;  // accesses bucketed by warp, in log order
  FlatMap occurrence, request_of;
  std::vector<Request> requests;
};

}  // namespace

void analyse_block(const std::vector<Access>& log, int threads, LaunchRecord& rec) {
  static thread_local Scratch sc;
  auto& totals = t_totals;
  rec.accesses += log.size();
  const size_t warps = size_t((threads + 31) / 32);
  // Bucket the log by warp (a counting sort keeps each lane's accesses in program order).
  sc.warp_count.assign(warps + 1, 0);
  for (const Access& a : log) ++sc.warp_count[a.lane / 32 + 1];
  for (size_t w = 0; w < warps; ++w) sc.warp_count[w + 1] += sc.warp_count[w];
  sc.warp_order.resize(log.size());
  {
    std::vector<uint32_t> next(sc.warp_count.begin(), sc.warp_count.end() - 1);
    for (uint32_t i = 0; i < log.size(); ++i) sc.warp_order[next[log[i].lane / 32]++] = i;
  }
  for (size_t w = 0; w < warps; ++w) {
    const uint32_t begin = sc.warp_count[w], end = sc.warp_count[w + 1];
    if (begin == end) continue;
    // The i-th execution of a site by each lane of the warp forms the site's i-th request.
    sc.occurrence.reset(end - begin);
    sc.request_of.reset(end - begin);
    sc.requests.clear();
    for (uint32_t j = begin; j < end; ++j) {
      const Access& a = log[sc.warp_order[j]];
      const uint64_t site_id = (reinterpret_cast<uintptr_t>(a.site) << 2 | uint64_t(a.kind)) + 1;
      bool fresh = false;
      const uint32_t occ = sc.occurrence.at(site_id << 5 | (a.lane & 31u), 0, fresh)++;
      uint32_t& r =
          sc.request_of.at(site_id * 0x100000001B3ull ^ (uint64_t(occ) << 1 | 1), uint32_t(sc.requests.size()), fresh);
      if (fresh) {
        sc.requests.emplace_back();
        Request& q = sc.requests.back();
        q.space = a.space, q.kind = a.kind, q.site = a.site, q.n = 0;
      }
      Request& q = sc.requests[r];
      if (q.n < 32) {
        q.addr[q.n] = a.addr;
        q.lane[q.n] = uint8_t(a.lane & 31u);
        q.bytes[q.n++] = a.bytes;
      }
    }
    for (const Request& q : sc.requests) {
      Totals& t = totals[SiteKey{q.site, q.kind, q.space}];
      ++t.requests;
      t.lanes += q.n;
      for (uint32_t i = 0; i < q.n; ++i) t.bytes += q.bytes[i];
      // The site's costliest request so far is described (rarely: only when one costs more).
      if (q.space == Space::global) {
        const uint64_t sectors = sectors_of(q);
        t.sectors += sectors;
        if (sectors > t.worst.cost) t.worst = describe_request(q, sectors, -1, g_view.block, int(w));
      } else {
        uint64_t words = 0;
        int bank = 0;
        const uint64_t ways = wavefronts_of(q, words, &bank);
        t.wavefronts += ways;
        t.words += words;
        if (ways > t.worst.cost) t.worst = describe_request(q, ways, bank, g_view.block, int(w));
      }
    }
  }
}

std::function<std::string(uintptr_t, bool)> g_address_namer;
void set_address_namer(std::function<std::string(uintptr_t, bool)> namer) { g_address_namer = std::move(namer); }

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
    s.worst = std::move(t.worst);
    if (s.worst.set && g_address_namer) {
      s.worst.first_name = g_address_namer(s.worst.first_addr, s.shared);
      s.worst.last_name = g_address_namer(s.worst.last_addr, s.shared);
    }
    rec.sites.push_back(std::move(s));
  }
  t_totals.clear();
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

// Recordings nest (a test records around a statement whose interpreter records for
// last_launch()): each open one remembers where its launches begin; the inner one takes its own
// and leaves them to the outer.
std::vector<size_t> g_recording_starts;

void start_recording() {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  if (g_recording_starts.empty()) g_records.clear();
  g_recording_starts.push_back(g_records.size());
  g_recording = true;
}
std::vector<LaunchRecord> take_records() {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  if (g_recording_starts.empty()) return {};
  const size_t start = g_recording_starts.back();
  g_recording_starts.pop_back();
  std::vector<LaunchRecord> taken(g_records.begin() + static_cast<std::ptrdiff_t>(start), g_records.end());
  if (g_recording_starts.empty()) {
    g_recording = false;
    g_records.clear();
  }
  return taken;
}
void add_record(LaunchRecord r) {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  g_records.push_back(std::move(r));
}

namespace {
// Public datasheet figures: FP32 (non-tensor) peak, DRAM bandwidth, SMs, boost clock.
const GpuPreset kGpus[] = {
    {"T4", 8.1e12, 320e9, 40, 1.59e9, 3.0, 75, 16},
    {"RTX4090", 82.6e12, 1008e9, 128, 2.52e9, 3.0, 89, 24},
    {"H100", 67e12, 3.35e12, 132, 1.98e9, 3.0, 90, 80},
    {"H200", 67e12, 4.8e12, 132, 1.98e9, 3.0, 90, 141},
};
std::atomic<const GpuPreset*> g_chosen{&kGpus[2]};  // H100: what the simulator said before presets were chosen
}  // namespace

void choose_gpu(const std::string& name) {
  const GpuPreset* g = find_gpu(name);
  if (!g) throw opscope::Error("unknown GPU '" + name + "' for the simulated device", "presets: " + gpu_names());
  g_chosen.store(g);
}
const GpuPreset& chosen_gpu() { return *g_chosen.load(); }

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
