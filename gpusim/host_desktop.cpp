// The desktop's side of the simulator (the browser's: platform/web/gpusim_host_web.cpp): the
// access hooks GCC's instrumentation calls, code addresses named file:line, and the address
// range of the simulated global memory.
//
// The kernels are compiled with -fsanitize=kernel-address and a call threshold of 0, so each
// access calls __asan_{load,store}N_noabort(addr) (no shadow memory, no ASan runtime: these
// functions are the whole "runtime"); the hook's return address is the access's site.
#include <backtrace.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "gpusim/state.h"

namespace gpusim {

namespace {
// libbacktrace reads the list of loaded objects once, at a state's first use: a library loaded
// later (a student's .cu extension, dlopened) is unknown to a state made before it. So each
// object gets a state of its own, made at the first address met in it (it is loaded by then).
backtrace_state* line_tables(const void* pc) {
  static std::unordered_map<const void*, backtrace_state*> by_object;
  Dl_info info{};
  const void* base = dladdr(pc, &info) ? info.dli_fbase : nullptr;
  backtrace_state*& s = by_object[base];
  if (!s)
    s = backtrace_create_state(
        nullptr, 0, [](void*, const char*, int) {}, nullptr);
  return s;
}
}  // namespace

// The program's own debug line tables (libbacktrace), the innermost inlined frame: the access's line.
std::string code_site_text(const void* pc) {
  static std::mutex m;
  static std::unordered_map<const void*, std::string> cache;
  std::lock_guard<std::mutex> lock(m);
  auto it = cache.find(pc);
  if (it != cache.end()) return it->second;
  std::string out;
  backtrace_pcinfo(
      line_tables(pc), reinterpret_cast<uintptr_t>(pc) - 1,
      [](void* data, uintptr_t, const char* file, int line, const char*) -> int {
        if (!file) return 0;
        const char* base = std::strrchr(file, '/');
        *static_cast<std::string*>(data) = std::string(base ? base + 1 : file) + ":" + std::to_string(line);
        return 1;  // the innermost (inlined) frame: the access's own line
      },
      [](void*, const char*, int) {}, &out);
  if (out.empty()) out = "?:0";
  cache.emplace(pc, out);
  return out;
}

// As much address space as the system lends without committing it (pages come on first touch).
AddressRange reserve_device_range() {
  for (size_t gib : {64, 16, 4, 1}) {
    void* p = mmap(nullptr, gib << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) return AddressRange{reinterpret_cast<uintptr_t>(p), gib << 30};
  }
  return {};
}

void discard_device_pages(uintptr_t begin, size_t bytes) {
  madvise(reinterpret_cast<void*>(begin), bytes, MADV_DONTNEED);
}

}  // namespace gpusim

// The hooks GCC's kernel-address instrumentation calls (one per access; N: any size).
extern "C" {
#define GPUSIM_HOOK(n)                                                               \
  void __asan_load##n##_noabort(uintptr_t a) {                                       \
    gpusim::on_access(a, n, gpusim::AccessKind::load, __builtin_return_address(0));  \
  }                                                                                  \
  void __asan_store##n##_noabort(uintptr_t a) {                                      \
    gpusim::on_access(a, n, gpusim::AccessKind::store, __builtin_return_address(0)); \
  }
GPUSIM_HOOK(1)
GPUSIM_HOOK(2)
GPUSIM_HOOK(4)
GPUSIM_HOOK(8)
GPUSIM_HOOK(16)
#undef GPUSIM_HOOK
void __asan_loadN_noabort(uintptr_t a, size_t n) {
  gpusim::on_access(a, unsigned(n), gpusim::AccessKind::load, __builtin_return_address(0));
}
void __asan_storeN_noabort(uintptr_t a, size_t n) {
  gpusim::on_access(a, unsigned(n), gpusim::AccessKind::store, __builtin_return_address(0));
}
void __asan_handle_no_return() {}
void __asan_before_dynamic_init(const char*) {}
void __asan_after_dynamic_init() {}
}
