// The warp view's trace: the first block of the next launch, request by request, with each lane's
// address. Grouped as the counters group (the i-th execution of a site by the lanes of a warp is
// one request) and costed by the same functions, so the view and the counters cannot disagree.
// Bounded: only when asked, one block, at most max_requests kept.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "gpusim/state.h"

namespace gpusim {

namespace {

std::mutex g_trace_mutex;
size_t g_trace_max = 0;  // 0: nothing asked
bool g_trace_ready = false;
BlockTrace g_trace;
std::vector<size_t> g_barrier_log_sizes;  // the block's log size at each barrier it passed
std::vector<const void*> g_barrier_sites;

bool first_block(uint3 b) { return b.x == 0 && b.y == 0 && b.z == 0; }

// The file and line of a site, split ("matmul.cu:71" -> "matmul.cu", 71).
void split_site(const void* site, std::string& file, int& line) {
  const std::string where = site_text(site);
  const size_t colon = where.rfind(':');
  file = where.substr(0, colon);
  line = colon == std::string::npos ? 0 : std::atoi(where.c_str() + colon + 1);
}

}  // namespace

void trace_next_launch(size_t max_requests) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  g_trace_max = std::max<size_t>(max_requests, 1);
  g_trace_ready = false;
  g_trace = {};
  g_barrier_log_sizes.clear();
  g_barrier_sites.clear();
}

bool take_trace(BlockTrace& out) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  if (!g_trace_ready) return false;
  out = std::move(g_trace);
  g_trace = {};
  g_trace_ready = false;
  return true;
}

bool tracing_block(const LaunchInfo&, uint3 block) { return g_trace_max > 0 && first_block(block) && g_recording; }

void note_traced_barrier(const void* site) {
  if (!g_view.launch || !g_log || !tracing_block(*g_view.launch, g_view.block)) return;
  g_barrier_log_sizes.push_back(g_log->size());
  g_barrier_sites.push_back(site);
}

void trace_block(const std::vector<Access>& log) {
  struct Built {
    Request q;
    size_t first = 0;  // the log index of its first access: the order the warps issued it in
    int warp = 0;
    uint8_t lane[32];  // each access's lane within the warp
  };
  std::vector<Built> built;
  // (warp, site, kind, occurrence) -> request; the occurrence counted per (site, kind, lane).
  std::map<std::tuple<int, const void*, int, uint32_t>, size_t> request_of;
  std::map<std::tuple<const void*, int, int>, uint32_t> occurrence;
  for (size_t i = 0; i < log.size(); ++i) {
    const Access& a = log[i];
    const int warp = a.lane / 32;
    const uint32_t occ = occurrence[{a.site, int(a.kind), a.lane}]++;
    auto [it, fresh] = request_of.try_emplace({warp, a.site, int(a.kind), occ}, built.size());
    if (fresh) {
      built.push_back({});
      built.back().q.space = a.space, built.back().q.kind = a.kind, built.back().q.site = a.site;
      built.back().first = i;
      built.back().warp = warp;
    }
    Request& q = built[it->second].q;
    if (q.n < 32) {
      built[it->second].lane[q.n] = uint8_t(a.lane % 32);
      q.lane[q.n] = uint8_t(a.lane % 32);
      q.addr[q.n] = a.addr;
      q.bytes[q.n] = a.bytes;
      ++q.n;
    }
  }
  std::sort(built.begin(), built.end(), [](const Built& x, const Built& y) { return x.first < y.first; });

  std::lock_guard<std::mutex> lock(g_trace_mutex);
  BlockTrace& t = g_trace;
  t.kernel = g_view.launch ? g_view.launch->kernel : "";
  t.block_dim[0] = g_view.block_dim.x, t.block_dim[1] = g_view.block_dim.y, t.block_dim[2] = g_view.block_dim.z;
  for (const void* s : g_barrier_sites) t.barrier_sites.push_back(site_text(s));
  t.total_requests = built.size();
  std::vector<uintptr_t> allocations;  // begin of each allocation, in first-touched order
  std::vector<const void*> sites;  // each instruction, in first-met order
  const uintptr_t shared = reinterpret_cast<uintptr_t>(shared_base());
  for (const Built& b : built) {
    if (t.requests.size() >= g_trace_max) break;
    TraceRequest r;
    split_site(b.q.site, r.file, r.line);
    r.shared = b.q.space == Space::shared;
    r.kind = b.q.kind;
    r.warp = b.warp;
    const auto site = std::find(sites.begin(), sites.end(), b.q.site);
    r.site = int(site - sites.begin());
    if (site == sites.end()) sites.push_back(b.q.site);
    r.phase = int(std::upper_bound(g_barrier_log_sizes.begin(), g_barrier_log_sizes.end(), b.first) -
                  g_barrier_log_sizes.begin());
    uintptr_t base = shared;
    if (r.shared) {
      r.wavefronts = wavefronts_of(b.q, r.words);
    } else {
      r.sectors = sectors_of(b.q);
      const Allocation* alloc = find_allocation(b.q.addr[0]);
      base = alloc ? alloc->begin : 0;
      auto at = std::find(allocations.begin(), allocations.end(), base);
      r.allocation = int(at - allocations.begin());
      if (at == allocations.end()) allocations.push_back(base);
    }
    for (uint32_t i = 0; i < b.q.n; ++i) r.lanes.push_back({b.lane[i], b.q.bytes[i], uint64_t(b.q.addr[i] - base)});
    t.requests.push_back(std::move(r));
  }
  g_trace_max = 0;  // one block per ask
  g_trace_ready = true;
}

}  // namespace gpusim
