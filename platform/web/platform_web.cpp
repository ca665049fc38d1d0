// The browser side of the platform seam (platform/platform.h), for Emscripten: one thread,
// no terminal and no dlopen; the page's address gives the command line; frames are the
// browser's animation frames, reached by suspending the whole call stack (Asyncify) so that a
// statement running for minutes still draws the window and reads the Interrupt button.
// Persistent folders are IndexedDB (IDBFS); downloads and the file chooser are the page's
// (platform/web/site.js holds the JavaScript side: window.opscope).
#include <emscripten.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/parallel.h"
#include "platform/platform.h"

namespace opscope::platform {

namespace {

constexpr const char* kHome = "/home/web_user";

// The JavaScript inside EM_JS is no C++: clang-format would write '!==' as '!= ='.
// clang-format off
// The page's address as a command line (site.js: opscope.commandLine()), a JSON array of
// strings; the browser's own arguments (argv) are empty.
EM_JS(char*, js_command_line, (), {
  if (typeof opscope !== 'undefined') opscope.mainStartMs = performance.now();
  const text = (typeof opscope !== 'undefined' && opscope.commandLine) ? opscope.commandLine() : '[]';
  return stringToNewUTF8(text);
});

// The folders that survive a reload, backed by IndexedDB, read before main() goes on
// (site.js: opscope.mountStorage, which also keeps them in step with the site's other tabs).
EM_ASYNC_JS(void, js_mount_persistent, (const char* home), {
  await opscope.mountStorage(UTF8ToString(home));
});

EM_JS(void, js_persist, (), {
  if (typeof opscope !== 'undefined' && opscope.persist) opscope.persist();
});

EM_ASYNC_JS(void, js_persist_now, (), {
  if (typeof opscope !== 'undefined' && opscope.persistNow) await opscope.persistNow();
});

EM_JS(void, js_report_to_class, (const char* kind, const char* json), {
  if (typeof opscope !== 'undefined' && opscope.classReport) opscope.classReport(UTF8ToString(kind), UTF8ToString(json));
});

EM_JS(void, js_offer_download, (const char* path), {
  if (typeof opscope !== 'undefined' && opscope.download) opscope.download(UTF8ToString(path));
});

// The browser's own SVG renderer: the SVG as an image, drawn on a canvas, written as a PNG.
EM_ASYNC_JS(int, js_svg_to_png, (const char* svg_path, const char* png_path), {
  try {
    const svg = FS.readFile(UTF8ToString(svg_path));
    const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml' }));
    const img = new Image();
    await new Promise((resolve, reject) => { img.onload = resolve; img.onerror = reject; img.src = url; });
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    URL.revokeObjectURL(url);
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'));
    FS.writeFile(UTF8ToString(png_path), new Uint8Array(await blob.arrayBuffer()));
    return 1;
  } catch (e) {
    console.warn('opscope: could not draw the SVG as PNG:', e);
    return 0;
  }
});

EM_JS(void, js_pick_file, (const char* accept), {
  if (typeof opscope !== 'undefined' && opscope.pickFile) opscope.pickFile(UTF8ToString(accept));
});

EM_JS(char*, js_take_picked_files, (), {
  const paths = (typeof opscope !== 'undefined' && opscope.takePicked) ? opscope.takePicked() : [];
  return stringToNewUTF8(paths.join('\n'));
});

EM_JS(void, js_finished, (int code), {
  if (typeof opscope !== 'undefined' && opscope.finished) opscope.finished(code);
});

EM_JS(int, js_live_state_wanted, (), {
  return (typeof opscope !== 'undefined' && opscope.liveStateWanted && opscope.liveStateWanted()) ? 1 : 0;
});

EM_JS(void, js_publish_live_state, (const char* json), {
  if (typeof opscope !== 'undefined') opscope.liveState = UTF8ToString(json);
});

// The smallest step performance.now() takes (ms), from a few of its ticks.
EM_JS(double, js_clock_resolution_ms, (), {
  let best = Infinity, t = performance.now();
  for (let i = 0, ticks = 0; i < 1000000 && ticks < 3; ++i) {
    const u = performance.now();
    if (u !== t) {
      best = Math.min(best, u - t);
      t = u;
      ++ticks;
    }
  }
  return best === Infinity ? 1 : best;
});
// clang-format on

std::vector<std::string> split_lines(char* text) {
  std::vector<std::string> out;
  std::istringstream in(text ? text : "");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  std::free(text);
  return out;
}

}  // namespace

Arguments start(int argc, char** argv) {
  js_mount_persistent(kHome);
  (void)chdir(kHome);  // where save("x.npy") writes, before it is downloaded
  limit_threads(1,
                "the browser build runs on one thread: WebAssembly threads need a page the server "
                "isolates (COOP/COEP headers), which a plain static host does not send");
  Arguments a;
  a.args.push_back(argc > 0 && argv[0] ? argv[0] : "opscope");
  char* line = js_command_line();
  const nlohmann::json args = nlohmann::json::parse(line, nullptr, false);
  std::free(line);
  if (args.is_array())
    for (const auto& arg : args)
      if (arg.is_string()) a.args.push_back(arg.get<std::string>());
  for (auto& s : a.args) a.argv.push_back(s.data());
  a.argv.push_back(nullptr);
  return a;
}

int finish(int exit_code) {
  js_persist_now();
  js_finished(exit_code);
  return exit_code;
}

const char* name() { return "web"; }

bool has_display() { return true; }

void offer_download(const std::string& path) { js_offer_download(path.c_str()); }

void svg_to_png(const std::string& svg_path, const std::string& png_path) {
  if (!js_svg_to_png(svg_path.c_str(), png_path.c_str()))
    throw Error("the browser could not draw the figure as PNG", "export it as SVG instead");
}

bool has_file_chooser() { return true; }
void pick_file(const std::string& accept) { js_pick_file(accept.c_str()); }
std::vector<std::string> picked_files() { return split_lines(js_take_picked_files()); }
// site.js's KEPT_UPLOADS (opened files) and its OPSCOPE_DATA's Fashion-MNIST (files opened as it).
std::vector<std::string> kept_file_dirs() {
  const std::string share = std::string(kHome) + "/.local/share/opscope";
  return {share + "/uploads", share + "/data/fashion-mnist"};
}

void persist_files() { js_persist(); }

void report_to_class(const std::string& kind, const std::string& json) {
  js_report_to_class(kind.c_str(), json.c_str());
}

bool live_state_wanted() {
  static const bool wanted = js_live_state_wanted() != 0;  // the address does not change
  return wanted;
}
void publish_live_state(const std::string& json) { js_publish_live_state(json.c_str()); }

double clock_resolution_ns() {
  static const double ns = std::round(js_clock_resolution_ms() * 1e6);  // measured once
  return ns;
}

bool has(Feature) { return false; }

void require(Feature f, const std::string& what) {
  switch (f) {
    case Feature::terminal:
      throw Error(what + " is the desktop app's terminal; this is the browser version",
                  "the console under the graph runs the same language, :commands included");
    case Feature::cxx_extensions:
      throw Error(what +
                      ": C++ extensions need the desktop app (they are compiled by a C++ compiler and "
                      "loaded as a shared library, which a browser cannot do)",
                  "in the browser, write the operator in the language: @op def my_op(x): ... with "
                  "@my_op.backward (see :help op)");
    case Feature::threads:
      throw Error(what + ": the browser build runs on one thread",
                  "WebAssembly threads need a page its server isolates (COOP/COEP headers); the desktop "
                  "app uses every core");
    case Feature::child_processes:
      throw Error(what + ": the browser runs no child processes", "the browser grades an attempt in its own page");
  }
}

ChildRun run_self_limited(const std::vector<std::string>&, double, size_t) {
  throw Error("the browser runs no child processes",
              "grade in-process (the browser's attempts are re-graded by the class server)");
}

}  // namespace opscope::platform
