// The CUDA backend: the caching allocator, copies between host and device, the stream and the
// events that time each step. Registered with core through the DeviceBackend interface.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "core/workspace.h"
#include "ops/cuda/cuda_util.cuh"

namespace opscope::cuda {

void fail(cudaError_t e, const char* what, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e) + " (" + (base ? base + 1 : file) +
                  ":" + std::to_string(line) + ")",
              e == cudaErrorMemoryAllocation ? "the GPU is out of memory: free tensors or use smaller shapes"
                                             : "a kernel failed on the GPU; the inputs' shapes are in the op's node");
}

namespace {
std::atomic<bool> g_runtime_used{false};
}

void note_runtime_used() { g_runtime_used.store(true, std::memory_order_relaxed); }

cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t st;
    OPSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    return st;
  }();
  return s;
}

StridedIndex strided_index(const Shape& shape, const Shape& own_shape, const Strides& own_strides, const char* kernel) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw Error(std::string(kernel) + ": the CUDA kernels take tensors of up to 8 axes, got " +
                std::to_string(shape.size()));
  StridedIndex s;
  s.rank = static_cast<int>(shape.size());
  const size_t off = shape.size() - own_shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    s.shape[i] = shape[i];
    s.stride[i] = i < off || own_shape[i - off] == 1 ? 0 : own_strides[i - off];
  }
  return s;
}

namespace {

__global__ void find_out_of_range(const int64_t* idx, int64_t n, int64_t lo, int64_t bound,
                                  unsigned long long* first_bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (idx[i] < lo || idx[i] >= bound) atomicMin(first_bad, static_cast<unsigned long long>(i));
}

}  // namespace

int64_t first_out_of_range(const KernelCtx& k, const Tensor& idx, int64_t bound, int64_t lo) {
  const int64_t n = idx.numel();
  if (n == 0) return -1;
  constexpr int64_t kNone = int64_t{1} << 62;  // exactly representable as the double fill() takes
  Tensor flag = k.workspace({1}, DType::i64);
  flag.fill(static_cast<double>(kNone));
  find_out_of_range<<<grid_for(n), kThreads, 0, stream()>>>(idx.data<int64_t>(), n, lo, bound,
                                                            reinterpret_cast<unsigned long long*>(
                                                                flag.data<int64_t>()));
  OPSCOPE_CUDA_LAUNCHED("find_out_of_range");
  const int64_t bad = static_cast<int64_t>(flag.get(0));
  return bad == kNone ? -1 : bad;
}

