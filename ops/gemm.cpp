#include "ops/gemm.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "ops/onednn_loader.h"
#include "ops/scoped_env.h"
#if OPSCOPE_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if defined(__wasm_simd128__)
#include "ops/cpu/gemm_simd128.h"
#endif

namespace opscope::cpu {

namespace {

#if OPSCOPE_HAVE_OPENBLAS
constexpr bool kHaveOpenBlas = true;
#else
constexpr bool kHaveOpenBlas = false;
#endif
// The browser has no OpenBLAS: there `blas` is opscope's own WebAssembly SIMD128 GEMM in
// float32 (Eigen's runs scalar there), Eigen's in float64.
#if defined(__wasm_simd128__)
constexpr bool kHaveSimd128Gemm = true;
#else
constexpr bool kHaveSimd128Gemm = false;
#endif

// --- OpenBLAS, loaded on first use --------------------------------------------------------------
struct OpenBlas {
#if OPSCOPE_HAVE_OPENBLAS
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
#endif
  std::string description;  // what it is, or why it is missing
  bool loaded = false;
  BlasLibrary direct;
};

#if OPSCOPE_HAVE_OPENBLAS
OpenBlas load_openblas() {
  OpenBlas b;
  void* lib = nullptr;
  std::string corename_asked;
  {
    // The kernels opscope chose for this CPU; a user's OPENBLAS_CORETYPE wins. One thread at
    // load: opscope's pool does the threading, so OpenBLAS starts no threads of its own.
    corename_asked = cpu_isa() == CpuIsa::avx512 ? "SkylakeX" : "Haswell";
    ScopedEnv coretype("OPENBLAS_CORETYPE", corename_asked.c_str(), true);
    ScopedEnv threads("OPENBLAS_NUM_THREADS", "1", false);
    for (const char* path : {OPSCOPE_OPENBLAS_LIBRARY, "libopenblas.so.0"})
      if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) break;
  }
  if (!lib) {
    const char* why = dlerror();
    b.description = std::string("OpenBLAS not found (") + (why ? why : "dlopen failed") +
                    "): `blas` runs Eigen's GEMM; install libopenblas0-pthread (tools/setup.sh)";
    return b;
  }
  b.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(lib, "cblas_sgemm"));
  b.dgemm = reinterpret_cast<decltype(&cblas_dgemm)>(dlsym(lib, "cblas_dgemm"));
  auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(lib, "openblas_set_num_threads"));
  auto corename = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_corename"));
  auto config = reinterpret_cast<char* (*)()>(dlsym(lib, "openblas_get_config"));
  if (!b.sgemm || !b.dgemm) {
    b.description = "the library loaded as OpenBLAS has no cblas_sgemm: `blas` runs Eigen's GEMM";
    return b;
  }
  if (set_threads) set_threads(1);
  b.direct.sgemm = reinterpret_cast<decltype(b.direct.sgemm)>(b.sgemm);
  b.direct.set_num_threads = set_threads;
  std::string version = "OpenBLAS";
  if (config) {  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
    const std::string c = config();
    const size_t sp = c.find(' ', c.find(' ') + 1);
    version = c.substr(0, sp);
  }
  b.description = version + " (" + (corename ? corename() : corename_asked.c_str()) +
                  " kernels, single-threaded calls on opscope's thread pool)";
  b.loaded = true;
  return b;
}
#endif

const OpenBlas& openblas() {
#if OPSCOPE_HAVE_OPENBLAS
  static const OpenBlas b = load_openblas();
#else
  static const OpenBlas b = [] {
    OpenBlas x;
    x.description =
        kHaveSimd128Gemm
            ? "a browser has no OpenBLAS: `blas` runs opscope's WebAssembly SIMD128 GEMM in float32, Eigen's in float64"
            : "built without OpenBLAS (libopenblas-dev was not found): `blas` runs Eigen's GEMM";
    return x;
  }();
#endif
  return b;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// --- oneDNN's GEMM, for the float32 products it runs faster ------------------------------------
// One thread, each shape timed against OpenBLAS 0.3.21 (bench_peak's "1 call" columns): oneDNN's
// dnnl_sgemm was level to 33 % faster on the products from about 128×128×64 up (a layer's:
// 1024×256 by 256×768, 64×784 by 784×256; 128×128×64), at AVX-512 and at AVX2, one of the
// Transformer block's twelve 4 % slower; OpenBLAS was 10–35 % faster on the 64×64×64 tiles of
// flash attention and below. Float64 stays with OpenBLAS (oneDNN has no dgemm).
constexpr double kOnednnMinMacs = double(1 << 20);

bool onednn_runs(int64_t M, int64_t N, int64_t K) {
  return static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) >= kOnednnMinMacs;
}

// The module's entry, opened by the first product big enough (nullptr without oneDNN). Never on
// the desktop's start: the many sessions that only add small tensors never open it.
opscope_onednn_sgemm_fn onednn_sgemm() {
  static const opscope_onednn_sgemm_fn f = [] {
    const OnednnModule& m = onednn_module();
    return m.loaded ? m.sgemm : nullptr;
  }();
  return f;
}

