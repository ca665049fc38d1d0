// Private to the kernel_*.cpp files: the @kernel compiler's runtime nodes (typed expressions,
// addresses, load/store helpers) and its `class Compiler` (kernel_compile.h is the public face).
// Types first (a fixed point over the body's assignments: a variable ever given a float is a
// float), then one node per expression and statement. Memory accesses, barriers and shuffles call
// the simulator (gpusim/lang_entry.h) with the kernel line's site, as an instrumented .cu kernel's
// accesses do.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/lang/error.h"
#include "app/lang/kernel_compile.h"
#include "core/interrupt.h"
#include "gpusim/lang_entry.h"

// Not an anonymous namespace: the compiler's methods are defined in three files.
namespace opscope::lang::kernel::compiler {

// --- runtime state shared by the nodes (one launch at a time: the simulator's launch lock) ---
extern uint64_t g_flops;  // defined in kernel_runtime.cpp

enum class Ty : uint8_t { i, f };

struct IExpr {
  virtual ~IExpr() = default;
  virtual int64_t ev(const Regs& r) const = 0;
};
struct FExpr {
  virtual ~FExpr() = default;
  virtual double ev(const Regs& r) const = 0;
};
using IP = std::unique_ptr<IExpr>;
using FP = std::unique_ptr<FExpr>;
using NP = std::unique_ptr<Node>;

template <class Fn> struct ILam final : IExpr {
  Fn fn;
  explicit ILam(Fn f) : fn(std::move(f)) {}
  int64_t ev(const Regs& r) const override { return fn(r); }
};
template <class Fn> struct FLam final : FExpr {
  Fn fn;
  explicit FLam(Fn f) : fn(std::move(f)) {}
  double ev(const Regs& r) const override { return fn(r); }
};
template <class Fn> struct NLam final : Node {
  Fn fn;
  explicit NLam(Fn f) : fn(std::move(f)) {}
  Flow run(const Regs& r) const override { return fn(r); }
};
template <class Fn> IP ilam(Fn f) { return std::make_unique<ILam<Fn>>(std::move(f)); }
template <class Fn> FP flam(Fn f) { return std::make_unique<FLam<Fn>>(std::move(f)); }
template <class Fn> NP nlam(Fn f) { return std::make_unique<NLam<Fn>>(std::move(f)); }

// A compiled expression: an int or a float.
struct Val {
  Ty ty = Ty::i;
  IP i;
  FP f;
};

struct Seq final : Node {
  std::vector<NP> items;
  Flow run(const Regs& r) const override {
    for (const NP& s : items)
      if (Flow fl = s->run(r); fl != Flow::next) return fl;
    return Flow::next;
  }
};

inline void poll_interrupt() {
  if (interrupt::requested()) throw Interrupted();
}

[[noreturn]] void lane_fail(const std::string& what, const std::string& hint);

std::string site_text(const SourceText* src, Pos p);  // "script.ops:7"

// An element of an array: its address, each index checked against its axis (a flat index of a
// many-axis array against its size), then the simulator's access hook.
struct Address {
  const Array* a = nullptr;
  std::vector<IP> idx;  // one per axis, or one flat index
  const Pos* pos = nullptr;
  const void* site = nullptr;
  std::string where;  // "script.ops:7"

  uintptr_t at(const Regs& r, gpusim::AccessKind kind) const {
    *r.at = pos;
    int64_t flat = 0;
    if (idx.size() == 1 && a->ndim > 1) {
      flat = idx[0]->ev(r);
      if (static_cast<uint64_t>(flat) >= static_cast<uint64_t>(a->numel)) out_of_bounds(kind, -1, flat);
    } else {
      for (size_t d = 0; d < idx.size(); ++d) {
        const int64_t v = idx[d]->ev(r);
        if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(a->dims[d])) out_of_bounds(kind, int(d), v);
        flat += v * a->strides[d];
      }
    }
    return a->base + uintptr_t(flat) * dtype_size(a->dtype);
  }
  [[noreturn]] void out_of_bounds(gpusim::AccessKind kind, int axis, int64_t v) const;
};

inline double load_as_double(uintptr_t p, DType t) {
  switch (t) {
    case DType::f32: return *reinterpret_cast<const float*>(p);
    case DType::f64: return *reinterpret_cast<const double*>(p);
    case DType::i64: return double(*reinterpret_cast<const int64_t*>(p));
  }
  return 0;
}
inline void store_double(uintptr_t p, DType t, double v) {
  switch (t) {
    case DType::f32: *reinterpret_cast<float*>(p) = float(v); break;
    case DType::f64: *reinterpret_cast<double*>(p) = v; break;
    case DType::i64: *reinterpret_cast<int64_t*>(p) = int64_t(v); break;
  }
}

