// libopscope_onednn.so: conv2d's `onednn` algorithm on oneDNN's convolution primitives
// (convolution_forward, convolution_backward_data, convolution_backward_weights), and oneDNN's
// float32 GEMM for ops/gemm.h, behind the C interface of onednn_abi.h. Built only when CMake
// finds oneDNN; opened by opscope on the first call that needs it, never linked into the binary.
//
// As oneDNN's documentation recommends, the primitives are created with format_tag::any and
// choose their own (blocked) layouts; opscope's plain NCHW / OIHW tensors are reordered into
// those layouts and the results back. Primitives and reorders are cached per geometry and
// thread count (creating one costs about as much as running it on a small input), at most
// kCacheEntries of them, the least recently used dropped first.
#include <omp.h>

#include <cstring>
#include <dnnl.hpp>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "ops/onednn/onednn_abi.h"

namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;
constexpr size_t kCacheEntries = 64;
constexpr size_t kAlign = 64;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Rows (or columns) of the input the convolution reads, and the right padding that makes
// oneDNN's output size equal opscope's: OH = (H + 2·ph − dh·(R − 1) − 1) / sh + 1 rounds down,
// so the last rows of the input may be read by no output. oneDNN wants
//   OH = (H' + ph + pr − dh·(R − 1) − 1) / sh + 1 exactly; with H' ≤ H and pr ≥ 0 that is
//   H' + pr = (OH − 1)·sh + dh·(R − 1) + 1 − ph.
struct Extent {
  int64_t used, pad_r;
};
Extent extent(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t d) {
  const int64_t span = (out - 1) * s + d * (k - 1) + 1 - p;
  return span >= in ? Extent{in, span - in} : Extent{span, 0};
}

// A user tensor: plain layout, the extent the convolution reads (a view with the full tensor's
// strides when the last rows are never read).
memory::desc plain_image(int64_t n, int64_t c, int64_t h_used, int64_t w_used, int64_t h, int64_t w) {
  return memory::desc({n, c, h_used, w_used}, f32, memory::dims{c * h * w, h * w, w, 1});
}
memory::desc plain_weights(const OpscopeOnednnConv& g) {
  const int64_t Kg = g.K / g.G, Cg = g.C / g.G;
  if (g.G == 1) return memory::desc({g.K, Cg, g.R, g.S}, f32, tag::oihw);
  return memory::desc({g.G, Kg, Cg, g.R, g.S}, f32, tag::goihw);  // OIHW with K = G·Kg is goihw
}
memory::desc any_weights(const OpscopeOnednnConv& g) {
  const int64_t Kg = g.K / g.G, Cg = g.C / g.G;
  if (g.G == 1) return memory::desc({g.K, Cg, g.R, g.S}, f32, tag::any);
  return memory::desc({g.G, Kg, Cg, g.R, g.S}, f32, tag::any);
}

// A tensor argument: the user's layout, the primitive's, and where its copy lives in the
// workspace when they differ (then a reorder runs before or after the primitive).
struct Operand {
  memory::desc user, prim;
  bool reorder = false;
  size_t offset = 0;
  std::optional<dnnl::reorder> move;  // user → prim for inputs, prim → user for outputs
};

struct Plan {
  dnnl::primitive prim;
  Operand a, b, out;  // see onednn_abi.h: the pass's two inputs and its output
  memory::desc bias;
  size_t scratch_offset = 0, scratch_bytes = 0, total = 0;
  Extent eh{}, ew{};
};

Operand operand(const memory::desc& user, const memory::desc& prim, bool is_input, size_t& bytes) {
  Operand o;
  o.user = user;
  o.prim = prim;
  o.reorder = user != prim;
  if (o.reorder) {
    o.offset = bytes;
    bytes += align_up(prim.get_size());
    o.move = is_input ? dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), user, cpu_engine(), prim))
                      : dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), prim, cpu_engine(), user));
  }
  return o;
}

