#include "core/heap.h"

#include <cstdlib>

#if defined(OPSCOPE_HAVE_MIMALLOC)
#include <mimalloc.h>
#endif

namespace opscope {

bool heap_is_mimalloc() {
#if defined(OPSCOPE_HAVE_MIMALLOC)
  // Linking the library is not enough: malloc is mimalloc's only if the dynamic linker bound
  // it there (libmimalloc ahead of libc in the search order). Ask about a real block.
  void* p = std::calloc(1, 64);  // (calloc: GCC 12 warns of a read of malloc's uninitialised block)
  const bool ours = mi_is_in_heap_region(p);
  std::free(p);
  return ours;
#else
  return false;
#endif
}

std::string heap_allocator_name() {
#if defined(OPSCOPE_HAVE_MIMALLOC)
  if (heap_is_mimalloc()) {
    const int v = mi_version();  // 209 for 2.0.9
    return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
  }
#endif
  return "glibc malloc";
}

}  // namespace opscope
