// The window's side of the platform seam (platform/platform.h): the OpenGL context a GLFW
// window asks for, its size and scale, and what happens between two frames. Linked into the
// GUI only (the command line never opens a window).
#pragma once

struct GLFWwindow;

namespace opscope::platform {

// Desktop: OpenGL 3.3 core; the browser: WebGL2, which is OpenGL ES 3.0.
struct GlContext {
  int major = 3, minor = 3;
  const char* glsl_version = "#version 330";
};
GlContext gl_context();
// Asks GLFW for that context (and, on the desktop, for sizes that follow the monitor's scale).
void set_window_hints();

// The size the window should have now, when the platform decides it (the browser: the page's
// viewport); false when the user sizes the window (the desktop).
bool preferred_window_size(int& width, int& height);

// The window's pixels per point (a HiDPI screen: 2).
float content_scale(GLFWwindow* window);

// Called once, right after ImGui's GLFW backend installed its callbacks: the input a person
// gives that GLFW alone does not carry to ImGui on this platform. Desktop: nothing (GLFW's wheel,
// clipboard and input methods work). Browser: the wheel in notches with the desktop's sign, the
// browser's clipboard (Clipboard API and paste events; Emscripten's GLFW has none), and text from
// input methods (a hidden text field takes what a Chinese IME or an on-screen keyboard commits).
void install_input(GLFWwindow* window);

// Hands control to the host after a frame was drawn and swapped. Desktop: returns at once (the
// swap waited for the display). Browser: returns at the next animation frame, after the
// browser has shown this frame and handled its events, so the page never freezes, even while
// a long statement draws frames between its steps (Asyncify suspends the whole call stack).
void end_frame();

// Waits until the person does something (an input event, a resize, a file dropped) or
// `timeout_s` passes (negative: no limit), so that a window with nothing changing draws
// nothing. Desktop: GLFW's wait for events. Browser: the page's next input event, or
// something that came by another way (a file the person picked, a clipboard read: site.js
// calls opscope.wake()). True when something came that the window's input state does not show
// (the browser's wake); false after an input event, the timeout, or on the desktop.
bool wait_for_input(double timeout_s);

}  // namespace opscope::platform
