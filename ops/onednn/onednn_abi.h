// The C interface between opscope and libopscope_onednn.so, the module that runs conv2d's
// `onednn` algorithm on oneDNN's convolution primitives, and the float32 products of ops/gemm.h
// where oneDNN's GEMM beats OpenBLAS. opscope never links oneDNN (39 MB and OpenMP at
// start-up): it opens the module with dlopen on the first call that needs it
// (ops/onednn_loader.cpp). Plain C types only, so neither side sees the other's C++ types.
//
// Every call is two steps: plan (creates or finds the cached primitives for this geometry and
// thread count, says how many bytes of workspace they need: oneDNN's preferred layouts of the
// tensors and its scratchpad) and run (with a workspace of that size that opscope allocated,
// so the memory tracker counts it). Tensors are float32, contiguous NCHW / OIHW.
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" {

// Bumped whenever a struct or a signature below changes: a module of another version is refused.
#define OPSCOPE_ONEDNN_ABI 2

enum OpscopeOnednnPass : int32_t {
  opscope_onednn_forward = 0,  // y = conv(x, w) + b
  opscope_onednn_backward_data = 1,  // dx = conv_backward_data(dy, w)
  opscope_onednn_backward_weights = 2  // dw = conv_backward_weights(x, dy)
};

// One convolution (ConvGeom's numbers): x [N, C, H, W], w [K, C/G, R, S], y [N, K, OH, OW].
struct OpscopeOnednnConv {
  int64_t N, C, H, W, K, R, S, OH, OW;
  int64_t sh, sw, ph, pw, dh, dw;  // stride, padding (both sides), dilation (1 = dense)
  int64_t G;  // groups
  int32_t pass;  // OpscopeOnednnPass
  int32_t has_bias;  // forward only
  int32_t threads;  // OpenMP threads oneDNN may use (set at every run)
};

// Each returns nullptr on success, else a message (valid until the next call on this thread).
typedef int (*opscope_onednn_abi_fn)(void);
typedef const char* (*opscope_onednn_version_fn)(void);
// Bytes of workspace `run` needs for this convolution (creates the primitives on first use).
typedef const char* (*opscope_onednn_plan_fn)(const OpscopeOnednnConv* conv, size_t* workspace_bytes);
// forward: a = x, b = w, c = bias (or null), out = y; backward_data: a = dy, b = w, out = dx;
// backward_weights: a = x, b = dy, out = dw. `workspace` holds plan's bytes, 64-byte aligned.
typedef const char* (*opscope_onednn_run_fn)(const OpscopeOnednnConv* conv, const float* a, const float* b,
                                             const float* c, float* out, void* workspace);
// C[M×N] (row-major, row stride ldc) = alpha·op(A)·op(B) + beta·C by oneDNN's GEMM (dnnl_sgemm),
// on the calling thread only; ta, tb: 'N' or 'T' as in BLAS, operands row-major.
typedef const char* (*opscope_onednn_sgemm_fn)(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha,
                                               const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                                               float* C, int64_t ldc);

}  // extern "C"
