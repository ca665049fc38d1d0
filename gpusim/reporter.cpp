// The simulated GPU's launch reports for the rest of opscope (core/device.h LaunchReporter):
// what `opscope bench OP --device sim --json` prints under each algorithm's "sim".
#include <cstdio>

#include "core/device.h"
#include "core/error.h"
#include "gpusim/report.h"

namespace gpusim {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string dims(const unsigned d[3]) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + "]";
}

// Lanes of a warp as ranges: "0–31", "0, 16", "0–7, 16–23".
std::string lanes_text(uint32_t mask) {
  std::string s;
  for (int l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    int e = l;
    while (e + 1 < 32 && (mask >> (e + 1) & 1u)) ++e;
    s += (s.empty() ? "" : ", ") + std::to_string(l);
    if (e > l) s += (e == l + 1 ? ", " : "\xe2\x80\x93") + std::to_string(e);
    l = e;
  }
  return s;
}

// The site's costliest request: where, which lanes, and what made it cost (bank or sectors).
std::string worst_json(const SiteRecord& s) {
  const WorstRequest& w = s.worst;
  std::string lanes;
  for (int l = 0; l < 32; ++l)
    if (w.lanes >> l & 1u) lanes += (lanes.empty() ? "" : ", ") + std::to_string(l);
  std::string j = "{\"block\": " + dims(w.block) + ", \"warp\": " + std::to_string(w.warp) + ", \"lanes\": [" + lanes +
                  "], \"lanes_text\": " + quoted(lanes_text(w.lanes));
  if (s.shared)
    j += ", \"bank\": " + std::to_string(w.bank) + ", \"bank_words\": " + std::to_string(w.cost) +
         ", \"ways\": " + std::to_string(w.cost);
  else
    j += ", \"sectors\": " + std::to_string(w.cost) + ", \"span_bytes\": " + std::to_string(w.span_bytes) +
         ", \"stride_bytes\": " + std::to_string(w.stride_bytes);
  j += ", \"first_offset\": " + std::to_string(w.first_offset) + ", \"last_offset\": " + std::to_string(w.last_offset);
  if (!w.first_name.empty()) j += ", \"first\": " + quoted(w.first_name);
  if (!w.last_name.empty()) j += ", \"last\": " + quoted(w.last_name);
  return j + "}";
}

std::string site_json(const SiteRecord& s) {
  const double req = s.requests ? double(s.requests) : 1.0;
  const char* access = s.kind == AccessKind::load ? "load" : s.kind == AccessKind::store ? "store" : "atomic";
  return "{\"file\": " + quoted(s.file) + ", \"line\": " + std::to_string(s.line) + ", \"space\": \"" +
         (s.shared ? "shared" : "global") + "\", \"access\": \"" + access +
         "\", \"requests\": " + std::to_string(s.requests) +
         ", \"sectors_per_request\": " + number(s.shared ? 0 : s.sectors / req) +
         ", \"wavefronts_per_request\": " + number(s.shared ? s.wavefronts / req : 0) +
         ", \"active_lanes\": " + number(s.lanes / req) + (s.worst.set ? ", \"worst\": " + worst_json(s) : "") + "}";
}

std::string launch_json(const LaunchRecord& r, const GpuPreset& gpu) {
  std::string sites;
  for (const SiteRecord& s : r.sites) sites += (sites.empty() ? "" : ", ") + site_json(s);
  std::string hazards;
  for (const std::string& h : r.hazards) hazards += (hazards.empty() ? "" : ", ") + quoted(h);
  return "{\"kernel\": " + quoted(r.kernel) + ", \"grid\": " + dims(r.grid) + ", \"block\": " + dims(r.block) +
         ", \"library\": " + (r.library ? "true" : "false") + ", \"flops\": " + std::to_string(r.flops) +
         ", \"dram_bytes\": " + std::to_string(r.dram_bytes()) + ", \"barriers\": " + std::to_string(r.barriers) +
         ", \"accesses\": " + std::to_string(r.accesses) + ", \"time_bound_us\": " + number(time_bound_us(r, gpu)) +
         ", \"hazards\": [" + hazards + "], \"sites\": [" + sites + "]}";
}

const char* access_name(AccessKind k) {
  return k == AccessKind::load ? "load" : k == AccessKind::store ? "store" : "atomic";
}

// The warp view's block: each request with its lanes as [lane, offset, bytes].
std::string trace_json(const BlockTrace& t) {
  std::string requests;
  for (const TraceRequest& r : t.requests) {
    std::string lanes;
    for (const TraceLane& l : r.lanes)
      lanes += (lanes.empty() ? "[" : ", [") + std::to_string(l.lane) + ", " + std::to_string(l.offset) + ", " +
               std::to_string(l.bytes) + "]";
    requests += (requests.empty() ? "" : ", ") + std::string("{\"file\": ") + quoted(r.file) +
                ", \"line\": " + std::to_string(r.line) + ", \"space\": \"" + (r.shared ? "shared" : "global") +
                "\", \"access\": \"" + access_name(r.kind) + "\", \"site\": " + std::to_string(r.site) +
                ", \"warp\": " + std::to_string(r.warp) + ", \"phase\": " + std::to_string(r.phase) +
                ", \"allocation\": " + std::to_string(r.allocation) + ", \"sectors\": " + std::to_string(r.sectors) +
                ", \"wavefronts\": " + std::to_string(r.wavefronts) + ", \"words\": " + std::to_string(r.words) +
                ", \"lanes\": [" + lanes + "]}";
  }
  std::string barriers;
  for (const std::string& b : t.barrier_sites) barriers += (barriers.empty() ? "" : ", ") + quoted(b);
  return "{\"kernel\": " + quoted(t.kernel) + ", \"block\": " + dims(t.block_dim) + ", \"barriers\": [" + barriers +
         "], \"total_requests\": " + std::to_string(t.total_requests) + ", \"requests\": [" + requests + "]}";
}

// A check that fires fails the statement (an opscope error); the launch it stopped is still
// reported, its hazard named under "hazards".
class SimReporter final : public opscope::LaunchReporter {
 public:
  void start() override { start_recording(); }
  void trace_next_launch(size_t max_requests) override { gpusim::trace_next_launch(max_requests); }
  void choose_gpu(const std::string& gpu_name) override { gpusim::choose_gpu(gpu_name); }
  std::string take_json(const std::string& gpu_name) override {
    const std::vector<LaunchRecord> records = take_records();
    const GpuPreset* gpu = find_gpu(gpu_name);
    if (!gpu)
      throw opscope::Error("unknown GPU '" + gpu_name + "' for the simulated device's time bounds",
                           "presets: " + gpu_names());
    std::string launches;
    for (const LaunchRecord& r : records) launches += (launches.empty() ? "" : ", ") + launch_json(r, *gpu);
    BlockTrace trace;
    const std::string traced = take_trace(trace) ? ", \"trace\": " + trace_json(trace) : "";
    return "{\"gpu\": " + quoted(gpu->name) +
           ", \"simulated\": true, \"peak_flops_per_s\": " + number(gpu->flops_per_s) +
           ", \"dram_bytes_per_s\": " + number(gpu->bytes_per_s) + ", \"launches\": [" + launches + "]" + traced + "}";
  }
};

[[maybe_unused]] const bool g_registered = [] {
  static SimReporter reporter;
  opscope::register_launch_reporter(opscope::Device::sim, &reporter);
  return true;
}();

}  // namespace
}  // namespace gpusim
