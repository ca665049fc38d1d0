#include "app/gui/key_hold.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>

#include <algorithm>

namespace opscope::app {

KeyHold::KeyHold(GLFWwindow* window) : window_(window) {
  glfwSetWindowUserPointer(window, this);
  glfwSetKeyCallback(window, &KeyHold::on_key);
}

void KeyHold::on_key(GLFWwindow* window, int key, int scancode, int action, int mods) {
  auto* self = static_cast<KeyHold*>(glfwGetWindowUserPointer(window));
  if (self && action == GLFW_PRESS) self->pressed_.push_back(key);
  if (self && action == GLFW_RELEASE && std::find(self->pressed_.begin(), self->pressed_.end(), key) != self->pressed_.end()) {
    self->held_.push_back({key, scancode, mods});
    return;
  }
  ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);
}

void KeyHold::release_held() {
  pressed_.clear();
  const std::vector<Release> held = std::move(held_);
  held_.clear();
  for (const Release& r : held) ImGui_ImplGlfw_KeyCallback(window_, r.key, r.scancode, GLFW_RELEASE, r.mods);
}

}  // namespace opscope::app
