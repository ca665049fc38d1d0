#include "ops/onednn_conv.h"

#include <algorithm>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/onednn_loader.h"

namespace opscope::cpu {

namespace {

const OnednnModule& module_or_throw() {
  const OnednnModule& m = onednn_module();
  if (!m.loaded) throw Error("conv2d: onednn " + m.description, kOnednnHowToGet);
  return m;
}

OpscopeOnednnConv describe(OnednnPass pass, const ConvGeom& g, bool bias) {
  OpscopeOnednnConv c{};
  c.N = g.N, c.C = g.C, c.H = g.H, c.W = g.W, c.K = g.K, c.R = g.R, c.S = g.S, c.OH = g.OH, c.OW = g.OW;
  c.sh = g.sh, c.sw = g.sw, c.ph = g.ph, c.pw = g.pw, c.dh = g.dh, c.dw = g.dw, c.G = g.G;
  c.pass = pass == OnednnPass::forward         ? opscope_onednn_forward
           : pass == OnednnPass::backward_data ? opscope_onednn_backward_data
                                               : opscope_onednn_backward_weights;
  c.has_bias = bias ? 1 : 0;
  // opscope's thread setting (:threads, OPSCOPE_NUM_THREADS); one thread inside a parallel loop.
  c.threads = in_parallel_region() ? 1 : num_threads();
  return c;
}

const char* pass_name(OnednnPass pass) {
  return pass == OnednnPass::forward         ? "conv2d"
         : pass == OnednnPass::backward_data ? "conv2d_backward_input"
                                             : "conv2d_backward_weight";
}

}  // namespace

void onednn_conv(const KernelCtx& k, OnednnPass pass, const ConvGeom& g, const float* a, const float* b, const float* c,
                 float* out) {
  const OnednnModule& m = module_or_throw();
  const OpscopeOnednnConv d = describe(pass, g, c != nullptr);
  size_t bytes = 0;
  if (const char* e = m.plan(&d, &bytes))
    throw Error(std::string(pass_name(pass)) + ": onednn: " + e, "algo=\"im2col\" runs every geometry");
  // Float32 elements; the CPU allocator aligns every block to 64 bytes, as oneDNN wants.
  Tensor ws = k.workspace({static_cast<int64_t>(std::max<size_t>(1, (bytes + 3) / 4))}, DType::f32);
  if (const char* e = m.run(&d, a, b, c, out, ws.data<float>()))
    throw Error(std::string(pass_name(pass)) + ": onednn: " + e, "algo=\"im2col\" runs every geometry");
}

double onednn_workspace_bytes(OnednnPass pass, const ConvGeom& g, bool bias) {
  const OnednnModule* m = onednn_module_if_loaded();
  if (!m) return 0;
  const OpscopeOnednnConv d = describe(pass, g, bias);
  size_t bytes = 0;
  return m->plan(&d, &bytes) ? 0 : static_cast<double>(bytes);
}

}  // namespace opscope::cpu
