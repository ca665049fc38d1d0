// Real models at full size in the window (issue 31): ViT-B/16 at 224x224, ResNet-50 and
// DenseNet-121 at 64x64 and a GPT-2-small-shaped decoder, exported by Debian's PyTorch with
// random weights. For each: the import's time and peak resident memory against the file's size,
// and `opscope gui --open` as a user runs it: the time from the process's start to the first
// frame showing the model, the slowest frame while it opens, the layout work, and (ViT-B/16,
// GPT-2) the slowest frame while its backward pass is stepped. With --before OPSCOPE, the same
// runs of another build (main before this work) in the same table.
//
//   /usr/bin/python3 tools/make_onnx_models.py --zoo DIR          # ~1 GB, a few minutes
//   xvfb-run -a -s "-screen 0 1600x1000x24" ./build/bench_models DIR [--before OPSCOPE] [--timeout S]
//
// Targets: open <= 1.5 s, no frame over 100 ms (>= 30 FPS between steps: <= 33 ms), import
// resident memory <= 1.3 x the file + the overhead of importing a tiny model.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"

namespace {

namespace fs = std::filesystem;

struct Run {
  bool finished = false;  // false: killed at the timeout
  double seconds = 0;
  double peak_mb = 0;  // the child's peak resident memory
};

// Runs argv to its end (or kills it after `timeout_s`), its output to /dev/null.
Run spawn(const std::vector<std::string>& argv, double timeout_s) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  std::fflush(nullptr);  // (else the child's copy of the table so far is written again)
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execv(args[0], args.data());
    _exit(127);
  }
  Run r;
  int status = 0;
  rusage use{};
  for (;;) {
    const pid_t done = wait4(pid, &status, WNOHANG, &use);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (done == pid) {
      r.finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      break;
    }
    if (r.seconds > timeout_s) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &use);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.peak_mb = static_cast<double>(use.ru_maxrss) / 1024.0;
  return r;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(f);
  } catch (...) {
    return nlohmann::json::object();
  }
}

struct Model {
  const char* name;
  const char* file;
  const char* input;  // for run(loss, x=...) when its backward is stepped ("": not stepped)
};

