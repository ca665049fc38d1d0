// Devices other than the CPU, seen by core through one interface. The CUDA backend
// (ops/cuda/backend.cu) implements it and registers itself at startup when CUDA is built;
// core never names a CUDA type.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/memory.h"

namespace opscope {

class Tensor;

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual Device device() const = 0;
  virtual bool available() const = 0;  // a device is present and usable
  // Whether this process has called into the device's runtime yet. Nothing does before the
  // first use of the device (available(), a tensor moved there): start-up stays fast and
  // small on machines without one.
  virtual bool initialized() const = 0;
  virtual std::string description() const = 0;  // e.g. "NVIDIA H200 (sm_90, 139 GiB)"
  virtual std::shared_ptr<Allocator> make_allocator(std::shared_ptr<MemoryTracker> tracker) = 0;
  // Copies bytes host<->device or within the device; returns when `dst` holds them.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, int64_t bytes) = 0;
  // Same device, same shape: dst = src for any strides and dtypes.
  virtual void copy_strided(const Tensor& dst, const Tensor& src) = 0;
  virtual void fill(const Tensor& t, double value) = 0;
  virtual void add_into(const Tensor& dst, const Tensor& src) = 0;  // dst += src; contiguous, one dtype
  // Step boundaries: begin_step records a start event on the stream; end_step waits for the
  // stream and returns the kernel time between the two events in nanoseconds.
  virtual void begin_step() = 0;
  virtual int64_t end_step() = 0;
  virtual void synchronize() = 0;
};

// A device that can say what its kernels did (the simulated GPU, gpusim/): its launches'
// counters, recorded between start() and take_json(). Registered by the device's own code.
class LaunchReporter {
 public:
  virtual ~LaunchReporter() = default;
  virtual void start() = 0;
  // {"gpu": ..., "launches": [...]}: the launches since start(), time bounds for `gpu` (a preset name).
  virtual std::string take_json(const std::string& gpu) = 0;
  // After start(): the next launch's first block is traced request by request (each lane's
  // address) and take_json adds it as "trace" (the Kernel Lab's warp view). A device that cannot,
  // ignores it.
  virtual void trace_next_launch(size_t /*max_requests*/) {}
  // The GPU (a preset name) the device stands for from now on: its description names it. A device
  // that is one GPU ignores it.
  virtual void choose_gpu(const std::string& /*gpu*/) {}
};
void register_launch_reporter(Device d, LaunchReporter* reporter);
LaunchReporter* launch_reporter(Device d);  // nullptr: the device reports nothing

// The backend registers itself (static initialisation of ops/cuda); nullptr when not built.
void register_device_backend(std::unique_ptr<DeviceBackend> backend);
DeviceBackend* device_backend(Device d);
inline bool device_built(Device d) { return d == Device::cpu || device_backend(d) != nullptr; }
bool device_available(Device d);
// Whether the device's runtime has been initialised in this process (false when not built).
bool device_initialized(Device d);
// "no CUDA device found (CUDA built: yes)": what a student sees when asking for a missing device.
std::string device_missing_message(Device d);
Device parse_device(const std::string& name);  // "cpu" or "cuda", else a student error

}  // namespace opscope
