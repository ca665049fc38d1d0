// The heap allocator the process runs on, for :device and --version. opscope links mimalloc
// (Debian's libmimalloc) where it was found at build time: the engine makes and frees a handful
// of small objects per op (nodes, values, shapes, tensor handles), and glibc's malloc spent a
// third of a tiny-op chain's time on them (bench_vs_torch's "chain of 100 tiny ops").
#pragma once
#include <string>

namespace opscope {

// "mimalloc 2.0.9" when malloc is mimalloc's (checked on a live allocation, not assumed from
// the build), else "glibc malloc".
std::string heap_allocator_name();
bool heap_is_mimalloc();

}  // namespace opscope