namespace {

// --- copies, fills, accumulation on the device -----------------------------------------------
template <class D, class S>
__global__ void copy_strided_kernel(D* dst, StridedIndex di, const S* src, StridedIndex si, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[offset_of(di, i)] = static_cast<D>(src[offset_of(si, i)]);
}

template <class T> __global__ void fill_kernel(T* dst, StridedIndex di, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[offset_of(di, i)] = value;
}

template <class T> __global__ void add_into_kernel(T* dst, const T* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

template <class F> void visit_any(DType dt, F&& f) {
  if (dt == DType::f32) f(float{});
  else if (dt == DType::f64) f(double{});
  else f(int64_t{});
}

// --- the caching allocator ------------------------------------------------------------------
// cudaMalloc and cudaFree synchronise the device and cost tens of microseconds, so freed blocks
// are kept by size for reuse, as PyTorch's caching allocator does. One stream: a block freed
// by the host may be reused at once, because later kernels are queued after earlier ones.
class CudaCachingAllocator final : public Allocator {
 public:
  explicit CudaCachingAllocator(std::shared_ptr<MemoryTracker> tracker) : tracker_(std::move(tracker)) {}
  ~CudaCachingAllocator() override {
    try {
      empty_cache();
    } catch (...) {  // at exit the driver may already be gone
    }
  }
  Device device() const override { return Device::cuda; }
  void* allocate(int64_t bytes, MemCategory c) override {
    const int64_t r = round_size(bytes);
    void* p = nullptr;
    auto it = free_.find(r);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
    } else {
      cudaError_t e = cudaMalloc(&p, static_cast<size_t>(r));
      if (e == cudaErrorMemoryAllocation) {  // give the cache back and try once more
        cudaGetLastError();
        empty_cache();
        e = cudaMalloc(&p, static_cast<size_t>(r));
      }
      if (e != cudaSuccess)
        throw Error("cannot allocate " + bytes_str(bytes) + " on the GPU: " + cudaGetErrorString(e),
                    "free tensors you no longer need or use smaller shapes");
      reserved_ += r;
      tracker_->set_reserved(Device::cuda, reserved_);
    }
    tracker_->on_alloc(bytes, c, Device::cuda);
    return p;
  }
  void release(void* p, int64_t bytes, MemCategory c) override {
    tracker_->on_free(bytes, c, Device::cuda);
    free_[round_size(bytes)].push_back(p);
  }
  void empty_cache() override {
    if (free_.empty()) return;
    OPSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    for (auto& [size, blocks] : free_) {
      for (void* b : blocks) OPSCOPE_CUDA_CHECK(cudaFree(b));
      reserved_ -= size * static_cast<int64_t>(blocks.size());
    }
    free_.clear();
    tracker_->set_reserved(Device::cuda, reserved_);
  }
  MemoryTracker& tracker() override { return *tracker_; }

 private:
  static int64_t round_size(int64_t bytes) {
    if (bytes <= 0) return 512;
    if (bytes < (1 << 20)) return (bytes + 511) & ~int64_t(511);
    return (bytes + (1 << 20) - 1) & ~int64_t((1 << 20) - 1);
  }
  std::shared_ptr<MemoryTracker> tracker_;
  std::unordered_map<int64_t, std::vector<void*>> free_;
  int64_t reserved_ = 0;
};

// Ops whose CPU kernel only makes views or calls Tensor::copy_from/fill run unchanged on the
// GPU (copy_from and fill dispatch to this backend): the shape family and cast. Their CUDA
// kernel calls the CPU one, looked up when it runs (registration order does not matter).
OPSCOPE_CUDA_REGISTER(register_device_agnostic_kernels) {
  for (const char* name :
       {"transpose", "permute", "reshape", "flatten", "slice", "slice_backward", "concat", "stack", "expand", "cast"})
    add_kernel(name, "default", [](KernelCtx& k) {
      const KernelFn* cpu = k.op.find_kernel(Device::cpu, "default");
      if (!cpu) throw Error(k.op.name + ": no kernel for algorithm 'default'");
      (*cpu)(k);
    });
}

class CudaBackend final : public DeviceBackend {
 public:
  Device device() const override { return Device::cuda; }
  bool initialized() const override { return g_runtime_used.load(std::memory_order_relaxed); }
  bool available() const override {
    static const bool present = [] {
      note_runtime_used();  // the first call into the runtime: it loads the driver here
      int n = 0;
      const cudaError_t e = cudaGetDeviceCount(&n);
      if (e != cudaSuccess) cudaGetLastError();  // no driver or no device: clear the sticky error
      return e == cudaSuccess && n > 0;
    }();
    return present;
  }
  std::string description() const override {
    if (!available()) return device_missing_message(Device::cuda);
    cudaDeviceProp p{};
    OPSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %.0f GiB, %d SMs)", p.name, p.major, p.minor,
                  static_cast<double>(p.totalGlobalMem) / (1 << 30), p.multiProcessorCount);
    return buf;
  }
  std::shared_ptr<Allocator> make_allocator(std::shared_ptr<MemoryTracker> tracker) override {
    return std::make_shared<CudaCachingAllocator>(std::move(tracker));
  }
  void copy_bytes(void* dst, Device dd, const void* src, Device sd, int64_t bytes) override {
    const cudaMemcpyKind kind = dd == Device::cpu   ? cudaMemcpyDeviceToHost
                                : sd == Device::cpu ? cudaMemcpyHostToDevice
                                                    : cudaMemcpyDeviceToDevice;
    OPSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, stream()));
    OPSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream()));  // the caller may free or read the host side next
  }
  void copy_strided(const Tensor& dst, const Tensor& src) override {
    const int64_t n = dst.numel();
    if (n == 0) return;
    if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
      OPSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), static_cast<size_t>(dst.nbytes()),
                                         cudaMemcpyDeviceToDevice, stream()));
      return;
    }
    const StridedIndex di = strided_index(dst.shape(), dst.shape(), dst.strides(), "copy");
    const StridedIndex si = strided_index(dst.shape(), src.shape(), src.strides(), "copy");
    visit_any(dst.dtype(), [&](auto zd) {
      using D = decltype(zd);
      visit_any(src.dtype(), [&](auto zs) {
        using S = decltype(zs);
        copy_strided_kernel<D, S><<<grid_for(n), kThreads, 0, stream()>>>(dst.data<D>(), di, src.data<S>(), si, n);
        OPSCOPE_CUDA_LAUNCHED("copy_strided_kernel");
      });
    });
  }
  void fill(const Tensor& t, double value) override {
    const int64_t n = t.numel();
    const StridedIndex di = strided_index(t.shape(), t.shape(), t.strides(), "fill");
    visit_any(t.dtype(), [&](auto z) {
      using T = decltype(z);
      fill_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(t.data<T>(), di, static_cast<T>(value), n);
      OPSCOPE_CUDA_LAUNCHED("fill_kernel");
    });
  }
  void add_into(const Tensor& dst, const Tensor& src) override {
    Tensor s = src.dtype() == dst.dtype() ? dense(src) : src.cast(dst.dtype());
    const int64_t n = dst.numel();
    visit_any(dst.dtype(), [&](auto z) {
      using T = decltype(z);
      add_into_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(dst.data<T>(), s.data<T>(), n);
      OPSCOPE_CUDA_LAUNCHED("add_into_kernel");
    });
  }
  void begin_step() override {
    if (!start_) {
      OPSCOPE_CUDA_CHECK(cudaEventCreate(&start_));
      OPSCOPE_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    OPSCOPE_CUDA_CHECK(cudaEventRecord(start_, stream()));
  }
  int64_t end_step() override {
    OPSCOPE_CUDA_CHECK(cudaEventRecord(stop_, stream()));
    OPSCOPE_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    OPSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }
  void synchronize() override { OPSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream())); }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

OPSCOPE_CUDA_REGISTER(register_backend) { register_device_backend(std::make_unique<CudaBackend>()); }

}  // namespace
}  // namespace opscope::cuda
