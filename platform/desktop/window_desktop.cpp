// The desktop window (platform/window.h): OpenGL 3.3 core through GLFW; the swap waits for
// the display, so nothing happens between frames.
#include <GLFW/glfw3.h>

#include <algorithm>

#include "platform/window.h"

namespace opscope::platform {

GlContext gl_context() { return GlContext{}; }

void set_window_hints() {
  const GlContext gl = gl_context();
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, gl.major);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, gl.minor);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
}

bool preferred_window_size(int&, int&) { return false; }

float content_scale(GLFWwindow* window) {
  float sx = 1, sy = 1;
  glfwGetWindowContentScale(window, &sx, &sy);
  return std::max(1.f, sx);
}

void install_input(GLFWwindow*) {}

void end_frame() {}

bool wait_for_input(double timeout_s) {
  if (timeout_s < 0) glfwWaitEvents();
  else glfwWaitEventsTimeout(timeout_s);
  return false;  // GLFW does not say whether events came: the window's input state tells
}

}  // namespace opscope::platform