Plan make_plan(const OpscopeOnednnConv& g) {
  Plan p;
  p.eh = extent(g.H, g.OH, g.R, g.sh, g.ph, g.dh);
  p.ew = extent(g.W, g.OW, g.S, g.sw, g.pw, g.dw);
  if (p.eh.used < 1 || p.ew.used < 1)
    throw std::runtime_error("every output reads only padding (the kernel never touches the input)");
  const memory::dims strides{g.sh, g.sw}, dil{g.dh - 1, g.dw - 1}, pad_l{g.ph, g.pw}, pad_r{p.eh.pad_r, p.ew.pad_r};
  const memory::desc x_user = plain_image(g.N, g.C, p.eh.used, p.ew.used, g.H, g.W);
  const memory::desc y_user({g.N, g.K, g.OH, g.OW}, f32, tag::nchw);
  const memory::desc x_any({g.N, g.C, p.eh.used, p.ew.used}, f32, tag::any);
  const memory::desc y_any({g.N, g.K, g.OH, g.OW}, f32, tag::any);
  const memory::desc w_any = any_weights(g), w_user = plain_weights(g);
  p.bias = memory::desc({g.K}, f32, tag::x);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // opscope's allocator holds the scratchpad
  const auto alg = dnnl::algorithm::convolution_direct;  // exact sums, not Winograd's rounding
  const auto training = dnnl::prop_kind::forward_training;
  auto forward_desc = [&](bool bias) {
    return bias
               ? dnnl::convolution_forward::desc(training, alg, x_any, w_any, p.bias, y_any, strides, dil, pad_l, pad_r)
               : dnnl::convolution_forward::desc(training, alg, x_any, w_any, y_any, strides, dil, pad_l, pad_r);
  };
  size_t bytes = 0;
  memory::desc scratch;
  if (g.pass == opscope_onednn_forward) {
    dnnl::convolution_forward::primitive_desc pd(forward_desc(g.has_bias != 0), attr, cpu_engine());
    p.a = operand(x_user, pd.src_desc(), true, bytes);
    p.b = operand(w_user, pd.weights_desc(), true, bytes);
    p.out = operand(y_user, pd.dst_desc(), false, bytes);
    scratch = pd.scratchpad_desc();
    p.prim = dnnl::convolution_forward(pd);
  } else {
    // The backward primitives take the forward's primitive descriptor as a hint.
    dnnl::convolution_forward::primitive_desc hint(forward_desc(false), cpu_engine());
    if (g.pass == opscope_onednn_backward_data) {
      dnnl::convolution_backward_data::desc d(alg, x_any, w_any, y_any, strides, dil, pad_l, pad_r);
      dnnl::convolution_backward_data::primitive_desc pd(d, attr, cpu_engine(), hint);
      p.a = operand(y_user, pd.diff_dst_desc(), true, bytes);
      p.b = operand(w_user, pd.weights_desc(), true, bytes);
      p.out = operand(x_user, pd.diff_src_desc(), false, bytes);
      scratch = pd.scratchpad_desc();
      p.prim = dnnl::convolution_backward_data(pd);
    } else {
      dnnl::convolution_backward_weights::desc d(alg, x_any, w_any, y_any, strides, dil, pad_l, pad_r);
      dnnl::convolution_backward_weights::primitive_desc pd(d, attr, cpu_engine(), hint);
      p.a = operand(x_user, pd.src_desc(), true, bytes);
      p.b = operand(y_user, pd.diff_dst_desc(), true, bytes);
      p.out = operand(w_user, pd.diff_weights_desc(), false, bytes);
      scratch = pd.scratchpad_desc();
      p.prim = dnnl::convolution_backward_weights(pd);
    }
  }
  p.scratch_offset = bytes;
  p.scratch_bytes = scratch.get_size();
  p.total = bytes + align_up(p.scratch_bytes);
  return p;
}

// The cache: geometry and thread count → plan (oneDNN tunes a primitive to the thread count).
using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, int32_t, int32_t>;
Key key_of(const OpscopeOnednnConv& g) {
  return {g.N,  g.C,  g.H,  g.W,  g.K,  g.R, g.S,    g.OH,       g.OW,     g.sh,
          g.sw, g.ph, g.pw, g.dh, g.dw, g.G, g.pass, g.has_bias, g.threads};
}

std::mutex mutex;  // one convolution at a time: oneDNN spreads each over the OpenMP threads
std::list<std::pair<Key, Plan>> lru;  // most recently used first
std::map<Key, std::list<std::pair<Key, Plan>>::iterator> index;

Plan& plan_for(const OpscopeOnednnConv& g) {
  const Key k = key_of(g);
  if (auto it = index.find(k); it != index.end()) {
    lru.splice(lru.begin(), lru, it->second);
    return lru.front().second;
  }
  omp_set_num_threads(g.threads);  // before creation: oneDNN picks its blocking for the threads it will have
  lru.emplace_front(k, make_plan(g));
  index[k] = lru.begin();
  if (lru.size() > kCacheEntries) {
    index.erase(lru.back().first);
    lru.pop_back();
  }
  return lru.front().second;
}