// Runs the product on the `blas` algorithm's library for it; says which one ran (the tally's table).
template <class T>
GemmLibrary blas_call(int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha, T beta, T* C,
                      int64_t ldc) {
#if OPSCOPE_HAVE_OPENBLAS
  if constexpr (sizeof(T) == 4)
    if (onednn_runs(M, N, K))
      if (const opscope_onednn_sgemm_fn sgemm = onednn_sgemm()) {
        const char* why = sgemm(A.row_major ? 'N' : 'T', B.row_major ? 'N' : 'T', M, N, K, alpha, A.data,
                                std::max<int64_t>(A.ld, 1), B.data, std::max<int64_t>(B.ld, 1), beta, C, ldc);
        if (!why) return GemmLibrary::onednn;  // else (never seen: shapes are checked before) OpenBLAS runs it
      }
  const OpenBlas& b = openblas();
  if (b.loaded && fits_int(M) && fits_int(N) && fits_int(K) && fits_int(A.ld) && fits_int(B.ld) && fits_int(ldc)) {
    // A column-major operand is the transpose of a row-major one with the same leading dimension.
    const CBLAS_TRANSPOSE ta = A.row_major ? CblasNoTrans : CblasTrans, tb = B.row_major ? CblasNoTrans : CblasTrans;
    const int lda = static_cast<int>(std::max<int64_t>(A.ld, 1)), ldb = static_cast<int>(std::max<int64_t>(B.ld, 1));
    if constexpr (sizeof(T) == 4)
      b.sgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), alpha, A.data, lda, B.data, ldb, beta, C, int(ldc));
    else b.dgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), alpha, A.data, lda, B.data, ldb, beta, C, int(ldc));
    return GemmLibrary::openblas;
  }
#endif
#if defined(__wasm_simd128__)
  if constexpr (sizeof(T) == 4) {
    gemm_simd128(M, N, K, A, B, alpha, beta, C, ldc);
    return GemmLibrary::simd128;
  }
#endif
  kern<T>().gemm(M, N, K, A, B, alpha, beta, C, ldc);
  return GemmLibrary::eigen;
}

// A product of fewer multiply-adds stays one call: a panel must be worth a thread.
constexpr double kPanelMacs = double(1 << 22);
constexpr int64_t kPanelAlign = 16;  // panel edges on whole SIMD registers / micro-kernel tiles

// Columns j0.. of B (and C); rows i0.. of A (and C).
template <class T> ConstMatrix<T> columns_from(ConstMatrix<T> m, int64_t j0) {
  m.data += m.row_major ? j0 : j0 * m.ld;
  return m;
}
template <class T> ConstMatrix<T> rows_from(ConstMatrix<T> m, int64_t i0) {
  m.data += m.row_major ? i0 * m.ld : i0;
  return m;
}

// The tally (gemm_tally_start): a flag read on every call, totals behind a mutex taken only
// while counting.
std::atomic<bool> g_tally_on{false};
std::mutex g_tally_mutex;
GemmTally g_tally;

void tally_add(const GemmShapeTally& call) {
  std::lock_guard<std::mutex> lock(g_tally_mutex);
  g_tally.seconds += call.seconds;
  g_tally.flops += call.flops;
  ++g_tally.calls;
  auto same = [&](const GemmShapeTally& s) {
    return s.M == call.M && s.N == call.N && s.K == call.K && s.trans_a == call.trans_a && s.trans_b == call.trans_b &&
           s.library == call.library;
  };
  auto it = std::find_if(g_tally.shapes.begin(), g_tally.shapes.end(), same);
  if (it == g_tally.shapes.end()) return g_tally.shapes.push_back(call);
  it->seconds += call.seconds;
  it->flops += call.flops;
  ++it->calls;
}

template <class T>
GemmLibrary run_serial(GemmAlgo algo, int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha,
                       T beta, T* C, int64_t ldc) {
  if (algo == GemmAlgo::blas) return blas_call<T>(M, N, K, A, B, alpha, beta, C, ldc);
  kern<T>().gemm(M, N, K, A, B, alpha, beta, C, ldc);
  return GemmLibrary::eigen;
}

}  // namespace

template <class T>
void gemm_serial(GemmAlgo algo, int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha, T beta,
                 T* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // an empty sum: C = beta·C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
    return;
  }
  if (!g_tally_on.load(std::memory_order_relaxed)) {
    run_serial<T>(algo, M, N, K, A, B, alpha, beta, C, ldc);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const GemmLibrary library = run_serial<T>(algo, M, N, K, A, B, alpha, beta, C, ldc);
  tally_add({.M = M,
             .N = N,
             .K = K,
             .trans_a = !A.row_major,
             .trans_b = !B.row_major,
             .library = library,
             .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
             .flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K),
             .calls = 1});
}

void gemm_tally_start() {
  std::lock_guard<std::mutex> lock(g_tally_mutex);
  g_tally = GemmTally{};
  g_tally_on.store(true);
}

