#include "core/memory.h"

#include <unistd.h>

#include <cstdlib>

#include "core/error.h"
#include "core/parallel.h"

namespace opscope {

namespace {
const char* const kCategoryNames[kNumCategories] = {"parameter", "input",           "activation", "saved",
                                                    "gradient",  "optimizer state", "workspace",  "temporary"};
}

const char* category_name(MemCategory c) { return kCategoryNames[static_cast<int>(c)]; }

MemCategory parse_category(const std::string& name) {
  for (int i = 0; i < kNumCategories; ++i)
    if (name == kCategoryNames[i]) return static_cast<MemCategory>(i);
  if (name == "saved_for_backward") return MemCategory::saved;
  if (name == "optimizer_state" || name == "optimizer") return MemCategory::optimizer_state;
  std::string all;
  for (auto n : kCategoryNames) all += std::string(all.empty() ? "" : ", ") + n;
  throw Error("unknown memory category '" + name + "'", "categories are " + all);
}

int64_t default_memory_cap() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t(4) << 30;
  return static_cast<int64_t>(pages) * page / 2;
}

MemoryTracker::MemoryTracker() : cap_(default_memory_cap()) {}

void MemoryTracker::on_alloc(int64_t bytes, MemCategory c, Device d) {
  int i = static_cast<int>(c);
  auto& dl = dev_live_[static_cast<int>(d)];
  dl[i] += bytes;
  if (dl[i] > dev_peak_[static_cast<int>(d)][i]) dev_peak_[static_cast<int>(d)][i] = dl[i];
  live_[i] += bytes;
  if (live_[i] > peak_[i]) peak_[i] = live_[i];
  live_total_ += bytes;
  if (live_total_ > peak_total_) peak_total_ = live_total_;
}

void MemoryTracker::on_free(int64_t bytes, MemCategory c, Device d) {
  dev_live_[static_cast<int>(d)][static_cast<int>(c)] -= bytes;
  live_[static_cast<int>(c)] -= bytes;
  live_total_ -= bytes;
}

void MemoryTracker::recategorize(int64_t bytes, MemCategory from, MemCategory to, Device d) {
  if (from == to) return;
  auto& dl = dev_live_[static_cast<int>(d)];
  dl[static_cast<int>(from)] -= bytes;
  dl[static_cast<int>(to)] += bytes;
  auto& dp = dev_peak_[static_cast<int>(d)][static_cast<int>(to)];
  if (dl[static_cast<int>(to)] > dp) dp = dl[static_cast<int>(to)];
  live_[static_cast<int>(from)] -= bytes;
  int i = static_cast<int>(to);
  live_[i] += bytes;
  if (live_[i] > peak_[i]) peak_[i] = live_[i];
}

void MemoryTracker::on_copy(Device from, Device to, int64_t bytes) {
  auto& c = copies_[static_cast<int>(from)][static_cast<int>(to)];
  c.copies++;
  c.bytes += bytes;
}

void MemoryTracker::reset_peak() {
  dev_peak_ = dev_live_;
  peak_ = live_;
  peak_total_ = live_total_;
}

void MemoryTracker::check_cap(int64_t bytes, const Shape& shape, DType dtype) const {
  if (bytes > cap_ - live_total_)
    throw Error("cannot allocate a " + std::string(dtype_name(dtype)) + " tensor of shape " + shape_str(shape) + " (" +
                    bytes_str(bytes) + "): it would pass the memory cap of " + bytes_str(cap_) + " (" +
                    bytes_str(live_total_) + " already live)",
                "use a smaller shape, free tensors you no longer need, or raise the cap (:mem cap BYTES)");
}

void MemoryTracker::record_step(int64_t step, int node) {
  if (timeline_.size() >= kMaxTimeline) {
    timeline_.erase(timeline_.begin(), timeline_.begin() + kMaxTimeline / 2);
    timeline_dropped_ += kMaxTimeline / 2;
  }
  timeline_.push_back({step, node, live_});
}

// ---------------------------------------------------------------------------------------------

