// Every key press reaches the UI, however short. ImGui 1.86 reads each key once a frame as held
// or not (its input queue came in 1.87), so a key pressed and released between two frames was
// never seen: a quick Enter, or Ctrl+V, during a frame that took 80 ms to draw (Mesa's software
// renderer, a busy browser tab). Here a release that follows its press within one frame is held
// back to the next frame, so ImGui sees the key down for at least one frame.
#pragma once
#include <vector>

struct GLFWwindow;

namespace opscope::app {

class KeyHold {
 public:
  // Takes over the window's key callback (after ImGui_ImplGlfw_InitForOpenGL, which it chains to).
  explicit KeyHold(GLFWwindow* window);
  // Once a frame, before the window's events are read: the releases held back reach ImGui.
  void release_held();

 private:
  static void on_key(GLFWwindow* window, int key, int scancode, int action, int mods);
  struct Release {
    int key, scancode, mods;
  };
  GLFWwindow* window_;
  std::vector<int> pressed_;        // keys pressed since the last frame began
  std::vector<Release> held_;       // their releases, for the next frame
};

}  // namespace opscope::app