inline int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) lane_fail("integer division by zero (" + gpusim::running_lane_text() + ")", "guard the divisor");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t py_mod(int64_t a, int64_t b) {
  if (b == 0) lane_fail("integer modulo by zero (" + gpusim::running_lane_text() + ")", "guard the divisor");
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// The simulator names a site by (file pointer, line): one interned copy of the file name per
// column makes each memory instruction of a line a site of its own (`C[i] = A[i] + B[i]`: A's
// load and B's load counted apart, as a compiled kernel's two load instructions are).
const char* site_file(const std::string& name, int col);

// ---------------------------------------------------------------------------------------------

class Compiler {
 public:
  Compiler(const Function& f, std::vector<LaunchArg>& args, const Interpreter& in, Program& prog)
      : f_(f), args_(args), in_(in), prog_(prog) {
    file_ = f.source ? f.source->filename : "<kernel>";
  }

  void run();

 private:
  [[noreturn]] void fail(Pos p, const std::string& msg, const std::string& hint = {}) const {
    LangError e("kernel " + f_.name + ": " + msg, p.line, p.col, hint);
    e.set_source(f_.source);
    throw e;
  }

  const void* site(Pos p) { return gpusim::source_site(site_file(file_, p.col), p.line); }

  // --- types -----------------------------------------------------------------------------------

  void set_type(const std::string& name, Ty t, Pos p);
  void infer_block(const Block& b);
  void infer_stmt(const Stmt& s);

  bool is_shared_call(const Expr& e) const;

  // The type an expression will have (names not yet typed count as int).
  Ty type_of(const Expr& e);

  // --- names -----------------------------------------------------------------------------------

  const Value* global_number(const std::string& name) const;
  const Array* array_named(const std::string& name) const;
  std::pair<Ty, int> slot_of(const std::string& name, Ty ty);

  // --- expressions -----------------------------------------------------------------------------

  static IP iconst(int64_t v) {
    return ilam([v](const Regs&) { return v; });
  }
  static FP fconst(double v) {
    return flam([v](const Regs&) { return v; });
  }
  FP as_float(Val v);
  IP as_int(Val v, Pos p, const char* what);
  IP truth(Val v);
  static Val ival(IP i) {
    Val v;
    v.ty = Ty::i;
    v.i = std::move(i);
    return v;
  }
  static Val fval(FP f) {
    Val v;
    v.ty = Ty::f;
    v.f = std::move(f);
    return v;
  }

  // A compile-time integer: a literal, a global number, an int argument, arithmetic of those.
  int64_t const_int(const Expr& e);
  Val name(const Expr& e);
  Val builtin_var(const Expr& e);
  Address address(const Array* a, std::vector<const Expr*> subs, const Pos& p);
  const Array* array_of(const Expr& e);
  std::vector<const Expr*> subscripts(const Expr& e);
  Val load(const Expr& e);
  Val unary(const Expr& e);
  Val binary(const Expr& e);
  Val compare(const Expr& e);
  Val logical(const Expr& e);
  Val cond(const Expr& e);
  std::vector<Val> positional(const Expr& e, size_t lo, size_t hi, const std::string& sig);
  Val math1(const Expr& e, const std::string& n);
  Val minmax(const Expr& e, bool is_min);

  // shfl_xor(v, mask), shfl_down(v, delta), shfl_up(v, delta), shfl(v, src_lane): every lane of
  // the warp that has not exited takes part (CUDA's full mask).
  Val shuffle(const Expr& e, const std::string& n);

  // atomic_add(A, index, value): adds and returns the old value, one lane at a time.
  Val atomic_add(const Expr& e);
  Val call(const Expr& e);
  Val expr(const Expr& e);

  // --- statements ------------------------------------------------------------------------------

  NP assign_name(const std::string& target, Val v, Pos p);
  NP store(const Expr& target, Val v);

  // name = shared(shape, dtype="float32"): placed once, at a fixed offset of the block's shared memory.
  void declare_shared(const std::string& target, const Expr& call);
  NP for_loop(const Stmt& s);
  NP statement(const Stmt& s);
  NP block(const Block& b);

  const Function& f_;
  std::vector<LaunchArg>& args_;
  const Interpreter& in_;
  Program& prog_;
  std::string file_;
  std::map<std::string, Ty> types_;
  std::map<std::string, std::pair<Ty, int>> slots_;
  std::map<std::string, Array*> arrays_;
  std::map<const Expr*, Array*> shared_by_site_;
  bool changed_ = false;
};

}  // namespace opscope::lang::kernel::compiler
