#include "app/gui/key_hold.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <imgui.h>

#include <algorithm>

namespace opscope::app {

namespace {
// Keys a text field acts on by their state, not by a character (GLFW numbers them from 256).
bool editing_key(int key) { return key >= GLFW_KEY_ESCAPE && key < GLFW_KEY_LEFT_SHIFT; }
// Keys that type a character (GLFW numbers them by their ASCII, up to the two "world" keys).
bool plain_key(int key) { return key >= GLFW_KEY_SPACE && key <= GLFW_KEY_WORLD_2; }
bool modifier_key(int key) { return key >= GLFW_KEY_LEFT_SHIFT && key <= GLFW_KEY_RIGHT_SUPER; }
}  // namespace

KeyHold::KeyHold(GLFWwindow* window) : window_(window) {
  glfwSetWindowUserPointer(window, this);
  glfwSetKeyCallback(window, &KeyHold::on_key);
  glfwSetCharCallback(window, &KeyHold::on_char);
  next_button_ = glfwSetMouseButtonCallback(window, &KeyHold::on_button);
  next_scroll_ = glfwSetScrollCallback(window, &KeyHold::on_scroll);
}

void KeyHold::on_button(GLFWwindow* window, int button, int action, int mods) {
  auto* self = static_cast<KeyHold*>(glfwGetWindowUserPointer(window));
  if (!self) return;
  ++self->events_;
  if (self->next_button_) self->next_button_(window, button, action, mods);
}

void KeyHold::on_scroll(GLFWwindow* window, double dx, double dy) {
  auto* self = static_cast<KeyHold*>(glfwGetWindowUserPointer(window));
  if (!self) return;
  ++self->events_;
  if (self->next_scroll_) self->next_scroll_(window, dx, dy);
}

void KeyHold::on_key(GLFWwindow* window, int key, int scancode, int action, int mods) {
  auto* self = static_cast<KeyHold*>(glfwGetWindowUserPointer(window));
  if (!self) return ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);
  self->queue_.push_back({false, 0, key, scancode, action, mods});
  ++self->events_;
  self->deliver();
}

void KeyHold::on_char(GLFWwindow* window, unsigned codepoint) {
  auto* self = static_cast<KeyHold*>(glfwGetWindowUserPointer(window));
  if (!self) return ImGui_ImplGlfw_CharCallback(window, codepoint);
  self->queue_.push_back({true, codepoint, 0, 0, 0, 0});
  ++self->events_;
  self->deliver();
}

void KeyHold::new_frame() {
  changed_.clear();
  edited_ = false;
  // (Not ImGui's WantTextInput: it still says yes in the frame after a field let go.)
  const bool coming = text_field_coming && text_field_coming();
  if (coming && !text_waits_) text_wait_since_ = std::chrono::steady_clock::now();
  text_waits_ = coming;
  deliver();
}

// In order, up to the first event that would be a second change of a key this frame, or would
// come after an editing key: that one waits for the next frame with the keys after it. While a
// text field has the keyboard, plain typing (a letter, a digit, punctuation, without Ctrl, Alt
// or Super) and characters go on past a waiting key, never past a waiting editing key or
// modifier: the field reads characters, so typing never lags behind the frames, while Ctrl+V,
// Enter and Backspace keep their order and are each seen for a frame.
void KeyHold::deliver() {
  const bool hold_text =
      edited_ ||
      (text_waits_ &&
       std::chrono::duration<double>(std::chrono::steady_clock::now() - text_wait_since_).count() < kTextWaitSeconds);
  const bool typing = ImGui::GetCurrentContext() && ImGui::GetIO().WantTextInput;
  bool some_wait = false, order_waits = false;
  for (auto it = queue_.begin(); it != queue_.end();) {
    const Event e = *it;
    if (e.is_char) {
      if (hold_text || order_waits) return;
      it = queue_.erase(it);
      ImGui_ImplGlfw_CharCallback(window_, e.codepoint);
      continue;
    }
    const bool change = e.action != GLFW_REPEAT;
    const bool plain = typing && plain_key(e.key) && (e.mods & (GLFW_MOD_CONTROL | GLFW_MOD_ALT | GLFW_MOD_SUPER)) == 0;
    // A modifier let go in the frame a key was pressed would turn Ctrl+Z into Z: ImGui reads
    // the modifiers as they are at the frame's start.
    const bool key_changed = std::any_of(changed_.begin(), changed_.end(), [](int k) { return !modifier_key(k); });
    const bool wait = plain ? order_waits
                            : some_wait ||
                                  (change && std::find(changed_.begin(), changed_.end(), e.key) != changed_.end()) ||
                                  (change && modifier_key(e.key) && key_changed) || (edited_ && editing_key(e.key));
    if (wait) {
      some_wait = true;
      // (A waiting Shift holds back no character: the character says it was shifted.)
      order_waits = order_waits || (!plain && e.key != GLFW_KEY_LEFT_SHIFT && e.key != GLFW_KEY_RIGHT_SHIFT);
      ++it;
      continue;
    }
    it = queue_.erase(it);
    if (change) changed_.push_back(e.key);
    if (editing_key(e.key) && e.action != GLFW_RELEASE) edited_ = true;
    ImGui_ImplGlfw_KeyCallback(window_, e.key, e.scancode, e.action, e.mods);
  }
}

}  // namespace opscope::app
