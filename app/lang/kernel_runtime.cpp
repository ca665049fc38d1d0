// The @kernel compiler's runtime helpers that run out of line: the FLOP count, a lane's failure,
// site names and the out-of-bounds report (kernel_compiler.h).
#include <set>

#include "app/lang/kernel_compiler.h"

namespace opscope::lang::kernel {
namespace compiler {

// --- runtime state shared by the nodes (one launch at a time: the simulator's launch lock) ---
uint64_t g_flops = 0;

[[noreturn]] void lane_fail(const std::string& what, const std::string& hint) {
  throw Error("simulated GPU: " + what, hint);
}

std::string site_text(const SourceText* src, Pos p) {
  std::string file = src ? src->filename : "<kernel>";
  const size_t slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(p.line);
}

void Address::out_of_bounds(gpusim::AccessKind kind, int axis, int64_t v) const {
  const char* verb = kind == gpusim::AccessKind::load ? "load" : kind == gpusim::AccessKind::store ? "store" : "atomic";
  std::string shape;
  for (int d = 0; d < a->ndim; ++d) shape += (d ? ", " : "") + std::to_string(a->dims[d]);
  const std::string what =
      axis < 0 ? "flat index " + std::to_string(v) + " of its " + std::to_string(a->numel) + " elements"
               : "index " + std::to_string(v) + " on axis " + std::to_string(axis) + " of shape (" + shape + ")";
  lane_fail(std::string("out-of-bounds ") + (a->shared ? "shared " : "global ") + verb + " of " + a->name + ": " +
                what + " (" + gpusim::running_lane_text() + ", at " + where + ")",
            "an index runs past the array: guard it with the size the kernel was launched for (if i < n:)");
}

const char* site_file(const std::string& name, int col) {
  static std::set<std::pair<std::string, int>> names;
  return names.insert({name, col}).first->first.c_str();
}

}  // namespace compiler

uint64_t take_flops() { return std::exchange(compiler::g_flops, 0); }

}  // namespace opscope::lang::kernel