void run_plan(const Plan& p, const OpscopeOnednnConv& g, const float* a, const float* b, const float* c, float* out,
              void* workspace) {
  dnnl::engine& eng = cpu_engine();
  dnnl::stream s(eng);
  char* ws = static_cast<char*>(workspace);
  auto bind = [&](const Operand& o, const void* user_ptr, memory& user, memory& prim) {
    user = memory(o.user, eng, const_cast<void*>(user_ptr));
    prim = o.reorder ? memory(o.prim, eng, ws + o.offset) : user;
  };
  memory ua, pa, ub, pb, uo, po;
  bind(p.a, a, ua, pa);
  bind(p.b, b, ub, pb);
  bind(p.out, out, uo, po);
  if (p.a.reorder) p.a.move->execute(s, ua, pa);
  if (p.b.reorder) p.b.move->execute(s, ub, pb);
  memory scratch(memory::desc({static_cast<int64_t>(p.scratch_bytes)}, memory::data_type::u8, tag::x), eng,
                 ws + p.scratch_offset);
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, scratch}};
  if (g.pass == opscope_onednn_forward) {
    args.insert({{DNNL_ARG_SRC, pa}, {DNNL_ARG_WEIGHTS, pb}, {DNNL_ARG_DST, po}});
    if (g.has_bias) args.insert({DNNL_ARG_BIAS, memory(p.bias, eng, const_cast<float*>(c))});
  } else if (g.pass == opscope_onednn_backward_data) {
    // Rows of x that no output reads get no gradient: zero them, the primitive writes the rest.
    if (p.eh.used < g.H || p.ew.used < g.W) std::memset(out, 0, sizeof(float) * g.N * g.C * g.H * g.W);
    args.insert({{DNNL_ARG_DIFF_DST, pa}, {DNNL_ARG_WEIGHTS, pb}, {DNNL_ARG_DIFF_SRC, po}});
  } else {
    args.insert({{DNNL_ARG_SRC, pa}, {DNNL_ARG_DIFF_DST, pb}, {DNNL_ARG_DIFF_WEIGHTS, po}});
  }
  p.prim.execute(s, args);
  if (p.out.reorder) p.out.move->execute(s, po, uo);
  s.wait();
}

thread_local std::string last_error;

template <class F> const char* guarded(F f) {
  try {
    f();
    return nullptr;
  } catch (const dnnl::error& e) {
    last_error = std::string("oneDNN: ") + e.what() + " (status " + std::to_string(static_cast<int>(e.status)) + ")";
  } catch (const std::exception& e) {
    last_error = e.what();
  }
  return last_error.c_str();
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int opscope_onednn_abi(void) { return OPSCOPE_ONEDNN_ABI; }

__attribute__((visibility("default"))) const char* opscope_onednn_version(void) {
  static const std::string v = [] {
    const dnnl_version_t* d = dnnl_version();
    const char* rt = d->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                     : d->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                          : "threadpool";
    return "oneDNN " + std::to_string(d->major) + "." + std::to_string(d->minor) + "." + std::to_string(d->patch) +
           " (" + rt + " runtime)";
  }();
  return v.c_str();
}

__attribute__((visibility("default"))) const char* opscope_onednn_plan(const OpscopeOnednnConv* conv,
                                                                       size_t* workspace_bytes) {
  return guarded([&] {
    std::lock_guard<std::mutex> lock(mutex);
    *workspace_bytes = plan_for(*conv).total;
  });
}

__attribute__((visibility("default"))) const char* opscope_onednn_run(const OpscopeOnednnConv* conv, const float* a,
                                                                      const float* b, const float* c, float* out,
                                                                      void* workspace) {
  return guarded([&] {
    std::lock_guard<std::mutex> lock(mutex);
    const Plan& p = plan_for(*conv);
    omp_set_num_threads(conv->threads);
    run_plan(p, *conv, a, b, c, out, workspace);
  });
}

__attribute__((visibility("default"))) const char* opscope_onednn_sgemm(char ta, char tb, int64_t M, int64_t N,
                                                                        int64_t K, float alpha, const float* A,
                                                                        int64_t lda, const float* B, int64_t ldb,
                                                                        float beta, float* C, int64_t ldc) {
  // opscope's pool threads call this, one product (or panel) each: oneDNN's OpenMP team is this
  // thread alone. The setting is this thread's own; a convolution sets its own at every run.
  omp_set_num_threads(1);
  const dnnl_status_t status = dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (status == dnnl_success) return nullptr;
  last_error = "oneDNN: dnnl_sgemm failed (status " + std::to_string(static_cast<int>(status)) + ")";
  return last_error.c_str();
}

}  // extern "C"
