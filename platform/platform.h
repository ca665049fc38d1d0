// The one seam between the desktop and the browser. Desktop and browser are the same program;
// what differs between them is here and only here: how the program starts (its arguments), the
// frame loop, the window's OpenGL, files the user opens and downloads, persistent storage,
// threads, and what only the desktop has. One implementation per platform, chosen by the build:
// platform/desktop/platform_desktop.cpp and platform/web/platform_web.cpp (Emscripten). The
// window's side is platform/window.h; the modules (core/module_file.h) and the terminal REPL
// have their browser versions in platform/web/.
//
// Model: Dear ImGui's examples, where one small file per platform runs the same application.
#pragma once
#include <string>
#include <vector>

namespace opscope::platform {

// [SECTION] Start and end

// The command line the program runs. Desktop: argv as given. Browser: built from the page's
// address (index.html?lesson=5&lang=zh, or ?argv=[...] as JSON for tests and tools).
struct Arguments {
  std::vector<std::string> args;  // args[0] is the program's name
  std::vector<char*> argv;  // pointers into args, for CLI11
  int argc() const { return static_cast<int>(args.size()); }
  char** data() { return argv.data(); }
};

// Called first in main(), before anything reads a file or the environment. Browser: mounts
// the persistent storage (IndexedDB) and waits until it is read, sets the thread limit.
Arguments start(int argc, char** argv);
// Called with main()'s exit code just before it returns; returns the code. Browser: writes
// what is left to persistent storage and tells the page the program ended (tests wait on it).
int finish(int exit_code);

// "desktop" or "web".
const char* name();

// [SECTION] The window and its frames

// Whether a window can be opened: the desktop needs a display ($DISPLAY or $WAYLAND_DISPLAY);
// the browser's page is one.
bool has_display();

// [SECTION] Files

// A file the program wrote for the user (save(), save_onnx(), export, metrics CSV). Desktop:
// it is on disk where the user said, nothing to do. Browser: offered as a download.
void offer_download(const std::string& path);

// Draws an SVG file as a PNG file with the platform's own renderer: the browser's (its build
// has no Graphviz renderer for PNG). The desktop renders PNGs with Graphviz and throws here.
void svg_to_png(const std::string& svg_path, const std::string& png_path);

// True where the user picks files from their computer with the platform's own chooser (the
// browser): File > Open then asks for one with pick_file, and picked_files() returns, in a
// later frame, the paths where the chosen files were copied (empty most frames).
bool has_file_chooser();
void pick_file(const std::string& accept);  // e.g. ".ops,.npy,.onnx,.gz,.idx"
std::vector<std::string> picked_files();
// The folders where the platform keeps copies of files the user opened from their computer
// (the browser: in IndexedDB, across visits; File > Open lists them, each with Delete). Empty
// on the desktop: a file opened there stays where the user keeps it.
std::vector<std::string> kept_file_dirs();

// Persistent storage (lesson progress, the workspace's journal, settings) lives under the
// user's XDG folders. Desktop: files, nothing to do. Browser: IndexedDB, written back here.
void persist_files();

// [SECTION] The class the page belongs to

// What a class server hears of the student's work: `kind` "attempt" (an exercise checked here:
// JSON {exercise, code, hints_used, client_result}) or "progress" (the lesson and block the
// student is at: JSON {lesson, title, block, blocks, finished}). Browser: handed to the page,
// which queues it and sends it to the class server the site was opened from (site.js's class
// section; a plain static host: dropped). Desktop: nothing (a class uses the site).
void report_to_class(const std::string& kind, const std::string& json);

// [SECTION] What a test driving the window with a person's input reads

// The human-input tests (tests/human/) click what the window shows, so they read where it drew
// it while it runs: the state JSON (with the widgets' rectangles), published a few times a
// second. Desktop: written (atomically) to the file $OPSCOPE_LIVE_STATE names. Browser: kept in
// the page as window.opscope.liveState when the address asks for it (?live_state=1).
bool live_state_wanted();
void publish_live_state(const std::string& json);

// [SECTION] Time

// The finest step of the clock the program times with (std::chrono::steady_clock), in
// nanoseconds. Desktop: 1. Browser: performance.now(), which browsers coarsen against timing
// attacks on a page its server does not isolate (Chrome: 100 µs, Firefox: 1 ms): a time measured
// once is a multiple of it, and one shorter than it reads 0; say so where such a time is shown.
double clock_resolution_ns();

// [SECTION] What only the desktop has

enum class Feature { terminal, cxx_extensions, threads, child_processes };
bool has(Feature f);
// Throws opscope::Error saying why `f` is not here and what to use instead, where a user asked
// for it (`what`: "load_extension", "opscope repl"); does nothing where it is.
void require(Feature f, const std::string& what);

// Runs this program again as a child process, with `args` after its name, under a hard
// wall-clock limit (killed with SIGKILL once `seconds` pass, whatever it is doing: one long
// kernel included) and a cap on its address space (RLIMIT_AS, `memory_bytes`): what a graded
// attempt runs in. Desktop only (Feature::child_processes); the browser grades in-process.
struct ChildRun {
  enum class End { exited, killed_at_limit, signal } end = End::exited;
  int code = 0;  // the exit code, or the signal
  std::string output;  // its stdout
  std::string errors;  // its stderr (the last 64 KiB)
  double seconds = 0;
};
ChildRun run_self_limited(const std::vector<std::string>& args, double seconds, size_t memory_bytes);

}  // namespace opscope::platform
