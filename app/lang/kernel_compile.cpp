// The @kernel compiler (app/lang/kernel_compile.h): types first (a fixed point over the body's
// assignments: a variable ever given a float is a float), then one node per expression and
// statement. Memory accesses, barriers and shuffles call the simulator (gpusim/lang_entry.h) with
// the kernel line's site, as an instrumented .cu kernel's accesses do.
#include "app/lang/kernel_compile.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "app/lang/error.h"
#include "app/lang/interpreter.h"
#include "core/interrupt.h"
#include "gpusim/lang_entry.h"

namespace opscope::lang::kernel {

namespace {

// --- runtime state shared by the nodes (one launch at a time: the simulator's launch lock) ---
uint64_t g_flops = 0;

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

template <class Fn>
struct ILam final : IExpr {
  Fn fn;
  explicit ILam(Fn f) : fn(std::move(f)) {}
  int64_t ev(const Regs& r) const override { return fn(r); }
};
template <class Fn>
struct FLam final : FExpr {
  Fn fn;
  explicit FLam(Fn f) : fn(std::move(f)) {}
  double ev(const Regs& r) const override { return fn(r); }
};
template <class Fn>
struct NLam final : Node {
  Fn fn;
  explicit NLam(Fn f) : fn(std::move(f)) {}
  Flow run(const Regs& r) const override { return fn(r); }
};
template <class Fn>
IP ilam(Fn f) {
  return std::make_unique<ILam<Fn>>(std::move(f));
}
template <class Fn>
FP flam(Fn f) {
  return std::make_unique<FLam<Fn>>(std::move(f));
}
template <class Fn>
NP nlam(Fn f) {
  return std::make_unique<NLam<Fn>>(std::move(f));
}

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

void poll_interrupt() {
  if (interrupt::requested()) throw Interrupted();
}

[[noreturn]] void lane_fail(const std::string& what, const std::string& hint) {
  throw Error("simulated GPU: " + what, hint);
}

std::string site_text(const SourceText* src, Pos p) {
  std::string file = src ? src->filename : "<kernel>";
  const size_t slash = file.rfind('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(p.line);
}

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
  [[noreturn]] void out_of_bounds(gpusim::AccessKind kind, int axis, int64_t v) const {
    const char* verb = kind == gpusim::AccessKind::load ? "load" : kind == gpusim::AccessKind::store ? "store" : "atomic";
    std::string shape;
    for (int d = 0; d < a->ndim; ++d) shape += (d ? ", " : "") + std::to_string(a->dims[d]);
    const std::string what = axis < 0 ? "flat index " + std::to_string(v) + " of its " + std::to_string(a->numel) + " elements"
                                      : "index " + std::to_string(v) + " on axis " + std::to_string(axis) + " of shape (" + shape + ")";
    lane_fail(std::string("out-of-bounds ") + (a->shared ? "shared " : "global ") + verb + " of " + a->name + ": " + what + " (" +
                  gpusim::running_lane_text() + ", at " + where + ")",
              "an index runs past the array: guard it with the size the kernel was launched for (if i < n:)");
  }
};

double load_as_double(uintptr_t p, DType t) {
  switch (t) {
    case DType::f32: return *reinterpret_cast<const float*>(p);
    case DType::f64: return *reinterpret_cast<const double*>(p);
    case DType::i64: return double(*reinterpret_cast<const int64_t*>(p));
  }
  return 0;
}
void store_double(uintptr_t p, DType t, double v) {
  switch (t) {
    case DType::f32: *reinterpret_cast<float*>(p) = float(v); break;
    case DType::f64: *reinterpret_cast<double*>(p) = v; break;
    case DType::i64: *reinterpret_cast<int64_t*>(p) = int64_t(v); break;
  }
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) lane_fail("integer division by zero (" + gpusim::running_lane_text() + ")", "guard the divisor");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) {
  if (b == 0) lane_fail("integer modulo by zero (" + gpusim::running_lane_text() + ")", "guard the divisor");
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// The simulator names a site by (file pointer, line): one interned copy of the file name per
// column makes each memory instruction of a line a site of its own (`C[i] = A[i] + B[i]`: A's
// load and B's load counted apart, as a compiled kernel's two load instructions are).
const char* site_file(const std::string& name, int col) {
  static std::set<std::pair<std::string, int>> names;
  return names.insert({name, col}).first->first.c_str();
}

// ---------------------------------------------------------------------------------------------

class Compiler {
 public:
  Compiler(const Function& f, std::vector<LaunchArg>& args, const Interpreter& in, Program& prog)
      : f_(f), args_(args), in_(in), prog_(prog) {
    file_ = f.source ? f.source->filename : "<kernel>";
  }

  void run() {
    for (size_t k = 0; k < f_.params.size(); ++k) {
      const LaunchArg& a = args_[k];
      if (a.kind == LaunchArg::array) arrays_[f_.params[k]] = a.arr;
      else types_[f_.params[k]] = a.kind == LaunchArg::real ? Ty::f : Ty::i;
    }
    // Types: a fixed point (each pass can only turn an int variable into a float one).
    for (int pass = 0; pass < 8; ++pass) {
      changed_ = false;
      infer_block(*f_.body);
      if (!changed_) break;
    }
    for (auto& [name, ty] : types_) slot_of(name, ty);
    for (size_t k = 0; k < f_.params.size(); ++k) {
      const LaunchArg& a = args_[k];
      if (a.kind == LaunchArg::array) continue;
      const auto& [ty, slot] = slots_.at(f_.params[k]);
      if (ty == Ty::f) prog_.float_init.emplace_back(slot, a.kind == LaunchArg::real ? a.f : double(a.i));
      else prog_.int_init.emplace_back(slot, a.i);
    }
    prog_.body = block(*f_.body);
  }

 private:
  [[noreturn]] void fail(Pos p, const std::string& msg, const std::string& hint = {}) const {
    LangError e("kernel " + f_.name + ": " + msg, p.line, p.col, hint);
    e.set_source(f_.source);
    throw e;
  }

  const void* site(Pos p) { return gpusim::source_site(site_file(file_, p.col), p.line); }

  // --- types -----------------------------------------------------------------------------------

  void set_type(const std::string& name, Ty t, Pos p) {
    if (arrays_.count(name)) fail(p, "'" + name + "' is an array: it cannot be assigned", "write to an element: " + name + "[i] = ...");
    auto it = types_.find(name);
    if (it == types_.end()) {
      types_[name] = t;
      changed_ = true;
    } else if (it->second == Ty::i && t == Ty::f) {
      it->second = Ty::f;
      changed_ = true;
    }
  }

  void infer_block(const Block& b) {
    for (const StmtPtr& s : b) infer_stmt(*s);
  }
  void infer_stmt(const Stmt& s) {
    switch (s.kind) {
      case Stmt::assign:
        for (const ExprPtr& t : s.targets)
          if (t->kind == Expr::name) {
            if (is_shared_call(*s.value)) {  // declared now: the types of its reads are known
              declare_shared(t->text, *s.value);
              continue;
            }
            set_type(t->text, type_of(*s.value), t->pos);
          }
        break;
      case Stmt::aug_assign:
        if (s.targets[0]->kind == Expr::name) {
          const Ty rhs = type_of(*s.value);
          const Ty cur = types_.count(s.targets[0]->text) ? types_[s.targets[0]->text] : Ty::i;
          set_type(s.targets[0]->text, (s.text == "/=" || rhs == Ty::f || cur == Ty::f) ? Ty::f : Ty::i, s.pos);
        }
        break;
      case Stmt::for_:
        if (s.targets.size() == 1 && s.targets[0]->kind == Expr::name) set_type(s.targets[0]->text, Ty::i, s.pos);
        infer_block(s.body);
        break;
      case Stmt::if_:
      case Stmt::while_:
        infer_block(s.body);
        infer_block(s.orelse);
        break;
      default: break;
    }
  }

  bool is_shared_call(const Expr& e) const {
    return e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "shared";
  }

  // The type an expression will have (names not yet typed count as int).
  Ty type_of(const Expr& e) {
    switch (e.kind) {
      case Expr::integer:
      case Expr::boolean: return Ty::i;
      case Expr::real: return Ty::f;
      case Expr::name: {
        if (auto it = types_.find(e.text); it != types_.end()) return it->second;
        if (const Value* v = global_number(e.text)) return v->kind == Value::real ? Ty::f : Ty::i;
        return Ty::i;
      }
      case Expr::attr: return Ty::i;
      case Expr::index: {
        if (e.items[0]->kind == Expr::name)
          if (const Array* a = array_named(e.items[0]->text)) return is_floating(a->dtype) ? Ty::f : Ty::i;
        return Ty::i;
      }
      case Expr::unary: return e.text == "not" ? Ty::i : type_of(*e.items[0]);
      case Expr::binary: {
        if (e.text == "/") return Ty::f;
        const Ty a = type_of(*e.items[0]), b = type_of(*e.items[1]);
        return a == Ty::f || b == Ty::f ? Ty::f : Ty::i;
      }
      case Expr::compare:
      case Expr::logical: return Ty::i;
      case Expr::cond: {
        const Ty a = type_of(*e.items[0]), b = type_of(*e.items[2]);
        return a == Ty::f || b == Ty::f ? Ty::f : Ty::i;
      }
      case Expr::call: {
        if (e.items[0]->kind != Expr::name) return Ty::i;
        const std::string& n = e.items[0]->text;
        if (n == "int" || n == "len") return Ty::i;
        if (n == "float" || n == "sqrt" || n == "exp" || n == "log" || n == "tanh" || n == "sin" || n == "cos" || n == "rsqrt" ||
            n == "floor" || n == "ceil")
          return Ty::f;
        if (n == "min" || n == "max") {
          Ty t = Ty::i;
          for (const Arg& a : e.args) t = type_of(*a.value) == Ty::f ? Ty::f : t;
          return t;
        }
        if (n == "abs" || n.rfind("shfl", 0) == 0) return e.args.empty() ? Ty::i : type_of(*e.args[0].value);
        if (n == "atomic_add" && !e.args.empty() && e.args[0].value->kind == Expr::name)
          if (const Array* a = array_named(e.args[0].value->text)) return is_floating(a->dtype) ? Ty::f : Ty::i;
        return Ty::i;
      }
      default: return Ty::i;
    }
  }

  // --- names -----------------------------------------------------------------------------------

  const Value* global_number(const std::string& name) const {
    const Value* v = in_.lookup(name);
    return v && (v->kind == Value::integer || v->kind == Value::real || v->kind == Value::boolean) ? v : nullptr;
  }
  const Array* array_named(const std::string& name) const {
    auto it = arrays_.find(name);
    return it == arrays_.end() ? nullptr : it->second;
  }
  std::pair<Ty, int> slot_of(const std::string& name, Ty ty) {
    auto it = slots_.find(name);
    if (it != slots_.end()) return it->second;
    const int s = ty == Ty::f ? prog_.float_slots++ : prog_.int_slots++;
    return slots_[name] = {ty, s};
  }

  // --- expressions -----------------------------------------------------------------------------

  static IP iconst(int64_t v) {
    return ilam([v](const Regs&) { return v; });
  }
  static FP fconst(double v) {
    return flam([v](const Regs&) { return v; });
  }
  FP as_float(Val v) {
    if (v.ty == Ty::f) return std::move(v.f);
    return flam([a = std::move(v.i)](const Regs& r) { return double(a->ev(r)); });
  }
  IP as_int(Val v, Pos p, const char* what) {
    if (v.ty == Ty::i) return std::move(v.i);
    fail(p, std::string(what) + " must be an int, not a float", "convert it: int(x)");
  }
  IP truth(Val v) {
    if (v.ty == Ty::i) return std::move(v.i);
    return ilam([a = std::move(v.f)](const Regs& r) -> int64_t { return a->ev(r) != 0.0; });
  }
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
  int64_t const_int(const Expr& e) {
    switch (e.kind) {
      case Expr::integer: return e.int_value;
      case Expr::name: {
        for (size_t k = 0; k < f_.params.size(); ++k)
          if (f_.params[k] == e.text && args_[k].kind == LaunchArg::integer) return args_[k].i;
        if (const Value* v = global_number(e.text); v && v->kind != Value::real) return v->kind == Value::boolean ? v->b : v->i;
        break;
      }
      case Expr::binary: {
        const int64_t a = const_int(*e.items[0]), b = const_int(*e.items[1]);
        if (e.text == "+") return a + b;
        if (e.text == "-") return a - b;
        if (e.text == "*") return a * b;
        if (e.text == "//" && b != 0) return a / b;
        break;
      }
      default: break;
    }
    fail(e.pos, "a shared array's shape must be known before the launch", "use numbers, the script's constants or int arguments");
  }

  Val name(const Expr& e) {
    if (auto it = slots_.find(e.text); it != slots_.end()) {
      const int s = it->second.second;
      if (it->second.first == Ty::f) return fval(flam([s](const Regs& r) { return r.f[s]; }));
      return ival(ilam([s](const Regs& r) { return r.i[s]; }));
    }
    if (array_named(e.text)) fail(e.pos, "'" + e.text + "' is an array: index it", e.text + "[i]");
    if (e.text == "warpSize") return ival(iconst(32));
    if (const Value* v = global_number(e.text)) {
      if (v->kind == Value::real) return fval(fconst(v->f));
      return ival(iconst(v->kind == Value::boolean ? v->b : v->i));
    }
    if (e.text == "threadIdx" || e.text == "blockIdx" || e.text == "blockDim" || e.text == "gridDim")
      fail(e.pos, e.text + " has three parts", e.text + ".x, " + e.text + ".y or " + e.text + ".z");
    if (const Value* v = in_.lookup(e.text))
      fail(e.pos, "'" + e.text + "' is " + std::string(kind_name(*v)) + ": a kernel uses numbers, its arguments and its own variables",
           v->kind == Value::tensor ? "pass the tensor as an argument of the launch" : "");
    fail(e.pos, "name '" + e.text + "' is not defined", "a kernel sees its parameters, its variables and the script's numbers");
  }

  Val builtin_var(const Expr& e) {
    const std::string& obj = e.items[0]->text;
    const int axis = e.text == "x" ? 0 : e.text == "y" ? 1 : e.text == "z" ? 2 : -1;
    if (axis < 0) fail(e.pos, obj + " has no part '" + e.text + "'", obj + ".x, " + obj + ".y or " + obj + ".z");
    using namespace gpusim;
    if (obj == "threadIdx") return ival(ilam([axis](const Regs&) -> int64_t {
      return axis == 0 ? g_thread_idx.x : axis == 1 ? g_thread_idx.y : g_thread_idx.z;
    }));
    if (obj == "blockIdx") return ival(ilam([axis](const Regs&) -> int64_t {
      return axis == 0 ? g_block_idx.x : axis == 1 ? g_block_idx.y : g_block_idx.z;
    }));
    if (obj == "blockDim") return ival(ilam([axis](const Regs&) -> int64_t {
      return axis == 0 ? g_block_dim.x : axis == 1 ? g_block_dim.y : g_block_dim.z;
    }));
    return ival(ilam([axis](const Regs&) -> int64_t { return axis == 0 ? g_grid_dim.x : axis == 1 ? g_grid_dim.y : g_grid_dim.z; }));
  }

  Address address(const Array* a, std::vector<const Expr*> subs, const Pos& p) {
    if (subs.size() != 1 && int(subs.size()) != a->ndim)
      fail(p, a->name + " has " + std::to_string(a->ndim) + " axes: index it with " + std::to_string(a->ndim) + " indices (or one flat index)");
    for (const Expr* s : subs)
      if (s->kind == Expr::slice) fail(s->pos, "a kernel reads one element at a time: no slices", a->name + "[i]");
    Address ad;
    ad.a = a;
    for (const Expr* s : subs) ad.idx.push_back(as_int(expr(*s), s->pos, "an index"));
    ad.pos = &p;
    ad.site = site(p);
    ad.where = site_text(f_.source.get(), p);
    return ad;
  }
  const Array* array_of(const Expr& e) {
    if (e.kind != Expr::name) fail(e.pos, "only arrays (tensor arguments and shared arrays) can be indexed in a kernel");
    const Array* a = array_named(e.text);
    if (!a) {
      if (slots_.count(e.text)) fail(e.pos, "'" + e.text + "' is a number, not an array");
      fail(e.pos, "'" + e.text + "' is not an array of this kernel", "pass the tensor as an argument of the launch, or make it with shared(shape)");
    }
    return a;
  }
  std::vector<const Expr*> subscripts(const Expr& e) {
    std::vector<const Expr*> subs;
    for (size_t k = 1; k < e.items.size(); ++k) subs.push_back(e.items[k].get());
    if (subs.size() == 1 && subs[0]->kind == Expr::tuple) {
      const Expr* t = subs[0];
      subs.clear();
      for (const ExprPtr& x : t->items) subs.push_back(x.get());
    }
    return subs;
  }

  Val load(const Expr& e) {
    // A.shape[k]: a constant.
    if (e.items[0]->kind == Expr::attr && e.items[0]->text == "shape" && e.items[0]->items[0]->kind == Expr::name) {
      const Array* a = array_of(*e.items[0]->items[0]);
      const int64_t k = const_int(*e.items[1]);
      if (k < 0 || k >= a->ndim) fail(e.pos, a->name + " has " + std::to_string(a->ndim) + " axes");
      return ival(iconst(a->dims[k]));
    }
    const Array* a = array_of(*e.items[0]);
    Address ad = address(a, subscripts(e), e.pos);
    if (is_floating(a->dtype)) {
      const DType t = a->dtype;
      return fval(flam([ad = std::move(ad), t](const Regs& r) {
        const uintptr_t p = ad.at(r, gpusim::AccessKind::load);
        gpusim::lane_access(p, unsigned(dtype_size(t)), gpusim::AccessKind::load, ad.site);
        return load_as_double(p, t);
      }));
    }
    return ival(ilam([ad = std::move(ad)](const Regs& r) {
      const uintptr_t p = ad.at(r, gpusim::AccessKind::load);
      gpusim::lane_access(p, 8, gpusim::AccessKind::load, ad.site);
      return *reinterpret_cast<const int64_t*>(p);
    }));
  }

  Val unary(const Expr& e) {
    Val a = expr(*e.items[0]);
    if (e.text == "not") return ival(ilam([x = truth(std::move(a))](const Regs& r) -> int64_t { return !x->ev(r); }));
    if (e.text == "+") return a;
    if (a.ty == Ty::f) return fval(flam([x = std::move(a.f)](const Regs& r) { return -x->ev(r); }));
    return ival(ilam([x = std::move(a.i)](const Regs& r) { return -x->ev(r); }));
  }

  Val binary(const Expr& e) {
    const std::string& op = e.text;
    Val a = expr(*e.items[0]), b = expr(*e.items[1]);
    if (op == "@") fail(e.pos, "no matrix products inside a kernel: a lane computes numbers", "write the loop over k");
    if (op == "/" || a.ty == Ty::f || b.ty == Ty::f) {
      FP x = as_float(std::move(a)), y = as_float(std::move(b));
      if (op == "+") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) { ++g_flops; return x->ev(r) + y->ev(r); }));
      if (op == "-") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) { ++g_flops; return x->ev(r) - y->ev(r); }));
      if (op == "*") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) { ++g_flops; return x->ev(r) * y->ev(r); }));
      if (op == "/") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) { ++g_flops; return x->ev(r) / y->ev(r); }));
      if (op == "//") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) { return std::floor(x->ev(r) / y->ev(r)); }));
      if (op == "%") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) {
        const double u = x->ev(r), v = y->ev(r), m = std::fmod(u, v);
        return m != 0 && ((m < 0) != (v < 0)) ? m + v : m;
      }));
      if (op == "**") return fval(flam([x = std::move(x), y = std::move(y)](const Regs& r) { ++g_flops; return std::pow(x->ev(r), y->ev(r)); }));
    } else {
      IP x = std::move(a.i), y = std::move(b.i);
      if (op == "+") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return x->ev(r) + y->ev(r); }));
      if (op == "-") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return x->ev(r) - y->ev(r); }));
      if (op == "*") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return x->ev(r) * y->ev(r); }));
      if (op == "//") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return floor_div(x->ev(r), y->ev(r)); }));
      if (op == "%") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) { return py_mod(x->ev(r), y->ev(r)); }));
      if (op == "**") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) {
        int64_t base = x->ev(r), n = y->ev(r), out = 1;
        for (; n > 0; --n) out *= base;
        return out;
      }));
    }
    fail(e.pos, "operator '" + op + "' is not available in a kernel");
  }

  Val compare(const Expr& e) {
    const std::string& op = e.text;
    if (op == "in") fail(e.pos, "'in' is not available in a kernel");
    Val a = expr(*e.items[0]), b = expr(*e.items[1]);
    auto pick = [&](auto x, auto y) -> Val {
      if (op == "<") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) < y->ev(r); }));
      if (op == "<=") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) <= y->ev(r); }));
      if (op == ">") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) > y->ev(r); }));
      if (op == ">=") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) >= y->ev(r); }));
      if (op == "==") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) == y->ev(r); }));
      return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) != y->ev(r); }));
    };
    if (a.ty == Ty::f || b.ty == Ty::f) return pick(as_float(std::move(a)), as_float(std::move(b)));
    return pick(std::move(a.i), std::move(b.i));
  }

  Val logical(const Expr& e) {
    IP x = truth(expr(*e.items[0])), y = truth(expr(*e.items[1]));
    if (e.text == "and") return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) && y->ev(r); }));
    return ival(ilam([x = std::move(x), y = std::move(y)](const Regs& r) -> int64_t { return x->ev(r) || y->ev(r); }));
  }

  Val cond(const Expr& e) {
    Val a = expr(*e.items[0]), b = expr(*e.items[2]);
    IP c = truth(expr(*e.items[1]));
    if (a.ty == Ty::f || b.ty == Ty::f) {
      return fval(flam([c = std::move(c), x = as_float(std::move(a)), y = as_float(std::move(b))](const Regs& r) {
        return c->ev(r) ? x->ev(r) : y->ev(r);
      }));
    }
    return ival(ilam([c = std::move(c), x = std::move(a.i), y = std::move(b.i)](const Regs& r) { return c->ev(r) ? x->ev(r) : y->ev(r); }));
  }

  std::vector<Val> positional(const Expr& e, size_t lo, size_t hi, const std::string& sig) {
    for (const Arg& a : e.args)
      if (!a.name.empty()) fail(a.pos, "no keyword arguments here", sig);
    if (e.args.size() < lo || e.args.size() > hi) fail(e.pos, "expected " + sig);
    std::vector<Val> out;
    for (const Arg& a : e.args) out.push_back(expr(*a.value));
    return out;
  }

  Val math1(const Expr& e, const std::string& n) {
    std::vector<Val> v = positional(e, 1, 1, n + "(x)");
    FP x = as_float(std::move(v[0]));
    double (*fn)(double) = nullptr;
    if (n == "sqrt") fn = [](double u) { return std::sqrt(u); };
    else if (n == "exp") fn = [](double u) { return std::exp(u); };
    else if (n == "log") fn = [](double u) { return std::log(u); };
    else if (n == "tanh") fn = [](double u) { return std::tanh(u); };
    else if (n == "sin") fn = [](double u) { return std::sin(u); };
    else if (n == "cos") fn = [](double u) { return std::cos(u); };
    else if (n == "rsqrt") fn = [](double u) { return 1.0 / std::sqrt(u); };
    else if (n == "floor") fn = [](double u) { return std::floor(u); };
    else fn = [](double u) { return std::ceil(u); };
    return fval(flam([x = std::move(x), fn](const Regs& r) { ++g_flops; return fn(x->ev(r)); }));
  }

  Val minmax(const Expr& e, bool is_min) {
    std::vector<Val> v = positional(e, 2, 8, std::string(is_min ? "min" : "max") + "(a, b, ...)");
    bool fl = false;
    for (const Val& x : v) fl = fl || x.ty == Ty::f;
    if (fl) {
      std::vector<FP> xs;
      for (Val& x : v) xs.push_back(as_float(std::move(x)));
      return fval(flam([xs = std::move(xs), is_min](const Regs& r) {
        double m = xs[0]->ev(r);
        for (size_t k = 1; k < xs.size(); ++k) m = is_min ? std::min(m, xs[k]->ev(r)) : std::max(m, xs[k]->ev(r));
        return m;
      }));
    }
    std::vector<IP> xs;
    for (Val& x : v) xs.push_back(std::move(x.i));
    return ival(ilam([xs = std::move(xs), is_min](const Regs& r) {
      int64_t m = xs[0]->ev(r);
      for (size_t k = 1; k < xs.size(); ++k) m = is_min ? std::min(m, xs[k]->ev(r)) : std::max(m, xs[k]->ev(r));
      return m;
    }));
  }

  // shfl_xor(v, mask), shfl_down(v, delta), shfl_up(v, delta), shfl(v, src_lane): every lane of
  // the warp that has not exited takes part (CUDA's full mask).
  Val shuffle(const Expr& e, const std::string& n) {
    std::vector<Val> v = positional(e, 2, 2, n + "(value, lane_arg)");
    const gpusim::Collective kind = n == "shfl_xor"    ? gpusim::Collective::shfl_xor
                                    : n == "shfl_down" ? gpusim::Collective::shfl_down
                                    : n == "shfl_up"   ? gpusim::Collective::shfl_up
                                                       : gpusim::Collective::shfl_idx;
    IP arg = as_int(std::move(v[1]), e.args[1].pos, "a shuffle's lane argument");
    const void* s = site(e.pos);
    const Pos* p = &e.pos;
    if (v[0].ty == Ty::f) {
      return fval(flam([x = std::move(v[0].f), arg = std::move(arg), kind, s, p](const Regs& r) {
        const double val = x->ev(r);
        const int a = int(arg->ev(r));
        uint64_t bits;
        std::memcpy(&bits, &val, 8);
        *r.at = p;
        bits = gpusim::warp_collective(kind, 0xffffffffu, bits, a, 32, s);
        double out;
        std::memcpy(&out, &bits, 8);
        return out;
      }));
    }
    return ival(ilam([x = std::move(v[0].i), arg = std::move(arg), kind, s, p](const Regs& r) {
      const uint64_t val = uint64_t(x->ev(r));
      const int a = int(arg->ev(r));
      *r.at = p;
      return int64_t(gpusim::warp_collective(kind, 0xffffffffu, val, a, 32, s));
    }));
  }

  // atomic_add(A, index, value): adds and returns the old value, one lane at a time.
  Val atomic_add(const Expr& e) {
    for (const Arg& a : e.args)
      if (!a.name.empty()) fail(a.pos, "no keyword arguments here", "atomic_add(A, index, value)");
    if (e.args.size() != 3) fail(e.pos, "expected atomic_add(A, index, value)", "index: i, or (i, j) for a 2-D array");
    Array* a = const_cast<Array*>(array_of(*e.args[0].value));
    a->written = true;
    std::vector<const Expr*> subs;
    if (e.args[1].value->kind == Expr::tuple)
      for (const ExprPtr& x : e.args[1].value->items) subs.push_back(x.get());
    else
      subs.push_back(e.args[1].value.get());
    Address ad = address(a, subs, e.pos);
    Val v = expr(*e.args[2].value);
    const DType t = a->dtype;
    if (is_floating(t)) {
      return fval(flam([ad = std::move(ad), x = as_float(std::move(v)), t](const Regs& r) {
        const double add = x->ev(r);
        const uintptr_t p = ad.at(r, gpusim::AccessKind::atomic);
        gpusim::lane_access(p, unsigned(dtype_size(t)), gpusim::AccessKind::atomic, ad.site);
        const double old = load_as_double(p, t);
        store_double(p, t, old + add);
        ++g_flops;
        return old;
      }));
    }
    IP x = as_int(std::move(v), e.args[2].pos, "the value added to an int array");
    return ival(ilam([ad = std::move(ad), x = std::move(x)](const Regs& r) {
      const int64_t add = x->ev(r);
      const uintptr_t p = ad.at(r, gpusim::AccessKind::atomic);
      gpusim::lane_access(p, 8, gpusim::AccessKind::atomic, ad.site);
      const int64_t old = *reinterpret_cast<int64_t*>(p);
      *reinterpret_cast<int64_t*>(p) = old + add;
      return old;
    }));
  }

  Val call(const Expr& e) {
    if (e.items[0]->kind != Expr::name) fail(e.pos, "a kernel calls only its built-in functions");
    const std::string& n = e.items[0]->text;
    if (n == "int") {
      std::vector<Val> v = positional(e, 1, 1, "int(x)");
      if (v[0].ty == Ty::i) return std::move(v[0]);
      return ival(ilam([x = std::move(v[0].f)](const Regs& r) { return int64_t(x->ev(r)); }));
    }
    if (n == "float") {
      if (e.args.size() == 1 && e.args[0].value->kind == Expr::string) {
        const std::string& s = e.args[0].value->text;
        if (s == "inf" || s == "+inf") return fval(fconst(INFINITY));
        if (s == "-inf") return fval(fconst(-INFINITY));
        fail(e.pos, "float(\"" + s + "\"): only \"inf\" and \"-inf\" in a kernel");
      }
      std::vector<Val> v = positional(e, 1, 1, "float(x)");
      return fval(as_float(std::move(v[0])));
    }
    if (n == "abs") {
      std::vector<Val> v = positional(e, 1, 1, "abs(x)");
      if (v[0].ty == Ty::f) return fval(flam([x = std::move(v[0].f)](const Regs& r) { return std::fabs(x->ev(r)); }));
      return ival(ilam([x = std::move(v[0].i)](const Regs& r) { return std::abs(x->ev(r)); }));
    }
    if (n == "len") {
      if (e.args.size() != 1) fail(e.pos, "expected len(A)");
      return ival(iconst(array_of(*e.args[0].value)->dims[0]));
    }
    if (n == "min" || n == "max") return minmax(e, n == "min");
    if (n == "sqrt" || n == "exp" || n == "log" || n == "tanh" || n == "sin" || n == "cos" || n == "rsqrt" || n == "floor" ||
        n == "ceil")
      return math1(e, n);
    if (n == "shfl_xor" || n == "shfl_down" || n == "shfl_up" || n == "shfl") return shuffle(e, n);
    if (n == "atomic_add") return atomic_add(e);
    if (n == "syncthreads") fail(e.pos, "syncthreads() is a statement of its own", "write it on its own line");
    if (n == "shared") fail(e.pos, "shared(shape) makes an array: assign it to a name", "tile = shared((16, 16))");
    if (n == "range") fail(e.pos, "range(...) belongs in a for loop", "for k in range(n):");
    fail(e.pos, "'" + n + "' cannot be called in a kernel",
         "a kernel calls syncthreads, shared, atomic_add, shfl_xor/shfl_down/shfl_up/shfl, min, max, abs, int, float, sqrt, "
         "rsqrt, exp, log, tanh, sin, cos, floor, ceil, len");
  }

  Val expr(const Expr& e) {
    switch (e.kind) {
      case Expr::integer: return ival(iconst(e.int_value));
      case Expr::boolean: return ival(iconst(e.bool_value));
      case Expr::real: return fval(fconst(e.real_value));
      case Expr::name: return name(e);
      case Expr::attr:
        if (e.items[0]->kind == Expr::name) {
          const std::string& o = e.items[0]->text;
          if (o == "threadIdx" || o == "blockIdx" || o == "blockDim" || o == "gridDim") return builtin_var(e);
        }
        fail(e.pos, "attribute '" + e.text + "' is not available in a kernel",
             "a kernel reads threadIdx, blockIdx, blockDim and gridDim (.x, .y, .z) and A.shape[k]");
      case Expr::index: return load(e);
      case Expr::unary: return unary(e);
      case Expr::binary: return binary(e);
      case Expr::compare: return compare(e);
      case Expr::logical: return logical(e);
      case Expr::cond: return cond(e);
      case Expr::call: return call(e);
      case Expr::string: fail(e.pos, "a kernel has no strings");
      default: fail(e.pos, "a kernel computes with numbers only: no lists, tuples, dicts or None here");
    }
  }

  // --- statements ------------------------------------------------------------------------------

  NP assign_name(const std::string& target, Val v, Pos p) {
    (void)p;
    const Ty ty = slots_.at(target).first;
    const int s = slots_.at(target).second;  // not a structured binding: clang 14 cannot capture one
    if (ty == Ty::f) return nlam([x = as_float(std::move(v)), s](const Regs& r) { r.f[s] = x->ev(r); return Flow::next; });
    return nlam([x = std::move(v.i), s](const Regs& r) { r.i[s] = x->ev(r); return Flow::next; });
  }

  NP store(const Expr& target, Val v) {
    Array* a = const_cast<Array*>(array_of(*target.items[0]));
    a->written = true;
    Address ad = address(a, subscripts(target), target.pos);
    const DType t = a->dtype;
    if (is_floating(t)) {
      return nlam([ad = std::move(ad), x = as_float(std::move(v)), t](const Regs& r) {
        const double val = x->ev(r);
        const uintptr_t p = ad.at(r, gpusim::AccessKind::store);
        gpusim::lane_access(p, unsigned(dtype_size(t)), gpusim::AccessKind::store, ad.site);
        store_double(p, t, val);
        return Flow::next;
      });
    }
    IP x = as_int(std::move(v), target.pos, "a value stored in an int array");
    return nlam([ad = std::move(ad), x = std::move(x)](const Regs& r) {
      const int64_t val = x->ev(r);
      const uintptr_t p = ad.at(r, gpusim::AccessKind::store);
      gpusim::lane_access(p, 8, gpusim::AccessKind::store, ad.site);
      *reinterpret_cast<int64_t*>(p) = val;
      return Flow::next;
    });
  }

  // name = shared(shape, dtype="float32"): placed once, at a fixed offset of the block's shared memory.
  void declare_shared(const std::string& target, const Expr& call) {
    if (arrays_.count(target)) {
      if (shared_by_site_.count(&call) && arrays_[target] == shared_by_site_[&call]) return;
      fail(call.pos, "'" + target + "' is already an array", "give each shared array a name of its own");
    }
    if (types_.count(target)) fail(call.pos, "'" + target + "' is also a number in this kernel", "give the shared array a name of its own");
    const Expr* shape = nullptr;
    DType dt = DType::f32;
    for (const Arg& a : call.args) {
      if (a.name.empty() && !shape) shape = a.value.get();
      else if (a.name == "dtype" && a.value->kind == Expr::string) {
        if (a.value->text == "float32") dt = DType::f32;
        else if (a.value->text == "float64") dt = DType::f64;
        else if (a.value->text == "int64") dt = DType::i64;
        else fail(a.pos, "shared arrays hold float32, float64 or int64, not '" + a.value->text + "'");
      } else {
        fail(a.pos, "expected shared(shape, dtype=\"float32\")");
      }
    }
    if (!shape) fail(call.pos, "expected shared(shape, dtype=\"float32\")", "shared((16, 16))");
    std::vector<int64_t> dims;
    if (shape->kind == Expr::tuple || shape->kind == Expr::list)
      for (const ExprPtr& x : shape->items) dims.push_back(const_int(*x));
    else
      dims.push_back(const_int(*shape));
    if (dims.empty() || dims.size() > 3) fail(shape->pos, "a shared array has 1 to 3 axes");
    Array& a = prog_.shared.emplace_back();
    a.name = target;
    a.shared = true;
    a.dtype = dt;
    a.ndim = int(dims.size());
    a.numel = 1;
    for (int d = a.ndim - 1; d >= 0; --d) {
      if (dims[size_t(d)] <= 0) fail(shape->pos, "a shared array's sizes must be positive");
      a.dims[d] = dims[size_t(d)];
      a.strides[d] = a.numel;
      a.numel *= dims[size_t(d)];
    }
    const size_t off = (prog_.shared_bytes + 15) / 16 * 16, bytes = size_t(a.numel) * dtype_size(dt);
    if (off + bytes > gpusim::shared_memory_bytes())
      fail(call.pos, "the kernel's shared arrays need " + std::to_string(off + bytes) + " bytes, more than a block's " +
                         std::to_string(gpusim::shared_memory_bytes()) + "");
    a.base = reinterpret_cast<uintptr_t>(gpusim::shared_memory()) + off;
    prog_.shared_bytes = off + bytes;
    arrays_[target] = &a;
    shared_by_site_[&call] = &a;
  }

  NP for_loop(const Stmt& s) {
    if (s.targets.size() != 1 || s.targets[0]->kind != Expr::name) fail(s.pos, "a kernel's for loop takes one name", "for k in range(n):");
    const Expr& it = *s.value;
    if (it.kind != Expr::call || it.items[0]->kind != Expr::name || it.items[0]->text != "range")
      fail(it.pos, "a kernel loops over range(...) only", "for k in range(start, stop, step):");
    std::vector<Val> v = positional(it, 1, 3, "range(stop) or range(start, stop[, step])");
    IP start = v.size() >= 2 ? as_int(std::move(v[0]), it.pos, "range's start") : iconst(0);
    IP stop = as_int(std::move(v[v.size() >= 2 ? 1 : 0]), it.pos, "range's stop");
    IP step = v.size() == 3 ? as_int(std::move(v[2]), it.pos, "range's step") : iconst(1);
    const int slot = slots_.at(s.targets[0]->text).second;
    NP body = block(s.body);
    NP orelse = block(s.orelse);
    return nlam([start = std::move(start), stop = std::move(stop), step = std::move(step), slot, body = std::move(body),
                 orelse = std::move(orelse)](const Regs& r) {
      const int64_t a = start->ev(r), b = stop->ev(r), st = step->ev(r);
      if (st == 0) lane_fail("range() step is zero (" + gpusim::running_lane_text() + ")", "use a positive or negative step");
      for (int64_t k = a; st > 0 ? k < b : k > b; k += st) {
        r.i[slot] = k;
        const Flow fl = body->run(r);
        if (fl == Flow::brk) return Flow::next;
        if (fl == Flow::ret) return fl;
        poll_interrupt();
      }
      return orelse->run(r);
    });
  }

  NP statement(const Stmt& s) {
    switch (s.kind) {
      case Stmt::pass: return nlam([](const Regs&) { return Flow::next; });
      case Stmt::expr: {
        const Expr& e = *s.value;
        if (e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "syncthreads") {
          if (!e.args.empty()) fail(e.pos, "syncthreads() takes no arguments");
          const void* st = site(e.pos);
          const Pos* p = &e.pos;
          return nlam([st, p](const Regs& r) {
            *r.at = p;
            gpusim::sync_block(st);
            return Flow::next;
          });
        }
        if (e.kind == Expr::call && e.items[0]->kind == Expr::name && e.items[0]->text == "shared")
          fail(e.pos, "shared(shape) makes an array: assign it to a name", "tile = shared((16, 16))");
        Val v = expr(e);
        if (v.ty == Ty::f) return nlam([x = std::move(v.f)](const Regs& r) { (void)x->ev(r); return Flow::next; });
        return nlam([x = std::move(v.i)](const Regs& r) { (void)x->ev(r); return Flow::next; });
      }
      case Stmt::assign: {
        if (s.targets.size() != 1) fail(s.pos, "one target per assignment in a kernel");
        const Expr& t = *s.targets[0];
        if (t.kind == Expr::name && is_shared_call(*s.value)) {
          declare_shared(t.text, *s.value);
          return nlam([](const Regs&) { return Flow::next; });
        }
        if (t.kind == Expr::name) return assign_name(t.text, expr(*s.value), s.pos);
        if (t.kind == Expr::index) return store(t, expr(*s.value));
        fail(t.pos, "a kernel assigns a name or an array element", "x = ... or A[i] = ...");
      }
      case Stmt::aug_assign: {
        const Expr& t = *s.targets[0];
        Expr bin(Expr::binary, s.pos);
        bin.text = s.text;  // the operator without '=' ("+" of "+=")
        // The current value is read through the target expression itself (a load of A[i] counts).
        bin.items.push_back(std::unique_ptr<Expr>(const_cast<Expr*>(&t)));
        bin.items.push_back(std::unique_ptr<Expr>(const_cast<Expr*>(s.value.get())));
        struct Release {
          Expr& e;
          ~Release() {
            for (auto& x : e.items) (void)x.release();
          }
        } release{bin};
        Val v = binary(bin);
        if (t.kind == Expr::name) {
          if (!slots_.count(t.text)) fail(t.pos, "'" + t.text + "' is used before it is assigned");
          return assign_name(t.text, std::move(v), s.pos);
        }
        if (t.kind == Expr::index) return store(t, std::move(v));
        fail(t.pos, "a kernel assigns a name or an array element");
      }
      case Stmt::if_: {
        IP c = truth(expr(*s.value));
        NP a = block(s.body), b = block(s.orelse);
        return nlam([c = std::move(c), a = std::move(a), b = std::move(b)](const Regs& r) { return c->ev(r) ? a->run(r) : b->run(r); });
      }
      case Stmt::while_: {
        IP c = truth(expr(*s.value));
        NP body = block(s.body);
        return nlam([c = std::move(c), body = std::move(body)](const Regs& r) {
          while (c->ev(r)) {
            const Flow fl = body->run(r);
            if (fl == Flow::brk) break;
            if (fl == Flow::ret) return fl;
            poll_interrupt();
          }
          return Flow::next;
        });
      }
      case Stmt::for_: return for_loop(s);
      case Stmt::break_: return nlam([](const Regs&) { return Flow::brk; });
      case Stmt::continue_: return nlam([](const Regs&) { return Flow::cont; });
      case Stmt::ret:
        if (s.value) fail(s.pos, "a kernel returns nothing: write its results into an array", "C[i] = value; then return");
        return nlam([](const Regs&) { return Flow::ret; });
      case Stmt::def: fail(s.pos, "no functions inside a kernel");
      case Stmt::class_: fail(s.pos, "no classes inside a kernel");
      default: fail(s.pos, "this statement is not available in a kernel",
                    "a kernel has assignments, if/elif/else, for over range, while, break, continue, return and syncthreads()");
    }
  }

  NP block(const Block& b) {
    auto seq = std::make_unique<Seq>();
    for (const StmtPtr& s : b) seq->items.push_back(statement(*s));
    if (seq->items.size() == 1) return std::move(seq->items[0]);
    return seq;
  }

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

}  // namespace

Program compile_kernel(const Function& f, std::vector<LaunchArg>& args, const Interpreter& in) {
  Program prog;
  Compiler(f, args, in, prog).run();
  return prog;
}

uint64_t take_flops() { return std::exchange(g_flops, 0); }

}  // namespace opscope::lang::kernel
