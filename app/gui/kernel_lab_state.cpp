// The Kernel Lab's state: measurements through app/kernel_lab.h's run_lab (the code `opscope
// bench` and `:bench` print from), turned into the chart's rows and the warp view's trace.
#include "app/gui/kernel_lab_state.h"

#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/gui/gui_state.h"
#include "app/gui/statement_runner.h"
#include "app/kernel_lab.h"
#include "app/lang/kernel.h"
#include "app/shipped_dir.h"
#include "core/device.h"
#include "core/error.h"
#include "viz/words.h"

#ifndef OPSCOPE_KERNELS_DIR
#define OPSCOPE_KERNELS_DIR nullptr
#endif

namespace opscope::app {

namespace {

using nlohmann::json;

// A simulated row's output differing from the reference by more than this is marked wrong (TF32
// and half inputs round to ~1e-3).
constexpr double kWrongAbove = 1e-2;

std::string formatted(const char* format, const std::string& arg) {
  char text[640];
  std::snprintf(text, sizeof text, format, arg.c_str());
  return text;
}

viz::LabChartRow cpu_row(const LabRow& row, const std::string& reference) {
  viz::LabChartRow r;
  r.algo = row.algo;
  r.where = "CPU, measured";
  r.ok = row.ok;
  r.error = row.error;
  r.reference = row.algo == reference;
  r.max_error = row.max_error;
  r.seconds = row.seconds;
  r.gflops = row.gflops;
  r.gbytes = row.gbytes;
  r.intensity = row.gbytes > 0 ? row.gflops / row.gbytes : 0;
  return r;
}

// A simulated row: the time is the launches' time bounds on the GPU preset; the bytes are the
// DRAM sectors the counters saw (no cache modelled), so a badly coalesced kernel sits low.
viz::LabChartRow sim_row(const LabRow& row, const std::string& reference, viz::LabChart& chart) {
  viz::LabChartRow r;
  r.algo = row.algo;
  r.simulated = true;
  r.ok = row.ok;
  r.error = row.error;
  r.reference = row.algo == reference;
  r.max_error = row.max_error;
  if (!row.ok || row.device_report.empty()) return r;
  const json rep = json::parse(row.device_report);
  chart.gpu = rep.value("gpu", "");
  chart.gpu_peak_gflops = rep.value("peak_flops_per_s", 0.0) / 1e9;
  chart.gpu_bandwidth_gbs = rep.value("dram_bytes_per_s", 0.0) / 1e9;
  r.where = chart.gpu + ", simulated";
  double us = 0, dram = 0;
  bool library = false;
  for (const auto& l : rep["launches"]) {
    us += l.value("time_bound_us", 0.0);
    dram += l.value("dram_bytes", 0.0);
    library = library || l.value("library", false);
  }
  if (library) r.where = chart.gpu + ", library (not simulated)";
  const double flops = row.gflops * row.seconds * 1e9;  // the op's cost model, as run_lab computed it
  r.seconds = us * 1e-6;
  r.gflops = r.seconds > 0 ? flops / r.seconds / 1e9 : 0;
  r.gbytes = r.seconds > 0 ? dram / r.seconds / 1e9 : 0;
  r.intensity = dram > 0 ? flops / dram : 0;
  if (!r.reference && r.max_error > kWrongAbove) {
    r.ok = false;
    r.error = "differs from " + reference + " by " + std::to_string(r.max_error);
  }
  return r;
}

// [SECTION] source lines for the warp view
const std::vector<std::string>& source_lines(const std::string& file) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  std::vector<std::string> lines;
  const std::string dir = find_shipped_dir("OPSCOPE_KERNELS", OPSCOPE_KERNELS_DIR, "ops/cuda", "kernels",
                                           [](const std::filesystem::path& d) {
                                             return std::filesystem::is_regular_file(d / "matmul.cu");
                                           });
  // Only a plain file name from the trace, never a path: the trace names the base name.
  if (!dir.empty() && file.find('/') == std::string::npos && file.find("..") == std::string::npos) {
    std::ifstream in(std::filesystem::path(dir) / file);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  return cache.emplace(file, std::move(lines)).first->second;
}

std::string source_text(const std::string& file, int line) {
  const auto& lines = source_lines(file);
  if (line < 1 || size_t(line) > lines.size()) return "";
  std::string t = lines[size_t(line) - 1];
  t.erase(0, t.find_first_not_of(" \t"));
  return t;
}

WarpTrace parse_trace(const std::string& algo, const json& t) {
  WarpTrace w;
  w.algo = algo;
  w.kernel = t.value("kernel", "");
  for (int i = 0; i < 3; ++i) w.block[i] = t["block"][size_t(i)].get<unsigned>();
  for (const auto& b : t["barriers"]) w.barriers.push_back(b.get<std::string>());
  w.total_requests = t.value("total_requests", uint64_t(0));
  for (const auto& r : t["requests"]) {
    viz::WarpRequest q;
    const std::string file = r.value("file", "");
    const int line = r.value("line", 0);
    q.where = file + ":" + std::to_string(line);
    q.source = source_text(file, line);
    q.shared = r.value("space", "") == "shared";
    q.access = r.value("access", "");
    q.site = r.value("site", 0);
    q.warp = r.value("warp", 0);
    q.phase = r.value("phase", 0);
    q.allocation = r.value("allocation", -1);
    q.sectors = r.value("sectors", uint64_t(0));
    q.wavefronts = r.value("wavefronts", uint64_t(0));
    q.words = r.value("words", uint64_t(0));
    for (const auto& l : r["lanes"]) q.lanes.push_back({l[0].get<int>(), l[1].get<uint64_t>(), l[2].get<int>()});
    w.requests.push_back(std::move(q));
  }
  return w;
}

// The traced block's counters per instruction, as `opscope bench --device sim --json` gives them
// per launch: the same numbers for one block.
json block_sites(const WarpTrace& w) {
  std::map<int, json> by_site;
  for (const auto& r : w.requests) {
    json& s = by_site[r.site];
    if (s.is_null())
      s = {{"site", r.site},     {"where", r.where}, {"source", r.source}, {"space", r.shared ? "shared" : "global"},
           {"access", r.access}, {"requests", 0},    {"sectors", 0},       {"wavefronts", 0},
           {"words", 0},         {"lanes", 0}};
    s["requests"] = s["requests"].get<uint64_t>() + 1;
    s["sectors"] = s["sectors"].get<uint64_t>() + r.sectors;
    s["wavefronts"] = s["wavefronts"].get<uint64_t>() + r.wavefronts;
    s["words"] = s["words"].get<uint64_t>() + r.words;
    s["lanes"] = s["lanes"].get<uint64_t>() + r.lanes.size();
  }
  json out = json::array();
  for (auto& [id, s] : by_site) {
    const double n = s["requests"].get<double>();
    s["sectors_per_request"] = s["sectors"].get<double>() / n;
    s["wavefronts_per_request"] = s["wavefronts"].get<double>() / n;
    s["words_per_request"] = s["words"].get<double>() / n;
    s["active_lanes"] = s["lanes"].get<double>() / n;
    out.push_back(s);
  }
  return out;
}

}  // namespace

void lab_open(GuiState& s, const std::string& op, const std::vector<int64_t>& sizes) {
  KernelLabState& lab = s.lab;
  lab.opened = true;  // brought forward by who asked (lab_action, a lesson's directive), not here:
  lab.op = op;  // a lesson jumping past `show: kernel_lab` to a later `show: graph` shows the graph
  lab.sizes = sizes;
  lab.error.clear();
  lab.chart = {};
  lab.description.clear();
  lab.note = KernelLabState::Note::none;
  lab.note_detail.clear();
  lab.warp = {};
  lab.view = {};
  lab.sim_available = device_available(Device::sim);
  run_busy(s, [&] {
    try {
      const LabResult cpu = run_lab(op, sizes, 3, Device::cpu);
      lab.op = cpu.op;
      lab.description = cpu.description;
      for (const LabRow& row : cpu.rows) lab.chart.rows.push_back(cpu_row(row, cpu.reference_algo));
      if (!lab.sim_available) {
        lab.note = KernelLabState::Note::no_sim;
        lab.note_detail = device_missing_message(Device::sim);
      } else {
        lab.note = KernelLabState::Note::simulated;
        try {
          const LabResult sim = run_lab(op, sizes, 1, Device::sim, lab.gpu);
          for (const LabRow& row : sim.rows) lab.chart.rows.push_back(sim_row(row, sim.reference_algo, lab.chart));
        } catch (const Error& e) {
          lab.note = KernelLabState::Note::sim_failed;
          lab.note_detail = e.what();
        }
      }
      const bool chinese = viz::chinese();  // the state JSON's title and note: English
      viz::set_chinese(false);
      lab_title_and_note(lab, lab.chart);
      viz::set_chinese(chinese);
    } catch (const Error& e) {
      lab.error = std::string(e.what()) + (e.hint().empty() ? "" : " (" + e.hint() + ")");
    }
  });
}

void lab_open_after_frame(GuiState& s, const std::string& op, const std::vector<int64_t>& sizes) {
  run_after_frame(s, [&s, op, sizes] { lab_open(s, op, sizes); });
}

void lab_open_warp(GuiState& s, const std::string& algo) {
  KernelLabState& lab = s.lab;
  lab.warp = {};
  lab.warp.algo = algo;
  lab.view = {};
  if (lab.op.empty()) {
    lab.warp.error = "open the lab on an operator first (lab OP SIZE)";
    return;
  }
  if (!device_available(Device::sim)) {
    lab.warp.error = "no simulated GPU here (" + device_missing_message(Device::sim) + "): the warp view needs it";
    return;
  }
  run_busy(s, [&] {
    try {
      LabOptions options;
      options.only_algo = algo;
      options.trace_requests = kWarpTraceMaxRequests;
      const LabResult r = run_lab(lab.op, lab.sizes, 1, Device::sim, lab.gpu, options);
      for (const LabRow& row : r.rows) {
        if (row.algo != algo) continue;
        if (!row.ok) throw Error(algo + " refused these sizes: " + row.error);
        const json rep = json::parse(row.device_report);
        if (!rep.contains("trace"))
          throw Error(algo + " launched no simulated kernel (a library call is not simulated)");
        lab.warp = parse_trace(algo, rep["trace"]);
      }
      if (lab.warp.requests.empty()) throw Error(algo + "'s first block made no memory request");
      lab_set_step(lab, 0);
    } catch (const Error& e) {
      lab.warp.error = e.what();
    }
  });
}

void lab_open_language_kernel(GuiState& s) {
  KernelLabState& lab = s.lab;
  lab.opened = true;
  lab.bring_forward = true;
  lab.sim_available = device_available(Device::sim);
  lab.warp = {};
  lab.view = {};
  const lang::LanguageKernelTrace& t = lang::last_language_kernel_trace();
  if (t.trace_json.empty()) {
    lab.warp.error = "no @kernel has been launched yet: launch one (k[blocks, threads](...)), then lab kernel";
    return;
  }
  lab.warp = parse_trace("@kernel " + t.kernel, json::parse(t.trace_json));
  // Its lines come from the kernel's own source (the student's file or console entry), not ops/cuda.
  if (t.source) {
    std::vector<std::string> lines;
    std::istringstream in(t.source->text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (viz::WarpRequest& q : lab.warp.requests) {
      const int line = std::atoi(q.where.c_str() + q.where.rfind(':') + 1);
      if (line < 1 || size_t(line) > lines.size()) continue;
      q.source = lines[size_t(line) - 1];
      q.source.erase(0, q.source.find_first_not_of(" \t"));
    }
  }
  if (lab.warp.requests.empty()) lab.warp.error = "the kernel's first block made no memory request";
  else lab_set_step(lab, 0);
}

void lab_set_step(KernelLabState& lab, int step) {
  WarpTrace& w = lab.warp;
  if (w.requests.empty()) return;
  w.step = std::clamp(step, 0, int(w.requests.size()) - 1);
  viz::WarpView& v = lab.view;
  v.algo = w.algo;
  v.kernel = w.kernel;
  v.gpu = lab.gpu;
  std::copy(std::begin(w.block), std::end(w.block), v.block);
  v.step = w.step;
  v.steps = int(w.requests.size());
  v.total_requests = w.total_requests;
  v.request = w.requests[size_t(w.step)];
  v.barrier = v.request.phase > 0 && size_t(v.request.phase) <= w.barriers.size()
                  ? w.barriers[size_t(v.request.phase) - 1]
                  : "";
  v.totals = {};
  size_t words = 0;  // the heatmap covers every shared word the trace touches, so it does not grow
  for (const auto& r : w.requests)
    if (r.shared)
      for (const auto& l : r.lanes) words = std::max<size_t>(words, (l.offset + uint64_t(l.bytes) + 3) / 4);
  v.shared_stores.assign(words, 0);
  for (int i = 0; i <= w.step; ++i) {
    const viz::WarpRequest& r = w.requests[size_t(i)];
    if (r.site == v.request.site) {
      ++v.totals.site_requests;
      v.totals.site_cost += r.shared ? r.wavefronts : r.sectors;
    }
    if (r.shared) {
      ++v.totals.shared_requests;
      v.totals.wavefronts += r.wavefronts;
      if (r.access == "store")
        for (const auto& l : r.lanes) ++v.shared_stores[l.offset / 4];
    } else {
      ++v.totals.global_requests;
      v.totals.sectors += r.sectors;
    }
  }
}

void lab_step(KernelLabState& lab, int delta) { lab_set_step(lab, lab.warp.step + delta); }

void lab_step_to_next_barrier(KernelLabState& lab) {
  const auto& rq = lab.warp.requests;
  for (size_t i = size_t(lab.warp.step) + 1; i < rq.size(); ++i)
    if (rq[i].phase > rq[size_t(lab.warp.step)].phase) return lab_set_step(lab, int(i));
  lab_set_step(lab, int(rq.size()) - 1);
}

void lab_action(GuiState& s, const std::string& args) {
  std::istringstream in(args);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty())
    throw Error("lab needs an operator",
                "lab OP SIZE..., lab warp ALGO, lab kernel, lab step [N|back|barrier|to FILE:LINE], lab gpu NAME");
  KernelLabState& lab = s.lab;
  if (words[0] == "kernel") {  // the last @kernel launched in the language
    lab_open_language_kernel(s);
    if (!lab.warp.error.empty()) s.hooks.action_errors.push_back("lab kernel: " + lab.warp.error);
  } else if (words[0] == "warp") {
    if (words.size() != 2) throw Error("lab warp takes one algorithm, e.g. lab warp tiled_conflicting");
    lab_open_warp(s, words[1]);
    if (!lab.warp.error.empty()) s.hooks.action_errors.push_back("lab warp " + words[1] + ": " + lab.warp.error);
  } else if (words[0] == "step") {
    if (lab.warp.requests.empty()) throw Error("lab step: no warp view open", "lab warp ALGO first");
    if (words.size() == 1) lab_step(lab, 1);
    else if (words[1] == "back") lab_step(lab, -1);
    else if (words[1] == "barrier") lab_step_to_next_barrier(lab);
    else if (words[1] == "to" && words.size() == 3) {  // the next request at FILE:LINE
      for (size_t i = size_t(lab.warp.step) + 1; i < lab.warp.requests.size(); ++i)
        if (lab.warp.requests[i].where == words[2]) return lab_set_step(lab, int(i));
      throw Error("lab step to " + words[2] + ": no later request at that line",
                  "a site is named file:line, e.g. matmul.cu:93");
    } else lab_step(lab, std::stoi(words[1]));
  } else if (words[0] == "gpu") {
    if (words.size() != 2) throw Error("lab gpu takes a preset: T4, RTX4090, H100 or H200");
    lab.gpu = words[1];
    if (!lab.op.empty()) lab_open(s, lab.op, lab.sizes);
  } else {
    std::vector<int64_t> sizes;
    for (size_t i = 1; i < words.size(); ++i) {
      try {
        sizes.push_back(std::stoll(words[i]));
      } catch (const std::exception&) {
        throw Error("lab " + words[0] + ": size '" + words[i] + "' is not a number", lab_usage(words[0]));
      }
    }
    lab.bring_forward = true;
    lab_open(s, words[0], sizes);
    if (!lab.error.empty()) s.hooks.action_errors.push_back("lab " + args + ": " + lab.error);
  }
}

std::string lab_state_json(const KernelLabState& lab) {
  json algos = json::array();
  for (const auto& r : lab.chart.rows) {
    json a{{"algorithm", r.algo}, {"where", r.where}, {"simulated", r.simulated}, {"ok", r.ok}};
    if (r.ok)
      a.update({{"seconds", r.seconds},
                {"gflops_per_s", r.gflops},
                {"gbytes_per_s", r.gbytes},
                {"flop_per_byte", r.intensity},
                {"reference", r.reference},
                {"max_error", r.max_error}});
    else a["error"] = r.error;
    algos.push_back(a);
  }
  json warp = json::object();
  const WarpTrace& w = lab.warp;
  if (!w.error.empty()) warp["error"] = w.error;
  if (!w.requests.empty()) {
    const viz::WarpView& v = lab.view;
    const viz::WarpRequest& q = v.request;
    json lanes = json::array();
    for (const auto& l : q.lanes) lanes.push_back({l.lane, l.offset, l.bytes});
    size_t stored = 0;
    for (int c : v.shared_stores) stored += c > 0;
    warp.update({{"algo", w.algo},
                 {"kernel", w.kernel},
                 {"block", {w.block[0], w.block[1], w.block[2]}},
                 {"step", w.step},
                 {"steps", w.requests.size()},
                 {"total_requests", w.total_requests},
                 {"barriers", w.barriers},
                 {"request",
                  {{"where", q.where},
                   {"source", q.source},
                   {"space", q.shared ? "shared" : "global"},
                   {"access", q.access},
                   {"warp", q.warp},
                   {"phase", q.phase},
                   {"allocation", q.allocation},
                   {"sectors", q.sectors},
                   {"wavefronts", q.wavefronts},
                   {"words", q.words},
                   {"lanes", lanes}}},
                 {"totals",
                  {{"global_requests", v.totals.global_requests},
                   {"sectors", v.totals.sectors},
                   {"shared_requests", v.totals.shared_requests},
                   {"wavefronts", v.totals.wavefronts}}},
                 {"shared_words", v.shared_stores.size()},
                 {"shared_words_stored", stored},
                 {"sites", block_sites(w)}});
  }
  return json{{"opened", lab.opened},     {"op", lab.op},
              {"sizes", lab.sizes},       {"gpu", lab.gpu},
              {"sim", lab.sim_available}, {"title", lab.chart.title},
              {"note", lab.chart.note},   {"error", lab.error},
              {"algos", algos},           {"frames_drawn", lab.frames_drawn},
              {"warp_view", warp}}
      .dump();
}

// The chart's title and note in the window's language at the moment of the call.
void lab_title_and_note(const KernelLabState& lab, viz::LabChart& chart) {
  chart.title = lab.op.empty() ? "" : lab.op + viz::tr(" on ") + lab.description + " (float32)";
  switch (lab.note) {
    case KernelLabState::Note::none: chart.note.clear(); break;
    case KernelLabState::Note::no_sim:
      chart.note =
          viz::tr("No simulated GPU here: only the CPU algorithms are shown.") + (" (" + lab.note_detail + ")");
      break;
    case KernelLabState::Note::simulated:
      chart.note = formatted(
          viz::tr(
              "CPU: measured now on one thread. GPU: the same CUDA kernels simulated (the `sim` device): each time is "
              "the launches' bound on a %s, max(FLOPs / peak, DRAM bytes / bandwidth, shared wavefronts / "
              "(SMs x clock)); every GPU row is checked against the simulated reference first."),
          lab.gpu);
      break;
    case KernelLabState::Note::sim_failed:
      chart.note = viz::tr("The simulated GPU could not run this operator; only the CPU algorithms are shown.") +
                   (" (" + lab.note_detail + ")");
      break;
  }
}

}  // namespace opscope::app
