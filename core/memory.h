// Storage, device allocators and the MemoryTracker: the real bytes every tensor holds,
// live and peak by category, and a timeline with one point per executed step.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace opscope {

// optimizer_state: momentum buffers, Adam's m and v and the step count (as PyTorch's memory
// profiler has it: neither parameters nor gradients, but held from step to step).
enum class MemCategory : uint8_t {
  parameter,
  input,
  activation,
  saved,
  gradient,
  optimizer_state,
  workspace,
  temporary
};
constexpr int kNumCategories = 8;
const char* category_name(MemCategory c);  // "parameter", ..., "saved" is saved-for-backward, "optimizer state"
MemCategory parse_category(const std::string& name);  // also "optimizer_state" and "saved_for_backward"

using CategoryBytes = std::array<int64_t, kNumCategories>;
inline int64_t total_bytes(const CategoryBytes& b) {
  int64_t t = 0;
  for (auto v : b) t += v;
  return t;
}

struct TimelinePoint {
  int64_t step;  // executor step number
  int node = -1;  // graph node that ran (-1: not a node)
  CategoryBytes live;  // live bytes by category after the step
};

// Knows live and peak bytes by category. Allocators report to it; nothing else does.
class MemoryTracker {
 public:
  MemoryTracker();
  void on_alloc(int64_t bytes, MemCategory c, Device d = Device::cpu);
  void on_free(int64_t bytes, MemCategory c, Device d = Device::cpu);
  void recategorize(int64_t bytes, MemCategory from, MemCategory to, Device d = Device::cpu);
  void set_reserved(Device d, int64_t bytes) { reserved_[static_cast<int>(d)] = bytes; }

  const CategoryBytes& live() const { return live_; }
  const CategoryBytes& peak() const { return peak_; }
  int64_t live_total() const { return live_total_; }
  int64_t peak_total() const { return peak_total_; }
  int64_t reserved(Device d = Device::cpu) const { return reserved_[static_cast<int>(d)]; }
  int64_t live(MemCategory c) const { return live_[static_cast<int>(c)]; }
  int64_t peak(MemCategory c) const { return peak_[static_cast<int>(c)]; }
  void reset_peak();
  // The same numbers for one device (the totals above add every device).
  const CategoryBytes& live_on(Device d) const { return dev_live_[static_cast<int>(d)]; }
  const CategoryBytes& peak_on(Device d) const { return dev_peak_[static_cast<int>(d)]; }

  // Copies between devices (x.to("cuda")): how many and how many bytes, each direction.
  struct CopyCount {
    int64_t copies = 0, bytes = 0;
  };
  void on_copy(Device from, Device to, int64_t bytes);
  const CopyCount& copies(Device from, Device to) const {
    return copies_[static_cast<int>(from)][static_cast<int>(to)];
  }

  // Allocations that would take live bytes past the cap are refused before they are made.
  int64_t cap() const { return cap_; }
  void set_cap(int64_t bytes) { cap_ = bytes; }
  // Throws a student-readable error if `bytes` more would pass the cap.
  void check_cap(int64_t bytes, const Shape& shape, DType dtype) const;

  // The last kMaxTimeline points (older ones are dropped in halves, so a long loop stays
  // bounded); timeline_recorded() counts every point ever recorded: the mark a rollback
  // truncates to.
  void record_step(int64_t step, int node);
  const std::vector<TimelinePoint>& timeline() const { return timeline_; }
  size_t timeline_recorded() const { return timeline_dropped_ + timeline_.size(); }
  size_t timeline_dropped() const { return timeline_dropped_; }
  void clear_timeline() {
    timeline_.clear();
    timeline_dropped_ = 0;
  }
  void truncate_timeline(size_t recorded) {  // a failed statement takes back its steps
    if (recorded >= timeline_recorded()) return;
    timeline_.resize(recorded > timeline_dropped_ ? recorded - timeline_dropped_ : 0);
  }
  static constexpr size_t kMaxTimeline = 1 << 14;  // 1.1 MiB of points

 private:
  CategoryBytes live_{}, peak_{};
  int64_t live_total_ = 0, peak_total_ = 0;
  std::array<int64_t, kNumDevices> reserved_{};
  std::array<CategoryBytes, kNumDevices> dev_live_{}, dev_peak_{};
  std::array<std::array<CopyCount, kNumDevices>, kNumDevices> copies_{};
  int64_t cap_;
  std::vector<TimelinePoint> timeline_;
  size_t timeline_dropped_ = 0;
};

// A device allocator. Storage returns its block through release().
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Raw block of at least `bytes` (reports to the tracker under `c`).
  virtual void* allocate(int64_t bytes, MemCategory c) = 0;
  virtual void release(void* p, int64_t bytes, MemCategory c) = 0;
  virtual void empty_cache() = 0;
  virtual MemoryTracker& tracker() = 0;
};

// Keeps freed blocks for reuse (as PyTorch's caching allocator does): a fresh 64 MiB buffer
// costs ~23 ms of page faults here, longer than most kernels over it.
class CpuCachingAllocator final : public Allocator {
 public:
  explicit CpuCachingAllocator(std::shared_ptr<MemoryTracker> tracker);
  ~CpuCachingAllocator() override;
  Device device() const override { return Device::cpu; }
  void* allocate(int64_t bytes, MemCategory c) override;
  void release(void* p, int64_t bytes, MemCategory c) override;
  void empty_cache() override;
  MemoryTracker& tracker() override { return *tracker_; }
  int64_t cached_bytes() const { return cached_bytes_; }

 private:
  static int64_t round_size(int64_t bytes);
  std::shared_ptr<MemoryTracker> tracker_;
  std::unordered_map<int64_t, std::vector<void*>> free_;
  int64_t cached_bytes_ = 0, reserved_bytes_ = 0;
};

// A block of device memory owned by tensors (shared among views). Its bytes count under
// one category; tensors saved for backward move activation bytes to `saved` while saved.
class Storage {
 public:
  Storage(std::shared_ptr<Allocator> alloc, int64_t nbytes, MemCategory c);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }
  Device device() const { return alloc_->device(); }
  MemCategory category() const { return category_; }
  void set_category(MemCategory c);
  // A tensor became a parameter: input/temporary bytes count as parameter (now, or once no longer saved).
  void mark_parameter();
  // Saved-for-backward reference counting (activation <-> saved).
  void add_saved_ref();
  void drop_saved_ref();
  Allocator& allocator() const { return *alloc_; }

 private:
  std::shared_ptr<Allocator> alloc_;
  void* data_;
  int64_t nbytes_;
  MemCategory category_;
  MemCategory category_before_saved_ = MemCategory::activation;
  int saved_refs_ = 0;
};

// Half of physical RAM: the default cap.
int64_t default_memory_cap();

}  // namespace opscope
