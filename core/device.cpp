#include "core/device.h"

#include <array>

#include "core/error.h"

namespace opscope {

namespace {
std::array<std::unique_ptr<DeviceBackend>, kNumDevices>& backends() {
  static std::array<std::unique_ptr<DeviceBackend>, kNumDevices> table;  // built on first use: init order safe
  return table;
}
}  // namespace

void register_device_backend(std::unique_ptr<DeviceBackend> backend) {
  const int d = static_cast<int>(backend->device());
  backends()[d] = std::move(backend);
}

DeviceBackend* device_backend(Device d) { return backends()[static_cast<int>(d)].get(); }

namespace {
std::array<LaunchReporter*, kNumDevices>& reporters() {
  static std::array<LaunchReporter*, kNumDevices> table{};
  return table;
}
}  // namespace

void register_launch_reporter(Device d, LaunchReporter* reporter) { reporters()[static_cast<int>(d)] = reporter; }
LaunchReporter* launch_reporter(Device d) { return reporters()[static_cast<int>(d)]; }

bool device_available(Device d) {
  if (d == Device::cpu) return true;
  DeviceBackend* b = device_backend(d);
  return b && b->available();
}

bool device_initialized(Device d) {
  if (d == Device::cpu) return true;
  DeviceBackend* b = device_backend(d);
  return b && b->initialized();
}

std::string device_missing_message(Device d) {
  if (d == Device::cuda)
    return std::string("no CUDA device found (CUDA built: ") + (device_built(Device::cuda) ? "yes" : "no") + ")";
  if (d == Device::sim) return "the simulated GPU (sim) is not built in this configuration";
  return std::string("no ") + device_name(d) + " device found";
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda" || name == "gpu" || name == "cuda:0") return Device::cuda;
  if (name == "sim") return Device::sim;
  throw Error("unknown device '" + name + "'", "devices are \"cpu\", \"cuda\" and \"sim\" (a simulated CUDA GPU)");
}

}  // namespace opscope