CpuCachingAllocator::CpuCachingAllocator(std::shared_ptr<MemoryTracker> tracker) : tracker_(std::move(tracker)) {}

CpuCachingAllocator::~CpuCachingAllocator() { empty_cache(); }

int64_t CpuCachingAllocator::round_size(int64_t bytes) {
  if (bytes <= 0) return 64;
  if (bytes < (1 << 20)) return (bytes + 511) & ~int64_t(511);  // small: 512-byte granules
  return (bytes + (1 << 20) - 1) & ~int64_t((1 << 20) - 1);  // large: 1 MiB granules
}

void* CpuCachingAllocator::allocate(int64_t bytes, MemCategory c) {
  int64_t r = round_size(bytes);
  void* p = nullptr;
  auto it = free_.find(r);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= r;
  } else {
    p = std::aligned_alloc(64, static_cast<size_t>(r));
    if (!p) {  // give the cache back to the system and try once more
      empty_cache();
      p = std::aligned_alloc(64, static_cast<size_t>(r));
      if (!p) throw Error("out of memory allocating " + bytes_str(bytes));
    }
    reserved_bytes_ += r;
    tracker_->set_reserved(Device::cpu, reserved_bytes_);
  }
  tracker_->on_alloc(bytes, c);
  return p;
}

void CpuCachingAllocator::release(void* p, int64_t bytes, MemCategory c) {
  tracker_->on_free(bytes, c);
  int64_t r = round_size(bytes);
  free_[r].push_back(p);
  cached_bytes_ += r;
  // Do not let the cache hold more than the cap allows.
  if (cached_bytes_ > tracker_->cap()) empty_cache();
}

void CpuCachingAllocator::empty_cache() {
  for (auto& [size, blocks] : free_) {
    for (void* b : blocks) std::free(b);
    reserved_bytes_ -= size * static_cast<int64_t>(blocks.size());
  }
  free_.clear();
  cached_bytes_ = 0;
  tracker_->set_reserved(Device::cpu, reserved_bytes_);
}

// ---------------------------------------------------------------------------------------------

namespace {
// The tracker is touched by the op's own thread only (see core/parallel.h): a parallel body
// that allocated would race on its counters and could be charged to another workspace.
std::shared_ptr<Allocator> checked_outside_parallel_loop(std::shared_ptr<Allocator> alloc) {
  if (in_parallel_region())
    throw Error("internal: a kernel allocated memory inside a parallel loop",
                "allocate buffers before parallel_for; its bodies only compute");
  return alloc;
}
}  // namespace

Storage::Storage(std::shared_ptr<Allocator> alloc, int64_t nbytes, MemCategory c)
    : alloc_(checked_outside_parallel_loop(std::move(alloc))),
      data_(alloc_->allocate(nbytes, c)),
      nbytes_(nbytes),
      category_(c) {}

Storage::~Storage() { alloc_->release(data_, nbytes_, category_); }

void Storage::set_category(MemCategory c) {
  alloc_->tracker().recategorize(nbytes_, category_, c, alloc_->device());
  category_ = c;
}

void Storage::mark_parameter() {
  // A parameter made from a factory or from an op's output (param(randn(...) * 0.05)).
  if (category_ == MemCategory::input || category_ == MemCategory::temporary || category_ == MemCategory::activation)
    set_category(MemCategory::parameter);
  else if (category_ == MemCategory::saved &&
           (category_before_saved_ == MemCategory::temporary || category_before_saved_ == MemCategory::activation))
    category_before_saved_ = MemCategory::parameter;
}

void Storage::add_saved_ref() {
  if (saved_refs_++ == 0 && (category_ == MemCategory::activation || category_ == MemCategory::gradient ||
                             category_ == MemCategory::temporary)) {
    category_before_saved_ = category_;
    set_category(MemCategory::saved);
  }
}

void Storage::drop_saved_ref() {
  if (--saved_refs_ == 0 && category_ == MemCategory::saved) set_category(category_before_saved_);
}

}  // namespace opscope
