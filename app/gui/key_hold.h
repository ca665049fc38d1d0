// Every key press reaches the UI in the order typed, however fast. ImGui 1.86 reads each key
// once a frame as held or not (its input queue came in 1.87), so a key pressed and released
// between two frames was never seen (a quick Enter or Ctrl+V during a frame that took 80 ms to
// draw: Mesa's software renderer, a busy browser tab), and text typed after an Enter in the same
// frame went into the line before it. Here the window's key and character events pass through a
// queue: a key changes state at most once a frame, and after Enter, Tab, Backspace, an arrow or
// another editing key, what follows waits for the next frame. Plain typing into a text field
// (characters, and letter keys without Ctrl) never waits behind the frames.
#pragma once
#include <chrono>
#include <deque>
#include <functional>
#include <vector>

struct GLFWwindow;

namespace opscope::app {

class KeyHold {
 public:
  // Takes over the window's key and character callbacks (after ImGui_ImplGlfw_InitForOpenGL,
  // whose callbacks it forwards to).
  explicit KeyHold(GLFWwindow* window);
  // Once a frame, after it is drawn and before the next frame's events arrive: what waited is
  // given to ImGui.
  void new_frame();
  bool waiting() const { return !queue_.empty(); }  // input is still to be given (draw again)
  long long events() const { return events_; }  // key, character, button and wheel events so far
  // While this says a text field is about to take the keyboard (the console's line, given back
  // after Enter, becomes active a frame or two later), typed characters wait for it instead of
  // falling on no field; at most kTextWaitSeconds (a statement may run meanwhile).
  std::function<bool()> text_field_coming;
  static constexpr double kTextWaitSeconds = 2.0;

 private:
  struct Event {
    bool is_char;
    unsigned codepoint;  // characters
    int key, scancode, action, mods;  // keys
  };
  static void on_key(GLFWwindow* window, int key, int scancode, int action, int mods);
  static void on_char(GLFWwindow* window, unsigned codepoint);
  // Buttons and the wheel go straight on (ImGui 1.86 keeps a click shorter than a frame); they are
  // counted, so that a wait for input sees them.
  static void on_button(GLFWwindow* window, int button, int action, int mods);
  static void on_scroll(GLFWwindow* window, double dx, double dy);
  void (*next_button_)(GLFWwindow*, int, int, int) = nullptr;
  void (*next_scroll_)(GLFWwindow*, double, double) = nullptr;
  void deliver();
  GLFWwindow* window_;
  std::deque<Event> queue_;
  std::vector<int> changed_;  // keys whose state ImGui was given this frame
  bool edited_ = false;  // an editing key (Enter, Backspace, ...) was given this frame
  std::chrono::steady_clock::time_point text_wait_since_;  // characters wait for a text field since
  bool text_waits_ = false;
  long long events_ = 0;
};

}  // namespace opscope::app