std::string ms_or_dash(double ms) {
  char buf[32];
  if (ms < 0) return "-";
  std::snprintf(buf, sizeof buf, "%.0f", ms);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_models ZOO_DIR [--before OPSCOPE] [--timeout S]\n"
                 "  ZOO_DIR: made by /usr/bin/python3 tools/make_onnx_models.py --zoo ZOO_DIR\n");
    return 2;
  }
  const std::string zoo = argv[1];
  std::string before;
  double timeout = 120;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--before") before = argv[i + 1];
    if (std::string(argv[i]) == "--timeout") timeout = std::stod(argv[i + 1]);
  }
  const std::string opscope = OPSCOPE_BIN, tiny = std::string(OPSCOPE_SOURCE_DIR) + "/assets/models/encoder.onnx";
  const std::string out = fs::temp_directory_path().string() + "/bench_models";
  fs::create_directories(out);
  const Model models[] = {{"ViT-B/16 224x224", "vit_b_16.onnx", "randn([1, 3, 224, 224])"},
                          {"ResNet-50 64x64", "resnet50.onnx", ""},
                          {"DenseNet-121 64x64", "densenet121.onnx", ""},
                          {"GPT-2 small T=64", "gpt2_small.onnx", "zeros([1, 64], dtype=\"int64\")"}};
  opscope::bench::print_build_info();
  std::printf(
      "Models in the window: `opscope gui --open MODEL` (layout on its worker thread) and `opscope import MODEL`\n");
  if (!before.empty()) std::printf("before: %s (the same runs, killed after %.0f s)\n", before.c_str(), timeout);
  // What importing costs beyond the weights: a tiny model's import. What a window costs here:
  // an empty one's start and frames (Mesa's software renderer draws every frame on the CPU).
  const double fixed_mb = spawn({opscope, "import", tiny}, timeout).peak_mb;
  const std::string empty_json = out + "/empty.json";
  spawn({opscope, "gui", "--frames", "30", "--state-json", empty_json}, timeout);
  const nlohmann::json empty = read_json(empty_json);
  std::printf("fixed overhead: %.0f MB resident importing %s\n", fixed_mb, fs::path(tiny).filename().c_str());
  std::printf(
      "an empty window: first frame %.0f ms after start, frames up to %.0f ms apart, opscope's work in them up to %.0f "
      "ms\n\n",
      empty.value("open_ms", -1.0), empty.value("max_frame_ms", -1.0), empty.value("max_frame_work_ms", -1.0));
  std::printf("%-20s %7s %5s | %8s %9s %7s | %8s %9s %9s %9s %7s | %10s %10s\n", "model", "file MB", "nodes",
              "import s", "import MB", "MB/file", "open ms", "frame ms", "work ms", "layout ms", "GUI MB", "step frame",
              "between");
  bool ok = true;
  for (const Model& m : models) {
    const std::string path = zoo + "/" + m.file;
    if (!fs::exists(path)) {
      std::printf("%-20s missing: %s (make it with tools/make_onnx_models.py --zoo)\n", m.name, path.c_str());
      continue;
    }
    const double file_mb = static_cast<double>(fs::file_size(path)) / (1 << 20);
    for (const std::string& bin :
         before.empty() ? std::vector<std::string>{opscope} : std::vector<std::string>{before, opscope}) {
      const bool now = bin == opscope;
      const Run imp = spawn({bin, "import", path}, timeout);
      const std::string json = out + "/open.json";
      fs::remove(json);
      // The worker lays the model out while frames go on; 30 frames are enough to show it.
      std::vector<std::string> gui{bin, "gui", "--open", path, "--frames", now ? "30" : "2", "--state-json", json};
      if (now) gui.insert(gui.end(), {"--layout", "thread"});
      const Run open = spawn(gui, timeout);
      const nlohmann::json s = read_json(json);
      // Before: no open_ms in its dump; its first frame waited for the layout, so its run of two
      // frames (start to exit) stands for it.
      const double open_ms = now ? s.value("open_ms", -1.0) : open.finished ? open.seconds * 1e3 : -1.0;
      nlohmann::json st = nlohmann::json::object();
      if (now &&
          m.input[0]) {  // the backward pass stepped, after the forward steps; measured from the first backward step
        const std::string sj = out + "/step.json";
        std::string acts = "exec loss = y.sum();exec compile(loss);exec run(loss, x=" + std::string(m.input) +
                           ", step=True);step bwd;measure";
        for (int i = 0; i < 12; ++i) acts += ";step bwd";
        const Run step = spawn({bin, "gui", "--open", path, "--frames", "40", "--layout", "thread", "--actions", acts,
                                "--state-json", sj},
                               timeout * 2);
        if (step.finished) st = read_json(sj);
      }
      const double imp_ratio = (imp.peak_mb - fixed_mb) / file_mb;
      char imp_s[16];
      std::snprintf(imp_s, sizeof imp_s, "%.2f", imp.seconds);
      std::printf("%-20s %7.0f %5s | %8s %9.0f %7.2f | %8s %9s %9s %9s %7.0f | %10s %10s  %s\n", m.name, file_mb,
                  s.contains("graph_nodes") ? std::to_string(s["graph_nodes"].get<int>()).c_str() : "-",
                  imp.finished ? imp_s : "killed", imp.peak_mb, imp_ratio,
                  open_ms >= 0 ? ms_or_dash(open_ms).c_str() : ("> " + ms_or_dash(timeout * 1e3)).c_str(),
                  ms_or_dash(s.value("max_frame_ms", -1.0)).c_str(),
                  ms_or_dash(s.value("max_frame_work_ms", -1.0)).c_str(),
                  ms_or_dash(s.value("layout_ms_total", -1.0)).c_str(), open.peak_mb,
                  ms_or_dash(st.value("max_frame_ms", -1.0)).c_str(),
                  ms_or_dash(st.value("max_frame_between_steps_work_ms", -1.0)).c_str(), now ? "now" : "before");
      if (now) {
        const bool pass = open_ms >= 0 && open_ms <= 1500 && s.value("max_frame_work_ms", 1e9) <= 100 &&
                          imp_ratio <= 1.3 && st.value("max_frame_between_steps_work_ms", 0.0) <= 33;
        ok = ok && pass;
      }
    }
  }
  std::printf(
      "\nframe ms: the longest time between two frames; work ms: that less OpenGL's drawing of the frame (opscope's "
      "own work);\n"
      "step frame: the longest time between two frames while 12 backward steps ran (:step bwd, one per frame); "
      "between: the work of\n"
      "the frames with no step run before them (a step itself: its op's own time, up to ~0.8 s for GPT-2's 50257-word "
      "head)\n");
  std::printf(
      "targets: open <= 1500 ms, work <= 100 ms while opening and <= 33 ms between steps (30 FPS), import MB/file <= "
      "1.3\n");
  std::printf("%s\n", ok ? "all targets met" : "some targets missed");
  return 0;
}