GemmTally gemm_tally_stop() {
  g_tally_on.store(false);
  std::lock_guard<std::mutex> lock(g_tally_mutex);
  std::sort(g_tally.shapes.begin(), g_tally.shapes.end(),
            [](const GemmShapeTally& a, const GemmShapeTally& b) { return a.seconds > b.seconds; });
  return g_tally;
}

const char* gemm_library_name(GemmLibrary l) {
  switch (l) {
    case GemmLibrary::openblas: return "OpenBLAS";
    case GemmLibrary::onednn: return "oneDNN";
    case GemmLibrary::eigen: return "Eigen";
    case GemmLibrary::simd128: return "SIMD128";
  }
  return "?";
}

template <class T>
void gemm(GemmAlgo algo, int64_t M, int64_t N, int64_t K, ConstMatrix<T> A, ConstMatrix<T> B, T alpha, T beta, T* C,
          int64_t ldc) {
  const double macs = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  // Panels follow the machine, not the thread setting: the same cuts (and bits) for any count.
  const int64_t panels = std::min<int64_t>(hardware_threads(), static_cast<int64_t>(macs / kPanelMacs));
  // Cut the dimension whose panels repeat the smaller operand: column panels each read all of
  // A, row panels all of B.
  bool by_columns = M <= N;
  if (by_columns && N < 2 * kPanelAlign) by_columns = false;
  if (!by_columns && M < 2 * kPanelAlign) by_columns = true;
  const int64_t extent = by_columns ? N : M;
  if (panels <= 1 || extent < 2 * kPanelAlign || in_parallel_region())
    return gemm_serial<T>(algo, M, N, K, A, B, alpha, beta, C, ldc);
  const int64_t width = (extent / panels + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
  const int64_t count = (extent + width - 1) / width;
  parallel_for(count, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t s = p * width, len = std::min(width, extent - s);
      if (by_columns) gemm_serial<T>(algo, M, len, K, A, columns_from(B, s), alpha, beta, C + s, ldc);
      else gemm_serial<T>(algo, len, N, K, rows_from(A, s), B, alpha, beta, C + s * ldc, ldc);
    }
  });
}

const char* gemm_algo_name(GemmAlgo a) { return a == GemmAlgo::blas ? "blas" : "eigen"; }

namespace {
// OpenBLAS 0.3.21's core types whose kernels use AVX-512 (OPENBLAS_CORETYPE is read without case).
bool openblas_core_has_avx512(const std::string& core) {
  std::string c;
  for (char ch : core) c += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return c == "skylakex" || c == "cooperlake" || c == "sapphirerapids";
}
const char* user_openblas_coretype() { return std::getenv("OPENBLAS_CORETYPE"); }
}  // namespace

GemmAlgo choose_default_gemm(CpuIsa kernels, const char* user_coretype, bool have_openblas) {
  if (!have_openblas) return GemmAlgo::eigen;  // `blas` would run Eigen's GEMM anyway
  if (kernels != CpuIsa::avx512 || !user_coretype) return GemmAlgo::blas;  // as wide as opscope's
  return openblas_core_has_avx512(user_coretype) ? GemmAlgo::blas : GemmAlgo::eigen;
}

GemmAlgo default_gemm() {
  static const GemmAlgo chosen =
      choose_default_gemm(kernels().isa, user_openblas_coretype(), kHaveOpenBlas || kHaveSimd128Gemm);
  return chosen;
}

std::string default_gemm_description() {
  if (default_gemm() == GemmAlgo::blas)
    return kHaveSimd128Gemm ? "blas (opscope's SIMD128 GEMM)"
                            : "blas (OpenBLAS; oneDNN's GEMM for float32 products of 2^20 multiply-adds and more)";
  const char* core = user_openblas_coretype();
  if (!kHaveOpenBlas || !core) return "eigen (this build has no OpenBLAS)";
  return std::string("eigen: OPENBLAS_CORETYPE=") + core + " gives OpenBLAS narrower kernels than opscope's " +
         cpu_isa_name(kernels().isa) + " Eigen build (algo=\"blas\" still runs OpenBLAS)";
}

bool blas_available() { return openblas().loaded; }
const BlasLibrary* blas_library() { return openblas().loaded ? &openblas().direct : nullptr; }
std::string blas_description() { return openblas().description; }

template void gemm<float>(GemmAlgo, int64_t, int64_t, int64_t, ConstMatrix<float>, ConstMatrix<float>, float, float,
                          float*, int64_t);
template void gemm<double>(GemmAlgo, int64_t, int64_t, int64_t, ConstMatrix<double>, ConstMatrix<double>, double,
                           double, double*, int64_t);
template void gemm_serial<float>(GemmAlgo, int64_t, int64_t, int64_t, ConstMatrix<float>, ConstMatrix<float>, float,
                                 float, float*, int64_t);
template void gemm_serial<double>(GemmAlgo, int64_t, int64_t, int64_t, ConstMatrix<double>, ConstMatrix<double>, double,
                                  double, double*, int64_t);

}  // namespace opscope::cpu
