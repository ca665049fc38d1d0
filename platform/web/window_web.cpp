// The browser's window (platform/window.h): a WebGL2 canvas that fills the page, drawn by
// Emscripten's GLFW; between two frames the program's stack is suspended (Asyncify) until the
// browser's next animation frame. What a person types, wheels, pastes or commits from an input
// method reaches ImGui as on the desktop (install_input; site.js's opscope.input and
// opscope.clipboard hold the page's side).
#include <GLFW/glfw3.h>
#include <emscripten.h>
#include <imgui.h>

#include <cstdlib>
#include <string>

#include "platform/window.h"

namespace opscope::platform {

namespace {

// The JavaScript inside EM_JS is no C++: clang-format would write '!==' as '!= ='.
// clang-format off
// The next animation frame; a hidden page gets no animation frames (a statement that runs on
// in a background tab must not stop), so there a message to itself yields instead.
EM_ASYNC_JS(void, js_next_frame, (), {
  if (typeof opscope !== 'undefined') opscope.frameDrawn();
  await new Promise((resolve) => {
    if (document.hidden) {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => resolve();
      channel.port2.postMessage(0);
    } else {
      requestAnimationFrame(() => resolve());
    }
  });
});

// Until the person does something on the page, or the time is up (negative: no limit); anything
// that arrives by other ways (a file read, a clipboard read) calls opscope.wake().
EM_ASYNC_JS(int, js_wait_for_input, (double timeout_s), {
  return await new Promise((resolve) => {
    const kinds = ['pointermove', 'pointerdown', 'pointerup', 'mousemove', 'mousedown', 'mouseup', 'wheel', 'keydown',
                   'keyup', 'keypress', 'resize', 'focus', 'blur', 'paste', 'input', 'compositionend', 'touchstart',
                   'touchmove', 'touchend', 'visibilitychange', 'drop'];
    let timer = null;
    const done = (came) => {
      for (const k of kinds) window.removeEventListener(k, done, true);
      if (timer !== null) clearTimeout(timer);
      if (typeof opscope !== 'undefined' && opscope.wake === done) opscope.wake = null;
      // wake() (no argument): something came that no input event shows (a picked file, a
      // clipboard read). An event or the timeout: 0, the caller compares the input it sees.
      resolve(came === undefined ? 1 : 0);
    };
    for (const k of kinds) window.addEventListener(k, done, true);  // seen first; GLFW still gets it
    if (timeout_s >= 0) timer = setTimeout(() => done(false), timeout_s * 1000);
    if (typeof opscope !== 'undefined') opscope.wake = done;
  });
});

EM_JS(int, js_viewport_width, (), { return Math.max(320, Math.floor(window.innerWidth)); });
EM_JS(int, js_viewport_height, (), { return Math.max(240, Math.floor(window.innerHeight)); });

EM_JS(int, js_install_input, (), {
  if (typeof opscope === 'undefined' || !opscope.input) return 0;
  opscope.input.install();
  return 1;
});

// The wheel event GLFW is passing on, in notches with the DOM's sign (down and right positive),
// as site.js measured it; GLFW itself passes the event's raw pixels.
EM_JS(void, js_take_wheel, (double* x, double* y), {
  const w = opscope.input.takeWheel();
  HEAPF64[x >> 3] = w.x;
  HEAPF64[y >> 3] = w.y;
});

EM_JS(void, js_text_wanted, (int wanted), { opscope.input.textWanted(wanted !== 0); });
EM_JS(void, js_ime_at, (int x, int y), { opscope.input.imeAt(x, y); });
// The next character of the committed text waiting (a code point; 0: none).
EM_JS(unsigned, js_take_char, (), {
  const text = opscope.input.text;
  if (!text) return 0;
  const c = text.codePointAt(0);
  opscope.input.text = text.slice(c > 0xffff ? 2 : 1);
  return c;
});

EM_JS(void, js_clipboard_write, (const char* text), { opscope.clipboard.write(UTF8ToString(text)); });
EM_JS(char*, js_clipboard_read, (), { return stringToNewUTF8(opscope.clipboard.read()); });
// clang-format on

GLFWscrollfun next_scroll = nullptr;  // the callback ours replaced: ImGui's, or what the app put before it
GLFWwindow* input_window = nullptr;  // set once install_input ran

// Desktop GLFW gives one unit a notch, positive up (and left): the same here.
void on_scroll(GLFWwindow* window, double, double) {
  double x = 0, y = 0;
  js_take_wheel(&x, &y);
  if (next_scroll && (x != 0 || y != 0)) next_scroll(window, -x, -y);
}

// ImGui keeps the pointer until the next call.
const char* clipboard_text(void*) {
  static std::string text;
  char* t = js_clipboard_read();
  text = t ? t : "";
  std::free(t);
  return text.c_str();
}

void set_clipboard_text(void*, const char* text) { js_clipboard_write(text ? text : ""); }

void ime_at(int x, int y) { js_ime_at(x, y); }

// Committed text (an input method, an on-screen keyboard, a paste the browser gave late) goes in
// as typed characters do, through the window's character callback, when it arrives (site.js
// calls opscope_text_committed); ImGui drops characters while Ctrl is held: they wait for its
// release, the next frame's end_frame.
void deliver_text() {
  if (!input_window || !ImGui::GetCurrentContext()) return;
  const ImGuiIO& io = ImGui::GetIO();
  if (io.KeyCtrl && !io.KeyAlt) return;
  GLFWcharfun typed = glfwSetCharCallback(input_window, nullptr);
  glfwSetCharCallback(input_window, typed);
  for (unsigned c; (c = js_take_char()) != 0;)
    if (typed) typed(input_window, c);
}

}  // namespace

GlContext gl_context() {
  GlContext c;
  c.major = 3;
  c.minor = 0;
  c.glsl_version = "#version 300 es";
  return c;
}

void set_window_hints() {
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
}

bool preferred_window_size(int& width, int& height) {
  width = js_viewport_width();
  height = js_viewport_height();
  return true;
}

// The canvas is sized in CSS pixels: the page's text is as large as the desktop's at 100 %.
float content_scale(GLFWwindow*) { return 1.f; }

void install_input(GLFWwindow* window) {
  if (!js_install_input()) return;  // no site.js around the program
  next_scroll = glfwSetScrollCallback(window, on_scroll);
  ImGuiIO& io = ImGui::GetIO();
  io.SetClipboardTextFn = set_clipboard_text;
  io.GetClipboardTextFn = clipboard_text;
  io.ClipboardUserData = nullptr;
  io.ImeSetInputScreenPosFn = ime_at;  // the input method's window opens at the caret
  input_window = window;
}

void end_frame() {
  const bool imgui = input_window && ImGui::GetCurrentContext();
  if (imgui) js_text_wanted(ImGui::GetIO().WantTextInput);  // the hidden text field has the focus then
  js_next_frame();
  deliver_text();  // what waited for Ctrl's release
}

bool wait_for_input(double timeout_s) { return js_wait_for_input(timeout_s) != 0; }

}  // namespace opscope::platform

extern "C" EMSCRIPTEN_KEEPALIVE void opscope_text_committed() { opscope::platform::deliver_text(); }
