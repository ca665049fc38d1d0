// The browser's window (platform/window.h): a WebGL2 canvas that fills the page, drawn by
// Emscripten's GLFW; between two frames the program's stack is suspended (Asyncify) until the
// browser's next animation frame.
#include <GLFW/glfw3.h>
#include <emscripten.h>

#include "platform/window.h"

namespace opscope::platform {

namespace {

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

EM_JS(int, js_viewport_width, (), { return Math.max(320, Math.floor(window.innerWidth)); });
EM_JS(int, js_viewport_height, (), { return Math.max(240, Math.floor(window.innerHeight)); });

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

void end_frame() { js_next_frame(); }

}  // namespace opscope::platform
