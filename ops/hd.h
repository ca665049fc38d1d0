// OPSCOPE_HD marks a function both devices compile: __host__ __device__ under nvcc, a plain
// inline function for the C++ compiler.
#pragma once
#if defined(__CUDACC__)
#define OPSCOPE_HD __host__ __device__ __forceinline__
#else
#define OPSCOPE_HD inline
#endif
