// A `@kernel`'s body compiled once per launch into a tree of small typed nodes: every variable a
// slot in the lane's registers (int64 or double, the type inferred from its assignments), every
// array (a tensor argument copied to the simulated device, a `shared(...)` array) resolved to its
// address, shape and element type, scalar arguments and the script's global numbers folded in.
// A lane then runs the tree with no name lookup and no Value: that is what makes a 128×128 tiled
// matmul in the language take a fraction of a second on the simulator.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "app/lang/value.h"

namespace opscope::lang::kernel {

struct Regs {  // the running lane's registers
  int64_t* i;
  double* f;
  const Pos** at;  // the kernel position it reached last (an access, barrier or collective): where a check points
};

enum class Flow : uint8_t { next, brk, cont, ret };

struct Node {
  virtual ~Node() = default;
  virtual Flow run(const Regs& r) const = 0;
};

// An array the kernel indexes: global (a tensor argument's copy in device memory) or shared.
struct Array {
  std::string name;
  uintptr_t base = 0;
  int ndim = 1;
  int64_t dims[3] = {1, 1, 1}, strides[3] = {1, 1, 1};
  int64_t numel = 0;
  DType dtype = DType::f32;
  bool shared = false;
  bool written = false;  // a store or atomic names it (a global one is copied back after the launch)
  int arg = -1;  // global: the kernel parameter it came from
};

// What a launch passes: per parameter a tensor (its device copy described by `arrays`) or a number.
struct LaunchArg {
  enum Kind { array, integer, real } kind = integer;
  int64_t i = 0;
  double f = 0;
  Array* arr = nullptr;
};

struct Program {
  std::unique_ptr<Node> body;
  std::deque<Array> shared;  // the `shared(...)` arrays
  int int_slots = 0, float_slots = 0;  // registers per lane
  std::vector<std::pair<int, int64_t>> int_init;  // (slot, value): scalar parameters
  std::vector<std::pair<int, double>> float_init;
  size_t shared_bytes = 0;
};

// Compiles `f`'s body for these arguments (arrays already placed in device memory). A construct a
// kernel cannot use fails with its position in the kernel's source. `globals` gives the script's
// names (numbers are folded in as constants).
Program compile_kernel(const Function& f, std::vector<LaunchArg>& args, const Interpreter& in);

// FLOPs counted by the lanes (float +, -, *, /, and each math function), not yet reported.
uint64_t take_flops();

}  // namespace opscope::lang::kernel
